//! `muster runtime detect`: which agent CLIs and local model servers this machine has, as the runner would
//! find them; and the hidden `muster llama-loop`, the child process a `llama` agent's run executes.

use clap::Subcommand;
use muster_llama::agent::{JsonLines, Settings, system_prompt};
use muster_llama::probe::{self, ServerStatus};
use muster_llama::{AgentEvent, EventSink};
use std::io::Read as _;
use std::path::PathBuf;

use super::output::{clean, print_json, table};
use crate::runtimes::RuntimePaths;
use crate::runtimes::{LocalModels, RuntimeCache, scan_local};
use muster_agents::detect::install_hint;

/// What to do with runtimes.
#[derive(Debug, Subcommand)]
pub enum RuntimeCommand {
    /// Detect Claude Code, Codex, OpenCode and local model servers (llama.cpp, Ollama, LM Studio, vLLM) on
    /// this machine: path or URL, version, status, models, reason.
    Detect {
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a runtime command (locally: no server needed). `llama_urls` are the explicitly configured model
/// servers, as `(source, url)`; `sandbox` is the agent sandbox mode a server here would run agents in.
pub async fn run(
    command: RuntimeCommand,
    overrides: Vec<(muster_agents::RuntimeKind, std::path::PathBuf)>,
    llama_urls: Vec<(String, String)>,
    sandbox: crate::sandbox::Mode,
) -> anyhow::Result<()> {
    let RuntimeCommand::Detect { json } = command;
    let cache = RuntimeCache::new(overrides);
    let ((_, found), local) = tokio::join!(cache.detect(), scan_local(&llama_urls));
    if json {
        let mut mode = serde_json::to_value(&sandbox)?;
        mode["description"] = sandbox.describe().into();
        return print_json(&serde_json::json!({
            "sandbox": mode,
            "runtimes": found,
            "model_servers": local.servers,
            "local_binaries": local.binaries,
        }));
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|d| {
            let status = d.status.as_str().to_owned();
            let what = match (&d.reason, install_hint(d.kind)) {
                (Some(reason), Some(hint)) if d.version.is_none() || status == "too_old" => {
                    format!("{reason}; {hint}")
                }
                (Some(reason), _) => reason.clone(),
                (None, _) => String::new(),
            };
            vec![
                d.kind.label().to_owned(),
                status,
                d.version.clone().unwrap_or_else(|| "-".into()),
                d.path
                    .as_ref()
                    .map_or_else(|| "-".into(), |p| p.display().to_string()),
                clean(&what),
            ]
        })
        .collect();
    println!("Agent sandbox: {}\n", sandbox.describe());
    print!(
        "{}",
        table(&["RUNTIME", "STATUS", "VERSION", "PATH", "NOTE"], &rows)
    );
    print_local(&local);
    Ok(())
}

/// The model-server table (or a line saying none answered).
fn print_local(local: &LocalModels) {
    println!();
    if local.servers.is_empty() {
        let ports: Vec<String> = probe::DEFAULT_PORTS
            .iter()
            .map(|(p, _)| p.to_string())
            .collect();
        println!(
            "No local model server answered (checked 127.0.0.1 ports {}; set MUSTER_LLAMA_URL for another).",
            ports.join(", ")
        );
        return;
    }
    let rows: Vec<Vec<String>> = local
        .servers
        .iter()
        .map(|s| {
            vec![
                s.url.clone(),
                s.kind.map_or("-", |k| k.as_str()).to_owned(),
                s.status.as_str().to_owned(),
                if s.models.is_empty() {
                    "-".to_owned()
                } else {
                    clean(&s.models.join(", "))
                },
                clean(s.version.as_deref().unwrap_or("-")),
                clean(&s.source),
                clean(s.reason.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "MODEL SERVER",
                "KIND",
                "STATUS",
                "MODELS",
                "VERSION",
                "FOUND BY",
                "NOTE"
            ],
            &rows
        )
    );
}

/// `muster llama-loop`: reads the prompt from stdin, finds the server when no URL is given, runs the loop and
/// prints its events as JSON lines. Fails (exit 1) when the run does not succeed. `env` is this process's
/// environment, handed to the commands the model runs.
pub async fn llama_loop(args: LlamaLoopArgs, env: Vec<(String, String)>) -> anyhow::Result<()> {
    let mut sink = JsonLines(std::io::stdout());
    let read = tokio::task::spawn_blocking(|| {
        let mut prompt = String::new();
        std::io::stdin().read_to_string(&mut prompt).map(|_| prompt)
    })
    .await;
    let prompt = match read {
        Ok(Ok(prompt)) => prompt,
        Ok(Err(e)) => return fail(&mut sink, format!("cannot read the prompt from stdin: {e}")),
        Err(e) => return fail(&mut sink, format!("cannot read the prompt from stdin: {e}")),
    };
    let system = match system_prompt(&args.system_file, args.skills_dir.as_deref()) {
        Ok(text) => text,
        Err(e) => {
            let shown = args.system_file.display();
            return fail(&mut sink, format!("cannot read the brief {shown}: {e}"));
        }
    };
    let Some(base_url) = find_server(&args).await else {
        return fail(
            &mut sink,
            "no local model server: give the agent a base URL, set MUSTER_LLAMA_URL, or start llama-server \
             or Ollama on its usual port"
                .to_owned(),
        );
    };
    let mut settings = Settings::new(&base_url, args.workdir.clone(), system, prompt);
    settings.model = args.model.clone();
    settings.temperature = args.temperature;
    settings.max_tokens = args.max_tokens;
    settings.context_size = args.ctx_size;
    settings.tools = !args.no_tools;
    settings.allow_write = !args.read_only;
    settings.max_turns = args.max_turns;
    settings.command_timeout = std::time::Duration::from_secs(args.command_timeout);
    settings.idle_timeout = std::time::Duration::from_secs(args.idle_timeout);
    // The commands the model runs do not need the server's URL (nor its credentials).
    settings.command_env = env
        .into_iter()
        .filter(|(k, _)| k != muster_agents::llama::BASE_URL_ENV)
        .collect();
    if muster_llama::run(&settings, &mut sink).await {
        Ok(())
    } else {
        anyhow::bail!("the local model run did not succeed (see its events)")
    }
}

/// The loop's server: `--base-url`, else an explicitly configured one, else the first ready default port.
async fn find_server(args: &LlamaLoopArgs) -> Option<String> {
    if let Some(url) = args.base_url.as_deref().filter(|u| !u.trim().is_empty()) {
        return Some(url.trim().to_owned());
    }
    if let Some((_, url)) = args.servers.llama_urls().into_iter().next() {
        return Some(url);
    }
    probe::scan(probe::default_candidates(), probe::PROBE_TIMEOUT)
        .await
        .into_iter()
        .find(|s| s.status == ServerStatus::Ready)
        .map(|s| s.url)
}

/// Reports a failure before the loop could start, as the loop would, and exits 1.
fn fail(sink: &mut dyn EventSink, message: String) -> anyhow::Result<()> {
    sink.emit(AgentEvent::error(&message));
    sink.emit(AgentEvent::Finished {
        ok: false,
        summary: Some(message.clone()),
    });
    anyhow::bail!(message)
}

/// `muster llama-loop` options (set by the llama adapter from the agent profile).
#[derive(Debug, clap::Args)]
pub struct LlamaLoopArgs {
    /// Model server URL, with or without /v1 [default: MUSTER_LLAMA_URL, else the first local server found].
    /// The runner passes it in the environment: a URL with credentials is refused on the command line.
    #[arg(long, env = muster_agents::llama::BASE_URL_ENV, hide_env_values = true)]
    pub base_url: Option<String>,
    /// Model name [default: the first the server lists].
    #[arg(long)]
    pub model: Option<String>,
    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Most tokens per answer.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// The model's context size in tokens: the conversation must fit.
    #[arg(long)]
    pub ctx_size: Option<u32>,
    /// Offer no tools: one streamed answer becomes the summary.
    #[arg(long)]
    pub no_tools: bool,
    /// Offer only the reading tools (no write_file, no run_command).
    #[arg(long)]
    pub read_only: bool,
    /// Most model turns per run.
    #[arg(long, default_value_t = 20)]
    pub max_turns: u32,
    /// Seconds a run_command call may take.
    #[arg(long, default_value_t = 60)]
    pub command_timeout: u64,
    /// Seconds of silence from the server within a stream before the run fails.
    #[arg(long, default_value_t = 120)]
    pub idle_timeout: u64,
    /// The brief: the system prompt.
    #[arg(long)]
    pub system_file: PathBuf,
    /// A folder of <skill>/SKILL.md files appended to the system prompt.
    #[arg(long)]
    pub skills_dir: Option<PathBuf>,
    /// The run's working directory; tools cannot leave it.
    #[arg(long, default_value = ".")]
    pub workdir: PathBuf,
    #[command(flatten)]
    pub servers: RuntimePaths,
}
