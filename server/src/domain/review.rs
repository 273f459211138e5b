//! The blind review of an ensemble's candidates: the reviewer's prompt and the validation of its verdict.
//! Pure functions; the run engine runs the reviewer as a normal run with [`review_prompt`] and reads its
//! final answer with [`parse_verdict`].
//!
//! Blindness: candidates are shown under neutral labels (A, B, C…) given in a random order
//! ([`assign_labels`]); the prompt holds the issue, each candidate's diff and check result, and nothing
//! else — no agent names, costs, token counts, run times (not even the check's duration), tallies or any
//! hint of order. A diff or check output that names its agent can be scrubbed with
//! [`ReviewCandidate::hide`].
//!
//! The verdict is never guessed: a missing, unparseable, ambiguous or invalid answer is an error that says
//! precisely what is wrong.

use std::fmt;

use rand::seq::SliceRandom as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::CheckResult;

/// The most candidates one review takes (labels A to Z; an ensemble has at most 8).
pub const MAX_CANDIDATES: usize = 26;
/// The highest score.
pub const MAX_SCORE: u8 = 10;
/// Lines of a check's output shown to the reviewer.
const CHECK_TAIL_LINES: usize = 40;

/// One candidate as the reviewer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewCandidate {
    /// Its neutral label (`A`, `B`, …).
    pub label: char,
    /// Its change, a unified diff against the common base.
    pub diff: String,
    /// Whether `diff` was cut short (the reviewer is told).
    pub diff_truncated: bool,
    /// Its check's result, when it was checked.
    pub check: Option<CheckResult>,
}

impl ReviewCandidate {
    /// Replaces every occurrence of each of `names` (an agent's name, its model, its runtime), ignoring
    /// case, in the diff and the check's output by `[hidden]`.
    pub fn hide(&mut self, names: &[&str]) {
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            self.diff = replace_ignoring_case(&self.diff, name, "[hidden]");
            if let Some(check) = &mut self.check {
                check.tail = replace_ignoring_case(&check.tail, name, "[hidden]");
                check.command = replace_ignoring_case(&check.command, name, "[hidden]");
                if let Some(e) = &check.error {
                    check.error = Some(replace_ignoring_case(e, name, "[hidden]"));
                }
            }
        }
    }
}

