//! The deployment files say the truth, checked without a Docker engine or systemd:
//! - every `muster` command line in `docker-compose.yml`, `docs/muster-runner.service` and the README's
//!   "Team deployment" is one the binary accepts, with the environment the process would get (for
//!   compose: the image's `ENV`, then the service's `environment`, `${VAR}`s replaced by `SAMPLES`); a
//!   `MUSTER_*` variable no flag reads is an error;
//! - the compose file has the shape the README's "Team deployment" describes: two board-only replicas
//!   on one database and one data volume (one `secret.key`), and one runner naming both;
//! - the Dockerfile's `runner` stage installs `.ci/agent-clis.txt`'s pins, the builds the install hints
//!   (`muster runtime detect`, the Runtimes page) name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use muster::cli::{Command, ServeArgs};
use muster::runner::remote::RunnerArgs;
use muster_agents::RuntimeKind;

use files::*;

mod files;

#[test]
fn every_muster_command_line_in_the_compose_file_is_accepted_by_the_binary() {
    let compose = compose();
    let services = muster_services(&compose);
    assert!(
        services.len() >= 3,
        "docker-compose.yml runs muster in only {} services",
        services.len()
    );
    let refused: Vec<String> = services
        .into_iter()
        .filter_map(|(_, _, cli)| cli.err())
        .collect();
    assert!(refused.is_empty(), "{}", refused.join("\n\n"));
}

/// The compose file's `muster serve` and `muster runner` services, with their parsed arguments.
type Roles<'a> = (
    Vec<(&'a str, &'a Service, ServeArgs)>,
    Vec<(&'a str, &'a Service, Box<RunnerArgs>)>,
);

fn roles(compose: &Compose) -> Roles<'_> {
    let (mut replicas, mut runners) = (Vec::new(), Vec::new());
    for (name, service, cli) in muster_services(compose) {
        match cli.unwrap_or_else(|e| panic!("{e}")).command {
            Command::Serve(args) => replicas.push((name, service, args)),
            Command::Runner(args) => runners.push((name, service, args)),
            other => panic!("service {name} runs {other:?}, neither serve nor runner"),
        }
    }
    (replicas, runners)
}

#[test]
fn compose_runs_two_board_only_replicas_on_one_database_and_one_data_volume() {
    let compose = compose();
    let postgres = compose
        .services
        .get("postgres")
        .expect("a postgres service");
    assert!(
        postgres.healthcheck.is_some(),
        "postgres needs a healthcheck: the replicas wait for it to be healthy"
    );
    let (replicas, _) = roles(&compose);
    assert_eq!(replicas.len(), 2, "two `muster serve` replicas");
    let mut host_ports = BTreeSet::new();
    for (name, service, args) in &replicas {
        assert!(
            args.no_runner,
            "service {name}: a replica is board-only (--no-runner); the runner service runs the agents"
        );
        let url = args.db.database_url.as_deref().unwrap_or_default();
        assert!(
            url.starts_with("postgres://"),
            "service {name}: the database is PostgreSQL, not {url:?}"
        );
        let healthy = service
            .depends_on
            .get("postgres")
            .and_then(|d| d.condition.as_deref());
        assert_eq!(
            healthy,
            Some("service_healthy"),
            "service {name} waits for postgres to be healthy"
        );
        let data_dir = args
            .db
            .data_dir
            .as_deref()
            .and_then(Path::to_str)
            .expect("an explicit data dir");
        assert!(
            service
                .mounts()
                .iter()
                .any(|(_, target)| *target == data_dir),
            "service {name}: {data_dir} is a volume"
        );
        for port in &service.ports {
            let (host, container) = port.rsplit_once(':').expect("HOST:CONTAINER ports");
            assert_eq!(
                container,
                args.addr.port().to_string(),
                "service {name} publishes the port it listens on"
            );
            assert!(
                host_ports.insert(host.to_owned()),
                "service {name}: host port {host} is published twice"
            );
        }
    }
    let ((a, a_service, a_args), (b, b_service, b_args)) = (&replicas[0], &replicas[1]);
    assert_eq!(
        a_args.db.database_url, b_args.db.database_url,
        "{a} and {b} share one database"
    );
    assert_eq!(
        a_service.volumes, b_service.volumes,
        "{a} and {b} share the data volume (one secret.key)"
    );
    for (source, _) in compose.services.values().flat_map(Service::mounts) {
        assert!(
            source.starts_with(['.', '/']) || compose.volumes.contains_key(source),
            "volume {source} is not declared"
        );
    }
}

