//! Skills on disk: archives and folders in (with their attacks refused), archives out, and materialization
//! for a run (never touching what the repository owns, removing only what Muster wrote).

use std::io::Write as _;
use std::path::Path;

use muster::domain::{RuntimeKind, Skill, SkillFile, SkillId, SkillSource, Slug, WorkspaceId};
use muster::runner::protocol::SkillBundle;
use muster::skills::archive::{self, MAX_ENTRIES, MAX_RATIO};
use muster::skills::materialize::{brief_section, skills_root, write_skills};
use muster::skills::parse::MAX_FILE_BYTES;

const SKILL_MD: &str = "---\nname: demo\ndescription: A demo skill.\nmetadata:\n  team: core\n---\n\n# Demo\n\nStep one.\n";

fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn rules(result: Result<muster::skills::ParsedSkill, Vec<muster::skills::Problem>>) -> Vec<String> {
    result
        .expect_err("expected problems")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn skill(slug: &str, files: &[(&str, &str)]) -> Skill {
    Skill {
        id: SkillId::new(),
        workspace_id: WorkspaceId::new(),
        slug: Slug::parse_field("slug", slug).unwrap(),
        name: slug.to_owned(),
        description: format!("The {slug} skill."),
        body: SKILL_MD.replace("name: demo", &format!("name: {slug}")),
        files: files
            .iter()
            .map(|(p, c)| SkillFile {
                path: (*p).to_owned(),
                content: (*c).to_owned(),
            })
            .collect(),
        source: SkillSource::Written,
        content_hash: String::new(),
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    }
}

#[test]
fn an_archive_with_a_top_folder_imports_and_exports_back_the_same() {
    let bytes = zip_of(&[
        ("demo/SKILL.md", SKILL_MD.as_bytes()),
        ("demo/scripts/check.sh", b"echo ok\n"),
    ]);
    let parsed = archive::from_zip(&bytes).unwrap();
    assert_eq!(parsed.slug.as_str(), "demo");
    assert_eq!(
        parsed.body, SKILL_MD,
        "unknown front-matter keys round-trip"
    );
    assert_eq!(parsed.files[0].path, "scripts/check.sh");
    let mut stored = skill("demo", &[("scripts/check.sh", "echo ok\n")]);
    stored.body = parsed.body.clone();
    let again = archive::from_zip(&archive::to_zip(&stored).unwrap()).unwrap();
    assert_eq!(again.content_hash, parsed.content_hash);
    let flat = archive::from_zip(&zip_of(&[("SKILL.md", SKILL_MD.as_bytes())])).unwrap();
    assert_eq!(flat.slug.as_str(), "demo");
}

#[test]
fn archive_attacks_are_refused_with_the_file_named() {
    let traversal = zip_of(&[
        ("SKILL.md", SKILL_MD.as_bytes()),
        ("../../etc/passwd", b"x"),
    ]);
    assert!(
        rules(archive::from_zip(&traversal))[0]
            .starts_with("../../etc/passwd: `..` is not allowed")
    );
    let absolute = zip_of(&[("SKILL.md", SKILL_MD.as_bytes()), ("/etc/passwd", b"x")]);
    assert!(rules(archive::from_zip(&absolute))[0].starts_with("/etc/passwd: absolute paths"));
    let binary = zip_of(&[("SKILL.md", SKILL_MD.as_bytes()), ("a.bin", &[0, 1, 2, 3])]);
    assert_eq!(
        rules(archive::from_zip(&binary)),
        ["a.bin: is a binary file; a skill may contain only UTF-8 text files"]
    );
    let no_skill = zip_of(&[("README.md", b"hi")]);
    assert!(rules(archive::from_zip(&no_skill))[0].starts_with("SKILL.md: is missing"));
    let no_front = zip_of(&[("SKILL.md", b"# no front matter")]);
    assert!(rules(archive::from_zip(&no_front))[0].contains("must start with YAML front matter"));
    assert!(
        rules(archive::from_zip(b"not a zip at all"))[0]
            .starts_with("archive: is not a readable zip")
    );
}

#[test]
fn zip_bombs_are_refused_before_they_expand() {
    // One highly compressible entry: far past the ratio.
    let zeros = vec![b'a'; 4 * MAX_FILE_BYTES];
    let bomb = zip_of(&[("SKILL.md", SKILL_MD.as_bytes()), ("bomb.txt", &zeros)]);
    let got = rules(archive::from_zip(&bomb));
    assert!(
        got[0].starts_with("bomb.txt: expands more than")
            && got[0].contains(&MAX_RATIO.to_string()),
        "{got:?}"
    );
    // Too many entries.
    let names: Vec<String> = (0..=MAX_ENTRIES).map(|i| format!("f{i}.md")).collect();
    let mut entries: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| (n.as_str(), b"x".as_slice()))
        .collect();
    entries.push(("SKILL.md", SKILL_MD.as_bytes()));
    let got = rules(archive::from_zip(&zip_of(&entries)));
    assert!(got[0].starts_with("archive: has 130 entries"), "{got:?}");
}

