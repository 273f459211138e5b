//! Viewers of a run's live output: the API's SSE event stream and the run page's WebSocket (htmx
//! fragments), and the same WebSocket client for the bare baseline. A viewer counts the distinct
//! `MBL <seq> <micros>` lines it receives and their latency (receive time minus `<micros>`).

use std::time::Duration;

use anyhow::{Context as _, bail};
use futures_util::StreamExt as _;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::server::{SLUG, World};
use super::writer::now_micros;

/// What one viewer received.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// Lines expected (`1..=expect`).
    pub expect: u64,
    /// Distinct lines received.
    pub unique: u64,
    /// Latency of each distinct line, in ms.
    pub latencies_ms: Vec<f64>,
    /// Unix micros when the last distinct line arrived.
    pub last_micros: u64,
    /// The stream ended (closed by the server) before every line arrived.
    pub ended_early: bool,
    /// The deadline passed before every line arrived.
    pub timed_out: bool,
    /// Bytes of payload received.
    pub bytes: u64,
    /// The earliest and latest writer times among the lines received (unix micros): how fast the
    /// writer really wrote.
    pub written: Option<(u64, u64)>,
}

impl Received {
    fn new(expect: u64) -> Self {
        Self {
            expect,
            latencies_ms: Vec::with_capacity(expect as usize),
            ..Self::default()
        }
    }

    /// Whether every line arrived.
    pub fn complete(&self) -> bool {
        self.unique == self.expect
    }

    /// Lines that never arrived (only meaningful once the stream ended).
    pub fn missing(&self) -> u64 {
        self.expect - self.unique
    }
}

/// Counts the lines in received text.
struct Tally {
    seen: Vec<bool>,
    got: Received,
}

impl Tally {
    fn new(expect: u64) -> Self {
        Self {
            seen: vec![false; expect as usize + 1],
            got: Received::new(expect),
        }
    }

    /// Records every `MBL <seq> <micros>` in `text`, received at `now` (unix micros).
    fn scan(&mut self, text: &str, now: u64) {
        self.got.bytes += text.len() as u64;
        let mut rest = text;
        while let Some(at) = rest.find("MBL ") {
            rest = &rest[at + 4..];
            let mut words = rest.splitn(3, |c: char| !c.is_ascii_digit());
            let (Some(seq), Some(micros)) = (words.next(), words.next()) else {
                continue;
            };
            let (Ok(seq), Ok(micros)) = (seq.parse::<usize>(), micros.parse::<u64>()) else {
                continue;
            };
            if seq == 0 || seq >= self.seen.len() || self.seen[seq] {
                continue;
            }
            self.seen[seq] = true;
            self.got.unique += 1;
            let (first, last) = self.got.written.unwrap_or((micros, micros));
            self.got.written = Some((first.min(micros), last.max(micros)));
            self.got
                .latencies_ms
                .push(now.saturating_sub(micros) as f64 / 1000.0);
            self.got.last_micros = now;
        }
    }
}

/// A connected viewer, not yet reading.
pub enum Viewer {
    /// The API's `text/event-stream`.
    Sse(reqwest::Response),
    /// A WebSocket (the run page's or the bare baseline's).
    Ws(Box<WebSocketStream<MaybeTlsStream<TcpStream>>>),
}

