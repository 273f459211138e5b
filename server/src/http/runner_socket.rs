//! `GET /api/v1/runners/connect`: a remote runner's WebSocket. Each text frame is one JSON message of the
//! runner protocol (`crate::runner::protocol`); the runner authenticates with the token in its `hello`
//! (not a cookie or header), so this route takes no session. The connection is served by the same
//! session code as the embedded runner's (`crate::engine::session`); when the session ends it closes
//! the socket with the reason's code (4001 bad token, 4002 protocol version, 4003 malformed message,
//! no `hello` in time or too much before it, 4004 revoked, 1001 shutting down, 1011 database
//! unreachable).
//!
//! Anyone can open this socket, so until the session says `welcome` it is cheap ([`gate`]): at most 64 KiB
//! is read, `hello` must come within the run timing's `runner_hello`, and each address holds at most a
//! few such connections (more are refused with 429 before the upgrade). Only a welcomed runner may send
//! messages up to [`MAX_MESSAGE_BYTES`]. The upgrade is done here rather than by axum's
//! `WebSocketUpgrade`, whose limits apply to the whole socket and whose stream cannot be wrapped.

mod gate;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::get;
use futures_util::{SinkExt as _, StreamExt as _};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};

use self::gate::{Gated, Pending, Slot, TooMuchBeforeHello};
use crate::engine::session::{self, Closed, Peer};
use crate::runner::protocol::{CloseReason, ToRunner, ToServer};
use crate::state::AppState;

/// The largest message a welcomed runner may send (a batch of events with a large diff).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

pub(super) fn router() -> Router<AppState> {
    let pending = Pending::default();
    Router::new().route(
        "/api/v1/runners/connect",
        get(move |State(state): State<AppState>, req: Request| {
            let pending = pending.clone();
            async move { connect(state, &pending, req) }
        }),
    )
}

fn connect(state: AppState, pending: &Pending, mut req: Request) -> Response {
    let key = match handshake_key(req.headers()) {
        Ok(key) => key,
        Err(why) => return (StatusCode::BAD_REQUEST, why).into_response(),
    };
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let Some(slot) = pending.take(peer) else {
        tracing::warn!(
            ?peer,
            "refusing a runner connection: too many are waiting for hello"
        );
        return crate::http::Error::TooManyRequests(
            "connections",
            "too many runner connections from this address are waiting for their hello; try again shortly"
                .to_owned(),
            Some(1),
        )
        .into_response();
    };
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let upgraded = match upgrade.await {
            Ok(upgraded) => upgraded,
            Err(e) => {
                tracing::debug!(error = %e, "a runner connection's upgrade failed");
                return;
            }
        };
        let io = Gated::new(TokioIo::new(upgraded));
        let opener = io.opener();
        let config = WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES));
        let socket = WebSocketStream::from_raw_socket(io, Role::Server, Some(config)).await;
        let welcomed = move || opener.store(true, Ordering::Release);
        serve(state, socket, Some(slot), welcomed).await;
    });
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    response
}

/// The `Sec-WebSocket-Key` of a WebSocket upgrade request, or why the request is not one.
fn handshake_key(headers: &HeaderMap) -> Result<String, &'static str> {
    let has = |name: header::HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|v| v.trim().eq_ignore_ascii_case(token))
    };
    if !has(header::CONNECTION, "upgrade") || !has(header::UPGRADE, "websocket") {
        return Err(
            "this address takes a WebSocket upgrade (Connection: upgrade, Upgrade: websocket)",
        );
    }
    if !has(header::SEC_WEBSOCKET_VERSION, "13") {
        return Err("this address takes WebSocket version 13 (Sec-WebSocket-Version: 13)");
    }
    headers
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or("a WebSocket upgrade needs a Sec-WebSocket-Key header")
}

/// Serves a runner's socket: messages both ways until either side ends. `slot` is the connection's
/// unauthenticated place, freed (and `welcomed` called) when the session says `welcome`.
async fn serve<S>(
    state: AppState,
    socket: WebSocketStream<S>,
    mut slot: Option<Slot>,
    welcomed: impl Fn() + Send,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let hello_within = state.engine.runs.timing().runner_hello;
    let hello_by = tokio::time::sleep(hello_within);
    tokio::pin!(hello_by);
    let mut got_hello = false;
    let (mut sink, mut stream) = socket.split();
    let (to_session, incoming) = mpsc::channel(256);
    let (outgoing, mut from_session) = mpsc::unbounded_channel::<ToRunner>();
    let session = tokio::spawn(session::serve(
        state.engine.clone(),
        Peer::Remote,
        incoming,
        outgoing,
        state.shutdown.child_token(),
    ));
    let mut refusal: Option<Closed> = None;
    loop {
        tokio::select! {
            () = &mut hello_by, if !got_hello => {
                refusal = Some(protocol_error(&format!(
                    "no hello within {} s of connecting",
                    hello_within.as_secs_f64()
                )));
                break;
            }
            frame = stream.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        refusal = Some(protocol_error("binary frames are not part of the protocol"));
                        break;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Err(e)) => {
                        refusal = read_refusal(&e);
                        break;
                    }
                    Some(Ok(Message::Close(_))) | None => break,
                };
                match serde_json::from_str::<ToServer>(text.as_str()) {
                    Ok(message) => {
                        got_hello |= matches!(message, ToServer::Hello(_));
                        if to_session.send(message).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        refusal = Some(protocol_error(&format!("malformed message: {e}")));
                        break;
                    }
                }
            }
            message = from_session.recv() => {
                let Some(message) = message else { break };
                if matches!(message, ToRunner::Welcome(_)) && slot.take().is_some() {
                    welcomed();
                }
                let Ok(text) = serde_json::to_string(&message) else { continue };
                if sink.send(Message::Text(text.into())).await.is_err() {
                    break;
                }
            }
        }
    }
    drop(to_session);
    // Deliver what the session said last (a refusal, an acknowledgement) before closing.
    let ended = session.await;
    while let Ok(message) = from_session.try_recv() {
        if let Ok(text) = serde_json::to_string(&message) {
            let _ = sink.send(Message::Text(text.into())).await;
        }
    }
    let closed = refusal.or(match ended {
        Ok(Err(closed)) => Some(closed),
        _ => None,
    });
    if let Some(closed) = closed {
        tracing::info!(code = closed.reason.code(), reason = %closed.message, "closing a runner connection");
        let frame = CloseFrame {
            code: CloseCode::from(closed.reason.code()),
            reason: closed.message.chars().take(120).collect::<String>().into(),
        };
        let _ = sink.send(Message::Close(Some(frame))).await;
    } else {
        let _ = sink.send(Message::Close(None)).await;
    }
}

/// Why a read failed, when it is the runner's fault worth telling (too much before `hello`, a message
/// over the limit); `None` for a connection that just went away.
fn read_refusal(e: &tungstenite::Error) -> Option<Closed> {
    match e {
        tungstenite::Error::Io(io)
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<TooMuchBeforeHello>()) =>
        {
            Some(protocol_error(&io.to_string()))
        }
        tungstenite::Error::Capacity(too_big) => Some(protocol_error(&format!(
            "{too_big}; the largest message is {MAX_MESSAGE_BYTES} bytes"
        ))),
        _ => None,
    }
}

fn protocol_error(message: &str) -> Closed {
    Closed {
        reason: CloseReason::Protocol,
        message: message.to_owned(),
    }
}
