//! One run's listener and its connections: read a bounded request head, check the host against the run's
//! list, resolve and connect, then copy both ways through fixed buffers, counting bytes, until either
//! side closes or the run ends.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;

use super::{AllowList, CONNECT_TIMEOUT, HEAD_TIMEOUT, MAX_HEAD, Record, ResolveOverrides};

/// What every connection of a run shares.
pub(super) struct Ctx {
    pub allow: AllowList,
    pub overrides: ResolveOverrides,
    pub records: mpsc::Sender<Record>,
    pub stop: CancellationToken,
    pub slots: Arc<Semaphore>,
}

impl Ctx {
    fn report(&self, record: Record) {
        if self.records.try_send(record).is_err() {
            tracing::debug!("egress record dropped: the run's log is behind");
        }
    }
}

/// Accepts the run's connections until the run ends.
pub(super) async fn serve(listener: TcpListener, ctx: Arc<Ctx>) {
    loop {
        let permit = tokio::select! {
            () = ctx.stop.cancelled() => return,
            p = ctx.slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            () = ctx.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    handle(stream, &ctx).await;
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "egress proxy: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// A parsed request head.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    pub method: String,
    pub host: String,
    pub port: u16,
    /// For a plain HTTP request: the head to send upstream (origin-form target, `Connection: close`).
    pub forward: Option<Vec<u8>>,
}

async fn handle(mut client: TcpStream, ctx: &Ctx) {
    let head = match timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(Some(head))) => head,
        Ok(Ok(None)) => return, // closed before a request
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
            respond(&mut client, 431, &e.to_string()).await;
            return;
        }
        Ok(Err(_)) => return,
        Err(_) => {
            respond(&mut client, 408, "the request head did not arrive in time").await;
            return;
        }
    };
    let (bytes, end) = head;
    let request = match parse(&bytes[..end]) {
        Ok(r) => r,
        Err(why) => {
            respond(&mut client, 400, &why).await;
            return;
        }
    };
    let mut record = Record {
        host: request.host.clone(),
        port: request.port,
        method: request.method.clone(),
        allowed: false,
        why: None,
        bytes_up: 0,
        bytes_down: 0,
    };
    if let Some(why) = ctx.allow.refusal(&request.host, request.port) {
        respond(&mut client, 403, &why).await;
        record.why = Some(why);
        ctx.report(record);
        return;
    }
    let upstream = match timeout(
        CONNECT_TIMEOUT,
        connect(&ctx.overrides, &request.host, request.port),
    )
    .await
    {
        Ok(Ok(stream)) => stream,
        Ok(Err(Failure::Refused(why))) => {
            respond(&mut client, 403, &why).await;
            record.why = Some(why);
            ctx.report(record);
            return;
        }
        Ok(Err(Failure::Unreachable(why))) => {
            respond(&mut client, 502, &why).await;
            record.allowed = true;
            record.why = Some(why);
            ctx.report(record);
            return;
        }
        Err(_) => {
            let why = format!(
                "cannot connect to {}:{} within {} s",
                request.host,
                request.port,
                CONNECT_TIMEOUT.as_secs()
            );
            respond(&mut client, 504, &why).await;
            record.allowed = true;
            record.why = Some(why);
            ctx.report(record);
            return;
        }
    };
    record.allowed = true;
    let (up, down) = relay(client, upstream, &request, &bytes[end..], &ctx.stop).await;
    record.bytes_up = up;
    record.bytes_down = down;
    ctx.report(record);
}

/// Tells the client the tunnel is up (CONNECT) or sends its request on (plain HTTP), then copies both
/// ways until both sides are done or the run ends. Returns the bytes up and down.
async fn relay(
    mut client: TcpStream,
    mut upstream: TcpStream,
    request: &Request,
    early: &[u8],
    stop: &CancellationToken,
) -> (u64, u64) {
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    let opened = async {
        match &request.forward {
            None => {
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
            }
            Some(head) => upstream.write_all(head).await,
        }?;
        upstream.write_all(early).await?;
        up.fetch_add(early.len() as u64, Ordering::Relaxed);
        Ok::<(), std::io::Error>(())
    };
    if opened.await.is_err() {
        return (up.into_inner(), down.into_inner());
    }
    let (mut cr, mut cw) = client.split();
    let (mut ur, mut uw) = upstream.split();
    let both = async {
        tokio::join!(pump(&mut cr, &mut uw, &up), pump(&mut ur, &mut cw, &down));
    };
    tokio::select! {
        () = both => {}
        () = stop.cancelled() => {}
    }
    (up.into_inner(), down.into_inner())
}

/// Copies `from` into `to` through one fixed buffer, counting; shuts `to`'s write side at the end.
async fn pump<R, W>(from: &mut R, to: &mut W, count: &AtomicU64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
    let _ = to.shutdown().await;
}

