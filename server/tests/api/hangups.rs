//! Clients that hang up part-way through a request: what they leave behind
//! must never reach the next request, and what was acknowledged stands.

use std::time::Duration;

use crate::common::*;
use rand::Rng;
use serde_json::{json, Value};
use uuid::Uuid;

const FANS: usize = 40;
const ROUNDS: usize = 50;

/// What one fan was told, as opposed to what it gave up waiting for.
#[derive(Default)]
struct Told {
    holds: Vec<String>,
    bookings: Vec<String>,
    releases: Vec<String>,
    /// Checkouts whose answer never came, sent again with their key.
    retried_checkouts: Vec<u16>,
}

/// A request given up on 1-40 ms in, as an impatient client would; one in
/// four waits for its answer, so that the sale goes on.
fn impatient(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let mut rng = rand::thread_rng();
    if rng.gen_ratio(1, 4) {
        return request;
    }
    request.timeout(Duration::from_millis(rng.gen_range(1..=40)))
}

async fn answered(request: reqwest::RequestBuilder) -> Option<(u16, Value)> {
    let response = impatient(request).send().await.ok()?;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    Some((status, body))
}

async fn impatient_fan(fan: Client, event_id: Uuid, number: usize) -> Told {
    let mut told = Told::default();
    let mut unanswered = Vec::new();
    for round in 0..ROUNDS {
        let seat = {
            let mut rng = rand::thread_rng();
            format!("A-{}-{}", rng.gen_range(1..=20), rng.gen_range(1..=20))
        };
        let hold = fan.http.post(format!("{}/api/v1/events/{event_id}/holds", fan.base)).json(&json!({ "seat_ids": [seat] }));
        let Some((201, body)) = answered(hold).await else { continue };
        let (Some(hold_id), Some(token)) = (body["hold_id"].as_str(), body["hold_token"].as_str()) else { continue };
        told.holds.push(hold_id.to_owned());
        if round % 2 == 0 {
            let key = format!("fan-{number}-round-{round}");
            let checkout = fan
                .http
                .post(format!("{}/api/v1/holds/{hold_id}/checkout", fan.base))
                .header("idempotency-key", &key)
                .json(&json!({ "hold_token": token, "payment_token": "tok_visa" }));
            match answered(checkout).await {
                Some((201, body)) => told.bookings.extend(body["booking_id"].as_str().map(str::to_owned)),
                Some(_) => {}
                None => unanswered.push((hold_id.to_owned(), token.to_owned(), key)),
            }
        } else {
            let release = fan.http.delete(format!("{}/api/v1/holds/{hold_id}", fan.base)).header("x-hold-token", token);
            if let Some((204, _)) = answered(release).await {
                told.releases.push(hold_id.to_owned());
            }
        }
    }
    for (hold_id, token, key) in unanswered {
        told.retried_checkouts.push(fan.checkout(&hold_id, &token, "tok_visa", &key).await.status);
    }
    told
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_hanging_up_at_random_points_poison_no_connection_and_lose_no_acknowledged_write() {
    let app = spawn_app().await;
    let event_id = app.event(20, 20, 300, 8).await;
    let fans = app.fans(FANS).await;
    let runs = fans.into_iter().enumerate().map(|(n, fan)| tokio::spawn(impatient_fan(fan, event_id, n)));
    let mut told = Told::default();
    for run in futures::future::join_all(runs).await {
        let t = run.expect("fan ran");
        told.holds.extend(t.holds);
        told.bookings.extend(t.bookings);
        told.releases.extend(t.releases);
        told.retried_checkouts.extend(t.retried_checkouts);
    }
    println!(
        "acknowledged: {} holds, {} bookings, {} releases; {} checkouts hung up on",
        told.holds.len(),
        told.bookings.len(),
        told.releases.len(),
        told.retried_checkouts.len()
    );

    // A checkout whose client hung up ran on to its end: its retry gets
    // that answer, not 409 until the key's lease runs out.
    for status in &told.retried_checkouts {
        assert!(*status != 409 && *status < 500, "a retried checkout was answered {status}");
    }

    // Every write a client was told of stands.
    for hold_id in &told.holds {
        let found: i64 =
            sqlx::query_scalar("SELECT count(*) FROM holds WHERE hold_id = $1::uuid").bind(hold_id).fetch_one(&app.pool).await.expect("count");
        assert_eq!(found, 1, "acknowledged hold {hold_id} is missing");
    }
    for booking_id in &told.bookings {
        let found: i64 = sqlx::query_scalar("SELECT count(*) FROM bookings WHERE booking_id = $1::uuid")
            .bind(booking_id)
            .fetch_one(&app.pool)
            .await
            .expect("count");
        assert_eq!(found, 1, "acknowledged booking {booking_id} is missing");
    }
    for hold_id in &told.releases {
        let still_held: i64 = sqlx::query_scalar("SELECT count(*) FROM seats WHERE hold_id = $1::uuid AND state = 'held'")
            .bind(hold_id)
            .fetch_one(&app.pool)
            .await
            .expect("count");
        assert_eq!(still_held, 0, "released hold {hold_id} still holds seats");
    }

    // No connection was lent out inside a transaction: the pool closed none
    // for coming back in one, and none sits idle in one now.
    let metrics = app.client().http.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    let poisoned: f64 = metrics
        .lines()
        .find(|l| l.starts_with(frontrow_server::startup::CONNECTIONS_RETURNED_IN_TRANSACTION))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    assert_eq!(poisoned, 0.0, "connections came back to the pool inside a transaction");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle_in_transaction: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")
            .fetch_one(&app.pool)
            .await
            .expect("activity");
    assert_eq!(idle_in_transaction, 0, "sessions idle inside a transaction");
    app.assert_invariants().await;
    app.stop().await;
}