#[test]
fn compose_runs_one_runner_for_both_replicas() {
    let compose = compose();
    let (replicas, runners) = roles(&compose);
    assert_eq!(runners.len(), 1, "one `muster runner` service");
    let (name, service, args) = &runners[0];
    let servers: BTreeSet<String> = args.servers.iter().cloned().collect();
    let replica_urls = replicas
        .iter()
        .map(|(n, _, a)| format!("http://{n}:{}", a.addr.port()))
        .collect();
    assert_eq!(
        servers, replica_urls,
        "service {name}: --server names each replica"
    );
    assert!(
        matches!(&service.build, Some(Build::Full { target: Some(t) }) if t == "runner"),
        "service {name} builds the runner target"
    );
    let raw_token = match &service.environment {
        Some(Environment::Map(map)) => map.get("MUSTER_RUNNER_TOKEN"),
        _ => None,
    };
    assert!(
        matches!(raw_token, Some(Scalar::Str(v)) if v.starts_with("${MUSTER_RUNNER_TOKEN")),
        "service {name}: the token comes from MUSTER_RUNNER_TOKEN in .env, got {raw_token:?}"
    );
    let state = args
        .state_dir
        .clone()
        .expect("the runner's state dir is set");
    let runs = args
        .agents
        .runs_dir
        .clone()
        .expect("the runner's runs dir is set");
    for dir in [state, runs] {
        let mounted = service
            .mounts()
            .iter()
            .any(|(_, target)| Path::new(target) == dir);
        assert!(
            mounted,
            "service {name}: {} is a volume, kept across restarts",
            dir.display()
        );
    }
    assert!(
        service.cap_drop.iter().any(|c| c == "ALL"),
        "service {name}: cap_drop ALL (the sandbox cannot drop bounding capabilities as non-root)"
    );
}

#[test]
fn the_runner_image_installs_the_pinned_agent_clis_the_install_hints_name() {
    let stages = dockerfile_stages();
    assert_eq!(
        stages.last().map(|s| s.name.as_str()),
        Some("server"),
        "the server is the default (last) target"
    );
    let runner = stages
        .iter()
        .find(|s| s.name == "runner")
        .expect("a `runner` stage");
    assert!(
        runner
            .all("COPY")
            .any(|c| c.starts_with(".ci/agent-clis.txt ")),
        "the runner stage installs .ci/agent-clis.txt"
    );
    let user = runner
        .all("USER")
        .last()
        .expect("the runner stage sets USER");
    assert!(
        user != "root" && user != "0",
        "the runner runs as a user, not {user}"
    );
    assert!(
        runner
            .all("CMD")
            .any(|c| c.starts_with(r#"["muster", "runner""#)),
        "the runner image runs `muster runner`"
    );

    let pins = read_repo_file(".ci/agent-clis.txt");
    let mut pinned = BTreeSet::new();
    for line in pins
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (binary, package) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("not `BINARY PACKAGE@VERSION`: {line}"));
        let kind: RuntimeKind = binary.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
        let hint = muster_agents::detect::install_hint(kind);
        assert_eq!(
            hint,
            Some(format!("npm install -g {package}")),
            "the install hint of {binary}"
        );
        pinned.insert(kind.as_str());
    }
    let npm_kinds: BTreeSet<&str> = RuntimeKind::ALL
        .into_iter()
        .filter(|k| muster_agents::detect::install_hint(*k).is_some_and(|h| h.starts_with("npm ")))
        .map(RuntimeKind::as_str)
        .collect();
    assert_eq!(
        pinned, npm_kinds,
        "every CLI installed with npm is pinned in .ci/agent-clis.txt"
    );
}

