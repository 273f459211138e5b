//! Git over real smart HTTP: `git http-backend` run as a CGI for each request under `/git/`. Fetch is
//! anonymous; a push (`service=git-receive-pack`, `/git-receive-pack`) needs Basic auth whose password is
//! the token, and a token with push rights.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, Result, bail};
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use tokio::io::AsyncWriteExt as _;

use super::Ctx;

/// Creates the bare repository `<root>/<repo>.git` with one commit on `main` (a README), made in a
/// scratch clone under `scratch`.
pub(super) fn init(root: &Path, repo: &str, scratch: &Path) -> Result<()> {
    let bare = root.join(format!("{repo}.git"));
    std::fs::create_dir_all(&bare).context("create the bare repository's dir")?;
    run(
        &bare,
        &["init", "--quiet", "--bare", "--initial-branch=main"],
    )?;
    let work = scratch.join("seed");
    std::fs::create_dir_all(&work).context("create the seed dir")?;
    run(&work, &["init", "--quiet", "--initial-branch=main"])?;
    std::fs::write(work.join("README.md"), format!("# {repo}\n")).context("write the README")?;
    run(&work, &["add", "README.md"])?;
    run(
        &work,
        &[
            "-c",
            "user.name=forge",
            "-c",
            "user.email=forge@example.invalid",
            "commit",
            "--quiet",
            "-m",
            "Initial commit",
        ],
    )?;
    let bare = bare.to_str().context("a UTF-8 temp path")?;
    run(&work, &["push", "--quiet", bare, "main"])?;
    Ok(())
}

fn run(dir: &Path, args: &[&str]) -> Result<()> {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .with_context(|| format!("run git {args:?}"))?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// What the request's credentials allow.
enum Auth {
    None,
    Token { user: String },
    Wrong,
}

fn auth(ctx: &Ctx, headers: &HeaderMap) -> Auth {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Auth::None;
    };
    let decoded = value
        .strip_prefix("Basic ")
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok());
    match decoded.as_deref().and_then(|pair| pair.split_once(':')) {
        Some((user, password)) if password == ctx.lock().token => Auth::Token {
            user: user.to_owned(),
        },
        _ => Auth::Wrong,
    }
}

/// Serves one request under `/git/`.
pub(super) async fn serve(
    ctx: &Ctx,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let path_info = uri
        .path()
        .strip_prefix("/git")
        .unwrap_or_default()
        .to_owned();
    let query = uri.query().unwrap_or_default().to_owned();
    let push =
        path_info.ends_with("/git-receive-pack") || query.contains("service=git-receive-pack");
    let user = match (push, auth(ctx, headers)) {
        (false, _) => None,
        (true, Auth::Token { user }) if ctx.lock().can_push => Some(user),
        (true, Auth::Token { .. }) => {
            return (
                StatusCode::FORBIDDEN,
                "the token is read-only: it cannot push\n",
            )
                .into_response();
        }
        (true, Auth::None | Auth::Wrong) => {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"forge\""),
                )],
                "authentication required\n",
            )
                .into_response();
        }
    };
    let records_push = push && method == Method::POST;
    let before = if records_push {
        refs(&ctx.repo_dir())
    } else {
        Vec::new()
    };
    let response = match cgi(
        ctx,
        method,
        &path_info,
        &query,
        headers,
        user.as_deref(),
        body,
    )
    .await
    {
        Ok(response) => response,
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("git http-backend: {e:#}\n"),
        )
            .into_response(),
    };
    if records_push {
        let after = refs(&ctx.repo_dir());
        let changed = after.into_iter().filter(|r| !before.contains(r));
        ctx.lock().pushes.extend(changed);
    }
    response
}

/// Every ref of the bare repository with its commit.
fn refs(dir: &Path) -> Vec<(String, String)> {
    let out = std::process::Command::new("git")
        .args(["for-each-ref", "--format=%(refname) %(objectname)"])
        .current_dir(dir)
        .output();
    let Ok(out) = out else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(r, sha)| (r.to_owned(), sha.to_owned()))
        .collect()
}

/// Runs `git http-backend` with the request as CGI input and turns its output into a response.
async fn cgi(
    ctx: &Ctx,
    method: &Method,
    path_info: &str,
    query: &str,
    headers: &HeaderMap,
    user: Option<&str>,
    body: Bytes,
) -> Result<Response> {
    let header_value = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    #[allow(clippy::disallowed_methods)]
    // a stand-in forge runs git's own CGI, as a forge's web server does
    let mut command = tokio::process::Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", path_var())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", &ctx.git_root)
        .env("GIT_PROJECT_ROOT", &ctx.git_root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("REQUEST_METHOD", method.as_str())
        .env("PATH_INFO", path_info)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header_value(header::CONTENT_TYPE))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_ADDR", "127.0.0.1")
        .env(
            "GIT_PROTOCOL",
            header_value(header::HeaderName::from_static("git-protocol")),
        )
        // Receive-pack only for an authenticated request (checked above); never for anyone else.
        .env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "http.receivepack")
        .env(
            "GIT_CONFIG_VALUE_0",
            if user.is_some() { "true" } else { "false" },
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let encoding = header_value(header::CONTENT_ENCODING);
    if !encoding.is_empty() {
        command.env("HTTP_CONTENT_ENCODING", encoding);
    }
    if let Some(user) = user {
        command.env("REMOTE_USER", user);
    }
    let mut child = command.spawn().context("spawn git http-backend")?;
    let mut stdin = child.stdin.take().context("http-backend's stdin")?;
    // Fed beside the read, so a large pack cannot deadlock on full pipes; a backend that stops
    // reading early (an error answer) closes the pipe, which is its answer, not ours to report.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = child
        .wait_with_output()
        .await
        .context("run git http-backend")?;
    writer.await.context("feed http-backend")?;
    parse_cgi(&out.stdout)
        .with_context(|| format!("its stderr: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The harness's PATH (git must be found the way the tests find it).
#[allow(clippy::disallowed_methods)] // process state, not configuration
fn path_var() -> std::ffi::OsString {
    std::env::var_os("PATH").unwrap_or_default()
}

/// A CGI response: header lines (`Status:` among them), a blank line, the body.
fn parse_cgi(out: &[u8]) -> Result<Response> {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| (at, at + 4))
        .or_else(|| {
            out.windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| (at, at + 2))
        })
        .context("no end of CGI headers")?;
    let head = String::from_utf8_lossy(&out[..split.0]);
    let mut response = Response::new(axum::body::Body::from(out[split.1..].to_vec()));
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value
                .split(' ')
                .next()
                .unwrap_or("500")
                .parse()
                .unwrap_or(500);
            *response.status_mut() =
                StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        } else if let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    Ok(response)
}