fn replace_ignoring_case(text: &str, needle: &str, with: &str) -> String {
    let lower_text = text.to_lowercase();
    let lower_needle = needle.to_lowercase();
    // Lowercasing can change byte lengths outside ASCII: then fall back to an exact replace.
    if lower_text.len() != text.len() || lower_needle.len() != needle.len() {
        return text.replace(needle, with);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in lower_text.match_indices(&lower_needle) {
        if i < last {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str(with);
        last = i + needle.len();
    }
    out.push_str(&text[last..]);
    out
}

/// Gives `ids` the labels A, B, C… in a random order: the first label goes to a random id. Fails past
/// [`MAX_CANDIDATES`].
pub fn assign_labels<T: Clone, R: rand::Rng + ?Sized>(
    ids: &[T],
    rng: &mut R,
) -> Result<Vec<(char, T)>, String> {
    if ids.len() > MAX_CANDIDATES {
        return Err(format!(
            "a review takes at most {MAX_CANDIDATES} candidates, not {}",
            ids.len()
        ));
    }
    let mut shuffled = ids.to_vec();
    shuffled.shuffle(rng);
    Ok(('A'..='Z').zip(shuffled).collect())
}

/// The reviewer's prompt: the issue, then each candidate (in label order) with its check result and
/// diff, then exactly what to answer.
pub fn review_prompt(
    issue_title: &str,
    issue_body: &str,
    candidates: &[ReviewCandidate],
) -> String {
    let mut sorted: Vec<&ReviewCandidate> = candidates.iter().collect();
    sorted.sort_by_key(|c| c.label);
    let labels: Vec<String> = sorted.iter().map(|c| c.label.to_string()).collect();
    let mut p = String::new();
    p.push_str(&format!(
        "You are reviewing {} independent candidate changes that each try to resolve the same issue. \
         They are labelled {} only to tell them apart: the labels and their order say nothing about \
         where a change came from or how it was made. Judge each change on its own evidence: its check \
         result (objective) first, then the diff itself (correctness, completeness for the issue, \
         risk, clarity). Do not run or change anything; read and judge.\n\n",
        sorted.len(),
        labels.join(", ")
    ));
    p.push_str("# The issue\n\n");
    p.push_str(&format!("Title: {}\n\n", issue_title.trim()));
    if !issue_body.trim().is_empty() {
        p.push_str(issue_body.trim());
        p.push_str("\n\n");
    }
    for c in &sorted {
        p.push_str(&format!("# Candidate {}\n\n", c.label));
        p.push_str(&check_section(c.check.as_ref()));
        p.push_str("## Diff\n\n");
        if c.diff.trim().is_empty() {
            p.push_str("(no change)\n\n");
        } else {
            if c.diff_truncated {
                p.push_str(
                    "The diff below is TRUNCATED: only its beginning is shown; do not count what is \
                     missing as absent from the change.\n\n",
                );
            }
            p.push_str(&fenced("diff", &c.diff));
        }
    }
    p.push_str(&answer_instructions(&labels));
    p
}

/// A check result without its duration (a run time is no evidence of quality, and a hint of origin).
fn check_section(check: Option<&CheckResult>) -> String {
    let Some(c) = check else {
        return "## Check\n\nNot checked.\n\n".to_owned();
    };
    let verdict = if let Some(e) = &c.error {
        format!("could not run: {e}")
    } else if c.timed_out {
        "FAILED: timed out (killed)".to_owned()
    } else if c.passed_check() {
        "passed (exit code 0)".to_owned()
    } else {
        match c.exit_code {
            Some(code) => format!("FAILED (exit code {code})"),
            None => "FAILED (killed)".to_owned(),
        }
    };
    let mut s = format!("## Check\n\nCommand: `{}`\nResult: {verdict}\n", c.command);
    if let (Some(passed), Some(total)) = (c.passed, c.total) {
        s.push_str(&format!(
            "Tests: {passed} of {total} passed, {} failed\n",
            c.failed.unwrap_or(total - passed)
        ));
    }
    let lines: Vec<&str> = c.tail.lines().collect();
    let tail = lines[lines.len().saturating_sub(CHECK_TAIL_LINES)..].join("\n");
    if !tail.trim().is_empty() {
        s.push_str("Last lines of its output:\n\n");
        s.push_str(&fenced("text", &tail));
    } else {
        s.push('\n');
    }
    s
}

/// `body` in a code fence longer than any backtick run inside it.
fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in body.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!(
        "{fence}{lang}\n{}\n{fence}\n\n",
        body.trim_end_matches('\n')
    )
}

fn answer_instructions(labels: &[String]) -> String {
    let example: Vec<String> = labels
        .iter()
        .map(|l| format!("{{\"label\":\"{l}\",\"score\":0,\"reasons\":[\"...\"]}}"))
        .collect();
    format!(
        "# Your answer\n\n\
         End your answer with exactly one JSON object, in a ```json fence, of this shape:\n\n\
         ```json\n{{\"candidates\":[{}],\"best\":\"{}\"}}\n```\n\n\
         Rules:\n\
         - one entry per candidate, each of {} exactly once, and no other label;\n\
         - \"score\": an integer from 0 (worst) to {MAX_SCORE} (best);\n\
         - \"reasons\": at least one reason per candidate; every reason must cite either its check \
         (a failing check or test, by name where the output shows it) or a specific line of its diff \
         as path:line (for example src/lib.rs:42, the line number in the new file);\n\
         - \"best\": the label of the candidate you would merge.\n\
         An answer that breaks a rule is rejected as a whole, not repaired.\n",
        example.join(","),
        labels.first().map_or("A", String::as_str),
        labels.join(", "),
    )
}

/// One candidate's judgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CandidateVerdict {
    pub label: char,
    pub score: u8,
    pub reasons: Vec<String>,
}

