//! Pass/fail counts read from a test runner's output: the summary lines of cargo test, pytest, go test
//! and node's built-in runner (`node --test`). A pure function of the text; what it does not recognise
//! gives `None`, never a guess.
//!
//! What counts: tests that passed and tests that failed (pytest's errors and node's cancelled tests count
//! as failed); skipped, ignored and todo tests are in neither, so `total = passed + failed`. Several
//! summaries in one output (cargo's one per test binary, a check that runs two tools) are summed. `go
//! test` without `-v` names only failing tests, so there the counts are of packages (`ok` / `FAIL` lines);
//! with `-v` they are of top-level tests (`--- PASS:` / `--- FAIL:`).

/// How many tests passed and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub passed: u64,
    pub failed: u64,
    pub total: u64,
}

impl Counts {
    fn add(&mut self, passed: u64, failed: u64) {
        self.passed += passed;
        self.failed += failed;
        self.total = self.passed + self.failed;
    }
}

/// The counts the summaries in `output` show, summed; `None` when it shows none this module knows.
pub fn counts(output: &str) -> Option<Counts> {
    let mut reader = Reader::default();
    for line in output.lines() {
        reader.line(line);
    }
    reader.counts()
}

/// [`counts`] line by line, for output too long to keep: feed every line, then ask.
#[derive(Debug, Default)]
pub struct Reader {
    cargo: Option<Counts>,
    pytest: Option<Counts>,
    node: Node,
    go: Go,
}

impl Reader {
    /// Takes one output line (without its newline) into account.
    pub fn line(&mut self, raw: &str) {
        let line = strip_ansi(raw);
        let line = line.trim_end();
        if let Some((p, f)) = cargo_line(line) {
            self.cargo.get_or_insert_default().add(p, f);
        } else if let Some((p, f)) = pytest_line(line) {
            self.pytest.get_or_insert_default().add(p, f);
        } else if !self.node.take(line) {
            self.go.take(line);
        }
    }

    /// The counts of every summary seen so far, summed; `None` when none was seen.
    pub fn counts(&self) -> Option<Counts> {
        let found = [
            self.cargo,
            self.pytest,
            self.node.counts(),
            self.go.counts(),
        ];
        found.into_iter().flatten().reduce(|mut sum, c| {
            sum.add(c.passed, c.failed);
            sum
        })
    }
}

/// `test result: ok. 12 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s`
fn cargo_line(line: &str) -> Option<(u64, u64)> {
    let rest = line.trim_start().strip_prefix("test result: ")?;
    let rest = rest
        .strip_prefix("ok. ")
        .or_else(|| rest.strip_prefix("FAILED. "))?;
    let (mut passed, mut failed) = (None, None);
    for part in rest.split(';') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        match what {
            "passed" => passed = Some(n),
            "failed" => failed = Some(n),
            _ => {}
        }
    }
    Some((passed?, failed?))
}

/// `=== 1 failed, 2 passed, 1 skipped, 1 error in 0.05s ===` (with or without the bars, as `-q` prints
/// it). Every item must be one pytest names, and the line must end with its duration.
fn pytest_line(line: &str) -> Option<(u64, u64)> {
    let line = line.trim().trim_matches('=').trim();
    let (items, took) = line.rsplit_once(" in ")?;
    let seconds = took.split_whitespace().next()?.strip_suffix('s')?;
    seconds.parse::<f64>().ok()?;
    let (mut passed, mut failed, mut any) = (0, 0, false);
    for item in items.split(", ") {
        let (n, what) = item.trim().split_once(' ')?;
        let n: u64 = n.parse().ok()?;
        match what {
            "passed" => passed += n,
            "failed" | "error" | "errors" => failed += n,
            "skipped" | "xfailed" | "xpassed" | "deselected" | "warning" | "warnings" | "rerun" => {
            }
            _ => return None,
        }
        any |= matches!(what, "passed" | "failed" | "error" | "errors");
    }
    any.then_some((passed, failed))
}

/// Node's summary: `# tests 6`, `# pass 4`, `# fail 1`, `# cancelled 0` (TAP, the default when the
/// output is not a terminal) or the same with `ℹ ` (the spec reporter).
#[derive(Debug, Default)]
struct Node {
    tests: bool,
    pass: Option<u64>,
    fail: u64,
}

impl Node {
    fn take(&mut self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ ")) else {
            return false;
        };
        let Some((key, n)) = rest.split_once(' ') else {
            return false;
        };
        let Ok(n) = n.trim().parse::<u64>() else {
            return false;
        };
        match key {
            "tests" => self.tests = true,
            "pass" => *self.pass.get_or_insert(0) += n,
            "fail" | "cancelled" => self.fail += n,
            _ => return false,
        }
        true
    }

    fn counts(&self) -> Option<Counts> {
        let pass = self.pass.filter(|_| self.tests)?;
        let mut c = Counts::default();
        c.add(pass, self.fail);
        Some(c)
    }
}

/// `go test`: top-level `--- PASS:` / `--- FAIL:` lines with `-v` (`=== RUN` lines show it), else the
/// packages' `ok` / `FAIL` lines.
#[derive(Debug, Default)]
struct Go {
    /// Whether `=== RUN` lines show `-v` (without it only failing tests are named).
    verbose: bool,
    tests: Option<(u64, u64)>,
    packages: Option<(u64, u64)>,
}

