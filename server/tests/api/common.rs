//! Spawn-the-app test harness: each test gets a fresh database in a real
//! PostgreSQL and its own server on a free port.

use std::net::SocketAddr;
use std::path::PathBuf;

use frontrow_engine::accounts;
use frontrow_engine::Engine;
use frontrow_model::{AuditReport, Role};
use frontrow_server::config::ServeArgs;
use frontrow_server::startup::{connect, migrate, Application};
use serde_json::{json, Value};
use sqlx::PgPool;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

pub const PASSWORD: &str = "correct horse battery";

/// URL of the `postgres` database of the server the tests use: DATABASE_URL
/// if set, else a private cluster under target/test-pg (started if needed).
async fn admin_url() -> &'static str {
    static URL: OnceCell<String> = OnceCell::const_new();
    URL.get_or_init(|| async {
        if let Ok(url) = std::env::var("DATABASE_URL") {
            return url;
        }
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-pg");
        let cluster = frontrow_server::pgcluster::PrivateCluster::ensure(&dir, 54330).await.expect("starting the private test cluster");
        cluster.url("postgres")
    })
    .await
}

/// Replaces the database name in a PostgreSQL URL.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let (prefix, _) = base.rsplit_once('/').expect("URL has a path");
    match query {
        Some(q) => format!("{prefix}/{database}?{q}"),
        None => format!("{prefix}/{database}"),
    }
}

/// A fresh, migrated database; returns its URL.
pub async fn fresh_database() -> String {
    let (url, guard) = owned_database().await;
    // Kept to the end of the run: the caller did not say when it is done.
    std::mem::forget(guard);
    url
}

/// Databases whose tests are over, to drop before the next one is made: a
/// run leaves no gigabytes behind it (nor does an earlier run, see below).
static FINISHED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Marks its database finished when the test that owns it lets go.
pub struct DatabaseGuard(String);

impl Drop for DatabaseGuard {
    fn drop(&mut self) {
        FINISHED.lock().unwrap_or_else(|e| e.into_inner()).push(self.0.clone());
    }
}

/// A fresh, migrated database that is dropped after its guard.
pub async fn owned_database() -> (String, DatabaseGuard) {
    static EARLIER_RUNS_SWEPT: OnceCell<()> = OnceCell::const_new();
    let admin = admin_url().await;
    let pool = connect(admin, 1).await.expect("connecting to the test server");
    EARLIER_RUNS_SWEPT
        .get_or_init(|| async {
            let left: Vec<String> =
                sqlx::query_scalar(r"SELECT datname FROM pg_database WHERE datname LIKE 'test\_%'").fetch_all(&pool).await.unwrap_or_default();
            FINISHED.lock().unwrap_or_else(|e| e.into_inner()).extend(left);
        })
        .await;
    let finished = std::mem::take(&mut *FINISHED.lock().unwrap_or_else(|e| e.into_inner()));
    for name in finished {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&pool).await;
    }
    let name = format!("test_{}", Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await.expect("creating test database");
    pool.close().await;
    let url = with_database(admin, &name);
    let pool = connect(&url, 2).await.expect("connecting to the test database");
    migrate(&pool).await.expect("migrating");
    pool.close().await;
    (url, DatabaseGuard(name))
}

/// Settings for a test server: a free port, no rate limits, quick background tasks.
pub fn test_settings() -> ServeArgs {
    let mut s = ServeArgs::default();
    s.addr = "127.0.0.1:0".parse().expect("address");
    s.rate_limits = frontrow_server::config::Switch::Off;
    s.reaper_interval_ms = 100;
    // A read right after a write sees it (no re-render interval).
    s.map_refresh_ms = 0;
    s.page_keep_ms = Some(0);
    s.reconcile_interval_ms = 100;
    s.mail_interval_ms = 100;
    s.checkout_wait_ms = 2000;
    s.sim_slow_ms = 1000;
    s.site_root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/site");
    s.secret = Some("test-secret-long-enough-to-sign".into());
    // Tests open hundreds of sockets from one address.
    s.sockets_per_address = 100_000;
    s
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub database_url: String,
    pub pool: PgPool,
    pub engine: Engine,
    /// The server's id in the waiting room's admission lease.
    pub instance_id: Uuid,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    /// Set on the instance that made the database.
    database: Option<DatabaseGuard>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let (database_url, guard) = owned_database().await;
    let mut app = spawn_app_on(&database_url, configure).await;
    app.database = Some(guard);
    app
}

