//! Local OpenAI-compatible servers (llama-server, Ollama, llamafile, vLLM, LM Studio).
//!
//! Muster runs the agent loop for these itself (ARCHITECTURE.md §5), as a child process of its own binary:
//! [`Adapter::command`] launches `<muster> llama-loop …` ([`RunSpec::binary`] is the `muster` executable for
//! this kind), so stall, budget, cancel and timeouts apply as to any CLI. The loop prints one
//! [`AgentEvent`] JSON object per line, which [`Adapter::parse_line`] reads back. The brief (`AGENTS.md` in the
//! working directory) and the skills folder become the system prompt; the prompt arrives on stdin.
//!
//! Detection of the server binaries ([`BINARIES`], [`detect_binaries`]) reuses [`crate::detect`].

use crate::adapter::{
    Adapter, LaunchSpec, PermissionMode, RunSpec, RuntimeKind, base_env, finish_env,
};
use crate::detect::{Detection, detect_with_timeout};
use crate::{AgentEvent, custom};

/// Binaries that indicate a local runtime, in order of preference.
pub const BINARIES: [&str; 4] = ["llama-server", "ollama", "llamafile", "llama-cli"];

/// The brief file the loop reads as its system prompt (the name the run engine writes for non-Claude kinds).
pub const BRIEF_FILE: &str = "AGENTS.md";

/// The subcommand of the `muster` binary that runs the loop.
pub const SUBCOMMAND: &str = "llama-loop";

/// Where OpenAI-compatible local clients read their server's URL from.
pub const BASE_URL_VARS: [&str; 2] = ["OPENAI_BASE_URL", "LLAMA_API_BASE"];

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

    fn command(&self, spec: &RunSpec) -> crate::Result<LaunchSpec> {
        Ok(command(spec))
    }

    fn skills_place(&self) -> crate::adapter::SkillsPlace {
        crate::adapter::SkillsPlace::Brief
    }
}

/// The variable the loop reads its model server's URL from: never an argument, because a URL may carry
/// credentials (`http://user:password@host`) and every process's command line is public on the machine.
pub const BASE_URL_ENV: &str = "MUSTER_LLAMA_BASE_URL";

/// The repository's own skills folder, which the local loop reads (Muster's skills for the agent reach it
/// through the brief).
pub const REPO_SKILLS_DIR: &str = ".agents/skills";

/// `<muster> llama-loop --system-file <workdir>/AGENTS.md --skills-dir … --workdir … [--model]
/// [--read-only] <extra args>`, the prompt on stdin, the base URL in [`BASE_URL_ENV`]. Sampling settings
/// arrive as extra arguments (`--temperature`, `--max-tokens`, `--ctx-size`, `--no-tools`).
pub fn command(spec: &RunSpec) -> LaunchSpec {
    let dir = &spec.workdir;
    let mut args: Vec<String> = vec![
        SUBCOMMAND.into(),
        "--system-file".into(),
        dir.join(BRIEF_FILE).display().to_string(),
        "--skills-dir".into(),
        dir.join(REPO_SKILLS_DIR).display().to_string(),
        "--workdir".into(),
        dir.display().to_string(),
    ];
    if let Some(model) = spec.model.as_deref().filter(|m| !m.trim().is_empty()) {
        args.extend(["--model".into(), model.trim().to_owned()]);
    }
    if spec.permission_mode == PermissionMode::ReadOnly {
        args.push("--read-only".into());
    }
    args.extend(spec.extra_args.iter().cloned());
    LaunchSpec {
        program: spec.binary.clone(),
        args,
        env: {
            let mut env = finish_env(base_env(spec), spec);
            // Last, so an agent's own variable of that name cannot point the loop elsewhere.
            env.retain(|(k, _)| k != BASE_URL_ENV);
            if let Some(url) = spec.base_url.as_deref().filter(|u| !u.trim().is_empty()) {
                env.push((BASE_URL_ENV.into(), url.trim().to_owned()));
            }
            env
        },
        cwd: spec.workdir.clone(),
        stdin: Some(spec.prompt.clone()),
        files: Vec::new(),
    }
}

/// Every local runtime binary found on `PATH` ([`BINARIES`]), each with its `--version`.
pub async fn detect_binaries() -> Vec<Detection> {
    let found = tokio::task::spawn_blocking(|| {
        BINARIES
            .iter()
            .filter_map(|name| which::which(name).ok())
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let mut out = Vec::new();
    for path in found {
        out.push(
            detect_with_timeout(
                RuntimeKind::Llama,
                Some(&path),
                crate::detect::VERSION_TIMEOUT,
            )
            .await,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn launches_the_muster_loop_with_the_brief_and_reads_native_events() {
        let spec = RunSpec {
            binary: PathBuf::from("/opt/muster"),
            prompt: "Work on MUS-1".into(),
            model: Some("smollm2".into()),
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            extra_args: vec!["--temperature".into(), "0".into()],
            permission_mode: PermissionMode::ReadOnly,
            env: vec![("MUSTER_ISSUE".into(), "MUS-1".into())],
            workdir: PathBuf::from("/runs/r1/work"),
            home_dir: PathBuf::from("/runs/r1/home"),
            ..RunSpec::default()
        };
        let launch = LlamaAdapter.command(&spec).unwrap();
        assert_eq!(launch.program, PathBuf::from("/opt/muster"));
        assert_eq!(
            launch.args,
            [
                "llama-loop",
                "--system-file",
                "/runs/r1/work/AGENTS.md",
                "--skills-dir",
                "/runs/r1/work/.agents/skills",
                "--workdir",
                "/runs/r1/work",
                "--model",
                "smollm2",
                "--read-only",
                "--temperature",
                "0"
            ]
        );
        assert_eq!(launch.stdin.as_deref(), Some("Work on MUS-1"));
        assert_eq!(launch.cwd, PathBuf::from("/runs/r1/work"));
        assert_eq!(launch.env_value("HOME"), Some("/runs/r1/home"));
        assert_eq!(launch.env_value("MUSTER_ISSUE"), Some("MUS-1"));
        // The URL (credentials and all) travels in the environment, never on the command line.
        assert_eq!(
            launch.env_value(BASE_URL_ENV),
            Some("http://127.0.0.1:8080/v1")
        );

        let bare = LlamaAdapter.command(&RunSpec::default()).unwrap();
        assert!(
            !bare
                .args
                .iter()
                .any(|a| a == "--base-url" || a == "--model" || a == "--read-only")
        );

        assert_eq!(
            LlamaAdapter.parse_line(r#"{"kind":"text","text":"hi"}"#),
            vec![AgentEvent::Text { text: "hi".into() }]
        );
        assert_eq!(
            LlamaAdapter.parse_line(r#"{"kind":"usage","input":3,"output":5,"cache_read":0,"cache_write":0,"cost_usd":0.0}"#),
            vec![AgentEvent::Usage(crate::TokenUsage {
                input: 3,
                output: 5,
                cost_usd: Some(0.0),
                ..Default::default()
            })]
        );
        assert_eq!(
            LlamaAdapter.parse_line("not json"),
            vec![AgentEvent::raw("not json")]
        );
        assert_eq!(
            LlamaAdapter.skills_place(),
            crate::adapter::SkillsPlace::Brief
        );
    }
}