impl Go {
    fn take(&mut self, line: &str) -> bool {
        if line.starts_with("=== RUN ") {
            self.verbose = true;
        } else if line.starts_with("--- PASS: ") {
            self.tests.get_or_insert_default().0 += 1;
        } else if line.starts_with("--- FAIL: ") {
            self.tests.get_or_insert_default().1 += 1;
        } else if line.strip_prefix("ok").is_some_and(is_package) {
            self.packages.get_or_insert_default().0 += 1;
        } else if line.strip_prefix("FAIL").is_some_and(is_package) {
            self.packages.get_or_insert_default().1 += 1;
        } else {
            return false;
        }
        true
    }

    fn counts(&self) -> Option<Counts> {
        let tests = self.tests.filter(|_| self.verbose);
        let (passed, failed) = tests.or(self.packages)?;
        let mut c = Counts::default();
        c.add(passed, failed);
        Some(c)
    }
}

/// After `ok` / `FAIL`: a tab, then a package path and its time, `(cached)` or `[build failed]`.
fn is_package(rest: &str) -> bool {
    let rest = rest.trim_start_matches(' ');
    let Some(rest) = rest.strip_prefix('\t') else {
        return false;
    };
    let mut parts = rest.split(['\t', ' ']).filter(|p| !p.is_empty());
    let (Some(package), Some(tail)) = (parts.next(), parts.next()) else {
        return false;
    };
    !package.is_empty()
        && (tail.ends_with('s') && tail[..tail.len() - 1].parse::<f64>().is_ok()
            || tail == "(cached)"
            || tail == "[build")
}

/// `line` without ANSI colour sequences (`ESC [ … letter`).
fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    //! The fixtures in `fixtures/checks/` are real output made on this machine: `cargo test` on a
    //! tiny crate (a unit-test binary with a failing and an ignored test, an integration-test binary, the
    //! doc-tests), `node --test` (node 20; the TAP reporter it uses when not on a terminal, and
    //! `--test-reporter=spec`), and pytest 9.2 (with and without `-q`). Go is not installed here: the
    //! `go_*.txt` fixtures are written after the output format `go help test` and the testing package
    //! document (`--- FAIL: Name (0.00s)`, `ok  \tpkg\t0.002s`, `FAIL\tpkg\t0.002s`).
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/checks")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn c(passed: u64, failed: u64) -> Option<Counts> {
        Some(Counts {
            passed,
            failed,
            total: passed + failed,
        })
    }

    #[test]
    fn cargo_test_sums_its_binaries() {
        // lib: 2 passed 1 failed 1 ignored; tests/more.rs: 2 passed; doc-tests: 0.
        assert_eq!(counts(&fixture("cargo_fail.txt")), c(4, 1));
        assert_eq!(counts(&fixture("cargo_ok.txt")), c(5, 0));
    }

    #[test]
    fn pytest_counts_errors_as_failures_and_not_skips() {
        assert_eq!(counts(&fixture("pytest_fail.txt")), c(2, 2));
        assert_eq!(counts(&fixture("pytest_fail_q.txt")), c(2, 2));
        assert_eq!(counts(&fixture("pytest_ok.txt")), c(2, 0));
        assert_eq!(
            counts("====== 3 failed, 10 passed, 2 warnings in 65.20s (0:01:05) ======"),
            c(10, 3)
        );
    }

    #[test]
    fn node_tap_and_spec_summaries() {
        assert_eq!(counts(&fixture("node_fail.txt")), c(4, 1));
        assert_eq!(counts(&fixture("node_fail_spec.txt")), c(4, 1));
        assert_eq!(counts(&fixture("node_ok.txt")), c(5, 0));
    }

    #[test]
    fn go_counts_tests_with_v_else_packages() {
        assert_eq!(counts(&fixture("go_verbose.txt")), c(3, 1));
        assert_eq!(counts(&fixture("go_fail.txt")), c(1, 1));
        assert_eq!(counts(&fixture("go_ok.txt")), c(2, 0));
    }

    #[test]
    fn two_tools_in_one_check_are_summed() {
        let both = format!(
            "{}\n{}",
            fixture("cargo_ok.txt"),
            fixture("node_fail_spec.txt")
        );
        assert_eq!(counts(&both), c(9, 1));
    }

    #[test]
    fn colours_are_ignored() {
        let coloured = "test result: \u{1b}[31mFAILED\u{1b}[0m. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s";
        assert_eq!(counts(coloured), c(1, 2));
    }

    #[test]
    fn unknown_output_gives_nothing() {
        for text in [
            "",
            "all good\n",
            "Build succeeded in 3s",
            "12 passed",
            "test result: maybe. 3 passed; 0 failed",
            "== 3 passed, 2 flaky in 0.1s ==",
            "3 passed in a while",
            "# tests 5\n",
            "FAIL\n",
            "ok\n",
            "ok  \tsomething",
            "make: *** [Makefile:3: test] Error 2",
        ] {
            assert_eq!(counts(text), None, "{text:?}");
        }
    }
}
