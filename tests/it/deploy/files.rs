//! Readers of the deployment files for `deploy`'s tests: the compose file (typed, with compose's
//! `${VAR}` interpolation), the Dockerfile's stages, the systemd unit's settings, and a command line
//! parsed by `muster::cli::Cli` with a given environment.

use std::collections::BTreeMap;
use std::path::Path;

use clap::{CommandFactory as _, Parser as _};
use muster::cli::Cli;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// What an operator puts in `.env` for the variables the compose file takes from there.
pub(super) const SAMPLES: &[(&str, &str)] = &[("MUSTER_RUNNER_TOKEN", "mrt_sample-runner-token")];

/// The parts of a compose file this test checks; compose's other keys are ignored.
#[derive(Debug, Deserialize)]
pub(super) struct Compose {
    pub(super) services: BTreeMap<String, Service>,
    #[serde(default)]
    pub(super) volumes: BTreeMap<String, IgnoredAny>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Service {
    pub(super) build: Option<Build>,
    pub(super) command: Option<CommandLine>,
    pub(super) environment: Option<Environment>,
    #[serde(default)]
    pub(super) volumes: Vec<String>,
    #[serde(default)]
    pub(super) ports: Vec<String>,
    #[serde(default)]
    pub(super) depends_on: BTreeMap<String, Dependency>,
    pub(super) healthcheck: Option<IgnoredAny>,
    #[serde(default)]
    pub(super) cap_drop: Vec<String>,
}

/// `build:` in its long form (a map, maybe naming a target) or its short one (the context alone).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Build {
    Full { target: Option<String> },
    Context(IgnoredAny),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum CommandLine {
    List(Vec<String>),
    Shell(String),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Environment {
    Map(BTreeMap<String, Scalar>),
    List(Vec<String>),
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Scalar {
    Str(String),
    Int(i64),
    Bool(bool),
}

#[derive(Debug, Deserialize)]
pub(super) struct Dependency {
    pub(super) condition: Option<String>,
}

pub(super) fn read_repo_file(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

pub(super) fn compose() -> Compose {
    serde_saphyr::from_str(&read_repo_file("docker-compose.yml"))
        .unwrap_or_else(|e| panic!("docker-compose.yml does not parse: {e}"))
}

/// Compose's interpolation (`$$`, `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
/// `${NAME:?message}`, `${NAME?message}`) with [`SAMPLES`] as the environment. A variable with neither a
/// sample nor a default is an error here, where compose would quietly put an empty string.
pub(super) fn interpolate(s: &str) -> Result<String, String> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let (mut out, mut rest) = (String::new(), s);
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let (expr, after) = match rest.strip_prefix('{') {
            Some(inner) => {
                let end = inner
                    .find('}')
                    .ok_or_else(|| format!("{s:?}: an unclosed ${{"))?;
                (&inner[..end], &inner[end + 1..])
            }
            None => rest.split_at(rest.find(|c| !is_name(c)).unwrap_or(rest.len())),
        };
        let (name, op) = expr.split_at(expr.find(|c| !is_name(c)).unwrap_or(expr.len()));
        if name.is_empty() {
            return Err(format!("{s:?}: a lone $ (write $$ for a dollar sign)"));
        }
        let sample = SAMPLES.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let default = op.strip_prefix(":-").or_else(|| op.strip_prefix('-'));
        let required = op.starts_with(":?") || op.starts_with('?');
        if !op.is_empty() && default.is_none() && !required {
            return Err(format!(
                "{s:?}: ${{{expr}}} is an interpolation this test does not know"
            ));
        }
        match (sample, default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "{s:?} uses ${name}, which has no sample value: add one to SAMPLES"
                ));
            }
        }
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// The `(variable, --long, takes a value)` of every flag `muster <subcommand>` also reads from the environment.
pub(super) fn env_flags(subcommand: &str) -> Vec<(String, String, bool)> {
    let root = Cli::command();
    let sub_args = root
        .find_subcommand(subcommand)
        .map(|sub| sub.get_arguments().collect::<Vec<_>>())
        .unwrap_or_default();
    root.get_arguments()
        .chain(sub_args)
        .filter_map(|arg| {
            let env = arg.get_env()?.to_str()?.to_owned();
            let long = arg.get_long()?.to_owned();
            Some((env, long, arg.get_action().takes_values()))
        })
        .collect()
}

/// Parses `command` as the binary would with `env` set: each variable becomes the flag clap would read it
/// for (`--long=value`; a switch when true), unless the command line already has that flag, as clap does.
/// (Tests never set the real environment; see STYLE.md.)
pub(super) fn parse_with_env(
    what: &str,
    command: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Cli, String> {
    let mut argv = command.to_vec();
    let flags = env_flags(command.get(1).map_or("", String::as_str));
    for (name, value) in env {
        let Some((_, long, takes_value)) = flags.iter().find(|(env, _, _)| env == name) else {
            if name.starts_with("MUSTER_") {
                return Err(format!(
                    "{what}: {name} is not a variable `{}` reads (misspelt?)",
                    command[..2].join(" ")
                ));
            }
            continue;
        };
        let flag = format!("--{long}");
        if command
            .iter()
            .any(|a| *a == flag || a.starts_with(&format!("{flag}=")))
        {
            continue;
        }
        match (takes_value, value.as_str()) {
            (true, _) => argv.push(format!("{flag}={value}")),
            (false, "true" | "1" | "yes" | "on") => argv.push(flag),
            (false, _) => {}
        }
    }
    Cli::try_parse_from(&argv)
        .map_err(|e| format!("{what}: `{}` is refused:\n{}", argv.join(" "), e.render()))
}

/// One Dockerfile stage: its name and instructions (continuation lines joined, comments dropped).
pub(super) struct Stage {
    pub(super) name: String,
    pub(super) instructions: Vec<String>,
}

pub(super) fn dockerfile_stages() -> Vec<Stage> {
    let mut stages: Vec<Stage> = Vec::new();
    let mut pending = String::new();
    for line in read_repo_file("Dockerfile").lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        let instruction = std::mem::take(&mut pending) + line;
        let words: Vec<&str> = instruction.split_whitespace().collect();
        if words[0].eq_ignore_ascii_case("FROM") {
            let name = match words.as_slice() {
                [_, _, as_, name] if as_.eq_ignore_ascii_case("AS") => name.to_lowercase(),
                _ => String::new(),
            };
            stages.push(Stage {
                name,
                instructions: Vec::new(),
            });
        } else {
            let stage = stages.last_mut().expect("the Dockerfile starts with FROM");
            stage.instructions.push(instruction);
        }
    }
    stages
}

impl Stage {
    /// The instructions of one kind, without the keyword.
    pub(super) fn all<'a>(&'a self, keyword: &'a str) -> impl Iterator<Item = &'a str> {
        self.instructions.iter().filter_map(move |i| {
            let (head, rest) = i.split_once(char::is_whitespace)?;
            head.eq_ignore_ascii_case(keyword).then_some(rest.trim())
        })
    }