impl Viewer {
    /// Opens `GET /api/v1/runs/{run}/events/stream?after=0` as the owner.
    pub async fn sse(world: &World, run: &str) -> anyhow::Result<Viewer> {
        let resp = world
            .http
            .get(world.url(&format!("/api/v1/runs/{run}/events/stream?after=0")))
            .bearer_auth(&world.token)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("the event stream answered {}", resp.status());
        }
        Ok(Viewer::Sse(resp))
    }

    /// Opens the run page's socket (`/w/{slug}/runs/{run}/live?after=0`) with the owner's session.
    pub async fn ws(world: &World, run: &str) -> anyhow::Result<Viewer> {
        let url = format!(
            "ws://{}/w/{SLUG}/runs/{run}/live?after=0",
            world.server.addr
        );
        Self::ws_url(&url, Some(&world.cookie), None).await
    }

    /// Opens a WebSocket at `url`, with `cookie` if any; `recv_buffer` shrinks the socket's receive
    /// buffer (a viewer that stalls then stops the server sooner).
    pub async fn ws_url(
        url: &str,
        cookie: Option<&str>,
        recv_buffer: Option<u32>,
    ) -> anyhow::Result<Viewer> {
        let mut request = url.into_client_request()?;
        if let Some(cookie) = cookie {
            request.headers_mut().insert("cookie", cookie.parse()?);
        }
        let host = request
            .uri()
            .authority()
            .context("a host in the URL")?
            .as_str()
            .parse::<std::net::SocketAddr>()?;
        let socket = tokio::net::TcpSocket::new_v4()?;
        if let Some(size) = recv_buffer {
            socket.set_recv_buffer_size(size)?;
        }
        let stream = socket.connect(host).await?;
        let (ws, _) =
            tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(stream)).await?;
        Ok(Viewer::Ws(Box::new(ws)))
    }

    /// Reads until `expect` distinct lines arrived, the stream ended, or `deadline` passed.
    pub async fn read(self, expect: u64, deadline: Duration) -> anyhow::Result<Received> {
        self.read_after(expect, deadline, "").await
    }

    /// [`Viewer::read`], counting `seen` (text already read, e.g. by [`Viewer::first_line`]) first.
    pub async fn read_after(
        self,
        expect: u64,
        deadline: Duration,
        seen: &str,
    ) -> anyhow::Result<Received> {
        let until = tokio::time::Instant::now() + deadline;
        let mut tally = Tally::new(expect);
        tally.scan(seen, now_micros());
        match self {
            Viewer::Sse(mut resp) => {
                let mut pending = String::new();
                while !tally.got.complete() {
                    match tokio::time::timeout_at(until, resp.chunk()).await {
                        Err(_) => {
                            tally.got.timed_out = true;
                            break;
                        }
                        Ok(Ok(Some(chunk))) => {
                            let now = now_micros();
                            pending.push_str(&String::from_utf8_lossy(&chunk));
                            // Only whole lines: a number cut between two chunks is read with its rest.
                            if let Some(end) = pending.rfind('\n') {
                                tally.scan(&pending[..end], now);
                                pending.drain(..=end);
                            }
                        }
                        Ok(Ok(None)) => {
                            tally.scan(&pending, now_micros());
                            tally.got.ended_early = !tally.got.complete();
                            break;
                        }
                        Ok(Err(e)) => bail!("the event stream failed: {e}"),
                    }
                }
            }
            Viewer::Ws(mut ws) => {
                while !tally.got.complete() {
                    match tokio::time::timeout_at(until, ws.next()).await {
                        Err(_) => {
                            tally.got.timed_out = true;
                            break;
                        }
                        Ok(Some(Ok(Message::Text(text)))) => tally.scan(&text, now_micros()),
                        Ok(Some(Ok(Message::Close(_))) | None) => {
                            tally.got.ended_early = !tally.got.complete();
                            break;
                        }
                        Ok(Some(Ok(_))) => {}
                        Ok(Some(Err(_))) => {
                            // A reset after the server gave up on this viewer ends it like a close.
                            tally.got.ended_early = !tally.got.complete();
                            break;
                        }
                    }
                }
            }
        }
        Ok(tally.got)
    }

    /// Reads until the first line arrives (the viewer is live), keeping the connection; returns the
    /// text read.
    pub async fn first_line(&mut self, deadline: Duration) -> anyhow::Result<String> {
        let until = tokio::time::Instant::now() + deadline;
        let mut all = String::new();
        loop {
            let text = match self {
                Viewer::Sse(resp) => match tokio::time::timeout_at(until, resp.chunk()).await {
                    Ok(Ok(Some(c))) => String::from_utf8_lossy(&c).into_owned(),
                    other => bail!("no first line on the event stream: {other:?}"),
                },
                Viewer::Ws(ws) => match tokio::time::timeout_at(until, ws.next()).await {
                    Ok(Some(Ok(Message::Text(t)))) => t.to_string(),
                    Ok(Some(Ok(_))) => continue,
                    other => bail!("no first line on the socket: {other:?}"),
                },
            };
            all.push_str(&text);
            if text.contains("MBL ") {
                return Ok(all);
            }
        }
    }
}

/// Reads `viewers` concurrently (one task each); returns what each received.
pub async fn read_all(
    viewers: Vec<Viewer>,
    expect: u64,
    deadline: Duration,
) -> anyhow::Result<Vec<Received>> {
    let tasks: Vec<_> = viewers
        .into_iter()
        .map(|v| tokio::spawn(v.read(expect, deadline)))
        .collect();
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        out.push(t.await??);
    }
    Ok(out)
}

/// Fails unless every viewer received every line; says how many were lost or late.
pub fn check_complete(what: &str, got: &[Received]) -> anyhow::Result<()> {
    let incomplete: Vec<&Received> = got.iter().filter(|r| !r.complete()).collect();
    if let Some(first) = incomplete.first() {
        bail!(
            "{what}: {} of {} viewers missed lines (first: {} of {} received, stream ended early: {}, \
             timed out: {})",
            incomplete.len(),
            got.len(),
            first.unique,
            first.expect,
            first.ended_early,
            first.timed_out
        );
    }
    Ok(())
}
