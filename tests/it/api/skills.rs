//! `/api/v1/skills` and `/api/v1/agents/{name}/skills`: writing, validating, importing (archive and
//! server folder), exporting and deleting skills; attaching them to agents; seeding the built-ins.

use muster::domain::{Skill, SkillFile, SkillId, SkillSource, Slug, WorkspaceId};
use reqwest::Method;
use serde_json::{Value, json};

use super::{Auth, Env, PASSWORD, api_cases, field, form_encode};

api_cases!(
    skill_lifecycle,
    skill_validation,
    skill_imports,
    agent_skill_attachments,
    built_ins_are_seeded_and_edits_survive,
    skill_pages,
);

fn skill_md(name: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n\n# {name}\n\nDo the thing.\n"
    )
}

fn slugs(list: &Value) -> Vec<String> {
    field(list, "slug")
}

/// An archive of a skill as given (no validation on the way out, so attacks can be built).
fn zip_of(slug: &str, body: &str, files: &[(&str, String)]) -> Vec<u8> {
    muster::skills::archive::to_zip(&Skill {
        id: SkillId::new(),
        workspace_id: WorkspaceId::new(),
        slug: Slug::parse_field("slug", slug).unwrap(),
        name: slug.to_owned(),
        description: String::new(),
        body: body.to_owned(),
        files: files
            .iter()
            .map(|(p, c)| SkillFile {
                path: (*p).to_owned(),
                content: c.clone(),
            })
            .collect(),
        source: SkillSource::Written,
        content_hash: String::new(),
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    })
    .unwrap()
}

async fn upload(t: &Env, bytes: Vec<u8>) -> super::client::Reply {
    t.member
        .api
        .send(
            Method::POST,
            "/api/v1/skills/import",
            Some(("application/zip", bytes)),
        )
        .await
}

/// Write → list → show → edit → export → delete (owners and admins only).
async fn skill_lifecycle(t: &Env) {
    let api = &t.member.api;
    let created = api
        .post(
            "/api/v1/skills",
            json!({"skill_md": skill_md("how-we-migrate", "How we write migrations."),
                   "files": [{"path": "templates/0001.sql", "content": "create table x ();\n"}]}),
        )
        .await
        .expect(201);
    assert_eq!(created["slug"], "how-we-migrate");
    assert_eq!(created["source"], "written");
    assert_eq!(created["description"], "How we write migrations.");
    assert_eq!(created["files"][0]["path"], "templates/0001.sql");
    assert!(
        created["body"].as_str().unwrap().contains("license: MIT"),
        "unknown keys are kept"
    );
    let hash = created["content_hash"].as_str().unwrap().to_owned();
    assert_eq!(hash.len(), 64);
    assert_eq!(
        slugs(&api.get("/api/v1/skills").await.expect(200)),
        ["how-we-migrate"]
    );
    assert_eq!(
        api.get("/api/v1/skills/how-we-migrate").await.expect(200),
        created
    );

    let edited = api
        .json(
            Method::PUT,
            "/api/v1/skills/how-we-migrate",
            &json!({"skill_md": skill_md("how-we-migrate", "Migrations, both backends.")}),
        )
        .await
        .expect(200);
    assert_eq!(edited["description"], "Migrations, both backends.");
    assert_eq!(edited["files"], created["files"], "absent files are kept");
    assert_ne!(edited["content_hash"], hash.as_str());
    api.json(
        Method::PUT,
        "/api/v1/skills/how-we-migrate",
        &json!({"skill_md": skill_md("renamed", "x")}),
    )
    .await
    .error_contains(422, "skill_md", "`name` must stay how-we-migrate");

    let export = api
        .send(Method::GET, "/api/v1/skills/how-we-migrate/export", None)
        .await;
    assert_eq!(export.status.as_u16(), 200);
    assert_eq!(export.content_type, "application/zip");

    api.send(Method::DELETE, "/api/v1/skills/how-we-migrate", None)
        .await
        .error(403, "auth");
    t.admin
        .api
        .send(Method::DELETE, "/api/v1/skills/how-we-migrate", None)
        .await
        .expect(204);
    api.get("/api/v1/skills/how-we-migrate")
        .await
        .error(404, "resource");
}