#[cfg(unix)]
#[test]
fn folder_import_refuses_symlinks_and_reads_nested_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("demo");
    std::fs::create_dir_all(root.join("refs")).unwrap();
    std::fs::write(root.join("SKILL.md"), SKILL_MD).unwrap();
    std::fs::write(root.join("refs/guide.md"), "# Guide\n").unwrap();
    let parsed = archive::from_folder(&root).unwrap();
    assert_eq!(parsed.files[0].path, "refs/guide.md");
    std::os::unix::fs::symlink("/etc/passwd", root.join("refs/passwd")).unwrap();
    assert_eq!(
        rules(archive::from_folder(&root)),
        ["refs/passwd: is a symbolic link; links are not allowed in a skill"]
    );
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&root, &link).unwrap();
    assert!(rules(archive::from_folder(&link))[0].contains("is a symbolic link"));
}

fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if p.is_dir() {
                walk(base, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn materialization_never_touches_repository_skills_and_removes_only_its_own() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // The repository already has a `.claude/skills/demo` and another skill.
    let repo_demo = work.path().join(".claude/skills/demo");
    std::fs::create_dir_all(&repo_demo).unwrap();
    std::fs::write(repo_demo.join("SKILL.md"), "repo's own").unwrap();
    std::fs::create_dir_all(work.path().join(".claude/skills/theirs")).unwrap();
    let before = tree(work.path());

    let root = skills_root(RuntimeKind::Claude, work.path(), home.path()).unwrap();
    let demo = skill("demo", &[("scripts/run.sh", "echo hi\n")]);
    let other = skill("other", &[]);
    let mut written =
        write_skills(&root, &[&SkillBundle::of(&demo), &SkillBundle::of(&other)]).unwrap();
    let root = root.path();
    assert_eq!(
        std::fs::read_to_string(repo_demo.join("SKILL.md")).unwrap(),
        "repo's own"
    );
    let ours = std::fs::read_to_string(root.join("demo-muster/SKILL.md")).unwrap();
    assert!(
        ours.starts_with("---\nname: demo-muster\n"),
        "the renamed copy's name follows its folder: {ours}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("demo-muster/scripts/run.sh")).unwrap(),
        "echo hi\n"
    );
    assert!(root.join("other/SKILL.md").is_file());
    assert_eq!(written.notes.len(), 1, "{:?}", written.notes);
    assert!(written.notes[0].contains("demo-muster"));
    // The agent adds a file of its own next to ours: it is the agent's, not in the manifest.
    std::fs::write(work.path().join(".claude/skills/agent-notes.md"), "mine").unwrap();

    written.cleanup();
    let mut expected = before;
    expected.push(".claude/skills/agent-notes.md".to_owned());
    expected.sort();
    assert_eq!(
        tree(work.path()),
        expected,
        "only Muster's folders are gone"
    );
}

#[test]
fn folders_muster_created_are_removed_when_the_manifest_drops() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    for kind in [
        RuntimeKind::Claude,
        RuntimeKind::Opencode,
        RuntimeKind::Codex,
    ] {
        let root = skills_root(kind, work.path(), home.path()).unwrap();
        let s = skill("demo", &[]);
        {
            let written = write_skills(&root, &[&SkillBundle::of(&s)]).unwrap();
            let root = root.path();
            assert!(root.join("demo/SKILL.md").is_file(), "{kind:?}");
            assert!(!written.manifest().is_empty());
        }
        assert!(
            tree(work.path()).is_empty() && tree(home.path()).is_empty(),
            "{kind:?} left files behind"
        );
    }
    // Codex's folder is always the run's own home: nothing in the agent's env picks it.
    let codex = skills_root(RuntimeKind::Codex, work.path(), home.path()).unwrap();
    assert_eq!(codex.path(), home.path().join(".codex/skills"));
    assert_eq!(
        skills_root(RuntimeKind::Llama, work.path(), home.path()),
        None
    );
}

#[test]
fn runtimes_without_skills_folders_get_them_in_the_brief() {
    let s = skill("demo", &[("notes.md", "remember")]);
    let section = brief_section(&[&SkillBundle::of(&s)]);
    assert!(section.contains("### Skill: demo"));
    assert!(section.contains("_The demo skill._"));
    assert!(section.contains("# Demo\n\nStep one."));
    assert!(
        !section.contains("metadata:"),
        "front matter is not repeated"
    );
    assert!(section.contains("File `notes.md`") && section.contains("remember"));
    assert_eq!(brief_section(&[]), "");
}
