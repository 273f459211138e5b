//! Issue 26, findings 5 and 6: nobody makes the server hold gigabytes.
//!
//! - One prompt took the server to 4 GB: it read Codex's usage log in the agent's HOME with an unbounded
//!   `read_line`, and the agent had grown it by one 2 GB line (`truncate -s +2G`). Now the log is read in
//!   capped lines: the server's peak memory stays far below the file. The same agent's sessions folder
//!   swapped for a link to a folder only the server may read is not followed either.
//! - Sixty anonymous runner sockets each sending a 64 MiB message held 4 GB: now a socket is read at
//!   most 64 KiB before its `hello` is accepted, an address holds at most 8 such sockets, and one that
//!   says nothing is closed after the hello timeout with the reason.
//!
//! The server is a `muster serve` process of its own, so its peak resident memory (`VmHWM`) is its own.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use muster::runner::executor::RunTiming;
use muster_tests::bench::{Prepared, ServerOptions, World};
use muster_tests::{AppBuilder, Backend, TestApp, TestDb};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::tungstenite::Message;

/// The most the server may hold at its peak in these attacks (it idles at well under 100 MiB).
const PEAK_MIB: f64 = 300.0;
/// The longest a run or a refusal may take here.
const DEADLINE: Duration = Duration::from_secs(120);
/// A token usage no honest run here reports: it is in the file behind the link only.
const LEAKED_TOKENS: &str = "987654321";

/// A stand-in `codex`: answers `--version`, then attacks its usage log as `$ATTACK` says, then reports a
/// finished turn.
fn codex_script(outside: &std::path::Path) -> String {
    format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "codex-cli 0.171.0"; exit 0; fi
cat >/dev/null
case "${{ATTACK:-}}" in
link)
  rm -rf "$CODEX_HOME/sessions"
  ln -s "{outside}" "$CODEX_HOME/sessions"
  ;;
big)
  d="$CODEX_HOME/sessions/2026/12/04"
  mkdir -p "$d"
  f="$d/rollout-big.jsonl"
  printf '{{"type":"session_meta"}}' > "$f"
  truncate -s +2G "$f"
  printf '\n' >> "$f"
  # Codex keeps working while the server follows its log; the test says when to stop.
  while [ ! -e "$HOME/release" ]; do sleep 0.05; done
  ;;
esac
echo '{{"type":"thread.started","thread_id":"t-1"}}'
echo '{{"type":"turn.completed","usage":{{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}}}'
"#,
        outside = outside.display()
    )
}

/// Peak resident memory of the server so far, in MiB.
fn peak(world: &World) -> f64 {
    world.server.rss().unwrap().1
}

/// Starts a codex agent with `ATTACK=attack` on a new issue; returns the run id.
async fn start_attack(world: &World, attack: &str) -> String {
    let name = format!("codex-{attack}");
    let body = json!({
        "name": name, "kind": "codex", "max_retries": 0,
        "env": [{ "key": "ATTACK", "value": attack }],
    });
    world
        .api(reqwest::Method::POST, "/api/v1/agents", Some(body), 201)
        .await
        .unwrap();
    let key = world
        .assign(&format!("Attack: {attack}"), &name)
        .await
        .unwrap();
    world.run_of(&key).await.unwrap()
}

async fn settled(world: &World, run: &str) {
    world
        .wait_run_settled(run, DEADLINE, Duration::from_millis(100))
        .await
        .unwrap();
}

