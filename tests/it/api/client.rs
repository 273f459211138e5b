//! A small JSON client for the API: one caller's credentials, replies as status + JSON.

use muster_tests::TestApp;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// How a request authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// Any `Authorization` header value, sent as is.
    Header(String),
    /// The session cookie, with the `x-csrf-token` header when `csrf` is set.
    Session {
        cookie: String,
        csrf: Option<String>,
    },
}

/// A JSON API client for one caller.
#[derive(Debug, Clone)]
pub struct Api {
    client: reqwest::Client,
    base: String,
    addr: std::net::SocketAddr,
    auth: Auth,
}

/// A response: status, content type and the body as JSON (`Null` when empty, a string when not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub body: Value,
}

impl Reply {
    /// Asserts the status and returns the body.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        self.body
    }

    /// Asserts an error reply: the status, a JSON `{"errors": {field: [..]}}` body, and returns the
    /// messages for `field`.
    #[track_caller]
    pub fn error(&self, status: u16, field: &str) -> Vec<String> {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        assert!(
            self.content_type.starts_with("application/json"),
            "error bodies are JSON, got {:?}: {}",
            self.content_type,
            self.body
        );
        let messages: Vec<String> = self.body["errors"][field]
            .as_array()
            .unwrap_or_else(|| panic!("no errors.{field} in {}", self.body))
            .iter()
            .map(|m| m.as_str().unwrap().to_owned())
            .collect();
        assert!(
            !messages.is_empty(),
            "errors.{field} is empty in {}",
            self.body
        );
        messages
    }

    /// Asserts an error reply whose messages for `field` include one containing `needle`.
    #[track_caller]
    pub fn error_contains(&self, status: u16, field: &str, needle: &str) {
        let messages = self.error(status, field);
        assert!(
            messages.iter().any(|m| m.contains(needle)),
            "errors.{field} = {messages:?} does not mention {needle:?}"
        );
    }
    /// Asserts a rejected request (malformed, oversized or mistyped body): the status and a JSON
    /// `{"errors": {field: [message]}}` body with one message mentioning `needle`; returns the message.
    /// Lenient about the field name; `auth::rejections_name_the_body_field` pins it to `body`.
    #[track_caller]
    pub fn rejected(&self, status: u16, needle: &str) -> String {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        assert!(
            self.content_type.starts_with("application/json"),
            "error bodies are JSON, got {:?}: {}",
            self.content_type,
            self.body
        );
        let errors = self.body["errors"]
            .as_object()
            .unwrap_or_else(|| panic!("no errors object in {}", self.body));
        let messages: Vec<&str> = errors
            .values()
            .flat_map(|m| m.as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(messages.len(), 1, "one message: {}", self.body);
        assert!(
            messages[0].contains(needle),
            "{:?} does not mention {needle:?}",
            messages[0]
        );
        messages[0].to_owned()
    }
}

impl Api {
    /// A client for `app` authenticating with `auth`.
    pub fn new(app: &TestApp, auth: Auth) -> Api {
        Api {
            client: app.client.clone(),
            base: app.url(""),
            addr: app.addr,
            auth,
        }
    }

    /// Sends a request with an optional raw body and content type.
    pub async fn send(&self, method: Method, path: &str, body: Option<(&str, Vec<u8>)>) -> Reply {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{path}", self.base));
        match &self.auth {
            Auth::None => {}
            Auth::Bearer(token) => req = req.header(AUTHORIZATION, format!("Bearer {token}")),
            Auth::Header(value) => req = req.header(AUTHORIZATION, value.as_str()),
            Auth::Session { cookie, csrf } => {
                req = req.header(COOKIE, format!("muster_session={cookie}"));
                if let Some(csrf) = csrf {
                    req = req.header("x-csrf-token", csrf.as_str());
                }
            }
        }
        if let Some((content_type, bytes)) = body {
            req = req.header(CONTENT_TYPE, content_type).body(bytes);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = resp.bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Reply {
            status,
            content_type,
            body,
        }
    }

    /// Sends `json` as the body.
    pub async fn json(&self, method: Method, path: &str, json: &Value) -> Reply {
        let bytes = serde_json::to_vec(json).unwrap();
        self.send(method, path, Some(("application/json", bytes)))
            .await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, json: Value) -> Reply {
        self.json(Method::POST, path, &json).await
    }

    pub async fn patch(&self, path: &str, json: Value) -> Reply {
        self.json(Method::PATCH, path, &json).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None).await
    }

    /// Sends a JSON body over a raw connection, reading the reply while the body is still being sent:
    /// for bodies the server refuses before reading them all (it answers, then closes the connection,
    /// which makes an HTTP client that is still writing fail at random). Bearer callers only.
    pub async fn send_oversized(&self, method: Method, path: &str, json: &Value) -> Reply {
        let Auth::Bearer(token) = &self.auth else {
            panic!("send_oversized needs a bearer caller")
        };
        let body = serde_json::to_vec(json).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        let stream = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let (mut rd, mut wr) = stream.into_split();
        let writer = tokio::spawn(async move {
            // The server may stop reading and reset the connection: a failed write is expected.
            if wr.write_all(head.as_bytes()).await.is_ok() {
                let _ = wr.write_all(&body).await;
            }
            // Keep the write half open until the reply is read: a half-closed connection makes the
            // server drop the request unanswered.
            wr
        });
        let mut raw = Vec::new();
        let mut chunk = [0_u8; 8192];
        while !response_complete(&raw) {
            match rd.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&chunk[..n]),
            }
        }
        let reply = parse_response(&raw);
        writer.abort();
        reply
    }
}

/// Splits a raw HTTP/1.1 response into its head (lower-cased) and body, once the head is complete.
fn split_response(raw: &[u8]) -> Option<(String, &[u8])> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_lowercase();
    Some((head, &raw[end + 4..]))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find_map(|(k, v)| (k.trim() == name).then_some(v.trim()))
}

fn response_complete(raw: &[u8]) -> bool {
    split_response(raw).is_some_and(|(head, body)| {
        header(&head, "content-length")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| body.len() >= n)
    })
}

fn parse_response(raw: &[u8]) -> Reply {
    let (head, body) = split_response(raw)
        .unwrap_or_else(|| panic!("no complete response: {:?}", String::from_utf8_lossy(raw)));
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    Reply {
        status: StatusCode::from_u16(status).unwrap(),
        content_type: header(&head, "content-type").unwrap_or_default().to_owned(),
        body: serde_json::from_slice(body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned())),
    }
}
