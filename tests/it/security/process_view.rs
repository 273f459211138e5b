//! Security attacks (issue 26, findings 4 and 9): what an agent could learn from other processes, and
//! the datagrams it could send.
//!
//! - The argv harvest: with `/proc` readable, an agent read every process's command line — the runner's
//!   `--token mrt_…`, the server's `--database-url` with its password, another agent's arguments — and
//!   with a stolen runner token claimed other runs' orders. Now the flags are refused, and a probe agent
//!   listing `/proc/*/cmdline` sees only its own namespace: not the server (this test process), not a
//!   process holding a runner token in its command line, not a second agent running at the same time.
//! - UDP and netlink: Landlock's network rules cover TCP only, so a datagram reached a listener outside.
//!   Now the exec step's seccomp filter refuses those sockets; TCP still works.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use muster::domain::*;
use muster_tests::model_server::ModelServer;
use muster_tests::{Backend, git};

use super::sandbox::{DENIED, World, committed, said_in, sandboxed};

/// The longest a bystander may take to show up in `/proc`.
const DEADLINE: Duration = Duration::from_secs(30);

/// A process of the test, killed when dropped.
struct Decoy(Child);

impl Drop for Decoy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pids whose command line contains `marker`, as anyone outside a sandbox sees them.
fn pids_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// The probe: every `/proc/<pid>/cmdline` it can read into `procs.log`, and every command line or
/// environment holding a runner token (`mr[t]_`, so that grep's own arguments do not match) into
/// `tokens.log`; both committed.
const PROBE: &str = r#"cat >/dev/null
for f in /proc/[0-9]*/cmdline; do printf '%s: %s\n' "$f" "$(tr '\0' ' ' < "$f")"; done > procs.log 2>&1
grep -s -a -l 'mr[t]_' /proc/[0-9]*/cmdline /proc/[0-9]*/environ > tokens.log
echo "grep status $?" >> tokens.log
git add procs.log tokens.log && git commit -q -m 'what the probe saw' || exit 7
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'"#;

/// The bystander: runs until the test drops a `stop` file into its worktree.
const BYSTANDER: &str = r#"cat >/dev/null
while [ ! -e stop ]; do sleep 0.1; done
echo '{"type":"result","subtype":"success","is_error":false,"result":"done"}'"#;

