//! Fans changing their mind: cancelling tickets of their own booking on the
//! event's terms, refunded once however often, however racily and across
//! whatever crash they ask.

use std::path::{Path, PathBuf};

use futures::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;
use crate::crash::{client_for, start_server};

/// An event on sale, starting at `starts_at`, one tier at €50.00, on which
/// fans may cancel until 48 hours before and get 90% less €1.00 a ticket.
async fn event_with_terms(staff: &Client, starts_at: &str) -> Uuid {
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Second Thoughts", "kind": "concert", "venue": "Hall",
                "starts_at": starts_at, "sale_opens_at": "2020-01-01T10:00:00Z",
                "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 8, "tier": "Standard" }] }],
                "refund_policy": { "cancel_until_hours": 48, "keep_percent": 10, "fee_cents": 100 }
            }),
        )
        .await;
    assert_eq!(r.status, 201, "create event: {}", r.body);
    r.body["event_id"].as_str().expect("event_id").parse().expect("uuid")
}

async fn cancel(fan: &Client, booking: &str, key: &str, body: Value) -> Reply {
    fan.send(fan.http.post(format!("{}/api/v1/bookings/{booking}/cancel", fan.base)).header("idempotency-key", key).json(&body)).await
}

fn ticket_ids(booking: &Value) -> Vec<String> {
    booking["tickets"].as_array().expect("tickets").iter().map(|t| t["ticket_id"].as_str().expect("id").to_owned()).collect()
}

/// A server mailing to a file outbox of its own, a staff client and an
/// event with terms.
async fn app_with_event() -> (TestApp, PathBuf, Client, Uuid) {
    let outbox = std::env::temp_dir().join(format!("frontrow-outbox-{}.jsonl", Uuid::new_v4().simple()));
    let app = {
        let outbox = outbox.clone();
        spawn_app_with(move |s| s.mail_outbox = Some(outbox)).await
    };
    let staff = app.staff().await;
    let event = event_with_terms(&staff, "2030-01-01T20:00:00Z").await;
    (app, outbox, staff, event)
}

/// The cancellation mails the outbox holds for `to`.
fn cancellation_mails(outbox: &Path, to: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(outbox).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["to"] == json!(to) && m["subject"].as_str().is_some_and(|s| s.starts_with("Cancelled")))
        .collect()
}

async fn patch_event(staff: &Client, event: Uuid, changes: Value) -> Reply {
    staff.send(staff.http.patch(format!("{}/api/v1/admin/events/{event}", staff.base)).json(&changes)).await
}

