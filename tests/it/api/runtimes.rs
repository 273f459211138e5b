//! `/api/v1/runtimes`: what the server's machine has, cached, and re-detected on request.

use super::{Env, api_cases};

api_cases!(runtimes_are_listed_and_redetected);

async fn runtimes_are_listed_and_redetected(t: &Env) {
    let first = t.member.api.get("/api/v1/runtimes").await.expect(200);
    let kinds: Vec<&str> = first["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["claude", "codex", "opencode", "llama"]);
    for r in first["runtimes"].as_array().unwrap() {
        let status = r["status"].as_str().unwrap();
        assert!(
            ["found", "too_old", "not_installed", "broken"].contains(&status),
            "{r}"
        );
        assert_eq!(
            r["install_hint"].is_string(),
            matches!(status, "not_installed" | "too_old"),
            "{r}"
        );
        assert!(status == "found" || r["reason"].is_string(), "{r}");
    }
    // Cached: asking again gives the same detection time; re-detecting gives a newer one.
    let again = t.member.api.get("/api/v1/runtimes").await.expect(200);
    assert_eq!(again["detected_at"], first["detected_at"]);
    // Re-detecting starts processes: owners and admins only; members keep the cached result.
    t.member
        .api
        .post("/api/v1/runtimes/detect", serde_json::json!({}))
        .await
        .error(403, "auth");
    let fresh = t
        .admin
        .api
        .post("/api/v1/runtimes/detect", serde_json::json!({}))
        .await
        .expect(200);
    let parse =
        |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert!(parse(&fresh["detected_at"]) > parse(&first["detected_at"]));
    assert_eq!(
        t.member.api.get("/api/v1/runtimes").await.expect(200)["detected_at"],
        fresh["detected_at"]
    );
}
