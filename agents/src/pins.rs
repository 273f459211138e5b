//! The builds of the npm agent CLIs Muster is tested with, read from `.ci/agent-clis.txt` at compile time:
//! the one place their versions are written. CI installs them from that file, the Dockerfile's runner image
//! does too, and from here come the minimum versions [`crate::detect`] checks and the install hints the
//! Runtimes page and `muster runtime detect` print.

use std::sync::LazyLock;

use crate::RuntimeKind;
use crate::detect::{Version, parse_version};

/// The pin file, as compiled in.
const PIN_FILE: &str = include_str!("../../.ci/agent-clis.txt");

/// One pinned CLI: its binary, its npm package and the version of it Muster is tested with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub binary: String,
    pub package: String,
    pub version: Version,
}

impl Pin {
    /// `npm install -g <package>@<version>`.
    pub fn install_command(&self) -> String {
        format!("npm install -g {}@{}", self.package, self.version)
    }
}

/// Parses the pin file's lines (`BINARY PACKAGE@VERSION`; `#` comments and blank lines skipped); a line
/// that is not that shape is an error naming it.
pub fn parse(text: &str) -> Result<Vec<Pin>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut words = line.split_whitespace();
            let (Some(binary), Some(spec), None) = (words.next(), words.next(), words.next())
            else {
                return Err(format!("{line:?} is not \"BINARY PACKAGE@VERSION\""));
            };
            // The version follows the last `@` (a scoped package starts with one).
            let Some((package, version)) = spec.rsplit_once('@').filter(|(p, _)| !p.is_empty())
            else {
                return Err(format!("{line:?} names no version (PACKAGE@VERSION)"));
            };
            let version = parse_version(version)
                .filter(|v| v.to_string() == version)
                .ok_or_else(|| format!("{line:?}: {version:?} is not a version like 1.2.3"))?;
            Ok(Pin {
                binary: binary.to_owned(),
                package: package.to_owned(),
                version,
            })
        })
        .collect()
}

static PINS: LazyLock<Vec<Pin>> = LazyLock::new(|| {
    parse(PIN_FILE).unwrap_or_else(|e| panic!(".ci/agent-clis.txt compiled into Muster: {e}"))
});

/// The pinned build of `kind`'s CLI; `None` for the kinds that are not an npm CLI (local models, custom
/// commands).
pub fn pin(kind: RuntimeKind) -> Option<&'static Pin> {
    let names = crate::detect::binary_names(kind);
    PINS.iter().find(|p| names.contains(&p.binary.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_npm_cli_is_pinned_once_and_nothing_else_is() {
        let pins = parse(PIN_FILE).unwrap();
        for kind in RuntimeKind::ALL {
            let pinned = pins
                .iter()
                .filter(|p| crate::detect::binary_names(kind).contains(&p.binary.as_str()))
                .count();
            let npm = matches!(
                kind,
                RuntimeKind::Claude | RuntimeKind::Codex | RuntimeKind::Opencode
            );
            assert_eq!(pinned, usize::from(npm), "{kind:?}");
        }
        assert_eq!(pins.len(), 3, "{pins:?}");
        let claude = pin(RuntimeKind::Claude).unwrap();
        assert_eq!(claude.package, "@anthropic-ai/claude-code");
        assert_eq!(
            claude.install_command(),
            format!(
                "npm install -g @anthropic-ai/claude-code@{}",
                claude.version
            )
        );
    }

    #[test]
    fn a_malformed_pin_line_is_named() {
        assert_eq!(
            parse("# c\n\nclaude @anthropic-ai/claude-code@2.1.197\n")
                .unwrap()
                .len(),
            1
        );
        for (text, says) in [
            ("claude", "is not \"BINARY PACKAGE@VERSION\""),
            (
                "claude pkg@1.2.3 extra",
                "is not \"BINARY PACKAGE@VERSION\"",
            ),
            ("claude @scope/pkg", "names no version"),
            ("claude pkg@latest", "is not a version like 1.2.3"),
            ("claude pkg@1.2.3-beta", "is not a version like 1.2.3"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