/// The reviewer's validated verdict, candidates in label order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub candidates: Vec<CandidateVerdict>,
    pub best: char,
}

/// Why a reviewer's answer is not a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerdictError {
    /// No JSON object with a `candidates` field in the answer.
    NoVerdict,
    /// Several different verdict objects: which one is meant cannot be told.
    Ambiguous(usize),
    /// The verdict breaks these rules (every problem found, in order).
    Invalid(Vec<String>),
}

impl fmt::Display for VerdictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerdictError::NoVerdict => write!(
                f,
                "the answer holds no JSON object with a \"candidates\" field"
            ),
            VerdictError::Ambiguous(n) => write!(
                f,
                "the answer holds {n} different verdict objects; exactly one is expected"
            ),
            VerdictError::Invalid(problems) => write!(f, "{}", problems.join("; ")),
        }
    }
}

impl std::error::Error for VerdictError {}

/// Finds the verdict in the reviewer's final text (fenced or not, with prose around it) and validates it
/// against `labels` (the labels of the candidates it was shown).
pub fn parse_verdict(text: &str, labels: &[char]) -> Result<Verdict, VerdictError> {
    let found = verdict_objects(text);
    let first = match found.as_slice() {
        [] => return Err(VerdictError::NoVerdict),
        [one, rest @ ..] => {
            if rest.iter().any(|o| o != one) {
                return Err(VerdictError::Ambiguous(distinct(&found)));
            }
            one
        }
    };
    validate(first, labels).map_err(VerdictError::Invalid)
}

fn distinct(found: &[Value]) -> usize {
    let mut seen: Vec<&Value> = Vec::new();
    for v in found {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.len()
}

/// Every top-level JSON object in `text` that has a `candidates` field (an object inside another one
/// is part of it, not another verdict).
fn verdict_objects(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(offset) = text[i..].find('{') {
        let start = i + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                let end = start + stream.byte_offset();
                if value.get("candidates").is_some() {
                    found.push(value);
                }
                i = end.max(start + 1);
            }
            _ => i = start + 1,
        }
    }
    found
}

fn validate(v: &Value, labels: &[char]) -> Result<Verdict, Vec<String>> {
    let mut problems = Vec::new();
    let known = labels
        .iter()
        .map(char::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let Some(list) = v.get("candidates").and_then(Value::as_array) else {
        return Err(vec!["\"candidates\" must be a list".to_owned()]);
    };
    let mut judged: Vec<CandidateVerdict> = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let Some(label) = entry.get("label").and_then(label_of) else {
            problems.push(format!(
                "entry {} of \"candidates\": \"label\" must be one letter (one of {known})",
                i + 1
            ));
            continue;
        };
        if !labels.contains(&label) {
            problems.push(format!(
                "unknown candidate {label} (the candidates are {known})"
            ));
            continue;
        }
        if judged.iter().any(|j| j.label == label) {
            problems.push(format!("candidate {label} appears more than once"));
            continue;
        }
        let score = match entry.get("score") {
            None => {
                problems.push(format!("candidate {label}: \"score\" is missing"));
                None
            }
            Some(s) => match score_of(s) {
                Ok(score) => Some(score),
                Err(e) => {
                    problems.push(format!("candidate {label}: {e}"));
                    None
                }
            },
        };
        let reasons = reasons_of(label, entry.get("reasons"), &mut problems);
        if let (Some(score), Some(reasons)) = (score, reasons) {
            judged.push(CandidateVerdict {
                label,
                score,
                reasons,
            });
        } else {
            // Counted as present, so that it is not also reported missing.
            judged.push(CandidateVerdict {
                label,
                score: 0,
                reasons: Vec::new(),
            });
        }
    }
    for label in labels {
        if !judged.iter().any(|j| j.label == *label) {
            problems.push(format!("candidate {label} is missing"));
        }
    }
    let best = match v.get("best") {
        None => {
            problems.push("\"best\" is missing".to_owned());
            None
        }
        Some(b) => match label_of(b) {
            Some(best) if labels.contains(&best) => Some(best),
            _ => {
                problems.push(format!("\"best\" must be one of {known}, not {}", short(b)));
                None
            }
        },
    };
    match best {
        Some(best) if problems.is_empty() => {
            judged.sort_by_key(|j| j.label);
            Ok(Verdict {
                candidates: judged,
                best,
            })
        }
        _ => Err(problems),
    }
}

