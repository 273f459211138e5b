use super::*;
use crate::views::{Nav, NavItem};

fn nav() -> Nav {
    Nav {
        csrf: "tok".into(),
        workspace_slug: "acme".into(),
        active: NavItem::Skills,
        ..Default::default()
    }
}

#[test]
fn list_shows_source_attached_agents_and_both_import_forms_for_managers() {
    let v = SkillListView {
        nav: nav(),
        skills: vec![SkillRowView {
            slug: "review-a-diff".into(),
            description: "Review <diffs>".into(),
            source: "built_in".into(),
            url: "/w/acme/skills/review-a-diff".into(),
            agents: vec!["rex".into(), "ada".into()],
        }],
        can_import_path: true,
        ..Default::default()
    };
    let html = skills(&v).into_string();
    assert!(html.contains(r#"href="/w/acme/skills/review-a-diff""#));
    assert!(html.contains("built-in"));
    assert!(html.contains("rex, ada"));
    assert!(html.contains("Review &lt;diffs&gt;"));
    assert!(html.contains(r#"enctype="multipart/form-data""#));
    assert!(html.contains(r#"action="/w/acme/skills/import-path""#));
    let member = skills(&SkillListView {
        can_import_path: false,
        ..v
    })
    .into_string();
    assert!(
        !member.contains("import-path"),
        "members cannot import server folders"
    );
}

#[test]
fn each_import_form_has_its_own_ids_and_its_own_errors() {
    let mut v = SkillListView {
        nav: nav(),
        can_import_path: true,
        import_path: "/srv/skills/x".into(),
        ..Default::default()
    };
    v.import_errors
        .insert("skill_md".into(), vec!["the folder has no SKILL.md".into()]);
    let html = skills(&v).into_string();
    let ids: Vec<&str> = html
        .split(" id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "duplicate ids in {ids:?}");
    let upload = &html[html.find(r#"id="skill-upload""#).unwrap()
        ..html.find(r#"id="skill-import-path""#).unwrap()];
    let import = &html[html.find(r#"id="skill-import-path""#).unwrap()..];
    assert!(!upload.contains("no SKILL.md"), "{upload}");
    assert!(import.contains(r#"<div class="field-error" id="skill-folder-skill_md-error"><p>the folder has no SKILL.md</p>"#), "{import}");
    assert!(import.contains(r#"value="/srv/skills/x""#));
}

#[test]
fn a_skill_page_emits_the_sanitised_html_and_escapes_files() {
    let v = SkillPageView {
        nav: nav(),
        row: SkillRowView {
            slug: "x".into(),
            ..Default::default()
        },
        safe_html: "<h1>Title</h1>".into(),
        files: vec![("notes.md".into(), "<script>".into())],
        content_hash: "abcdef0123456789".into(),
        edit_url: "/e".into(),
        export_url: "/x.zip".into(),
        delete_url: None,
    };
    let html = skill(&v).into_string();
    assert!(html.contains("<h1>Title</h1>"));
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("abcdef012345") && !html.contains("Delete"));
}

#[test]
fn the_editor_previews_through_htmx_and_keeps_the_text() {
    let v = SkillFormView {
        nav: nav(),
        is_new: true,
        action: "/w/acme/skills".into(),
        preview_url: "/w/acme/skills/preview".into(),
        skill_md: "---\nname: a\n---\n<b>".into(),
        errors: [("skill_md".to_owned(), vec!["SKILL.md: bad".to_owned()])].into(),
    };
    let html = skill_form(&v).into_string();
    assert!(html.contains(r#"hx-post="/w/acme/skills/preview""#));
    assert!(html.contains("&lt;b&gt;"));
    assert!(html.contains("SKILL.md: bad"));
}