/// Bad SKILL.md, bad files and clashing names: precise messages, and nothing stored.
async fn skill_validation(t: &Env) {
    let api = &t.member.api;
    let post = |body: Value| async move { api.post("/api/v1/skills", body).await };
    post(json!({"skill_md": "# no front matter"}))
        .await
        .error_contains(
            422,
            "skill_md",
            "SKILL.md: must start with YAML front matter",
        );
    post(json!({"skill_md": skill_md("Bad_Name", "x")}))
        .await
        .error_contains(422, "skill_md", "`name` may contain only a-z, 0-9 and '-'");
    post(json!({"skill_md": skill_md("ok", "x"), "files": [{"path": "../../etc/passwd", "content": "x"}]}))
        .await
        .error_contains(422, "files", "../../etc/passwd: `..` is not allowed");
    post(json!({"skill_md": skill_md("ok", "x"), "files": [{"path": "/etc/passwd", "content": "x"}]}))
        .await
        .error_contains(422, "files", "/etc/passwd: absolute paths are not allowed");
    assert!(
        api.get("/api/v1/skills")
            .await
            .expect(200)
            .as_array()
            .unwrap()
            .is_empty()
    );

    post(json!({"skill_md": skill_md("ok", "x")}))
        .await
        .expect(201);
    post(json!({"skill_md": skill_md("ok", "another")}))
        .await
        .error_contains(409, "name", "a skill named ok already exists");
    let list = api.get("/api/v1/skills").await.expect(200);
    assert_eq!(list[0]["description"], "x", "the clash wrote nothing");
}

/// Archives and server folders in; bombs, traversal, binaries and links refused; folders need a manager.
async fn skill_imports(t: &Env) {
    let good = zip_of(
        "from-zip",
        &skill_md("from-zip", "Imported."),
        &[("notes.md", "hi\n".into())],
    );
    let imported = upload(t, good.clone()).await.expect(201);
    assert_eq!(
        (imported["slug"].as_str(), imported["source"].as_str()),
        (Some("from-zip"), Some("imported"))
    );
    upload(t, good)
        .await
        .error_contains(409, "name", "already exists");

    let bomb = zip_of(
        "bomb",
        &skill_md("bomb", "x"),
        &[("zeros.txt", "0".repeat(1 << 20))],
    );
    upload(t, bomb)
        .await
        .error_contains(422, "files", "looks like a zip bomb");
    let traversal = zip_of(
        "trav",
        &skill_md("trav", "x"),
        &[("../../../etc/passwd", "x".into())],
    );
    upload(t, traversal)
        .await
        .error_contains(422, "files", "`..` is not allowed");
    let binary = zip_of("bin", &skill_md("bin", "x"), &[("a.bin", "a\0b".into())]);
    upload(t, binary)
        .await
        .error_contains(422, "files", "a.bin: is a binary file");
    let no_front = zip_of("nofront", "just text", &[]);
    upload(t, no_front)
        .await
        .error_contains(422, "skill_md", "must start with YAML front matter");
    upload(t, b"PK garbage".to_vec())
        .await
        .error_contains(422, "archive", "not a readable zip");

    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("from-folder");
    std::fs::create_dir_all(folder.join("refs")).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        skill_md("from-folder", "From a folder."),
    )
    .unwrap();
    std::fs::write(folder.join("refs/a.md"), "a").unwrap();
    let path = json!({"path": folder.display().to_string()});
    t.member
        .api
        .post("/api/v1/skills/import-path", path.clone())
        .await
        .error(403, "auth");
    let from_folder = t
        .admin
        .api
        .post("/api/v1/skills/import-path", path)
        .await
        .expect(201);
    assert_eq!(from_folder["files"][0]["path"], "refs/a.md");
    t.admin
        .api
        .post(
            "/api/v1/skills/import-path",
            json!({"path": "relative/dir"}),
        )
        .await
        .error_contains(422, "path", "absolute path");
    let linked = dir.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(linked.join("SKILL.md"), skill_md("linked", "x")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", linked.join("host")).unwrap();
    t.owner
        .api
        .post(
            "/api/v1/skills/import-path",
            json!({"path": linked.display().to_string()}),
        )
        .await
        .error_contains(422, "files", "host: is a symbolic link");
    let all = slugs(&t.member.api.get("/api/v1/skills").await.expect(200));
    assert_eq!(
        all,
        ["from-folder", "from-zip"],
        "no refused import left anything behind"
    );
}

