//! The server process is killed between committing a sale and replying; the
//! client's retry with the same Idempotency-Key must get the same booking.

use std::process::Stdio;
use std::time::Duration;

use crate::common::*;
use serde_json::json;

pub(crate) struct Server {
    pub child: tokio::process::Child,
    pub base: String,
}

pub(crate) async fn start_server(database_url: &str, failpoint: Option<&str>) -> Server {
    start_server_on(database_url, free_port(), failpoint).await
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The real binary on `port` (the same port again is the same instance).
pub(crate) async fn start_server_on(database_url: &str, port: u16, failpoint: Option<&str>) -> Server {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"));
    cmd.arg("serve")
        .env("DATABASE_URL", database_url)
        .env("FRONTROW_ADDR", format!("127.0.0.1:{port}"))
        .env("FRONTROW_RATE_LIMITS", "off")
        .env("FRONTROW_SECRET", "crash-test-secret-of-some-length")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(f) = failpoint {
        cmd.env("FRONTROW_FAILPOINT", f);
    }
    let child = cmd.spawn().expect("starting frontrow");
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    eventually(30, "server to come up", || {
        let http = http.clone();
        let url = format!("{base}/readyz");
        async move { http.get(url).send().await.ok().filter(|r| r.status().is_success()).map(|_| ()) }
    })
    .await;
    Server { child, base }
}

pub(crate) fn client_for(base: &str) -> Client {
    Client { http: reqwest::Client::builder().cookie_store(true).build().unwrap(), base: base.to_owned() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_a_crash_between_commit_and_reply_returns_the_same_booking() {
    // An in-process app sets up the event; the real binary does the checkout.
    let setup = spawn_app().await;
    let event = setup.event(1, 10, 300, 8).await;
    let database_url = setup.database_url.clone();

    let mut doomed = start_server(&database_url, Some("abort_after_checkout_commit")).await;
    let fan = client_for(&doomed.base);
    let signup = fan.post("/api/v1/auth/signup", json!({ "email": "crash@example.test", "password": PASSWORD, "name": "C" })).await;
    assert_eq!(signup.status, 201);
    let hold = fan.hold(event, &["A-1-1", "A-1-2"]).await;
    assert_eq!(hold.status, 201);
    let hold_id = hold.body["hold_id"].as_str().unwrap().to_owned();
    let token = hold.body["hold_token"].as_str().unwrap().to_owned();

    // The process dies after the commit: the client sees no reply at all.
    let lost = fan
        .http
        .post(format!("{}/api/v1/holds/{hold_id}/checkout", doomed.base))
        .header("idempotency-key", "crash-key")
        .json(&json!({ "hold_token": token, "payment_token": "tok_visa" }))
        .send()
        .await;
    assert!(lost.is_err(), "the reply must be lost: {lost:?}");
    let status = tokio::time::timeout(Duration::from_secs(10), doomed.child.wait()).await.unwrap().unwrap();
    assert!(!status.success(), "the server process was killed");

    // What was committed is there.
    let committed: i64 = sqlx::query_scalar("SELECT count(*) FROM bookings").fetch_one(&setup.pool).await.unwrap();
    assert_eq!(committed, 1);

    // A fresh process; the same session cookie and the same key.
    let server = start_server(&database_url, None).await;
    let retry_client = Client { http: fan.http.clone(), base: server.base.clone() };
    let retry = retry_client.checkout(&hold_id, &token, "tok_visa", "crash-key").await;
    assert_eq!(retry.status, 201, "{:?}", retry.body);
    let booking_id = retry.body["booking_id"].as_str().unwrap().to_owned();
    let stored: uuid::Uuid = sqlx::query_scalar("SELECT booking_id FROM bookings").fetch_one(&setup.pool).await.unwrap();
    assert_eq!(booking_id, stored.to_string(), "the retry returns the booking committed before the crash");

    let bookings: i64 = sqlx::query_scalar("SELECT count(*) FROM bookings").fetch_one(&setup.pool).await.unwrap();
    let charges: i64 = sqlx::query_scalar("SELECT count(*) FROM sim_provider_payments").fetch_one(&setup.pool).await.unwrap();
    assert_eq!((bookings, charges), (1, 1));
    setup.assert_invariants().await;
    drop(server);
}

/// Signs a new fan up on `base`, holds `seat`, and sends a checkout the
/// server dies in (`abort_before_payment`); answers the fan and the hold.
async fn checkout_killed_mid_payment(doomed: &mut Server, event: uuid::Uuid, seat: &str) -> (Client, String, String) {
    let fan = client_for(&doomed.base);
    let email = format!("killed-{}@example.test", uuid::Uuid::new_v4().simple());
    assert_eq!(fan.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "K" })).await.status, 201);
    let hold = fan.hold(event, &[seat]).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let hold_id = hold.body["hold_id"].as_str().unwrap().to_owned();
    let token = hold.body["hold_token"].as_str().unwrap().to_owned();
    let lost = fan
        .http
        .post(format!("{}/api/v1/holds/{hold_id}/checkout", doomed.base))
        .header("idempotency-key", "killed-key")
        .json(&json!({ "hold_token": token, "payment_token": "tok_visa" }))
        .send()
        .await;
    assert!(lost.is_err(), "the reply must be lost: {lost:?}");
    let status = tokio::time::timeout(Duration::from_secs(10), doomed.child.wait()).await.unwrap().unwrap();
    assert!(!status.success(), "the server process was killed");
    (fan, hold_id, token)
}