/// Another server instance on an existing database (multi-instance tests).
pub async fn spawn_app_on(database_url: &str, configure: impl FnOnce(&mut ServeArgs)) -> TestApp {
    let mut settings = test_settings();
    configure(&mut settings);
    let pool = connect(database_url, 20).await.expect("pool");
    let app = Application::build(settings, pool.clone()).await.expect("building app");
    let addr = app.local_addr();
    let engine = app.state().engine.clone();
    let instance_id = app.state().instance_id;
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            app.run_until(shutdown).await.expect("server ran");
        }
    });
    TestApp { addr, base: format!("http://{addr}"), database_url: database_url.to_owned(), pool, engine, instance_id, shutdown, task, database: None }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A browser-like client with its own cookie jar.
    pub fn client(&self) -> Client {
        Client { http: reqwest::Client::builder().cookie_store(true).build().expect("client"), base: self.base.clone() }
    }

    /// A new fan, signed up through the API.
    pub async fn fan(&self) -> Client {
        self.fan_named("Fan").await
    }

    /// A new fan called `name`, signed up through the API.
    pub async fn fan_named(&self, name: &str) -> Client {
        let c = self.client();
        let email = format!("fan-{}@example.test", Uuid::new_v4().simple());
        let r = c.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": name })).await;
        assert_eq!(r.status, 201, "signup: {}", r.body);
        c
    }

    /// Many fans at once: inserted with one shared password hash (Argon2 is
    /// deliberately slow), then signed in through the API.
    pub async fn fans(&self, n: usize) -> Vec<Client> {
        let hash = accounts::hash_password(PASSWORD.to_owned()).await.expect("hash");
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            let email = format!("fan-{}@example.test", Uuid::new_v4().simple());
            self.engine.insert_user(&email, "Fan", &hash, Role::Fan).await.expect("insert fan");
            clients.push((self.client(), email));
        }
        let logins = clients.into_iter().map(|(c, email)| async move {
            let r = c.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await;
            assert_eq!(r.status, 200, "login: {}", r.body);
            c
        });
        futures::future::join_all(logins).await
    }

    /// A signed-in staff client.
    pub async fn staff(&self) -> Client {
        self.account(Role::Staff).await
    }

    /// A signed-in admin client.
    pub async fn admin(&self) -> Client {
        self.account(Role::Admin).await
    }

    async fn account(&self, role: Role) -> Client {
        let email = format!("{role:?}-{}@example.test", Uuid::new_v4().simple()).to_lowercase();
        self.engine.create_user(accounts::NewUser { email: &email, password: PASSWORD, name: "Staff", role }).await.expect("staff user");
        let c = self.client();
        let r = c.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await;
        assert_eq!(r.status, 200, "staff login: {}", r.body);
        c
    }

    /// Creates an event through the admin API; one section "A" with the given
    /// rows of `seats` seats each, all in tier "Standard" at 5000 cents.
    pub async fn event(&self, rows: usize, seats: usize, hold_ttl_seconds: u32, max_seats: u32) -> Uuid {
        let staff = self.staff().await;
        let rows: Vec<Value> = (1..=rows).map(|r| json!({ "row": r.to_string(), "seats": seats, "tier": "Standard" })).collect();
        let r = staff
            .post(
                "/api/v1/admin/events",
                json!({
                    "name": "Test Night", "kind": "concert", "venue": "Test Hall",
                    "starts_at": "2030-01-01T20:00:00Z", "sale_opens_at": "2020-01-01T10:00:00Z",
                    "hold_ttl_seconds": hold_ttl_seconds, "max_seats_per_order": max_seats, "waiting_room_enabled": false,
                    "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                    "sections": [{ "section": "A", "rows": rows }]
                }),
            )
            .await;
        assert_eq!(r.status, 201, "create event: {}", r.body);
        r.body["event_id"].as_str().expect("event_id").parse().expect("uuid")
    }

    pub async fn audit(&self) -> AuditReport {
        self.engine.audit(None).await.expect("audit")
    }

    /// The invariants that must hold after any test, settled or not.
    pub async fn assert_invariants(&self) -> AuditReport {
        let report = self.audit().await;
        assert!(report.violations().is_empty(), "audit violations: {:?} in {report:?}", report.violations());
        report
    }

    /// Stops the server (graceful shutdown, background tasks included).
    /// The database stays (other processes of the test may go on using
    /// it): it goes with the next run's sweep.
    pub async fn stop(mut self) {
        std::mem::forget(self.database.take());
        self.shutdown.cancel();
        let _ = self.task.await;
    }
}

