//! The tool set offered to a local model: `list_dir`, `read_file`, `write_file`, `run_command`.
//!
//! Path checks: the three file tools take a path relative to the working directory; absolute paths and
//! `..` components are refused, and the path as resolved on disk (symlinks followed, or for a new file its
//! nearest existing parent) must lie inside the canonical working directory. A refusal is an error *result*
//! the model sees, never a failure of the run. Writes and commands are offered only when the permission mode
//! allows writing.
//!
//! `run_command` is a plain `sh -c` in the working directory: these path checks do not (and cannot) hold
//! a shell command. What confines it, and the file tools too, is the sandbox the run engine starts the
//! whole `muster llama-loop` process in (Muster's `sandbox` module: Landlock and no capabilities), which
//! every child inherits: the run's worktree, HOME and TMPDIR are writable, system folders readable, the
//! data folder and other runs out of reach. Run outside Muster's runner (or on a server that allows
//! unsandboxed agents on a kernel without Landlock), the command has the rights of whoever started it.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use muster_agents::{AgentEvent, FileChangeKind, LaunchSpec, process};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Most bytes of a file `read_file` returns.
pub const MAX_READ_BYTES: usize = 64 * 1024;
/// Most bytes of each of stdout and stderr kept from `run_command`.
pub const MAX_COMMAND_OUTPUT: usize = 16 * 1024;
/// Most entries `list_dir` returns.
pub const MAX_DIR_ENTRIES: usize = 500;

/// Where tools act and what they may do.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    allow_write: bool,
    command_timeout: Duration,
    env: Vec<(String, String)>,
}

/// What one tool call produced: the text for the model and the events to log besides the tool pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The tool result the model sees.
    pub output: String,
    /// Whether the call failed or was refused.
    pub is_error: bool,
    /// `Command` / `FileChange` events describing what happened.
    pub events: Vec<AgentEvent>,
}

impl Outcome {
    fn ok(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            is_error: false,
            events: Vec::new(),
        }
    }

    fn err(output: impl Into<String>) -> Self {
        Self {
            output: output.into(),
            is_error: true,
            events: Vec::new(),
        }
    }
}

