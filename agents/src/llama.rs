//! Local OpenAI-compatible servers (llama-server, Ollama, llamafile, …).
//!
//! Muster runs the agent loop for these itself (ARCHITECTURE.md §5), so there is no CLI to launch:
//! [`Adapter::command`] fails with [`Error::NoLaunch`]. Detection looks for the server binaries
//! ([`BINARIES`]); events from the loop travel as Muster's own `AgentEvent` JSON, which
//! [`Adapter::parse_line`] reads back.

use std::path::Path;

use crate::adapter::{Adapter, LaunchSpec, RunSpec, RuntimeKind};
use crate::{AgentEvent, Error, custom};

/// Binaries that indicate a local runtime, in order of preference.
pub const BINARIES: [&str; 4] = ["llama-server", "ollama", "llamafile", "llama-cli"];

/// The local-Llama adapter.
#[derive(Debug, Clone, Copy, Default)]
pub struct LlamaAdapter;

impl Adapter for LlamaAdapter {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Llama
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        custom::parse_json_line(line)
    }

    fn command(&self, _spec: &RunSpec) -> crate::Result<LaunchSpec> {
        Err(Error::NoLaunch {
            kind: RuntimeKind::Llama,
            reason: "Muster runs the agent loop against the local server itself",
        })
    }

    fn skills_dir(&self) -> &'static Path {
        Path::new(".agents/skills")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_has_no_command_and_reads_native_events() {
        let adapter = LlamaAdapter;
        let err = adapter.command(&RunSpec::default()).unwrap_err();
        assert!(matches!(
            err,
            Error::NoLaunch {
                kind: RuntimeKind::Llama,
                ..
            }
        ));
        assert_eq!(
            err.to_string(),
            "llama has no command to launch: Muster runs the agent loop against the local server itself"
        );
        assert_eq!(
            adapter.parse_line(r#"{"kind":"text","text":"hi"}"#),
            vec![AgentEvent::Text { text: "hi".into() }]
        );
        assert_eq!(adapter.skills_dir(), Path::new(".agents/skills"));
    }
}
