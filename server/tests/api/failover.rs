//! Losing the database machine mid-sale: the real binary on the
//! high-availability set-up of scripts/ha (a pg_auto_failover primary with a
//! synchronous standby, behind HAProxy), clients holding and paying with
//! Idempotency-Keys and retrying, the primary killed with SIGKILL; then a base
//! backup taken mid-sale restored to a point in time after the failover.
//!
//! Ignored by the ordinary suite: it needs the set-up running.
//! `make test-failover` (scripts/test_failover.sh) brings it up and runs
//! this with FRONTROW_HA_URL, the application's URL through HAProxy.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;
use crate::crash::{client_for, free_port};

/// Clients buying at once, each a fan who holds a few times and then gives
/// way to a new fan (sign-ups go on through the failover too).
const CLIENTS: usize = 12;
const HOLDS_PER_FAN: usize = 8;
const ROWS: usize = 40;
const SEATS_PER_ROW: usize = 50;
/// Of the holds made, the share paid for (the rest stay held).
const PAY_SHARE: f64 = 0.7;
/// How long a client keeps retrying one request before the test fails.
const HOLD_PATIENCE: Duration = Duration::from_secs(60);
/// A checkout cut off by the failover keeps its claim on the key until
/// its lease (30 s) ends, and retries hear "in use" meanwhile.
const CHECKOUT_PATIENCE: Duration = Duration::from_secs(120);
/// A request during the switch must be answered (503) within this.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// Holds must be taken again within this of the kill.
const RESUME_WITHIN: Duration = Duration::from_secs(60);

struct Ha {
    url: String,
    scripts: PathBuf,
    logs: PathBuf,
}

impl Ha {
    fn from_env() -> Self {
        let url = std::env::var("FRONTROW_HA_URL").expect("FRONTROW_HA_URL: run this through `make test-failover`");
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = std::env::var_os("FRONTROW_HA_DIR").map_or_else(|| repo.join("target/ha"), PathBuf::from);
        Self { url, scripts: repo.join("scripts/ha"), logs: dir.join("logs") }
    }

    /// Runs scripts/ha/<name> and answers the last line it printed, and
    /// how long it took.
    async fn run(&self, name: &str, args: &[&str]) -> (String, Duration) {
        let started = Instant::now();
        let out = tokio::process::Command::new("bash")
            .arg(self.scripts.join(name))
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .await
            .expect("running a script");
        assert!(out.status.success(), "scripts/ha/{name} failed");
        let stdout = String::from_utf8_lossy(&out.stdout);
        (stdout.lines().last().unwrap_or_default().trim().to_owned(), started.elapsed())
    }
}

/// The server binary on the set-up, as it would run in production.
struct Server {
    _child: tokio::process::Child,
    base: String,
}

impl Server {
    async fn start(ha: &Ha) -> Self {
        let port = free_port();
        std::fs::create_dir_all(&ha.logs).expect("log dir");
        let log = std::fs::File::create(ha.logs.join("frontrow.log")).expect("server log");
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .arg("serve")
            .env("DATABASE_URL", &ha.url)
            .env("FRONTROW_ADDR", format!("127.0.0.1:{port}"))
            .env("FRONTROW_RATE_LIMITS", "off")
            .env("FRONTROW_SECRET", "failover-test-secret-of-some-length")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("starting frontrow");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        eventually(60, "the server to come up", || {
            let (http, url) = (http.clone(), format!("{base}/readyz"));
            async move { http.get(url).send().await.ok().filter(|r| r.status().is_success()).map(|_| ()) }
        })
        .await;
        Self { _child: child, base }
    }
}

/// An acknowledged hold.
#[derive(Clone)]
struct HoldAck {
    hold_id: String,
    seats: Vec<String>,
    /// When the request that was answered was sent, and its answer came.
    sent: DateTime<Utc>,
    acked: DateTime<Utc>,
}

/// A checkout, with the one answer its key got.
struct CheckoutRecord {
    http: reqwest::Client,
    base: String,
    hold_id: String,
    token: String,
    key: String,
    seats: Vec<String>,
    status: u16,
    body: Value,
    /// Attempts before the answer (retries across the switch).
    attempts: usize,
    first_sent: DateTime<Utc>,
    sent: DateTime<Utc>,
    answered: DateTime<Utc>,
}