/// Attach (enabled or not), switch, list with agents, detach.
async fn agent_skill_attachments(t: &Env) {
    let api = &t.member.api;
    // Owners and admins create agents; a member attaches skills to them.
    for name in ["coder", "reviewer"] {
        t.owner
            .api
            .post("/api/v1/agents", json!({"name": name, "kind": "claude"}))
            .await
            .expect(201);
    }
    api.post(
        "/api/v1/skills",
        json!({"skill_md": skill_md("tdd", "Tests first.")}),
    )
    .await
    .expect(201);
    let put = |agent: &'static str, enabled: bool| async move {
        api.json(
            Method::PUT,
            &format!("/api/v1/agents/{agent}/skills/tdd"),
            &json!({"enabled": enabled}),
        )
        .await
    };
    let list = put("coder", true).await.expect(200);
    assert_eq!(
        list,
        json!([{"slug": "tdd", "description": "Tests first.", "source": "written", "enabled": true}])
    );
    put("reviewer", false).await.expect(200);
    assert_eq!(
        api.get("/api/v1/skills/tdd").await.expect(200)["agents"],
        json!(["coder", "reviewer"])
    );
    let switched = put("reviewer", true).await.expect(200);
    assert_eq!(switched[0]["enabled"], true);
    assert_eq!(
        api.get("/api/v1/agents/reviewer/skills").await.expect(200),
        switched
    );

    let detached = api
        .send(Method::DELETE, "/api/v1/agents/coder/skills/tdd", None)
        .await
        .expect(200);
    assert_eq!(detached, json!([]));
    api.send(Method::DELETE, "/api/v1/agents/coder/skills/tdd", None)
        .await
        .error(404, "resource");
    put("nobody", true).await.error(404, "resource");
    api.json(
        Method::PUT,
        "/api/v1/agents/coder/skills/missing",
        &json!({}),
    )
    .await
    .error(404, "resource");
    assert_eq!(
        api.get("/api/v1/skills/tdd").await.expect(200)["agents"],
        json!(["reviewer"])
    );
}

/// The built-ins arrive with source built_in; reseeding updates untouched copies and keeps edited ones.
async fn built_ins_are_seeded_and_edits_survive(t: &Env) {
    let store = t.app.store.as_ref();
    let first = muster::skills::builtin::seed(store, t.ws.id).await.unwrap();
    assert_eq!(first.created.len(), 5, "{first:?}");
    let list = t.member.api.get("/api/v1/skills").await.expect(200);
    for slug in [
        "fix-failing-ci",
        "report-to-the-board",
        "review-a-diff",
        "small-honest-commits",
        "test-first-fix",
    ] {
        let s = list
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["slug"] == slug)
            .unwrap_or_else(|| panic!("{slug} missing"));
        assert_eq!(s["source"], "built_in");
    }
    let report = t
        .member
        .api
        .get("/api/v1/skills/report-to-the-board")
        .await
        .expect(200);
    assert!(
        report["body"]
            .as_str()
            .unwrap()
            .contains("muster issue comment \"$MUSTER_ISSUE\"")
    );

    // A person edits one built-in; another copy is an outdated built-in (as if the binary changed).
    let edited = skill_md("review-a-diff", "Our own review rules.");
    t.member
        .api
        .json(
            Method::PUT,
            "/api/v1/skills/review-a-diff",
            &json!({"skill_md": edited}),
        )
        .await
        .expect(200);
    let slug = Slug::parse_field("slug", "fix-failing-ci").unwrap();
    let old = store.get_skill(t.ws.id, &slug).await.unwrap();
    let outdated = muster::domain::NewSkill {
        slug: slug.clone(),
        name: old.name.clone(),
        description: "old".into(),
        body: old.body.replace("Fix a failing CI run", "Old text"),
        files: vec![],
        source: SkillSource::BuiltIn,
        content_hash: "0".repeat(64),
    };
    store.update_skill(t.ws.id, &slug, &outdated).await.unwrap();

    let again = muster::skills::builtin::seed(store, t.ws.id).await.unwrap();
    assert_eq!(again.updated, ["fix-failing-ci"]);
    assert_eq!(again.kept, ["review-a-diff"]);
    assert!(again.created.is_empty());
    assert_eq!(
        store.get_skill(t.ws.id, &slug).await.unwrap().body,
        old.body
    );
    let review = t
        .member
        .api
        .get("/api/v1/skills/review-a-diff")
        .await
        .expect(200);
    assert_eq!(
        (review["source"].as_str(), review["description"].as_str()),
        (Some("written"), Some("Our own review rules."))
    );
}

fn html(reply: &super::client::Reply, status: u16) -> String {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
    reply.body.as_str().unwrap_or_default().to_owned()
}