/// The fan's retry of the killed checkout through `server`, repeated while
/// the key is still in flight (as a client does), for up to `secs`.
async fn retry_while_in_flight(fan: &Client, server: &Server, hold_id: &str, token: &str, secs: u64) -> Reply {
    let retrying = Client { http: fan.http.clone(), base: server.base.clone() };
    eventually(secs, "the retry to be answered", || async {
        let r = retrying.checkout(hold_id, token, "tok_visa", "killed-key").await;
        match (r.status, r.body["error"].as_str()) {
            (409, Some("idempotency_key_in_use")) => None,
            _ => Some(r),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_cut_short_by_a_kill_is_answered_soon_after_the_restart() {
    let setup = spawn_app().await;
    let event = setup.event(1, 10, 300, 8).await;
    let database_url = setup.database_url.clone();

    // Restarted as the same instance (same address): its previous life's
    // claim is let go at start, so the first retry is answered.
    let port = free_port();
    let mut doomed = start_server_on(&database_url, port, Some("abort_before_payment")).await;
    let (fan, hold_id, token) = checkout_killed_mid_payment(&mut doomed, event, "A-1-1").await;
    let server = start_server_on(&database_url, port, None).await;
    // The restarted server's own reconciliation may be finishing that very
    // checkout when the fan retries ("in flight" for a moment): a client
    // retries that, and within a few seconds, not the 30 s of the claim.
    let retry = retry_while_in_flight(&fan, &server, &hold_id, &token, 8).await;
    assert_eq!(retry.status, 201, "the retry after the restart: {}", retry.body);

    // Another instance takes over once the dead one has missed its
    // heartbeats (seconds), not when the 30 s claim runs out.
    let mut doomed = start_server_on(&database_url, free_port(), Some("abort_before_payment")).await;
    let (fan, hold_id, token) = checkout_killed_mid_payment(&mut doomed, event, "A-1-2").await;
    let answer = retry_while_in_flight(&fan, &server, &hold_id, &token, 12).await;
    assert_eq!(answer.status, 201, "{}", answer.body);

    let charges: i64 = sqlx::query_scalar("SELECT count(*) FROM sim_provider_payments").fetch_one(&setup.pool).await.unwrap();
    assert_eq!(charges, 2, "one charge per checkout");
    setup.assert_invariants().await;
    drop(server);
}