impl Workspace {
    /// A workspace at `root` (canonicalized; it must exist). `env` is the environment of commands.
    pub fn new(
        root: &Path,
        allow_write: bool,
        command_timeout: Duration,
        env: Vec<(String, String)>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
            allow_write,
            command_timeout,
            env,
        })
    }

    /// The canonical working directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The OpenAI `tools` array for this workspace.
    pub fn definitions(&self) -> Value {
        let path =
            json!({"type": "string", "description": "Path relative to the working directory"});
        let mut tools = vec![
            function(
                "list_dir",
                "List the entries of a directory (directories end with /).",
                &json!({"path": path}),
                &[],
            ),
            function(
                "read_file",
                "Read a text file.",
                &json!({"path": path}),
                &["path"],
            ),
        ];
        if self.allow_write {
            tools.push(function(
                "write_file",
                "Create or replace a text file.",
                &json!({"path": path, "content": {"type": "string"}}),
                &["path", "content"],
            ));
            tools.push(function(
                "run_command",
                "Run a shell command in the working directory and return its output.",
                &json!({"command": {"type": "string"}}),
                &["command"],
            ));
        }
        Value::Array(tools)
    }

    /// Runs tool `name` with its JSON `arguments` (a string, as the API sends them).
    pub async fn call(&self, name: &str, arguments: &str) -> Outcome {
        let args: Args = match serde_json::from_str(if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        }) {
            Ok(args) => args,
            Err(e) => return Outcome::err(format!("the arguments are not a JSON object: {e}")),
        };
        match (name, self.allow_write) {
            ("list_dir", _) => self.list_dir(args.path.as_deref().unwrap_or(".")).await,
            ("read_file", _) => match args.path {
                Some(p) => self.read_file(&p).await,
                None => Outcome::err("read_file needs a \"path\""),
            },
            ("write_file" | "run_command", false) => Outcome::err(format!(
                "{name} is not allowed: this agent may only read (permission mode read_only)"
            )),
            ("write_file", true) => match (args.path, args.content) {
                (Some(p), Some(c)) => self.write_file(&p, &c).await,
                _ => Outcome::err("write_file needs \"path\" and \"content\""),
            },
            ("run_command", true) => match args.command {
                Some(c) => self.run_command(&c).await,
                None => Outcome::err("run_command needs a \"command\""),
            },
            _ => Outcome::err(format!(
                "unknown tool {name:?}; the tools are list_dir, read_file, write_file and run_command"
            )),
        }
    }

    /// `rel` resolved inside the working directory, or why not. `for_write` allows a path that does not
    /// exist yet (checked through its nearest existing parent).
    pub fn resolve(&self, rel: &str, for_write: bool) -> Result<PathBuf, String> {
        let rel = rel.trim();
        let path = Path::new(if rel.is_empty() { "." } else { rel });
        if path.is_absolute() {
            return Err(format!(
                "{rel:?} is an absolute path: use a path relative to the working directory"
            ));
        }
        if path.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(format!(
                "{rel:?} uses \"..\": paths must stay inside the working directory"
            ));
        }
        let joined = self.root.join(path);
        let outside = || format!("{rel:?} leads outside the working directory");
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(_) => Err(outside()),
            Err(_) if for_write => {
                if joined.symlink_metadata().is_ok() {
                    return Err(outside()); // a dangling symlink: never write through it
                }
                let mut parent = joined.parent();
                while let Some(p) = parent {
                    if let Ok(real) = p.canonicalize() {
                        return if real.starts_with(&self.root) {
                            Ok(joined)
                        } else {
                            Err(outside())
                        };
                    }
                    parent = p.parent();
                }
                Err(outside())
            }
            Err(e) => Err(format!("{rel:?}: {e}")),
        }
    }

    async fn list_dir(&self, rel: &str) -> Outcome {
        let dir = match self.resolve(rel, false) {
            Ok(d) => d,
            Err(e) => return Outcome::err(e),
        };
        let mut reader = match tokio::fs::read_dir(&dir).await {
            Ok(r) => r,
            Err(e) => return Outcome::err(format!("cannot list {rel:?}: {e}")),
        };
        let mut names = Vec::new();
        while let Ok(Some(entry)) = reader.next_entry().await {
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        let total = names.len();
        names.truncate(MAX_DIR_ENTRIES);
        let mut out = names.join("\n");
        if total > MAX_DIR_ENTRIES {
            out.push_str(&format!("\n… and {} more", total - MAX_DIR_ENTRIES));
        }
        Outcome::ok(if total == 0 { "(empty)".into() } else { out })
    }

    async fn read_file(&self, rel: &str) -> Outcome {
        let path = match self.resolve(rel, false) {
            Ok(p) => p,
            Err(e) => return Outcome::err(e),
        };
        match tokio::fs::read(&path).await {
            Ok(bytes) => {
                let shown = &bytes[..bytes.len().min(MAX_READ_BYTES)];
                let mut text = String::from_utf8_lossy(shown).into_owned();
                if bytes.len() > MAX_READ_BYTES {
                    text.push_str(&format!(
                        "\n… [truncated: the file has {} bytes]",
                        bytes.len()
                    ));
                }
                Outcome::ok(text)
            }
            Err(e) => Outcome::err(format!("cannot read {rel:?}: {e}")),
        }
    }

    async fn write_file(&self, rel: &str, content: &str) -> Outcome {
        let path = match self.resolve(rel, true) {
            Ok(p) => p,
            Err(e) => return Outcome::err(e),
        };
        if path.is_dir() {
            return Outcome::err(format!("{rel:?} is a directory"));
        }
        let existed = path.exists();
        if let Some(parent) = path.parent()
            && let Err(e) = tokio::fs::create_dir_all(parent).await
        {
            return Outcome::err(format!("cannot create the folder of {rel:?}: {e}"));
        }
        if let Err(e) = tokio::fs::write(&path, content).await {
            return Outcome::err(format!("cannot write {rel:?}: {e}"));
        }
        let mut out = Outcome::ok(format!("wrote {} bytes to {rel}", content.len()));
        out.events.push(AgentEvent::FileChange {
            path: rel.trim().to_owned(),
            change: if existed {
                FileChangeKind::Update
            } else {
                FileChangeKind::Add
            },
        });
        out
    }

    async fn run_command(&self, command: &str) -> Outcome {
        let spec = LaunchSpec {
            program: PathBuf::from("sh"),
            args: vec!["-c".into(), command.to_owned()],
            env: self.env.clone(),
            cwd: self.root.clone(),
            ..LaunchSpec::default()
        };
        let mut child = match process::to_command(&spec).spawn() {
            Ok(c) => c,
            Err(e) => return Outcome::err(format!("cannot start sh: {e}")),
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = process::kill_group(&mut child).await;
            return Outcome::err("cannot capture the command's output");
        };
        let run = async {
            let (out, err) = tokio::join!(read_capped(stdout), read_capped(stderr));
            (out, err, child.wait().await)
        };
        let (output, exit_code, timed_out) =
            match tokio::time::timeout(self.command_timeout, run).await {
                Ok((out, err, status)) => {
                    let code = status.ok().and_then(|s| s.code());
                    (join_output(&out, &err), code, false)
                }
                Err(_) => {
                    let _ = process::kill_group(&mut child).await;
                    (
                        format!(
                            "the command did not finish within {} s and was killed",
                            self.command_timeout.as_secs()
                        ),
                        None,
                        true,
                    )
                }
            };
        let mut outcome = Outcome {
            output: match exit_code {
                Some(code) if !timed_out => format!("exit code {code}\n{output}"),
                _ => output.clone(),
            },
            is_error: timed_out || exit_code != Some(0),
            events: Vec::new(),
        };
        outcome.events.push(AgentEvent::Command {
            cmd: command.to_owned(),
            exit_code,
            output,
        });
        outcome
    }
}

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    content: Option<String>,
    command: Option<String>,
}

fn function(name: &str, description: &str, properties: &Value, required: &[&str]) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    })
}

/// Reads a stream to its end, keeping at most [`MAX_COMMAND_OUTPUT`] bytes (the rest is drained so the
/// child never blocks on a full pipe).
async fn read_capped(mut stream: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut dropped = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_COMMAND_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                dropped += n.saturating_sub(room);
            }
        }
    }
    let mut text = String::from_utf8_lossy(&kept).into_owned();
    if dropped > 0 {
        text.push_str(&format!("\n… [truncated {dropped} bytes]"));
    }
    text
}

fn join_output(out: &str, err: &str) -> String {
    match (out.is_empty(), err.is_empty()) {
        (_, true) => out.to_owned(),
        (true, false) => err.to_owned(),
        (false, false) => format!("{out}\n{err}"),
    }
}

#[cfg(test)]
mod tests;