/// The Skills pages and the agent page's skills section, signed in through the login form.
async fn skill_pages(t: &Env) {
    muster::skills::builtin::seed(t.app.store.as_ref(), t.ws.id)
        .await
        .unwrap();
    t.owner
        .api
        .post("/api/v1/agents", json!({"name": "coder", "kind": "claude"}))
        .await
        .expect(201);
    let cookie = t.login(&t.owner.email, PASSWORD).await.unwrap();
    let web = t.client(Auth::Session {
        csrf: Some(muster::auth::csrf_token(&cookie)),
        cookie,
    });
    let form = |pairs: &[(&str, &str)]| {
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", form_encode(v)))
            .collect();
        Some((
            "application/x-www-form-urlencoded",
            body.join("&").into_bytes(),
        ))
    };
    let list = html(&web.send(Method::GET, "/w/alpha/skills", None).await, 200);
    assert!(
        list.contains(r#"href="/w/alpha/skills/review-a-diff""#) && list.contains("built-in"),
        "{list}"
    );
    assert!(
        list.contains("import-path"),
        "owners may import server folders"
    );
    let page = html(
        &web.send(Method::GET, "/w/alpha/skills/test-first-fix", None)
            .await,
        200,
    );
    assert!(
        page.contains("<h1>Fix a bug test-first</h1>"),
        "rendered markdown: {page}"
    );
    assert!(
        !page.contains("name: test-first-fix"),
        "front matter is not rendered"
    );

    let preview = html(
        &web.send(
            Method::POST,
            "/w/alpha/skills/preview",
            form(&[(
                "skill_md",
                "---\nname: x\n---\n# Hi <script>alert(1)</script>",
            )]),
        )
        .await,
        200,
    );
    assert!(
        preview.contains("<h1>Hi </h1>") || preview.contains("<h1>Hi"),
        "{preview}"
    );
    assert!(
        !preview.contains("<script>"),
        "the preview is sanitised: {preview}"
    );
    assert!(preview.contains("needs `description:`"), "{preview}");

    let created = web
        .send(
            Method::POST,
            "/w/alpha/skills",
            form(&[("skill_md", &skill_md("from-page", "Written on the page."))]),
        )
        .await;
    assert!(
        [200, 303].contains(&created.status.as_u16()),
        "{}",
        created.body
    );
    let bad = html(
        &web.send(
            Method::POST,
            "/w/alpha/skills",
            form(&[("skill_md", "no front matter")]),
        )
        .await,
        422,
    );
    assert!(
        bad.contains("must start with YAML front matter") && bad.contains("no front matter"),
        "{bad}"
    );

    let attached = web
        .send(
            Method::POST,
            "/w/alpha/agents/coder/skills",
            form(&[("skill", "from-page"), ("enabled", "true")]),
        )
        .await;
    assert!(
        [200, 303].contains(&attached.status.as_u16()),
        "{}",
        attached.body
    );
    let section = html(
        &web.send(Method::GET, "/w/alpha/agents/coder/skills", None)
            .await,
        200,
    );
    assert!(
        section.contains(r#"id="agent-skill-from-page""#)
            && section.contains(r#"aria-checked="true""#),
        "{section}"
    );
    web.send(
        Method::POST,
        "/w/alpha/agents/coder/skills/from-page/toggle",
        form(&[("enabled", "false")]),
    )
    .await;
    let listed = t
        .owner
        .api
        .get("/api/v1/agents/coder/skills")
        .await
        .expect(200);
    assert_eq!(listed[0]["enabled"], false);
    web.send(
        Method::POST,
        "/w/alpha/agents/coder/skills/from-page/detach",
        form(&[]),
    )
    .await;
    // What stays is the built-in every new agent starts with; a person may detach it too.
    let listed = t
        .owner
        .api
        .get("/api/v1/agents/coder/skills")
        .await
        .expect(200);
    assert_eq!(field(&listed, "slug"), ["report-to-the-board"]);
    web.send(
        Method::POST,
        "/w/alpha/agents/coder/skills/report-to-the-board/detach",
        form(&[]),
    )
    .await;
    assert_eq!(
        t.owner
            .api
            .get("/api/v1/agents/coder/skills")
            .await
            .expect(200),
        json!([])
    );
    let agent_page = html(
        &web.send(Method::GET, "/w/alpha/agents/coder", None).await,
        200,
    );
    assert!(
        agent_page.contains(r#"hx-get="/w/alpha/agents/coder/skills""#),
        "the agent page loads its skills section"
    );
}