async fn count(app: &TestApp, sql: &str, booking: &str) -> i64 {
    sqlx::query_scalar(sql).bind(booking.parse::<Uuid>().expect("uuid")).fetch_one(&app.pool).await.expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fans_cancel_their_own_tickets_on_the_events_terms_and_each_is_refunded_once() {
    let (app, outbox, staff, event) = app_with_event().await;
    let listed = app.client().get(&format!("/api/v1/events/{event}")).await;
    assert_eq!(listed.body["refund_policy"], json!({ "cancel_until_hours": 48, "keep_percent": 10, "fee_cents": 100 }));
    let fan = app.fan_named("Ines Moreau").await;
    let booking = buy(&fan, event, &["A-1-1", "A-1-2", "A-1-3"]).await;
    let id = booking["booking_id"].as_str().expect("booking_id").to_owned();
    let tickets = ticket_ids(&booking);
    let page = fan.get(&format!("/bookings/{id}")).await;
    let html = page.body.as_str().unwrap_or_default();
    assert!(
        html.contains("each ticket&#x27;s price comes back less 10% and a €1.00 fee per ticket")
            || html.contains("each ticket's price comes back less 10% and a €1.00 fee per ticket"),
        "the terms are on the booking page"
    );
    assert!(html.contains("cancel-tickets") && html.contains("€44.00"), "and the cancel panel, with what each ticket brings back");

    // Bad requests change nothing.
    assert_error("no ticket named", &cancel(&fan, &id, "k-empty", json!({ "ticket_ids": [] })).await, 422, "invalid_input");
    let stranger = Uuid::new_v4().to_string();
    assert_error("not in this booking", &cancel(&fan, &id, "k-stranger", json!({ "ticket_ids": [stranger] })).await, 404, "not_found");
    assert_error("unknown field", &cancel(&fan, &id, "k-field", json!({ "refund_cents": 5000 })).await, 422, "invalid_input");
    let keyless = fan.post(&format!("/api/v1/bookings/{id}/cancel"), json!({})).await;
    assert_error("no idempotency key", &keyless, 422, "invalid_input");
    let other = app.fan().await;
    assert_error("someone else's booking", &cancel(&other, &id, "k-other", json!({})).await, 404, "not_found");
    assert_eq!(count(&app, "SELECT count(*) FROM refunds WHERE booking_id = $1", &id).await, 0);

    // Eight clicks and tabs cancel the first ticket at once: one wins.
    let one = json!({ "ticket_ids": [tickets[0]] });
    let keys: Vec<String> = (0..8).map(|n| format!("tab-{n}")).collect();
    let answers = join_all(keys.iter().map(|key| cancel(&fan, &id, key, one.clone()))).await;
    let won: Vec<&Reply> = answers.iter().filter(|r| r.status == 200).collect();
    assert_eq!(won.len(), 1, "{answers:?}");
    for lost in answers.iter().filter(|r| r.status != 200) {
        assert_error("a second cancellation", lost, 409, "already_refunded");
    }
    let done = &won[0].body;
    assert_eq!(done["refund_cents"], json!(4400), "€50.00 less 10% and €1.00");
    assert_eq!(done["kept_cents"], json!(600));
    assert_eq!(done["cancelled"], json!([tickets[0]]));
    assert_eq!(done["seats_released"], json!(["A-1-1"]));
    assert_eq!(done["status"], json!("partially_refunded"));
    let winner = answers.iter().position(|r| r.status == 200).expect("a winner");
    let again = cancel(&fan, &id, &keys[winner], one.clone()).await;
    assert_eq!((again.status, &again.body), (200, done), "a retry with its key gets the first answer");
    assert_eq!(count(&app, "SELECT count(*) FROM refunds WHERE booking_id = $1 AND kind = 'fan'", &id).await, 1);
    assert_eq!(count(&app, "SELECT coalesce(sum(kept_cents), 0)::bigint FROM refunds WHERE booking_id = $1", &id).await, 600);
    let provider: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(amount_cents), 0)::bigint FROM sim_provider_refunds").fetch_one(&app.pool).await.expect("sum");
    assert_eq!(provider, 4400, "the provider was asked once");
    // The seat is on sale again, once: another fan buys it.
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    buy(&app.fan().await, event, &["A-1-1"]).await;
    // What the seller kept is still takings: three tickets sold and €6.00.
    let summary = staff.get(&format!("/api/v1/admin/events/{event}/sales-summary.csv?by=tier")).await;
    assert_eq!(summary.body.as_str(), Some("tier,tickets,revenue_cents\nStandard,3,15600\n"), "{}", summary.body);
    let stats = staff.get(&format!("/api/v1/admin/events/{event}/stats")).await;
    assert_eq!(stats.body["tiers"][0]["revenue_cents"], json!(15600), "{}", stats.body);

    // A ticket used at the door cannot be cancelled, alone or with the rest.
    let code = booking["tickets"][1]["code"].as_str().expect("code");
    let admitted = staff.post("/api/v1/admin/checkins", json!({ "code": code })).await;
    assert_eq!(admitted.status, 200, "{}", admitted.body);
    assert_error("checked in", &cancel(&fan, &id, "k-used", json!({ "ticket_ids": [tickets[1]] })).await, 409, "ticket_used");
    assert_error("whole booking with a used ticket", &cancel(&fan, &id, "k-all", json!({})).await, 409, "ticket_used");
    let third = cancel(&fan, &id, "k-third", json!({ "ticket_ids": [tickets[2]] })).await;
    assert_eq!(third.status, 200, "{}", third.body);

    // Each cancellation is mailed, saying what came back and what was kept.
    let email = fan.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();
    let mails = eventually(20, "two cancellation mails", || async {
        let mails = cancellation_mails(&outbox, &email);
        (mails.len() == 2).then_some(mails)
    })
    .await;
    let body = mails[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains("Refunded: €44.00") && body.contains("A-1-1") && body.contains("the seller kept €6.00"), "{body}");

    // Past the deadline (the show moved to tomorrow), or with no
    // self-service offered, a fan is refused and nothing changes.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::hours(24)).to_rfc3339();
    let moved = patch_event(&staff, event, json!({ "starts_at": tomorrow })).await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    let late_fan = app.fan().await;
    let late = buy(&late_fan, event, &["A-1-5"]).await;
    let late_id = late["booking_id"].as_str().expect("id").to_owned();
    let closed = cancel(&late_fan, &late_id, "k-late", json!({})).await;
    assert_error("past the deadline", &closed, 409, "cancellation_closed");
    assert!(closed.body["closed_at"].is_string(), "{}", closed.body);
    let page = late_fan.get(&format!("/bookings/{late_id}")).await;
    assert!(!page.body.as_str().unwrap_or_default().contains("cancel-tickets"), "no cancel panel once closed");
    let off = patch_event(&staff, event, json!({ "refund_policy": {} })).await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.body["refund_policy"]["cancel_until_hours"], Value::Null);
    assert_error("not offered", &cancel(&late_fan, &late_id, "k-off", json!({})).await, 409, "cancellation_not_offered");
    let bad = patch_event(&staff, event, json!({ "refund_policy": { "keep_percent": 101 } })).await;
    assert_error("a share over 100%", &bad, 422, "invalid_input");
    assert_eq!(count(&app, "SELECT count(*) FROM refunds WHERE booking_id = $1", &late_id).await, 0);
    assert_eq!(count(&app, "SELECT count(*) FROM tickets WHERE booking_id = $1 AND state = 'valid'", &late_id).await, 1);
    let _ = std::fs::remove_file(&outbox);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_cut_short_by_a_crash_is_refunded_once_after_the_restart() {
    let setup = spawn_app().await;
    let event = event_with_terms(&setup.staff().await, "2030-01-01T20:00:00Z").await;
    let database_url = setup.database_url.clone();
    setup.stop().await;

    let mut doomed = start_server(&database_url, Some("abort_before_refund")).await;
    let fan = client_for(&doomed.base);
    let email = format!("fan-{}@example.test", Uuid::new_v4().simple());
    assert_eq!(fan.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "F" })).await.status, 201);
    let booking = buy(&fan, event, &["A-1-1", "A-1-2"]).await;
    let id = booking["booking_id"].as_str().expect("id").to_owned();
    // The process dies after the cancellation commits, before the provider
    // hears of it: the fan gets no answer.
    let lost =
        fan.http.post(format!("{}/api/v1/bookings/{id}/cancel", fan.base)).header("idempotency-key", "crash-key").json(&json!({})).send().await;
    assert!(lost.is_err() || !lost.expect("reply").status().is_success(), "the server died part-way");
    let _ = doomed.child.wait().await;

    // Restarted: the fan's retry gets the first answer, and reconciliation
    // sends the refund the crash left recorded.
    let restarted = start_server(&database_url, None).await;
    let fan = client_for(&restarted.base);
    assert_eq!(fan.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await.status, 200);
    let retry = cancel(&fan, &id, "crash-key", json!({})).await;
    assert_eq!(retry.status, 200, "{}", retry.body);
    assert_eq!(retry.body["refund_cents"], json!(8800));
    let db = sqlx::PgPool::connect(&database_url).await.expect("pool");
    eventually(20, "the refund sent", || async {
        let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds WHERE status <> 'succeeded'").fetch_one(&db).await.expect("count");
        (pending == 0).then_some(())
    })
    .await;
    let refunds: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds WHERE kind = 'fan'").fetch_one(&db).await.expect("count");
    assert_eq!(refunds, 1);
    let provider: i64 =
        sqlx::query_scalar("SELECT coalesce(sum(amount_cents), 0)::bigint FROM sim_provider_refunds").fetch_one(&db).await.expect("sum");
    assert_eq!(provider, 8800, "refunded once");
    let app = spawn_app_on(&database_url, |_| {}).await;
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_that_gives_nothing_back_is_still_recorded_and_mailed() {
    let (app, outbox, staff, event) = app_with_event().await;
    let keep_all = json!({ "refund_policy": { "cancel_until_hours": 1, "keep_percent": 100 } });
    let changed = patch_event(&staff, event, keep_all).await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let fan = app.fan().await;
    let booking = buy(&fan, event, &["A-1-4"]).await;
    let id = booking["booking_id"].as_str().expect("id").to_owned();
    let done = cancel(&fan, &id, "k-nothing", json!({})).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!((done.body["refund_cents"].clone(), done.body["kept_cents"].clone()), (json!(0), json!(5000)));
    assert_eq!(done.body["status"], json!("refunded"));
    assert_eq!(count(&app, "SELECT count(*) FROM refunds WHERE booking_id = $1 AND amount_cents = 0 AND status = 'succeeded'", &id).await, 1);
    let provider: i64 = sqlx::query_scalar("SELECT count(*) FROM sim_provider_refunds").fetch_one(&app.pool).await.expect("count");
    assert_eq!(provider, 0, "nothing to ask the provider for");
    assert_eq!(seat_state(&app.pool, event, "A-1-4").await, "available");
    let email = fan.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();
    let body = eventually(20, "the cancellation mail", || async {
        cancellation_mails(&outbox, &email).first().and_then(|m| m["body"].as_str().map(str::to_owned))
    })
    .await;
    assert!(body.contains("Nothing was refunded") && body.contains("the seller kept €50.00"), "{body}");
    let _ = std::fs::remove_file(&outbox);
    app.assert_invariants().await;
}