/// A label: a string of exactly one character.
fn label_of(v: &Value) -> Option<char> {
    let s = v.as_str()?.trim();
    let mut chars = s.chars();
    let c = chars.next()?;
    chars.next().is_none().then_some(c)
}

fn score_of(v: &Value) -> Result<u8, String> {
    let Some(n) = v.as_number() else {
        return Err(format!(
            "score must be an integer from 0 to {MAX_SCORE}, not {}",
            short(v)
        ));
    };
    if let Some(i) = n.as_i64() {
        return u8::try_from(i)
            .ok()
            .filter(|s| *s <= MAX_SCORE)
            .ok_or_else(|| format!("score {i} is not in 0..={MAX_SCORE}"));
    }
    if n.as_u64().is_some() {
        return Err(format!("score {n} is not in 0..={MAX_SCORE}"));
    }
    Err(format!("score {n} is not an integer"))
}

fn reasons_of(label: char, v: Option<&Value>, problems: &mut Vec<String>) -> Option<Vec<String>> {
    let Some(list) = v.and_then(Value::as_array) else {
        problems.push(format!(
            "candidate {label}: \"reasons\" must be a list of at least one reason"
        ));
        return None;
    };
    if list.is_empty() {
        problems.push(format!("candidate {label}: no reason given"));
        return None;
    }
    let mut reasons = Vec::new();
    let mut ok = true;
    for (i, r) in list.iter().enumerate() {
        let n = i + 1;
        match r.as_str().map(str::trim) {
            None => {
                problems.push(format!(
                    "candidate {label}: reason {n} is not text: {}",
                    short(r)
                ));
                ok = false;
            }
            Some("") => {
                problems.push(format!("candidate {label}: reason {n} is empty"));
                ok = false;
            }
            Some(text) if !cites_evidence(text) => {
                problems.push(format!(
                    "candidate {label}: reason {n} cites neither a check nor a path:line of the diff: {:?}",
                    cut(text, 80)
                ));
                ok = false;
            }
            Some(text) => reasons.push(text.to_owned()),
        }
    }
    ok.then_some(reasons)
}

/// Whether a reason cites a check (check or test wording) or a line of the diff (`path:line`).
pub fn cites_evidence(reason: &str) -> bool {
    let lower = reason.to_lowercase();
    lower.contains("check") || lower.contains("test") || cites_path_line(reason)
}

/// Whether `text` holds `path:line`: a path (letters, digits, `_`, `-`, `.`, `/`, with a `.` or a
/// `/` in it and a letter) right before `:` and a line number.
fn cites_path_line(text: &str) -> bool {
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(':') {
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            continue;
        }
        let path: &str = {
            let start = text[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
                .map_or(0, |p| p + 1);
            &text[start..i]
        };
        let path = path.trim_start_matches("./");
        if path.contains(['.', '/'])
            && path.chars().any(|c| c.is_ascii_alphabetic())
            && !path.ends_with(['.', '/'])
        {
            return true;
        }
    }
    false
}

fn short(v: &Value) -> String {
    cut(&v.to_string(), 40)
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

#[cfg(test)]
mod tests;