async fn an_agent_sees_no_process_but_its_own_and_no_runner_token(backend: Backend) {
    if !sandboxed() {
        eprintln!("!!! SKIPPING the sandbox attacks: this kernel cannot sandbox agents");
        return;
    }
    // The runner token the README once taught on the command line is refused there now.
    let refused = Command::new(muster_tests::muster_bin())
        .args([
            "runner",
            "--server",
            "http://127.0.0.1:9",
            "--token",
            "mrt_refused",
        ])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr),
        "error: --token would put the runner token on the command line, where every process on the \
         machine can read it; set MUSTER_RUNNER_TOKEN or pass --token-file FILE\n"
    );
    let Some(w) = World::start(backend).await else {
        return;
    };
    let model = ModelServer::start().await.unwrap();
    // A process that still carries a runner token in its command line (as a runner started the old way
    // did), and a second agent whose arguments carry a marker: both readable from outside.
    let token = format!("mrt_decoy{}", uuid::Uuid::new_v4().simple());
    let _decoy = Decoy(
        Command::new("sh")
            .args(["-c", "sleep 600", "muster-runner", "--token", &token])
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let marker = format!("bystander-{}", uuid::Uuid::new_v4().simple());
    let bystander = w
        .named_agent("bystander", BYSTANDER, model.base_url(), &[&marker])
        .await;
    let waiting = w.assign(&bystander).await;
    let started = tokio::time::Instant::now();
    while pids_with(&marker).is_empty() {
        assert!(started.elapsed() < DEADLINE, "the bystander did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !pids_with(&token).is_empty(),
        "the decoy is visible from outside"
    );

    let probe = w.named_agent("probe", PROBE, model.base_url(), &[]).await;
    let (_issue, run) = w.run(&probe).await;
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{events:#?}");
    let view = events[0].payload["process_view"].clone();
    if muster::sandbox::process_view(&muster_tests::muster_bin())
        == muster::sandbox::ProcessView::Namespace
    {
        assert_eq!(view, "namespace", "{:?}", events[0].payload);
    } else {
        assert_eq!(view, "self_only", "{:?}", events[0].payload);
    }

    let branch = run.branch.clone().unwrap();
    let procs = git(&w.repo(), &["show", &format!("{branch}:procs.log")]);
    let tokens = git(&w.repo(), &["show", &format!("{branch}:tokens.log")]);
    let me = std::env::current_exe().unwrap();
    let me = me.file_name().unwrap().to_string_lossy();
    for hidden in [
        token.as_str(),
        marker.as_str(),
        &*me,
        "muster runner",
        "mrt_",
    ] {
        assert!(
            !procs.contains(hidden),
            "the probe saw {hidden:?}:\n{procs}"
        );
    }
    assert!(
        !tokens.lines().any(|l| l.starts_with("/proc/")),
        "the probe found a runner token:\n{tokens}"
    );
    if view == "namespace" {
        // It did list processes: its own namespace's, PID 1 being the exec step's init.
        assert!(procs.contains("/probe.sh"), "{procs}");
        let first = procs.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("/proc/1/cmdline: ") && first.contains(" sandbox-exec --init "),
            "{procs}"
        );
        assert_eq!(tokens, "grep status 1\n");
    }

    // The bystander ends when told; it never appeared to the probe.
    let worktree = loop {
        let runs = w.store.list_runs_for_issue(waiting.id).await.unwrap();
        if let Some(path) = runs.into_iter().find_map(|r| r.worktree) {
            break path;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    std::fs::write(Path::new(&worktree).join("stop"), "").unwrap();
    let done = w.finished(&waiting).await;
    assert_eq!(done.status, RunStatus::Succeeded, "{done:?}");
}

/// The probe of the datagram attack: each attempt's last output line as `name: …` in `net.log`.
fn datagram_script(port: u16) -> String {
    format!(
        r#"cat >/dev/null
log="$PWD/net.log"
try() {{ name=$1; shift; if out=$("$@" 2>&1); then echo "$name: ALLOWED $out"; else echo "$name: $(echo "$out" | tail -n 1)"; fi >> "$log"; }}
py=/usr/bin/python3
try udp $py -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", {port}))'
try udp6 $py -c 'import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)'
try udp_nonblocking $py -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)'
try netlink $py -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)'
try netlink_dgram $py -c 'import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 0)'
try tcp $py -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("tcp ok")'
try stream_pair $py -c 'import socket; a, b = socket.socketpair(); a.send(b"pair ok"); print(b.recv(7).decode())'
git add net.log && git commit -q -m 'no datagrams' || exit 7
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done"}}'"#
    )
}

async fn an_agent_can_send_no_udp_datagram_and_open_no_netlink_socket(backend: Backend) {
    let Some(w) = World::start_attack(backend).await else {
        return;
    };
    let model = ModelServer::start().await.unwrap();
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let agent = w
        .named_agent("sender", &datagram_script(port), model.base_url(), &[])
        .await;
    let (_issue, run) = w.run(&agent).await;
    let events = w.events(run.id).await;
    assert_eq!(run.status, RunStatus::Succeeded, "{run:?}\n{events:#?}");
    assert_eq!(events[0].payload["udp_netlink"], "refused");

    let log = committed(&w.repo(), &run, "net.log");
    let said = |name: &str| said_in(&log, name);
    let denied = DENIED;
    for refused in ["udp", "udp6", "udp_nonblocking", "netlink", "netlink_dgram"] {
        assert_eq!(said(refused), denied, "{refused}: {log}");
    }
    // The honest part of the same run: TCP and the socketpairs the CLIs use.
    assert_eq!(said("tcp"), "ALLOWED tcp ok", "{log}");
    assert_eq!(said("stream_pair"), "ALLOWED pair ok", "{log}");
    // Nothing reached the listener (a loopback datagram is there before `sendto` returns).
    let mut buf = [0u8; 16];
    assert_eq!(
        listener.recv_from(&mut buf).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
}

both_backends!(
    an_agent_sees_no_process_but_its_own_and_no_runner_token,
    an_agent_can_send_no_udp_datagram_and_open_no_netlink_socket,
);