    /// The stage's `ENV K=V …` variables.
    pub(super) fn env(&self) -> BTreeMap<String, String> {
        let pairs = self.all("ENV").flat_map(str::split_whitespace).map(|pair| {
            assert!(
                !pair.contains(['"', '\'']),
                "stage {}: quoted ENV values are not checked here: {pair}",
                self.name
            );
            let (k, v) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("stage {}: write ENV {pair}=VALUE", self.name));
            (k.to_owned(), v.to_owned())
        });
        pairs.collect()
    }
}

impl Service {
    /// The list form of `command`, `${VAR}`s replaced; `None` when the service runs no `muster`.
    pub(super) fn muster_command(&self, name: &str) -> Option<Vec<String>> {
        let list = match self.command.as_ref()? {
            CommandLine::List(list) => list,
            CommandLine::Shell(s) => {
                panic!("service {name}: write command as a list, not the string {s:?}")
            }
        };
        (list.first()? == "muster").then(|| {
            list.iter()
                .map(|a| interpolate(a).unwrap_or_else(|e| panic!("service {name}: {e}")))
                .collect()
        })
    }

    /// The image's environment (from the stage `build` names, else the last) overlaid with `environment`.
    pub(super) fn env(&self, name: &str, stages: &[Stage]) -> BTreeMap<String, String> {
        let target = match &self.build {
            None => None,
            Some(Build::Context(_) | Build::Full { target: None }) => stages.last(),
            Some(Build::Full { target: Some(t) }) => stages.iter().find(|s| s.name == *t),
        };
        let mut env = target.map(Stage::env).unwrap_or_default();
        let entries: Vec<(String, String)> = match &self.environment {
            None => Vec::new(),
            Some(Environment::Map(map)) => map
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Scalar::Str(s) => s.clone(),
                        Scalar::Int(i) => i.to_string(),
                        Scalar::Bool(b) => b.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect(),
            Some(Environment::List(list)) => list
                .iter()
                .map(|kv| {
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                })
                .collect::<Option<_>>()
                .unwrap_or_else(|| panic!("service {name}: an environment entry without =")),
        };
        for (k, v) in entries {
            env.insert(
                k,
                interpolate(&v).unwrap_or_else(|e| panic!("service {name}: {e}")),
            );
        }
        env
    }

