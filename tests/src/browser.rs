//! Real headless Chromium for UI tests, driven over WebDriver (Debian's `chromedriver` + `fantoccini`).
//!
//! Policy: a browser test is marked `#[ignore = "<Part::Browser.reason()>"]` (see `crate::Part`). When
//! `chromium` or `chromedriver` cannot be found (`/usr/bin/…` or on `PATH`), [`Browser::start`] prints a
//! loud `!!! SKIPPING a browser test` message past the harness's capture and returns `None`, unless
//! `MUSTER_REQUIRE_BROWSER` is set (and not `0`), when that is a failure. When both are installed but a session cannot be started,
//! that is always a failure: a broken browser setup must not pass as a skip.
//!
//! Every helper that looks for an element polls (every [`POLL`]) until a deadline, so tests never sleep.

use std::fs;
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use fantoccini::elements::Element;
use fantoccini::error::{CmdError, ErrorStatus};
use fantoccini::wd::Capabilities;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use crate::env_setting;

/// How long the element helpers wait when not told otherwise.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);
/// The pause between two polls of a waiting helper.
pub const POLL: Duration = Duration::from_millis(50);
/// Chromium's flags besides its profile: headless, and no network traffic of its own (there is no network
/// here but loopback).
const CHROMIUM_ARGS: &str = "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --disable-component-update --disable-sync --no-first-run \
    --disable-quic --window-size=1400,900";
/// How long chromedriver gets to answer `/status` with `ready: true`.
const DRIVER_START: Duration = Duration::from_secs(30);

/// A headless Chromium session: a `chromedriver` child process on a free loopback port and a WebDriver
/// client connected to it. Dropping it ends the session and kills and reaps chromedriver (and with it the
/// browser); [`Browser::close`] does the same cleanly and reports errors.
pub struct Browser {
    /// `None` only after `close` took it.
    client: Option<Client>,
    driver: Child,
    port: u16,
    session_id: Option<String>,
    /// Holds the Chromium profile and chromedriver's log; removed after chromedriver is gone.
    workdir: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session, or returns `None` (after a loud message) when
    /// Chromium or chromedriver is not installed and `MUSTER_REQUIRE_BROWSER` is not set.
    ///
    /// # Panics
    /// When they are missing and `MUSTER_REQUIRE_BROWSER=1`, or when they are installed but no session
    /// could be started.
    pub async fn start() -> Option<Browser> {
        crate::needs(crate::Part::Browser);
        let found_chromium = find_program("/usr/bin/chromium", "chromium");
        let found_driver = find_program("/usr/bin/chromedriver", "chromedriver");
        let (Some(chromium), Some(chromedriver)) =
            (found_chromium.as_deref(), found_driver.as_deref())
        else {
            let missing = match (&found_chromium, &found_driver) {
                (None, None) => "chromium and chromedriver",
                (None, Some(_)) => "chromium",
                (Some(_), _) => "chromedriver",
            };
            crate::skip(
                crate::Part::Browser,
                "a browser test",
                &format!("{missing} is not installed (looked in /usr/bin and on PATH)"),
                "Install Debian's packages: apt-get install chromium chromium-driver",
            );
            return None;
        };
        match Browser::launch(chromium, chromedriver).await {
            Ok(browser) => Some(browser),
            Err(e) => panic!(
                "Chromium ({}) and chromedriver ({}) are installed but no WebDriver session could be started: {e:#}",
                chromium.display(),
                chromedriver.display()
            ),
        }
    }