#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Client {
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("body");
        let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        Reply { status, headers, body }
    }
    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body)).await
    }
    pub async fn delete(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut r = self.http.delete(format!("{}{path}", self.base));
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        self.send(r).await
    }

    pub async fn hold(&self, event_id: Uuid, seats: &[&str]) -> Reply {
        self.post(&format!("/api/v1/events/{event_id}/holds"), json!({ "seat_ids": seats })).await
    }

    pub async fn release(&self, hold_id: &str, token: &str) -> Reply {
        self.delete(&format!("/api/v1/holds/{hold_id}"), &[("x-hold-token", token)]).await
    }

    pub async fn checkout(&self, hold_id: &str, token: &str, payment: &str, key: &str) -> Reply {
        self.send(
            self.http
                .post(format!("{}/api/v1/holds/{hold_id}/checkout", self.base))
                .header("idempotency-key", key)
                .json(&json!({ "hold_token": token, "payment_token": payment })),
        )
        .await
    }
}

/// A fan's confirmed booking of `seats` (paid with the approving card).
pub async fn buy(fan: &Client, event_id: Uuid, seats: &[&str]) -> Value {
    let hold = fan.hold(event_id, seats).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let paid = fan
        .checkout(
            hold.body["hold_id"].as_str().unwrap_or_default(),
            hold.body["hold_token"].as_str().unwrap_or_default(),
            "tok_visa",
            &Uuid::new_v4().to_string(),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    paid.body
}

/// Polls until `check` returns Some, or panics after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Seat states straight from the database.
pub async fn seat_state(pool: &PgPool, event_id: Uuid, seat_id: &str) -> String {
    sqlx::query_scalar::<_, String>("SELECT state::text FROM seats WHERE event_id = $1 AND seat_id = $2")
        .bind(event_id)
        .bind(seat_id)
        .fetch_one(pool)
        .await
        .expect("seat")
}

/// Sends a request by hand over TCP and returns the response's status:
/// `head` is the request line and headers (without the blank line), then
/// each body part in turn. Writes that fail are ignored (a server that
/// refuses a body may close before reading it all); the status is what
/// matters.
pub async fn raw_status(addr: SocketAddr, head: &str, body: &[&[u8]]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket.write_all(format!("{head}\r\n\r\n").as_bytes()).await.expect("head sent");
    for part in body {
        if socket.write_all(part).await.is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&answer);
    line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status line in {line:?}"))
}

/// An error answer: its status, its code, and a message.
#[track_caller]
pub fn assert_error(what: &str, r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{what}: expected {status} {code}, got {} {}", r.status, r.body);
    assert_eq!(r.body["error"], json!(code), "{what}: {}", r.body);
    assert!(r.body["message"].is_string(), "{what}: no message in {}", r.body);
}

/// The six-digit code in a verification mail as the file mailer keeps it
/// (in the body: the subject, which is logged, does not carry it).
pub fn mailed_code_in(mail: &serde_json::Value) -> Option<String> {
    let body = mail["body"].as_str()?;
    let code: String = body.split("your code is ").nth(1)?.chars().take_while(char::is_ascii_digit).collect();
    (code.len() == 6).then_some(code)
}