#[test]
fn the_systemd_unit_starts_a_runner_the_binary_accepts() {
    let settings = unit_settings("docs/muster-runner.service");
    let get = |key: &str| {
        settings
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(get("Restart"), Some("always"));
    assert_eq!(get("NoNewPrivileges"), Some("yes"));
    assert_eq!(
        get("CapabilityBoundingSet"),
        Some(""),
        "no bounding capabilities: a non-root sandbox cannot drop them"
    );
    assert_ne!(
        get("MemoryDenyWriteExecute"),
        Some("yes"),
        "Node's JIT needs writable code pages"
    );
    assert!(
        get("EnvironmentFile").is_some(),
        "the token comes from an EnvironmentFile"
    );

    let exec = get("ExecStart").expect("an ExecStart");
    assert!(
        !exec.contains(['"', '\'', '%', '$']),
        "ExecStart is checked without systemd's quoting and specifiers: {exec}"
    );
    let mut argv: Vec<String> = exec.split_whitespace().map(str::to_owned).collect();
    assert!(
        argv[0].starts_with('/') && argv[0].ends_with("/muster"),
        "ExecStart names the muster binary by path: {}",
        argv[0]
    );
    argv[0] = "muster".to_owned();
    // What the EnvironmentFile holds (its comment says so), then the unit's own Environment= lines.
    let mut env = BTreeMap::from([("MUSTER_RUNNER_TOKEN".to_owned(), SAMPLES[0].1.to_owned())]);
    for (_, assignments) in settings.iter().filter(|(k, _)| k == "Environment") {
        for pair in assignments.split_whitespace() {
            let (k, v) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("Environment={pair}: not K=V"));
            env.insert(k.to_owned(), v.to_owned());
        }
    }
    let cli =
        parse_with_env("docs/muster-runner.service", &argv, &env).unwrap_or_else(|e| panic!("{e}"));
    let Command::Runner(args) = cli.command else {
        panic!("ExecStart runs {:?}, not `muster runner`", cli.command)
    };
    let state = PathBuf::from("/var/lib").join(get("StateDirectory").expect("a StateDirectory"));
    assert_eq!(
        args.state_dir,
        Some(state),
        "--state-dir is the StateDirectory systemd creates"
    );
    let cache = PathBuf::from("/var/cache").join(get("CacheDirectory").expect("a CacheDirectory"));
    let runs = args.agents.runs_dir.expect("--runs-dir is set");
    assert!(
        runs.starts_with(&cache),
        "--runs-dir {} is in the CacheDirectory {}",
        runs.display(),
        cache.display()
    );
}

#[test]
fn every_muster_command_line_in_the_readme_section_is_accepted_by_the_binary() {
    let commands = readme_commands("## Team deployment");
    let verbs: BTreeSet<&str> = commands.iter().map(|(argv, _)| argv[1].as_str()).collect();
    assert_eq!(
        verbs,
        BTreeSet::from(["admin", "runner", "serve"]),
        "the section shows bootstrap, serve and runner"
    );
    for (argv, env) in &commands {
        parse_with_env("README.md", argv, env).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn interpolation_follows_compose() {
    assert_eq!(
        interpolate("a $$b ${MUSTER_RUNNER_TOKEN:-x}").unwrap(),
        "a $b mrt_sample-runner-token"
    );
    assert_eq!(
        interpolate("${NOPE:-dflt}/$NOPE_TOO-x").unwrap_err(),
        "\"${NOPE:-dflt}/$NOPE_TOO-x\" uses $NOPE_TOO, which has no sample value: add one to SAMPLES"
    );
    assert_eq!(interpolate("${NOPE-d}").unwrap(), "d");
    assert!(interpolate("${NOPE:?set it}").is_err());
    assert!(
        interpolate("${X:+alt}")
            .unwrap_err()
            .contains("does not know")
    );
}