/// What the clients saw.
#[derive(Default)]
struct Log {
    holds: Vec<HoldAck>,
    checkouts: Vec<CheckoutRecord>,
    unavailable: usize,
    dropped: usize,
    slowest_unavailable: Duration,
    slowest: Duration,
    /// Anything that is neither an answer of the API's nor a 503 with its code.
    unexpected: Vec<String>,
    /// Requests still unanswered when their client gave up.
    unanswered: Vec<String>,
}

type Shared = Arc<Mutex<Log>>;

fn lock(log: &Shared) -> std::sync::MutexGuard<'_, Log> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

struct Answer {
    reply: Reply,
    attempts: usize,
    first_sent: DateTime<Utc>,
    sent: DateTime<Utc>,
    answered: DateTime<Utc>,
}

/// Sends the request until it gets an answer that is not "try again": a
/// 503 (which must come quickly and name its error), a dropped connection,
/// and with `in_use_again` a 409 saying the key's first request is still
/// being worked on. None if `patience` runs out first.
async fn until_answered(log: &Shared, patience: Duration, in_use_again: bool, make: impl Fn() -> reqwest::RequestBuilder) -> Option<Answer> {
    let give_up = Instant::now() + patience;
    let first_sent = Utc::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let sent = Utc::now();
        let started = Instant::now();
        let outcome = match make().send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                response.text().await.ok().map(|text| {
                    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
                    Reply { status, headers, body }
                })
            }
            Err(_) => None,
        };
        let took = started.elapsed();
        {
            let mut l = lock(log);
            l.slowest = l.slowest.max(took);
            match &outcome {
                None => l.dropped += 1,
                Some(r) if r.status == 503 => {
                    l.unavailable += 1;
                    l.slowest_unavailable = l.slowest_unavailable.max(took);
                    if r.body["error"] != "unavailable" || !r.headers.contains_key("retry-after") {
                        l.unexpected.push(format!("503 without its code or Retry-After: {}", r.body));
                    }
                }
                Some(r) if r.status >= 500 => l.unexpected.push(format!("{} {}", r.status, r.body)),
                Some(_) => {}
            }
        }
        if let Some(reply) = outcome {
            let in_use = reply.status == 409 && matches!(reply.body["error"].as_str(), Some("idempotency_key_in_use" | "checkout_in_progress"));
            if reply.status != 503 && !(in_use_again && in_use) {
                return Some(Answer { reply, attempts, first_sent, sent, answered: Utc::now() });
            }
        }
        if Instant::now() >= give_up {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn fan_client(base: &str) -> Client {
    Client { http: reqwest::Client::builder().cookie_store(true).timeout(Duration::from_secs(60)).build().expect("client"), base: base.to_owned() }
}

/// A new fan, signed up (retried through the switch).
async fn new_fan(base: &str, log: &Shared) -> Option<Client> {
    let fan = fan_client(base);
    let body = json!({ "email": format!("failover-{}@example.test", Uuid::new_v4().simple()), "password": PASSWORD, "name": "Fan" });
    let url = format!("{base}/api/v1/auth/signup");
    match until_answered(log, HOLD_PATIENCE, false, || fan.http.post(&url).json(&body)).await {
        Some(a) if a.reply.status == 201 => Some(fan),
        // A sign-up has no key: one whose answer was lost in the switch
        // made the account, and its retry hears so. The fan signs in.
        Some(a) if a.attempts > 1 && a.reply.status == 409 && a.reply.body["error"] == "email_taken" => {
            let url = format!("{base}/api/v1/auth/login");
            let credentials = json!({ "email": body["email"], "password": PASSWORD });
            let login = until_answered(log, HOLD_PATIENCE, false, || fan.http.post(&url).json(&credentials)).await;
            match login {
                Some(a) if a.reply.status == 200 => Some(fan),
                other => {
                    lock(log).unexpected.push(format!("sign-in after a lost sign-up: {:?}", other.map(|a| (a.reply.status, a.reply.body))));
                    None
                }
            }
        }
        Some(a) => {
            lock(log).unexpected.push(format!("sign-up: {} {}", a.reply.status, a.reply.body));
            None
        }
        None => {
            lock(log).unanswered.push("a sign-up".into());
            None
        }
    }
}

/// One client: fans in turn, each holding a seat or two at random a few
/// times and paying for most of its holds, every request with its key.
async fn client(base: String, event: Uuid, log: Shared, stop: Arc<AtomicBool>) {
    let mut rng = StdRng::from_entropy();
    while !stop.load(Ordering::Relaxed) {
        let Some(fan) = new_fan(&base, &log).await else { return };
        for _ in 0..HOLDS_PER_FAN {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let row = rng.gen_range(1..=ROWS);
            let first = rng.gen_range(1..SEATS_PER_ROW);
            let count = rng.gen_range(1..=2);
            let seats: Vec<String> = (first..first + count).map(|n| format!("A-{row}-{n}")).collect();
            let key = Uuid::new_v4().to_string();
            let url = format!("{base}/api/v1/events/{event}/holds");
            let body = json!({ "seat_ids": seats });
            let Some(held) = until_answered(&log, HOLD_PATIENCE, false, || fan.http.post(&url).header("idempotency-key", &key).json(&body)).await
            else {
                lock(&log).unanswered.push(format!("hold {key}"));
                return;
            };
            match (held.reply.status, held.reply.body["error"].as_str()) {
                (200 | 201, _) => {}
                (409, Some("seats_unavailable")) => continue,
                (422, Some("too_many_seats")) => break,
                (status, _) => {
                    lock(&log).unexpected.push(format!("hold: {status} {}", held.reply.body));
                    continue;
                }
            }
            let hold_id = held.reply.body["hold_id"].as_str().unwrap_or_default().to_owned();
            let token = held.reply.body["hold_token"].as_str().unwrap_or_default().to_owned();
            lock(&log).holds.push(HoldAck { hold_id: hold_id.clone(), seats: seats.clone(), sent: held.sent, acked: held.answered });
            if rng.gen_bool(PAY_SHARE) {
                let key = Uuid::new_v4().to_string();
                let url = format!("{base}/api/v1/holds/{hold_id}/checkout");
                let body = json!({ "hold_token": token, "payment_token": "tok_visa" });
                let Some(paid) =
                    until_answered(&log, CHECKOUT_PATIENCE, true, || fan.http.post(&url).header("idempotency-key", &key).json(&body)).await
                else {
                    lock(&log).unanswered.push(format!("checkout {key}"));
                    return;
                };
                lock(&log).checkouts.push(CheckoutRecord {
                    http: fan.http.clone(),
                    base: base.clone(),
                    hold_id,
                    token,
                    key,
                    seats,
                    status: paid.reply.status,
                    body: paid.reply.body,
                    attempts: paid.attempts,
                    first_sent: paid.first_sent,
                    sent: paid.sent,
                    answered: paid.answered,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// What identifies an answer: its status and the booking, checkout or
/// error it names.
fn gist(status: u16, body: &Value) -> String {
    let what = body["booking_id"].as_str().or(body["checkout_id"].as_str()).or(body["error"].as_str()).unwrap_or_default();
    format!("{status} {what}")
}

fn secs(d: chrono::Duration) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}

/// Bookings of `ids` present in the database at `pool`.
async fn bookings_present(pool: &sqlx::PgPool, ids: &[Uuid]) -> HashSet<Uuid> {
    sqlx::query_scalar::<_, Uuid>("SELECT booking_id FROM bookings WHERE booking_id = ANY($1) AND status = 'confirmed'")
        .bind(ids)
        .fetch_all(pool)
        .await
        .expect("bookings")
        .into_iter()
        .collect()
}

async fn holds_present(pool: &sqlx::PgPool, ids: &[Uuid]) -> HashMap<Uuid, Vec<String>> {
    sqlx::query_as::<_, (Uuid, Vec<String>)>("SELECT hold_id, seat_ids FROM holds WHERE hold_id = ANY($1)")
        .bind(ids)
        .fetch_all(pool)
        .await
        .expect("holds")
        .into_iter()
        .collect()
}

fn uuid_of(s: &str) -> Uuid {
    s.parse().expect("a uuid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the high-availability set-up: make test-failover"]
async fn failover_the_primary_dies_mid_sale_and_nothing_acknowledged_is_lost() {
    let ha = Ha::from_env();
    let pool = frontrow_server::startup::connect(&ha.url, 4).await.expect("the set-up through HAProxy");
    frontrow_server::startup::migrate(&pool).await.expect("migrations");
    let staff_email = format!("failover-staff-{}@example.test", Uuid::new_v4().simple());
    let staff_user = frontrow_engine::accounts::NewUser { email: &staff_email, password: PASSWORD, name: "S", role: frontrow_model::Role::Staff };
    frontrow_server::startup::engine(&test_settings(), pool.clone()).expect("engine").create_user(staff_user).await.expect("staff");
    let server = Server::start(&ha).await;
    let base = server.base.clone();

    let staff = client_for(&base);
    let login = staff.post("/api/v1/auth/login", json!({ "email": staff_email, "password": PASSWORD })).await;
    assert_eq!(login.status, 200, "{}", login.body);
    let rows: Vec<Value> = (1..=ROWS).map(|r| json!({ "row": r.to_string(), "seats": SEATS_PER_ROW, "tier": "Standard" })).collect();
    let created = staff
        .post(
            "/api/v1/admin/events",
            json!({ "name": "Failover Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                    "sale_opens_at": "2020-01-01T10:00:00Z", "hold_ttl_seconds": 3600, "max_seats_per_order": 16,
                    "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                    "sections": [{ "section": "A", "rows": rows }] }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event: Uuid = uuid_of(created.body["event_id"].as_str().expect("event_id"));

    // The sale.
    let log: Shared = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sale_started = Utc::now();
    let clients: Vec<_> = (0..CLIENTS).map(|_| tokio::spawn(client(base.clone(), event, log.clone(), stop.clone()))).collect();

    // A base backup while it sells.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let backup_started = Utc::now();
    let (backup, backup_took) = ha.run("backup.sh", &[]).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let acked_before_kill = lock(&log).holds.len();
    assert!(acked_before_kill > 0, "no hold was made before the kill");

    // The primary's machine is lost.
    let (killed, _) = ha.run("kill-primary.sh", &[]).await;
    let kill_at = Utc::now();
    let resumed_at = eventually(RESUME_WITHIN.as_secs(), "holds to resume after the failover", || {
        let log = log.clone();
        // Asked for after the kill: an answer already on its way when the
        // primary died says nothing of the failover.
        async move { lock(&log).holds.iter().filter(|h| h.sent > kill_at).map(|h| h.acked).min() }
    })
    .await;
    // The point to restore to: well after the failover, with sales after it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let point = Utc::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.expect("a client panicked");
    }

    let log = Arc::try_unwrap(log).ok().expect("the clients are done").into_inner().unwrap_or_else(|e| e.into_inner());
    assert!(log.unexpected.is_empty(), "answers that are neither the API's nor a 503 with its code: {:?}", log.unexpected);
    assert!(log.unanswered.is_empty(), "requests never answered: {:?}", log.unanswered);
    assert!(log.slowest_unavailable < ANSWER_WITHIN, "a 503 took {:?}", log.slowest_unavailable);
    assert!(log.slowest < CHECKOUT_PATIENCE, "a request took {:?}", log.slowest);

    // Every acknowledged hold is there, with its seats.
    let hold_ids: Vec<Uuid> = log.holds.iter().map(|h| uuid_of(&h.hold_id)).collect();
    let stored = holds_present(&pool, &hold_ids).await;
    for h in &log.holds {
        let seats = stored.get(&uuid_of(&h.hold_id)).unwrap_or_else(|| panic!("acknowledged hold {} is missing", h.hold_id));
        let (mut a, mut b) = (seats.clone(), h.seats.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "hold {} has other seats", h.hold_id);
    }
    // Every acknowledged booking is there, each seat with its live ticket,
    // and no seat in two of them.
    let booked: Vec<&CheckoutRecord> = log.checkouts.iter().filter(|c| c.status == 201).collect();
    let booking_ids: Vec<Uuid> = booked.iter().map(|c| uuid_of(c.body["booking_id"].as_str().expect("booking_id"))).collect();
    assert_eq!(bookings_present(&pool, &booking_ids).await.len(), booking_ids.len(), "acknowledged bookings are missing");
    let mut sold = HashSet::new();
    for c in &booked {
        for seat in &c.seats {
            assert!(sold.insert(seat.clone()), "seat {seat} was sold twice");
        }
    }
    let tickets: i64 = sqlx::query_scalar("SELECT count(*) FROM tickets WHERE booking_id = ANY($1) AND voided_at IS NULL")
        .bind(&booking_ids)
        .fetch_one(&pool)
        .await
        .expect("tickets");
    assert_eq!(tickets as usize, sold.len(), "a booked seat without its ticket");
    let report = frontrow_server::startup::engine(&test_settings(), pool.clone()).expect("engine").audit(Some(event.into())).await.expect("audit");
    assert!(report.violations().is_empty(), "audit after the failover: {:?}", report.violations());

    // Every checkout key has one answer: asked again, it answers the same.
    let mut across = 0;
    let mut longest = chrono::Duration::zero();
    for c in &log.checkouts {
        let again = Client { http: c.http.clone(), base: c.base.clone() }.checkout(&c.hold_id, &c.token, "tok_visa", &c.key).await;
        let (first, replay) = (gist(c.status, &c.body), gist(again.status, &again.body));
        // A payment still pending at the first answer may have settled since.
        let settled = c.status == 202 && matches!(again.status, 201 | 402);
        assert!(first == replay || settled, "checkout key {} answered {first} then {replay}", c.key);
        if c.attempts > 1 {
            across += 1;
            longest = longest.max(c.answered - c.first_sent);
        }
    }
    let declined = log.checkouts.iter().filter(|c| c.status != 201).count();

    println!(
        "failover: {} clients on {} seats; the primary ({killed}) SIGKILLed {:.1} s into the sale",
        CLIENTS,
        ROWS * SEATS_PER_ROW,
        secs(kill_at - sale_started)
    );
    println!(
        "failover: holds resumed {:.1} s after the kill; during the switch {} answers were 503 (the slowest in {:.1} s), {} connections dropped, no 5xx otherwise",
        secs(resumed_at - kill_at),
        log.unavailable,
        log.slowest_unavailable.as_secs_f64(),
        log.dropped
    );
    println!(
        "failover: acknowledged {} holds ({} before the kill) and {} bookings ({} seats): all in the database, no seat sold twice, audit clean",
        log.holds.len(),
        acked_before_kill,
        booked.len(),
        sold.len()
    );
    println!(
        "failover: {} checkout keys ({} not booked), each with one answer, the same when asked again; {across} were retried (the longest answered {:.1} s after it was first sent)",
        log.checkouts.len(),
        declined,
        secs(longest)
    );

    // Point-in-time restore of the mid-sale backup, to a moment after the
    // failover (the WAL is replayed across the change of timeline).
    let target = point.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string();
    let (restored_url, restore_took) = ha.run("restore.sh", &["--target-time", &target, "--backup", &backup]).await;
    let audit = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"))
        .arg("audit")
        .env("DATABASE_URL", &restored_url)
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("running frontrow audit");
    let audit_out = String::from_utf8_lossy(&audit.stdout);
    assert!(
        audit.status.success() && audit_out.contains("audit: no violations"),
        "the audit of the restore: {audit_out}{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let restored = frontrow_server::startup::connect(&restored_url, 2).await.expect("the restore");
    let (before, after): (Vec<&CheckoutRecord>, Vec<&CheckoutRecord>) = booked.iter().partition(|c| c.answered < point);
    let after: Vec<&CheckoutRecord> = after.into_iter().filter(|c| c.sent > point).collect();
    let ids = |cs: &[&CheckoutRecord]| -> Vec<Uuid> { cs.iter().map(|c| uuid_of(c.body["booking_id"].as_str().unwrap_or_default())).collect() };
    let present_before = bookings_present(&restored, &ids(&before)).await;
    assert_eq!(present_before.len(), before.len(), "bookings acknowledged before the point are missing from the restore");
    assert!(!after.is_empty(), "no booking was made after the point: the restore proves nothing");
    let present_after = bookings_present(&restored, &ids(&after)).await;
    assert!(present_after.is_empty(), "the restore went past its point: {} later bookings in it", present_after.len());
    let holds_before: Vec<Uuid> = log.holds.iter().filter(|h| h.acked < point).map(|h| uuid_of(&h.hold_id)).collect();
    assert_eq!(
        holds_present(&restored, &holds_before).await.len(),
        holds_before.len(),
        "holds acknowledged before the point are missing from the restore"
    );
    let holds_after: Vec<Uuid> = log.holds.iter().filter(|h| h.sent > point).map(|h| uuid_of(&h.hold_id)).collect();
    assert!(holds_present(&restored, &holds_after).await.is_empty(), "the restore has holds made after its point");
    restored.close().await;

    println!(
        "backup: base backup taken mid-sale ({:.1} s into it) in {:.1} s; restored to {:.1} s after the kill in {:.1} s: audit clean, the {} bookings and {} holds acknowledged before that point all there, the {} bookings made after it absent",
        secs(backup_started - sale_started),
        backup_took.as_secs_f64(),
        secs(point - kill_at),
        restore_took.as_secs_f64(),
        before.len(),
        holds_before.len(),
        after.len()
    );
    drop(server);
    pool.close().await;
}
