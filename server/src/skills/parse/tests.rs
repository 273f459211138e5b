use super::*;

const GOOD: &str = "---\nname: review-a-diff\ndescription: Review a diff carefully.\nlicense: MIT\nallowed-tools: [Bash, Read]\n---\n\n# Review\n\nDo it.\n";

fn file(path: &str, bytes: &[u8]) -> RawFile {
    RawFile {
        path: path.to_owned(),
        bytes: bytes.to_vec(),
    }
}

fn rules(result: Result<ParsedSkill, Vec<Problem>>) -> Vec<String> {
    result
        .expect_err("expected problems")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_good_skill_keeps_unknown_keys_verbatim_and_sorts_files() {
    let s = parse(
        GOOD,
        vec![file("z.md", b"z"), file("scripts/a.sh", b"echo a\n")],
    )
    .unwrap();
    assert_eq!(s.slug.as_str(), "review-a-diff");
    assert_eq!(s.description, "Review a diff carefully.");
    assert_eq!(
        s.body, GOOD,
        "the whole SKILL.md, unknown keys included, round-trips"
    );
    let paths: Vec<&str> = s.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["scripts/a.sh", "z.md"]);
    assert_eq!(s.content_hash.len(), 64);
}

#[test]
fn the_hash_covers_body_and_files_but_not_their_order() {
    let a = parse(GOOD, vec![file("a", b"1"), file("b", b"2")]).unwrap();
    let b = parse(GOOD, vec![file("b", b"2"), file("a", b"1")]).unwrap();
    let c = parse(GOOD, vec![file("a", b"1"), file("b", b"3")]).unwrap();
    let d = parse(
        &GOOD.replace("Do it.", "Do it!"),
        vec![file("a", b"1"), file("b", b"2")],
    )
    .unwrap();
    assert_eq!(a.content_hash, b.content_hash);
    assert_ne!(a.content_hash, c.content_hash);
    assert_ne!(a.content_hash, d.content_hash);
}

#[test]
fn front_matter_is_required() {
    assert_eq!(
        rules(parse("# Just markdown\n", vec![])),
        [
            "SKILL.md: must start with YAML front matter: a line `---`, `name:` and `description:`, then `---`"
        ]
    );
    let open = rules(parse("---\nname: a\ndescription: b\n", vec![]));
    assert!(open[0].contains("not closed"), "{open:?}");
    let not_map = rules(parse("---\n- a\n- b\n---\nbody", vec![]));
    assert!(not_map[0].contains("not a YAML mapping"), "{not_map:?}");
}

#[test]
fn name_and_description_rules_are_precise() {
    let bad_name = rules(parse(
        "---\nname: Review_Diff\ndescription: x\n---\n",
        vec![],
    ));
    assert!(
        bad_name[0].starts_with("SKILL.md: `name` may contain only a-z, 0-9 and '-'"),
        "{bad_name:?}"
    );
    let long = format!("---\nname: {}\ndescription: x\n---\n", "a".repeat(65));
    assert!(rules(parse(&long, vec![]))[0].contains("at most 64"));
    let missing = rules(parse("---\nname: a\n---\n", vec![]));
    assert!(missing[0].contains("needs `description:`"), "{missing:?}");
    let long_desc = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
    assert!(rules(parse(&long_desc, vec![]))[0].contains("1025 characters; at most 1024"));
    let ok = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1024));
    assert!(parse(&ok, vec![]).is_ok());
}

#[test]
fn traversal_absolute_and_odd_paths_are_refused_naming_the_file() {
    for (path, rule) in [
        ("../../etc/passwd", "`..` is not allowed"),
        ("scripts/../../x", "`..` is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:/x", "absolute paths are not allowed"),
        ("a\\b", "backslashes"),
        ("a//b", "empty or `.`"),
        ("./a", "empty or `.`"),
    ] {
        let got = rules(parse(GOOD, vec![file(path, b"x")]));
        assert!(
            got[0].starts_with(&format!("{path}: ")) && got[0].contains(rule),
            "{path}: {got:?}"
        );
    }
}

#[test]
fn skill_md_is_not_a_supporting_file() {
    assert_eq!(
        rules(parse(GOOD, vec![file("SKILL.md", b"x")])),
        ["SKILL.md: is the skill itself, not a supporting file"]
    );
}

#[test]
fn binary_and_oversized_files_are_refused() {
    let got = rules(parse(
        GOOD,
        vec![file("logo.png", &[0x89, b'P', b'N', b'G', 0, 1])],
    ));
    assert_eq!(
        got,
        ["logo.png: is a binary file; a skill may contain only UTF-8 text files"]
    );
    let got = rules(parse(GOOD, vec![file("bad.txt", &[0xff, 0xfe, b'a'])]));
    assert!(got[0].contains("binary"));
    let big = vec![b'a'; MAX_FILE_BYTES + 1];
    let got = rules(parse(GOOD, vec![file("big.txt", &big)]));
    assert!(got[0].starts_with("big.txt: is 262145 bytes"), "{got:?}");
    let many: Vec<RawFile> = (0..5)
        .map(|i| file(&format!("f{i}"), &vec![b'a'; MAX_FILE_BYTES - 10]))
        .collect();
    let got = rules(parse(GOOD, many));
    assert!(
        got.iter()
            .any(|r| r.starts_with("skill: is ") && r.contains("in all")),
        "{got:?}"
    );
    let too_many: Vec<RawFile> = (0..=MAX_FILES)
        .map(|i| file(&format!("f{i}"), b"a"))
        .collect();
    assert!(rules(parse(GOOD, too_many))[0].contains("at most 64"));
}

#[test]
fn instructions_and_renaming_touch_only_what_they_should() {
    assert_eq!(instructions(GOOD), "# Review\n\nDo it.\n");
    let renamed = renamed(GOOD, "review-a-diff-muster");
    assert!(renamed.starts_with("---\nname: review-a-diff-muster\ndescription:"));
    assert!(renamed.contains("license: MIT"));
    assert_eq!(
        parse(&renamed, vec![]).unwrap().slug.as_str(),
        "review-a-diff-muster"
    );
}
