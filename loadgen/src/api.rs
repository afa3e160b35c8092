//! The HTTP side of a fan: one shared connection pool, each fan's session
//! sent as its own cookie (pre-created by `frontrow user bulk`).

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use reqwest::Method;
use serde_json::Value;

/// Name of the server's session cookie.
pub const SESSION_COOKIE: &str = "frontrow_session";

/// A signed-in fan: the session cookie value is all a request needs.
#[derive(Clone, Debug)]
pub struct Fan {
    pub email: String,
    pub session: String,
}

/// Reads `email<TAB>cookie` lines as written by `frontrow user bulk`.
pub fn read_fans(path: &Path) -> Result<Vec<Fan>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading the fans file {}", path.display()))?;
    let fans: Vec<Fan> = text
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(email, session)| Fan { email: email.to_owned(), session: session.trim().to_owned() })
        .collect();
    if fans.is_empty() {
        bail!("no fans in {}; make them with `frontrow user bulk --count N --out FILE`", path.display());
    }
    Ok(fans)
}

/// A server answer: the status and the body as JSON (Null when not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub bytes: usize,
}

impl Reply {
    pub fn error_code(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }
    pub fn str(&self, field: &str) -> Option<&str> {
        self.body[field].as_str()
    }
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    pub base: String,
}

impl Api {
    pub fn new(base: &str) -> Result<Api> {
        let host = base.split("://").nth(1).unwrap_or_default();
        if !(host.starts_with("127.") || host.starts_with("localhost") || host.starts_with("[::1]")) {
            bail!("refusing to load anything but a server on this machine: {base}");
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(4096)
            .tcp_nodelay(true)
            .build()?;
        Ok(Api { http, base: base.trim_end_matches('/').to_owned() })
    }

    /// The WebSocket base (`ws://host:port`).
    pub fn ws_base(&self) -> String {
        self.base.replacen("http://", "ws://", 1)
    }

    /// Opens a WebSocket at `path` as the fan whose cookie is `session`, as
    /// a browser does (it sends the page's cookies with the upgrade).
    pub async fn socket(
        &self,
        path: &str,
        session: &str,
    ) -> Result<tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut request = format!("{}{path}", self.ws_base()).into_client_request()?;
        request.headers_mut().insert("cookie", format!("{SESSION_COOKIE}={session}").parse()?);
        Ok(tokio_tungstenite::connect_async_with_config(request, Some(socket_config()), false).await?.0)
    }

