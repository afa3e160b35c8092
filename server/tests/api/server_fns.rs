//! The app's server functions go through the same gates as the JSON API:
//! the session, CSRF, per-address rate limits, the body limit, the waiting
//! room's admission token, request ids and metrics; and they answer the
//! same errors, with the same statuses.

use serde_json::json;
use uuid::Uuid;

use crate::common::*;
use crate::waiting_room::{admitted_fan, room_event};

const HOLD: &str = "/_app/hold";

async fn hold_fn(c: &Client, event_id: Uuid, seats: &[&str], admission: Option<&str>) -> Reply {
    c.post(HOLD, json!({ "event_id": event_id, "seat_ids": seats, "admission_token": admission })).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_through_the_server_function_is_the_engines_hold_with_the_apis_answers() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let (a, b) = (app.fan().await, app.fan().await);

    let held = hold_fn(&a, event_id, &["A-1-1", "A-1-2"], None).await;
    assert_eq!(held.status, 201, "{}", held.body);
    assert_eq!(held.body["seat_ids"], json!(["A-1-1", "A-1-2"]));
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "held");

    // The loser of a race gets the API's 409, naming the seat, and the
    // nearest free block of as many seats.
    let lost = hold_fn(&b, event_id, &["A-1-2", "A-1-3"], None).await;
    assert_error("lost race", &lost, 409, "seats_unavailable");
    assert_eq!(lost.body["conflict_seats"], json!(["A-1-2"]));
    let suggestion: Vec<String> = serde_json::from_value(lost.body["suggestion"].clone()).expect("a suggestion");
    assert_eq!(suggestion.len(), 2);
    let retry = hold_fn(&b, event_id, &suggestion.iter().map(String::as_str).collect::<Vec<_>>(), None).await;
    assert_eq!(retry.status, 201, "the suggestion can be held in one call: {}", retry.body);

    // Bad input: the API's 422, and nothing held.
    let bad = a.post(HOLD, json!({ "event_id": event_id, "seat_ids": ["A-1-1", "A-1-1"] })).await;
    assert_error("duplicate seats", &bad, 422, "invalid_input");
    let malformed = a.post(HOLD, json!({ "event_id": event_id, "seat_ids": ["not a seat!"] })).await;
    assert_error("malformed seat id", &malformed, 422, "invalid_input");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_functions_need_a_session_and_refuse_cross_site_requests() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let anonymous = hold_fn(&app.client(), event_id, &["A-1-1"], None).await;
    assert_error("no session", &anonymous, 401, "unauthenticated");

    let fan = app.fan().await;
    let cross_site = fan
        .send(fan.http.post(format!("{}{HOLD}", fan.base)).header("origin", "https://evil.example").json(&json!({
            "event_id": event_id, "seat_ids": ["A-1-1"]
        })))
        .await;
    assert_error("cross-site", &cross_site, 403, "csrf");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "available");

    // Every answer carries a request id, and the route is measured.
    assert!(cross_site.headers.get("x-request-id").is_some());
    assert!(anonymous.headers.get("x-request-id").is_some());
    let metrics = app.client().get("/metrics").await;
    let text = metrics.body.as_str().unwrap_or_default().to_owned();
    assert!(text.contains(r#"route="/_app/hold""#), "no metrics for the server function route");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_functions_are_rate_limited_per_address() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 2;
    })
    .await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let mut limited = None;
    for n in 1..=20 {
        let r = hold_fn(&fan, event_id, &[&format!("A-1-{}", n % 10 + 1)], None).await;
        if r.status == 429 {
            limited = Some(r);
            break;
        }
    }
    let r = limited.expect("a burst of holds is rate limited");
    assert_error("burst", &r, 429, "rate_limited");
    assert!(r.body["retry_after"].as_u64().is_some_and(|s| s >= 1), "{}", r.body);
    assert!(r.headers.get("retry-after").is_some());
    // Sign-in is limited too (it costs an Argon2 hash).
    let mut signed_in_limited = false;
    for _ in 0..20 {
        let r = fan.send(fan.http.post(format!("{}/_app/sign_in", fan.base)).form(&[("email", "x@example.test"), ("password", "nope")])).await;
        if r.status == 429 {
            signed_in_limited = true;
            break;
        }
    }
    assert!(signed_in_limited, "a burst of sign-ins is rate limited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_function_bodies_are_capped() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    // A declared length over the cap is refused before any of the body is read.
    let head = |framing: &str| format!("POST {HOLD} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n{framing}", app.addr);
    assert_eq!(raw_status(app.addr, &head("content-length: 300000"), &[]).await, 413, "declared 300 KB");
    // A chunked body without a length is cut off at the cap (256 KB) too.
    let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, " ".repeat(16 * 1024));
    let chunks: Vec<&[u8]> = (0..17).map(|_| chunk.as_bytes()).collect();
    assert_eq!(raw_status(app.addr, &head("transfer-encoding: chunked"), &chunks).await, 413, "streamed 272 KB");
    // A body within the cap is read and answered as usual.
    let r = fan.post(HOLD, json!({ "event_id": event_id, "seat_ids": ["A-1-1"] })).await;
    assert_eq!(r.status, 201, "{}", r.body);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_room_event_needs_the_fans_admission_token() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 100).await;
    let event_id = room_event(&app, 20, -60).await;
    let (fan, _, admission) = admitted_fan(&app, event_id).await;
    assert_error("no token", &hold_fn(&fan, event_id, &["A-1-1"], None).await, 403, "not_admitted");
    assert_error("forged", &hold_fn(&fan, event_id, &["A-1-1"], Some("forged.token")).await, 403, "not_admitted");
    let (other, _, other_admission) = admitted_fan(&app, event_id).await;
    assert_error("another fan's token", &hold_fn(&fan, event_id, &["A-1-1"], Some(&other_admission)).await, 403, "not_admitted");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "available");
    let held = hold_fn(&fan, event_id, &["A-1-1"], Some(&admission)).await;
    assert_eq!(held.status, 201, "{}", held.body);
    let best =
        other.post("/_app/hold_best", json!({ "event_id": event_id, "count": 2, "tier": "Standard", "admission_token": other_admission })).await;
    assert_eq!(best.status, 201, "{}", best.body);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_through_the_server_function_books_once_per_key() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let hold = hold_fn(&fan, event_id, &["A-1-4"], None).await;
    let args = json!({
        "hold_id": hold.body["hold_id"], "hold_token": hold.body["hold_token"],
        "payment_token": "tok_visa", "idempotency_key": "key-1"
    });
    let (first, again) = tokio::join!(fan.post("/_app/checkout", args.clone()), fan.post("/_app/checkout", args.clone()));
    let answers: Vec<&Reply> = [&first, &again].into_iter().filter(|r| r.status == 201).collect();
    assert!(!answers.is_empty(), "{} / {}", first.body, again.body);
    let replay = fan.post("/_app/checkout", args).await;
    assert_eq!(replay.status, 201, "{}", replay.body);
    assert_eq!(replay.body["booking"]["booking_id"], answers[0].body["booking"]["booking_id"]);
    let bookings: i64 = sqlx::query_scalar("SELECT count(*) FROM bookings").fetch_one(&app.pool).await.expect("count");
    assert_eq!(bookings, 1);
    app.assert_invariants().await;
}