    async fn launch(chromium: &Path, chromedriver: &Path) -> Result<Browser> {
        let workdir = tempfile::Builder::new()
            .prefix("muster-browser-")
            .tempdir()
            .context("create a temp dir for the browser")?;
        let profile = workdir.path().join("profile");
        fs::create_dir(&profile).context("create the Chromium profile dir")?;
        let log = fs::File::create(workdir.path().join("chromedriver.log"))
            .context("create chromedriver's log file")?;
        let port = free_port()?;
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("share chromedriver's log file")?)
            .stderr(log)
            // Its own process group, so that Drop can take the browser down with it.
            .process_group(0)
            .spawn()
            .with_context(|| format!("spawn {} --port={port}", chromedriver.display()))?;
        // From here on, Drop kills chromedriver whatever happens.
        let mut browser = Browser {
            client: None,
            driver,
            port,
            session_id: None,
            workdir,
        };
        match browser.connect(chromium, &profile).await {
            Ok(()) => Ok(browser),
            Err(e) => Err(e.context(format!(
                "chromedriver on port {port}; its log:\n{}",
                browser.driver_log()
            ))),
        }
    }

    async fn connect(&mut self, chromium: &Path, profile: &Path) -> Result<()> {
        self.wait_for_driver().await?;
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities(chromium, profile))
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .map_err(|e| anyhow!("create a WebDriver session: {e}"))?;
        self.session_id = client
            .session_id()
            .await
            .context("read the WebDriver session id")?;
        self.client = Some(client);
        Ok(())
    }

    /// Polls chromedriver's `/status` until it says it is ready.
    async fn wait_for_driver(&mut self) -> Result<()> {
        let url = format!("http://127.0.0.1:{}/status", self.port);
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .context("build an HTTP client")?;
        let deadline = Instant::now() + DRIVER_START;
        loop {
            if let Some(status) = self.driver.try_wait().context("poll chromedriver")? {
                bail!("chromedriver exited ({status}) before it was ready");
            }
            let last = match http.get(&url).send().await {
                Ok(response) => match response.json::<Value>().await {
                    Ok(body) if body["value"]["ready"] == Value::Bool(true) => return Ok(()),
                    Ok(body) => format!("not ready: {body}"),
                    Err(e) => format!("unreadable answer: {e}"),
                },
                Err(e) => format!("{e}"),
            };
            if Instant::now() >= deadline {
                bail!(
                    "chromedriver did not report ready at {url} within {DRIVER_START:?} (last: {last})"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Chromedriver's log (short: it logs little by default), for error messages.
    fn driver_log(&self) -> String {
        fs::read_to_string(self.workdir.path().join("chromedriver.log"))
            .unwrap_or_else(|e| format!("(unreadable: {e})"))
    }

    /// The underlying WebDriver client, for what the helpers do not cover.
    pub fn client(&self) -> &Client {
        self.client
            .as_ref()
            .expect("the WebDriver client lives until close()")
    }

    /// Navigates to `url` and waits for the page load to finish.
    pub async fn goto(&self, url: &str) -> Result<()> {
        self.client()
            .goto(url)
            .await
            .with_context(|| format!("navigate to {url}"))
    }

    /// The URL of the current page.
    pub async fn current_url(&self) -> Result<String> {
        let url = self
            .client()
            .current_url()
            .await
            .context("read the current URL")?;
        Ok(url.to_string())
    }

    /// Waits up to `timeout` until the current page's path (without its query) ends with `suffix`.
    pub async fn wait_for_path(&self, suffix: &str, timeout: Duration) -> Result<()> {
        let until = Instant::now() + timeout;
        loop {
            let url = self.current_url().await?;
            if url.split('?').next().unwrap_or_default().ends_with(suffix) {
                return Ok(());
            }
            if Instant::now() >= until {
                bail!("expected to land on …{suffix}, still on {url}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Runs `script` (a function body) until it returns `want`, for up to `timeout`.
    pub async fn until_js(&self, script: &str, want: &Value, timeout: Duration) -> Result<()> {
        let until = Instant::now() + timeout;
        loop {
            let got = self.execute(script, vec![]).await?;
            if got == *want {
                return Ok(());
            }
            if Instant::now() >= until {
                bail!("`{script}` returned {got}, expected {want}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Signs `email` in through the login form of the server at `base` (`http://host:port`), and waits up
    /// to `timeout` for the board it lands on.
    pub async fn sign_in(
        &self,
        base: &str,
        email: &str,
        password: &str,
        timeout: Duration,
    ) -> Result<()> {
        self.goto(&format!("{base}/login")).await?;
        self.fill("#login-email", email).await?;
        self.fill("#login-password", password).await?;
        self.click("form[action='/login'] button[type=submit]")
            .await?;
        self.find_within(".board", timeout).await?;
        Ok(())
    }

    /// A browser with `email` signed in (with [`crate::seed::PASSWORD`]) at `base`, on the board it lands
    /// on, waiting up to `timeout`; `None` without Chromium (see [`Browser::start`]).
    pub async fn signed_in(base: &str, email: &str, timeout: Duration) -> Option<Browser> {
        let browser = Browser::start().await?;
        browser
            .sign_in(base, email, crate::seed::PASSWORD, timeout)
            .await
            .expect("sign in through the login form");
        Some(browser)
    }

    /// Signs the current user out with the header's button, waits for the login form, and signs `email`
    /// in (with [`crate::seed::PASSWORD`]) at `base`.
    pub async fn switch_user(&self, base: &str, email: &str, timeout: Duration) -> Result<()> {
        self.click("form.logout button[type=submit]").await?;
        self.find_within("#login-email", timeout).await?;
        self.sign_in(base, email, crate::seed::PASSWORD, timeout)
            .await
    }

    /// The first element matching the CSS selector `css`, waiting up to [`DEFAULT_WAIT`] for it to appear.
    pub async fn find(&self, css: &str) -> Result<Element> {
        self.find_within(css, DEFAULT_WAIT).await
    }

    /// The first element matching the CSS selector `css`, waiting up to `timeout` for it to appear.
    pub async fn find_within(&self, css: &str, timeout: Duration) -> Result<Element> {
        let what = format!("an element matching `{css}` to appear");
        self.on(css, &what, timeout, async |element| Ok(element))
            .await
    }

    /// Waits up to `timeout` until an element matching `css` contains `text` (as rendered text), and
    /// returns that element. For asserting on live updates.
    pub async fn wait_for_text(&self, css: &str, text: &str, timeout: Duration) -> Result<Element> {
        let deadline = Instant::now() + timeout;
        let mut seen: Vec<String> = Vec::new();
        loop {
            match self.client().find_all(Locator::Css(css)).await {
                Ok(elements) => {
                    seen.clear();
                    for element in elements {
                        match element.text().await {
                            Ok(t) if t.contains(text) => return Ok(element),
                            Ok(t) => seen.push(t),
                            Err(e) if retriable(&e) => {}
                            Err(e) => return self.explain(Err(e), &format!("read `{css}`")).await,
                        }
                    }
                }
                Err(e) if retriable(&e) => {}
                Err(e) => return self.explain(Err(e), &format!("find `{css}`")).await,
            }
            if Instant::now() >= deadline {
                let url = self.url_for_errors().await;
                bail!(
                    "no element matching `{css}` contained {text:?} within {timeout:?} on {url}; \
                     the matching elements' texts were {seen:?}"
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Clicks the element matching `css` once it is present and clickable.
    pub async fn click(&self, css: &str) -> Result<()> {
        let what = format!("a clickable element matching `{css}`");
        self.on(css, &what, DEFAULT_WAIT, async |e| e.click().await)
            .await
    }

    /// Clears the input matching `css`, then types `value` into it.
    pub async fn fill(&self, css: &str, value: &str) -> Result<()> {
        let what = format!("an editable element matching `{css}` to fill with {value:?}");
        self.on(css, &what, DEFAULT_WAIT, async |e| {
            e.clear().await?;
            e.send_keys(value).await
        })
        .await
    }

    /// Chooses the `<option value="value">` of the `<select>` matching `css`.
    pub async fn select(&self, css: &str, value: &str) -> Result<()> {
        let what = format!("a <select> matching `{css}` with an option of value {value:?}");
        self.on(css, &what, DEFAULT_WAIT, async |e| {
            e.select_by_value(value).await
        })
        .await
    }

    /// The rendered text of the element matching `css` (waiting for it to appear).
    pub async fn text(&self, css: &str) -> Result<String> {
        let what = format!("the text of an element matching `{css}`");
        self.on(css, &what, DEFAULT_WAIT, async |e| e.text().await)
            .await
    }

    /// Runs `js` in the page as a function body (`arguments[i]` are `args`) and returns what it returns.
    pub async fn execute(&self, js: &str, args: Vec<Value>) -> Result<Value> {
        let result = self.client().execute(js, args).await;
        self.explain(result, &format!("run the script {js:?}"))
            .await
    }

    /// Sizes the window so that the page's viewport is `width` CSS pixels wide (the window's own frame
    /// added), `height` tall as a window. A resize lands asynchronously, so this waits until the page
    /// reports the same width twice in a row before it measures the frame, and fails if the width is
    /// not reached.
    pub async fn set_viewport_width(&self, width: u32, height: u32) -> Result<()> {
        let mut window = i64::from(width);
        for _ in 0..5 {
            let size =
                u32::try_from(window).context("the window's frame is wider than the window")?;
            self.client().set_window_size(size, height).await?;
            let mut last = None;
            let inner = loop {
                let now = self.execute("return window.innerWidth", vec![]).await?;
                let now = now.as_i64().context("window.innerWidth is not a number")?;
                if last == Some(now) {
                    break now;
                }
                last = Some(now);
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            if inner == i64::from(width) {
                return Ok(());
            }
            window += i64::from(width) - inner;
        }
        bail!("the page's viewport did not become {width} px wide")
    }

    /// Saves a PNG of the viewport as `<workspace>/target/screenshots/<name>.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if name.is_empty() || name.starts_with('.') || !name.chars().all(plain) {
            bail!(
                "screenshot name {name:?} must be a plain file name (letters, digits, '-', '_', '.')"
            );
        }
        let png = self.client().screenshot().await;
        let png = self
            .explain(png, &format!("take the screenshot {name}"))
            .await?;
        let dir = screenshot_dir();
        fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        fs::write(&path, png).with_context(|| format!("write {}", path.display()))?;
        Ok(path)
    }

    /// The browser console's entries since the last call (`{level, message, source, timestamp}`; a
    /// Content-Security-Policy violation has `source` `"security"`), read from chromedriver's log endpoint.
    pub async fn console_log(&self) -> Result<Vec<Value>> {
        let id = self
            .session_id
            .as_deref()
            .context("no WebDriver session to read the console of")?;
        let url = format!("http://127.0.0.1:{}/session/{id}/se/log", self.port);
        let reply: Value = reqwest::Client::new()
            .post(&url)
            .json(&json!({ "type": "browser" }))
            .send()
            .await
            .with_context(|| format!("ask chromedriver for the console at {url}"))?
            .json()
            .await
            .context("read chromedriver's console entries")?;
        match reply["value"].as_array() {
            Some(entries) => Ok(entries.clone()),
            None => bail!("chromedriver answered no console entries: {reply}"),
        }
    }

    /// Ends the WebDriver session (closing Chromium), then stops chromedriver.
    pub async fn close(mut self) -> Result<()> {
        let client = self
            .client
            .take()
            .expect("the WebDriver client lives until close()");
        let ended = client.close().await;
        if ended.is_ok() {
            self.session_id = None;
        }
        drop(self);
        ended.context("end the WebDriver session")
    }

    /// Finds the element matching `css` and calls `act` on it, both again every [`POLL`] until `act`
    /// succeeds, fails for a reason waiting cannot fix, or `timeout` passes.
    async fn on<T>(
        &self,
        css: &str,
        what: &str,
        timeout: Duration,
        mut act: impl AsyncFnMut(Element) -> Result<T, CmdError>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let attempt = match self.client().find(Locator::Css(css)).await {
                Ok(element) => act(element).await,
                Err(e) => Err(e),
            };
            match attempt {
                Ok(value) => return Ok(value),
                Err(e) if retriable(&e) && Instant::now() < deadline => {
                    tokio::time::sleep(POLL).await;
                }
                Err(e) if retriable(&e) => {
                    let url = self.url_for_errors().await;
                    return Err(anyhow!(e).context(format!(
                        "timed out after {timeout:?} waiting for {what} on {url}"
                    )));
                }
                Err(e) => return self.explain(Err(e), &format!("waiting for {what}")).await,
            }
        }
    }

    /// `result`, its error explained with what was being done and on which page.
    async fn explain<T>(&self, result: Result<T, CmdError>, what: &str) -> Result<T> {
        match result {
            Ok(value) => Ok(value),
            Err(e) => {
                let url = self.url_for_errors().await;
                Err(anyhow!(e).context(format!("{what} on {url}")))
            }
        }
    }

    async fn url_for_errors(&self) -> String {
        self.current_url()
            .await
            .unwrap_or_else(|e| format!("(unknown page: {e:#})"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A session that close() did not end (a failed test): end it, so chromedriver quits Chromium.
        if let Some(id) = self.session_id.take() {
            delete_session(self.port, &id);
        }
        // Whatever is left of chromedriver's process group (Chromium included) goes too.
        let group = format!("-{}", self.driver.id());
        let kill = Command::new("kill").args(["-KILL", "--", &group]).output();
        drop(kill);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `DELETE /session/<id>` with plain blocking I/O (Drop cannot await), bounded by short timeouts.
fn delete_session(port: u16, id: &str) {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        // Chromedriver answers once Chromium has quit; the answer itself does not matter.
        let _ = stream.read_to_end(&mut Vec::new());
    }
}

/// The session's capabilities: headless Chromium that makes no connection of its own.
fn capabilities(chromium: &Path, profile: &Path) -> Capabilities {
    let args = CHROMIUM_ARGS
        .split_whitespace()
        .map(str::to_owned)
        .chain([format!("--user-data-dir={}", profile.display())])
        .collect::<Vec<_>>();
    let mut caps = Capabilities::new();
    caps.insert("browserName".to_owned(), json!("chrome"));
    caps.insert(
        "goog:chromeOptions".to_owned(),
        json!({ "binary": chromium.display().to_string(), "args": args }),
    );
    // Keep the console (CSP violations included) for `console_log`.
    caps.insert("goog:loggingPrefs".to_owned(), json!({ "browser": "ALL" }));
    caps
}

/// Errors that may go away by waiting: the element is not there yet, was replaced, or is covered.
fn retriable(e: &CmdError) -> bool {
    e.is_no_such_element()
        || e.is_stale_element_reference()
        || e.is_element_not_interactable()
        || matches!(e, CmdError::Standard(w) if w.error == ErrorStatus::ElementClickIntercepted)
        // Chromium's word for a stale element when the page is replaced between finding and reading it
        // (a form post navigating while a wait polls).
        || matches!(e, CmdError::Standard(w) if w.error == ErrorStatus::UnknownError
            && w.message.contains("does not belong to the document"))
}

/// `preferred` when it is an executable file, else the first executable `name` on `PATH`.
fn find_program(preferred: &str, name: &str) -> Option<PathBuf> {
    let is_executable = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let preferred = PathBuf::from(preferred);
    if is_executable(&preferred) {
        return Some(preferred);
    }
    let path = env_setting("PATH")?;
    path.split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(name))
        .find(|candidate| is_executable(candidate))
}

/// A loopback port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("bind a loopback port")?;
    Ok(listener.local_addr().context("read the bound port")?.port())
}

/// A script (for [`Browser::execute`]) that drags the board card `#card-<key>` to the bottom of the
/// column `#column-<status>` with synthetic drag events, as a hand would, then returns `result` (a
/// JavaScript expression in which `card` is the dragged card).
pub fn drag_card(key: &str, status: &str, result: &str) -> String {
    format!(
        r#"const card = document.querySelector('#card-{key}');
           const list = document.querySelector('#column-{status} ol.cards');
           const dt = new DataTransfer();
           const fire = (el, type, y) => el.dispatchEvent(new DragEvent(type, {{ bubbles: true, cancelable: true, dataTransfer: dt, clientY: y }}));
           fire(card, 'dragstart', 0);
           const box = list.getBoundingClientRect();
           fire(list, 'dragover', box.bottom - 2);
           fire(list, 'drop', box.bottom - 2);
           fire(card, 'dragend', 0);
           return {result};"#
    )
}

/// `<workspace root>/target/screenshots`.
pub fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")))
        .join("target")
        .join("screenshots")
}