    /// One request. `session` is the fan's cookie value; `headers` extra headers.
    pub async fn call(&self, method: Method, path: &str, session: Option<&str>, headers: &[(&str, &str)], body: Option<&Value>) -> Result<Reply> {
        let mut req = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(s) = session {
            req = req.header("cookie", format!("{SESSION_COOKIE}={s}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.send().await?;
        let status = r.status().as_u16();
        let bytes = r.bytes().await?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Reply { status, body, bytes: bytes.len() })
    }

    pub async fn get(&self, path: &str, session: Option<&str>) -> Result<Reply> {
        self.call(Method::GET, path, session, &[], None).await
    }

    /// A read as a browser makes it: compressed (brotli or gzip, as the
    /// browser offers), and the body only counted, not decoded or parsed, so
    /// the generator's own CPU goes to sending requests rather than to
    /// unpacking answers the fan would only look at. (reqwest is built
    /// without its decoders, so the bytes arrive as the server sent them.)
    pub async fn read(&self, path: &str, session: Option<&str>) -> Result<Reply> {
        self.read_as(path, session, "*/*").await
    }

    /// A page as a browser navigates to it (see [`Api::read`]).
    pub async fn page(&self, path: &str, session: Option<&str>) -> Result<Reply> {
        self.read_as(path, session, "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8").await
    }

    async fn read_as(&self, path: &str, session: Option<&str>, accept: &str) -> Result<Reply> {
        let mut req = self.http.get(format!("{}{}", self.base, path)).header("accept-encoding", "br, gzip").header("accept", accept);
        if let Some(s) = session {
            req = req.header("cookie", format!("{SESSION_COOKIE}={s}"));
        }
        let r = req.send().await?;
        let status = r.status().as_u16();
        let bytes = r.bytes().await?;
        Ok(Reply { status, body: Value::Null, bytes: bytes.len() })
    }

    pub async fn post(&self, path: &str, session: Option<&str>, headers: &[(&str, &str)], body: &Value) -> Result<Reply> {
        self.call(Method::POST, path, session, headers, Some(body)).await
    }

    /// Signs the staff member in and returns their session cookie value.
    pub async fn staff_session(&self, email: &str, password: &str) -> Result<String> {
        let r = self
            .http
            .post(format!("{}/api/v1/auth/login", self.base))
            .json(&serde_json::json!({ "email": email, "password": password }))
            .send()
            .await
            .context("staff login: is the server up?")?;
        if r.status().as_u16() != 200 {
            bail!("staff login failed ({}); run `frontrow seed-demo` first", r.status());
        }
        for cookie in r.headers().get_all("set-cookie") {
            let text = cookie.to_str().unwrap_or_default();
            if let Some(rest) = text.strip_prefix(&format!("{SESSION_COOKIE}=")) {
                return Ok(rest.split(';').next().unwrap_or_default().to_owned());
            }
        }
        bail!("staff login answered without a {SESSION_COOKIE} cookie")
    }
}

/// Rows of 50 seats, the first row in tier "Front" (the hot seats are
/// there), the rest "Standard"; every 400 rows a new section (A, B, ...),
/// the rows numbered on across sections (see [`seat_id`]).
pub fn event_body(name: &str, seats: usize, hold_ttl_seconds: u32, max_seats: u32, waiting_room: bool) -> Value {
    const PER_ROW: usize = 50;
    let rows_total = seats.div_ceil(PER_ROW).max(1);
    let rows: Vec<(usize, Value)> = (0..rows_total)
        .map(|r| {
            let n = PER_ROW.min(seats - r * PER_ROW);
            let tier = if r == 0 { "Front" } else { "Standard" };
            let (_, label) = section_and_row(r + 1);
            (r, serde_json::json!({ "row": label.to_string(), "seats": n, "tier": tier }))
        })
        .collect();
    let sections: Vec<Value> = rows
        .chunk_by(|a, b| a.0 / ROWS_PER_SECTION == b.0 / ROWS_PER_SECTION)
        .map(|chunk| {
            let (section, _) = section_and_row(chunk[0].0 + 1);
            serde_json::json!({ "section": section.to_string(), "rows": chunk.iter().map(|(_, row)| row.clone()).collect::<Vec<_>>() })
        })
        .collect();
    serde_json::json!({
        "name": name, "kind": "benchmark", "venue": "Loopback Arena",
        "starts_at": "2035-01-01T20:00:00Z", "sale_opens_at": "2020-01-01T00:00:00Z",
        "hold_ttl_seconds": hold_ttl_seconds, "max_seats_per_order": max_seats,
        "waiting_room_enabled": waiting_room,
        "tiers": [{ "tier": "Front", "price_cents": 12000 }, { "tier": "Standard", "price_cents": 6000 }],
        "sections": sections
    })
}

/// Creates an event as staff and returns its id.
pub async fn create_event(api: &Api, staff: &str, body: &Value) -> Result<String> {
    let r = api.post("/api/v1/admin/events", Some(staff), &[], body).await?;
    if r.status != 201 {
        bail!("creating the event failed ({}): {}", r.status, r.body);
    }
    Ok(r.str("event_id").context("event_id in the answer")?.to_owned())
}

/// Rows per section (the server takes at most 500).
const ROWS_PER_SECTION: usize = 400;

/// The section letter and row label of the `row`th row (from 1).
fn section_and_row(row: usize) -> (char, usize) {
    let section = char::from(b'A' + ((row - 1) / ROWS_PER_SECTION).min(25) as u8);
    (section, (row - 1) % ROWS_PER_SECTION + 1)
}

/// Seat id of the event layout above: rows count on across sections.
pub fn seat_id(row: usize, number: usize) -> String {
    let (section, label) = section_and_row(row);
    format!("{section}-{label}-{number}")
}

/// The load generator's WebSocket settings: a small read buffer. The
/// default (128 KiB) is zero-filled before every read, and with thousands
/// of sockets that filling took a sixth of the generator's CPU, on the same
/// cores as the server it measures. The frames read are a few hundred bytes.
pub fn socket_config() -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4 * 1024)
}
