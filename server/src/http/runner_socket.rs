//! `GET /api/v1/runners/connect`: a remote runner's WebSocket. Each text frame is one JSON message of the
//! runner protocol (`crate::runner::protocol`); the runner authenticates with the token in its `hello`
//! (not a cookie or header), so this route takes no session. The connection is served by the same
//! session code as the embedded runner's (`crate::engine::session`); when the session ends it closes
//! the socket with the reason's code (4001 bad token, 4002 protocol version, 4003 malformed message,
//! 4004 revoked, 1001 shutting down, 1011 database unreachable).

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use axum::routing::get;
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;

use crate::app::AppState;
use crate::engine::session::{self, Closed, Peer};
use crate::runner::protocol::{CloseReason, ToRunner, ToServer};

/// The largest message a runner may send (a batch of events with a large diff).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

pub(super) fn router() -> Router<AppState> {
    Router::new().route("/api/v1/runners/connect", get(connect))
}

async fn connect(State(state): State<AppState>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| serve(state, socket))
}

async fn serve(state: AppState, socket: WebSocket) {
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
            frame = stream.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        refusal = Some(protocol_error("binary frames are not part of the protocol"));
                        break;
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                match serde_json::from_str::<ToServer>(text.as_str()) {
                    Ok(message) => {
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
            code: closed.reason.code(),
            reason: closed.message.chars().take(120).collect::<String>().into(),
        };
        let _ = sink.send(Message::Close(Some(frame))).await;
    } else {
        let _ = sink.send(Message::Close(None)).await;
    }
}

fn protocol_error(message: &str) -> Closed {
    Closed {
        reason: CloseReason::Protocol,
        message: message.to_owned(),
    }
}