/// Reads until the end of the head (`\r\n\r\n`), at most [`MAX_HEAD`] bytes. `Ok(None)`: the client
/// closed first. Returns the bytes read and where the head ends (bytes after it belong to the body or
/// the tunnel).
async fn read_head(client: &mut TcpStream) -> std::io::Result<Option<(Vec<u8>, usize)>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok(Some((buf, from + at + 4)));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the request head is larger than {MAX_HEAD} bytes"),
            ));
        }
    }
}

/// Parses a request head: `CONNECT host:port` or `METHOD http://host[:port]/path`.
pub(super) fn parse(head: &[u8]) -> Result<Request, String> {
    let mut lines = head
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let first = lines.next().unwrap_or_default();
    let first =
        std::str::from_utf8(first).map_err(|_| "the request line is not text".to_owned())?;
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("not an HTTP request line: {first:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("{version} is not supported; use HTTP/1.1"));
    }
    if !method.chars().all(|c| c.is_ascii_uppercase()) || method.is_empty() {
        return Err(format!("bad method {method:?}"));
    }
    if method == "CONNECT" {
        let (host, port) = host_port(target, None)?;
        return Ok(Request {
            method: method.to_owned(),
            host,
            port,
            forward: None,
        });
    }
    let lower = target.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("http://").map(|_| &target[7..]) else {
        return Err(if lower.starts_with("https://") {
            "an https:// URL goes through CONNECT: set HTTPS_PROXY, not HTTP_PROXY only".to_owned()
        } else {
            format!("{target:?} is not an absolute http:// URL; this is a proxy")
        });
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    if authority.contains('@') {
        return Err("credentials in a proxied URL are not supported".to_owned());
    }
    let (host, port) = host_port(authority, Some(80))?;
    let mut out = format!("{method} {path} {version}\r\n").into_bytes();
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(|b| *b == b':').next().unwrap_or_default();
        let drop = [
            &b"proxy-authorization"[..],
            b"proxy-connection",
            b"connection",
            b"keep-alive",
        ]
        .iter()
        .any(|d| name.eq_ignore_ascii_case(d));
        if !drop {
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        method: method.to_owned(),
        host,
        port,
        forward: Some(out),
    })
}

/// `host:port` (an IPv6 address in brackets); `default` when no port is given (CONNECT needs one).
fn host_port(s: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, p) = rest
            .split_once(']')
            .ok_or_else(|| format!("bad host {s:?}"))?;
        (h, p.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p.parse::<u16>().map_err(|_| format!("bad port in {s:?}"))?,
        (None, Some(d)) => d,
        (None, None) => return Err(format!("{s:?} needs a port (host:port)")),
    };
    let host = host.to_ascii_lowercase();
    let ok = !host.is_empty()
        && host.len() <= 253
        && (host.parse::<IpAddr>().is_ok()
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')));
    if !ok || port == 0 {
        return Err(format!("bad host {s:?}"));
    }
    Ok((host, port))
}

/// Why an allowed host could not be reached: refused (it resolves to this machine or a link-local
/// address, which a name on the list must not smuggle in), or unreachable.
enum Failure {
    Refused(String),
    Unreachable(String),
}

/// Resolves `host` (an override first, then DNS) and connects to the first address that answers.
async fn connect(
    overrides: &ResolveOverrides,
    host: &str,
    port: u16,
) -> Result<TcpStream, Failure> {
    let addrs: Vec<SocketAddr> = if let Some(addr) = overrides.get(host) {
        vec![*addr]
    } else if let Ok(ip) = host.parse::<IpAddr>() {
        vec![SocketAddr::new(ip, port)]
    } else {
        let found = tokio::net::lookup_host((host.trim_end_matches('.'), port))
            .await
            .map_err(|e| Failure::Unreachable(format!("cannot resolve {host}: {e}")))?;
        let found: Vec<SocketAddr> = found.collect();
        // `localhost` names this machine on purpose (the list allowed it with its port).
        if let Some(local) = found
            .iter()
            .find(|a| is_local(a.ip()) && !super::is_loopback(host))
        {
            return Err(Failure::Refused(format!(
                "{host} resolves to {}, an address of this machine or its link; name it by address \
                 in the allow-list if it is meant",
                local.ip()
            )));
        }
        found
    };
    let mut last = format!("{host} has no address");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("cannot connect to {host}:{port} ({addr}): {e}"),
        }
    }
    Err(Failure::Unreachable(last))
}

/// Loopback, unspecified or link-local (cloud metadata services live at 169.254.169.254).
fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_unspecified() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_local(IpAddr::V4(v4)))
        }
    }
}

/// Writes a short plain-text answer and closes.
async fn respond(client: &mut TcpStream, status: u16, why: &str) {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = if status == 403 {
        format!("{} {why}\n", super::REFUSAL_MARK)
    } else {
        format!("Muster egress proxy: {why}\n")
    };
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(answer.as_bytes()).await;
    let _ = client.shutdown().await;
}
