//! Stand-ins for ensemble tests: a repository with a check, and the shell that stand-in candidates and
//! reviewers run (Claude stream-json lines, as `custom` agents read them).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::{git, git_commit_all};

/// A repository in `dir/repo` (branch `main`) whose check, `sh check.sh`, passes when `answer.txt`
/// says `42` and prints a cargo-test summary either way.
pub fn repo_with_check(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).expect("create the repository");
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("answer.txt"), "unknown\n").expect("write answer.txt");
    std::fs::write(
        repo.join("check.sh"),
        "if grep -qx 42 answer.txt; then\n  echo 'test result: ok. 3 passed; 0 failed; 0 ignored'\n  exit 0\nfi\n\
         echo 'test result: FAILED. 2 passed; 1 failed; 0 ignored'\nexit 1\n",
    )
    .expect("write check.sh");
    git_commit_all(&repo, "first");
    repo
}

/// The final stream-json `result` line: `tokens` input tokens costing `usd`, `text` as the answer.
pub fn result_line(tokens: i64, usd: f64, text: &str) -> String {
    json!({
        "type": "result", "subtype": "success", "is_error": false, "result": text,
        "session_id": "s", "total_cost_usd": usd,
        "usage": {"input_tokens": tokens, "output_tokens": 0, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}
    })
    .to_string()
}

/// The body of a reviewer script: keeps the prompt it is given in `prompt_file`, then answers a valid
/// verdict giving every label it finds in the prompt a score of 7 and a reason citing the check (the
/// first label best).
pub fn judge_body(prompt_file: &Path) -> String {
    format!(
        r#"P='{}'
cat > "$P"
labels=$(grep -oE 'Candidate [A-H]' "$P" | cut -c11 | sort -u)
entries=""; best=""
for l in $labels; do
  [ -z "$best" ] && best=$l
  entries="$entries{{\"label\":\"$l\",\"score\":7,\"reasons\":[\"the check passed for $l: test result ok\"]}},"
done
verdict="{{\"candidates\":[${{entries%,}}],\"best\":\"$best\"}}"
escaped=$(printf '%s' "$verdict" | sed 's/"/\\"/g')
echo "{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"$escaped\",\"session_id\":\"s\",\"total_cost_usd\":0.002,\"usage\":{{\"input_tokens\":5,\"output_tokens\":0,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0}}}}""#,
        prompt_file.display()
    )
}