/// Whether the server is done with `file`: it said it stopped following the usage log, or it holds the
/// file open at its end.
fn server_done_with(world: &World, file: &std::path::Path) -> bool {
    if world.server.log_tail().contains("no longer following") {
        return true;
    }
    let Ok(size) = std::fs::metadata(file).map(|m| m.len()) else {
        return false;
    };
    let pid = world.server.pid;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok).any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| target == file)
            && std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().display()))
                .ok()
                .and_then(|info| {
                    info.lines()
                        .find_map(|l| l.strip_prefix("pos:"))
                        .and_then(|p| p.trim().parse::<u64>().ok())
                })
                .is_some_and(|pos| pos >= size)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_usage_log_cannot_grow_the_server_or_lead_it_out() {
    let Some(prepared) = Prepared::new(Backend::Sqlite).await.unwrap() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // A folder the agent cannot read (outside its sandbox) with a usage line of its own.
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("rollout-leak.jsonl"),
        format!(
            "{}\n",
            json!({"type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {
                "input_tokens": LEAKED_TOKENS.parse::<u64>().unwrap(), "cached_input_tokens": 0,
                "cache_write_input_tokens": 0, "output_tokens": 1}}}})
        ),
    )
    .unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let codex = bin.join("codex");
    std::fs::write(&codex, codex_script(&outside)).unwrap();
    std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    let world = prepared
        .serve(ServerOptions {
            embedded_runner: true,
            exe: Some(muster_tests::muster_bin()),
            args: vec![
                "--codex-path".into(),
                codex.display().to_string(),
                // The attack is on the server, not the sandbox: run it where the kernel cannot sandbox too.
                "--allow-unsandboxed-agents".into(),
            ],
        })
        .await
        .unwrap();
    let before = peak(&world);

    let linked = start_attack(&world, "link").await;
    settled(&world, &linked).await;
    let events = world
        .api(
            reqwest::Method::GET,
            &format!("/api/v1/runs/{linked}/events?limit=1000"),
            None,
            200,
        )
        .await
        .unwrap();
    assert!(
        !events.to_string().contains(LEAKED_TOKENS),
        "the server read the usage log through the agent's link: {events}"
    );

    let big = start_attack(&world, "big").await;
    let home = world.db.dir.path().join("runs").join(&big).join("home");
    let file = home.join(".codex/sessions/2026/12/04/rollout-big.jsonl");
    let until = tokio::time::Instant::now() + DEADLINE;
    while !server_done_with(&world, &file) {
        assert!(
            tokio::time::Instant::now() < until,
            "the server never finished with the usage log:\n{}",
            world.server.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::write(home.join("release"), "").unwrap();
    settled(&world, &big).await;
    let after = peak(&world);
    assert!(
        after < PEAK_MIB,
        "a 2 GB usage-log line took the server from {before:.0} MiB to a peak of {after:.0} MiB"
    );
    eprintln!("server peak: {before:.0} MiB before, {after:.0} MiB after the 2 GB line");
}

/// What happened to one anonymous connection.
#[derive(Debug, PartialEq, Eq)]
enum Flood {
    /// Refused before the upgrade with this status.
    Refused(u16),
    /// Upgraded, then closed by the server before the message was through.
    Closed,
    /// Upgraded, and the whole message went through without the server closing.
    Delivered,
}

/// An anonymous client: upgrades `/api/v1/runners/connect` by hand and sends one 64 MiB text message in
/// 1 MiB fragments (frames of at most 16 MiB are all a server takes; the message is what it buffers),
/// until the server closes the connection.
async fn flood(addr: SocketAddr, chunk: Arc<Vec<u8>>) -> Flood {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /api/v1/runners/connect HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\n\
         Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if tcp.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let status: u16 = String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    if status != 101 {
        return Flood::Refused(status);
    }
    let fragments = 64;
    for i in 0..fragments {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        let fin = if i == fragments - 1 { 0x80 } else { 0 };
        let mut header = vec![fin | opcode, 0x80 | 127];
        header.extend_from_slice(&(chunk.len() as u64).to_be_bytes());
        header.extend_from_slice(&[0, 0, 0, 0]); // A zero mask: the payload goes as it is.
        if tcp.write_all(&header).await.is_err() || tcp.write_all(&chunk).await.is_err() {
            return Flood::Closed;
        }
    }
    // Everything was written: the server must still close it (it is not a hello).
    let mut sink = vec![0u8; 64 * 1024];
    match tokio::time::timeout(DEADLINE, async {
        while let Ok(n) = tcp.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await
    {
        Ok(()) => Flood::Delivered,
        Err(_) => panic!("the server kept an anonymous 64 MiB connection open"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_runner_sockets_cannot_hold_memory() {
    let Some(prepared) = Prepared::new(Backend::Sqlite).await.unwrap() else {
        return;
    };
    let world = prepared
        .serve(ServerOptions {
            embedded_runner: false,
            exe: Some(muster_tests::muster_bin()),
            args: Vec::new(),
        })
        .await
        .unwrap();
    let before = peak(&world);
    let chunk = Arc::new(vec![b'a'; 1024 * 1024]);
    let floods: Vec<_> = (0..60)
        .map(|_| tokio::spawn(flood(world.server.addr, chunk.clone())))
        .collect();
    let mut outcomes = Vec::new();
    for f in floods {
        outcomes.push(f.await.unwrap());
    }
    let after = peak(&world);
    let refused = outcomes
        .iter()
        .filter(|o| **o == Flood::Refused(429))
        .count();
    let closed = outcomes.iter().filter(|o| **o == Flood::Closed).count();
    assert_eq!(
        refused + closed,
        60,
        "every connection is refused or cut short: {outcomes:?}"
    );
    assert!(
        refused > 0,
        "past 8 waiting connections an address is refused"
    );
    assert!(
        after < PEAK_MIB,
        "60 anonymous 64 MiB messages took the server from {before:.0} MiB to a peak of {after:.0} MiB"
    );
    eprintln!(
        "server peak: {before:.0} MiB before, {after:.0} MiB after; {refused} refused, {closed} cut short"
    );
    // An honest caller still gets the precise refusal for a missing hello, not a dead server.
    let resp = world
        .http
        .get(world.url("/api/v1/runners/connect"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().await.unwrap().contains("WebSocket upgrade"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_socket_that_says_nothing_is_closed_after_the_hello_timeout() {
    let Some(db) = TestDb::new(Backend::Sqlite).await else {
        return;
    };
    let TestApp {
        addr,
        shutdown,
        handle: server,
        ..
    } = AppBuilder::new(db.config())
        .timing(RunTiming {
            runner_hello: Duration::from_millis(300),
            ..RunTiming::default()
        })
        .spawn()
        .await;

    let url = format!("ws://{addr}/api/v1/runners/connect");
    let (mut socket, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let closed = tokio::time::timeout(DEADLINE, async {
        while let Some(msg) = socket.next().await {
            if let Ok(Message::Close(frame)) = msg {
                return frame;
            }
        }
        None
    })
    .await
    .expect("the server closes a silent runner socket");
    let frame = closed.expect("a close frame with the reason");
    assert_eq!(u16::from(frame.code), 4003);
    assert_eq!(frame.reason.as_str(), "no hello within 0.3 s of connecting");
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