/// A form post from a browser without JavaScript.
async fn form_post(c: &Client, path: &str, fields: &[(&str, &str)], referer: &str) -> Reply {
    c.send(c.http.post(format!("{}{path}", c.base)).header("accept", "text/html").header("referer", format!("{}{referer}", c.base)).form(fields))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_up_and_sign_in_work_as_plain_forms_without_javascript() {
    let app = spawn_app().await;
    let no_redirects = || Client {
        http: reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client"),
        base: app.base.clone(),
    };
    let browser = no_redirects();
    let email = format!("nojs-{}@example.test", Uuid::new_v4().simple());
    let signed_up = form_post(
        &browser,
        "/_app/sign_up",
        &[("name", "No Script"), ("email", &email), ("password", PASSWORD), ("next", "/account")],
        "/signup?next=/account",
    )
    .await;
    assert_eq!(signed_up.status, 302, "{}", signed_up.body);
    assert_eq!(signed_up.headers.get("location").and_then(|l| l.to_str().ok()), Some("/account"));
    assert_eq!(browser.get("/api/v1/me").await.body["email"], json!(email));

    // A wrong password sends the form back with the error, which the page shows.
    let other = no_redirects();
    let refused =
        form_post(&other, "/_app/sign_in", &[("email", &email), ("password", "wrong password"), ("next", "/account")], "/signin?next=/account").await;
    assert_eq!(refused.status, 302);
    let back = refused.headers.get("location").and_then(|l| l.to_str().ok()).expect("a location").to_owned();
    assert!(back.contains("/signin") && back.contains("__err="), "{back}");
    let page = other.send(other.http.get(&back)).await;
    let html = page.body.as_str().map(str::to_owned).unwrap_or_default();
    assert!(html.contains("wrong email or password"), "the form shows the error");
    assert_eq!(other.get("/api/v1/me").await.status, 401);

    let signed_in = form_post(&other, "/_app/sign_in", &[("email", &email), ("password", PASSWORD), ("next", "/events")], "/signin").await;
    assert_eq!(signed_in.status, 302);
    assert_eq!(signed_in.headers.get("location").and_then(|l| l.to_str().ok()), Some("/events"));
    assert_eq!(other.get("/api/v1/me").await.status, 200);
    // An open redirect is refused: somewhere off-site becomes the account page.
    let offsite = form_post(&other, "/_app/sign_in", &[("email", &email), ("password", PASSWORD), ("next", "//evil.example")], "/signin").await;
    assert_eq!(offsite.headers.get("location").and_then(|l| l.to_str().ok()), Some("/account"));

    let out = form_post(&other, "/_app/sign_out", &[], "/account").await;
    assert_eq!(out.status, 302);
    assert_eq!(other.get("/api/v1/me").await.status, 401);
}