    /// `(source, target)` of each `source:target[:mode]` volume.
    pub(super) fn mounts(&self) -> Vec<(&str, &str)> {
        self.volumes
            .iter()
            .filter_map(|v| {
                v.split(':')
                    .collect::<Vec<_>>()
                    .get(..2)
                    .map(|p| (p[0], p[1]))
            })
            .collect()
    }
}

/// Every service that runs `muster`, with what its command line parses to.
pub(super) fn muster_services(compose: &Compose) -> Vec<(&str, &Service, Result<Cli, String>)> {
    let stages = dockerfile_stages();
    let mut parsed = Vec::new();
    for (name, service) in &compose.services {
        if let Some(command) = service.muster_command(name) {
            let cli = parse_with_env(
                &format!("service {name}"),
                &command,
                &service.env(name, &stages),
            );
            parsed.push((name.as_str(), service, cli));
        }
    }
    parsed
}

/// A systemd unit's `(key, value)` settings in order (continuation lines joined; sections, comments and
/// blank lines dropped). A key may repeat; the last one counts for most keys.
pub(super) fn unit_settings(rel: &str) -> Vec<(String, String)> {
    let text = read_repo_file(rel);
    let mut settings = Vec::new();
    let mut pending = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';', '[']) {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending = pending + head + " ";
            continue;
        }
        let setting = std::mem::take(&mut pending) + line;
        let (key, value) = setting
            .split_once('=')
            .unwrap_or_else(|| panic!("{rel}: not KEY=VALUE: {setting}"));
        settings.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    settings
}

/// The `muster` command lines in the `sh` blocks of one README section, with the variables assigned in
/// front of them: continuation lines joined, comments dropped, `docker compose exec SERVICE` taken off.
pub(super) fn readme_commands(heading: &str) -> Vec<(Vec<String>, BTreeMap<String, String>)> {
    let readme = read_repo_file("README.md");
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no {heading:?}"));
    let section = &readme[start + heading.len() + 2..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let (mut commands, mut in_sh, mut pending) = (Vec::new(), false, String::new());
    for line in section.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            line if in_sh => match line.strip_suffix('\\') {
                Some(head) => pending = pending + head + " ",
                None => commands.extend(command_words(&(std::mem::take(&mut pending) + line))),
            },
            _ => {}
        }
    }
    commands
}

/// A shell line's `muster` command, split as the shell would (single quotes only), or `None`.
fn command_words(line: &str) -> Option<(Vec<String>, BTreeMap<String, String>)> {
    let (mut words, mut word, mut quoted, mut in_word) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '\'' => (quoted, in_word) = (!quoted, true),
            '#' if !quoted && !in_word => break,
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => (word, in_word) = (word + &c.to_string(), true),
        }
    }
    assert!(!quoted, "README.md: an unclosed quote in {line:?}");
    if in_word {
        words.push(word);
    }
    let mut env = BTreeMap::new();
    let mut rest = words.as_slice();
    while let Some((k, v)) = rest.first().and_then(|w| w.split_once('=')) {
        env.insert(k.to_owned(), v.to_owned());
        rest = &rest[1..];
    }
    if let ["docker", "compose", "exec", _service, tail @ ..] = rest
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        rest = &rest[rest.len() - tail.len()..];
    }
    (rest.first()? == "muster").then(|| (rest.to_vec(), env))
}
