//! Bad input on every endpoint: each refusal has the contract's status and
//! error code, a JSON body `{"error", "message"}` that leaks nothing internal,
//! and changes nothing in the database.

use crate::common::{seat_state, spawn_app, Client, Reply, TestApp, PASSWORD};
use frontrow_engine::model::AuditReport;
use serde_json::{json, Value};
use uuid::Uuid;

// ---------------------------------------------------------------------------
// helpers

/// Asserts the contract's error shape: status, `error` code, a human
/// `message`, nothing internal leaked, a JSON content type and a request id.
#[track_caller]
fn assert_error(what: &str, r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{what}: expected {status} {code}, got {} {}", r.status, r.body);
    assert!(r.body.is_object(), "{what}: the error body is not a JSON object: {:?}", r.body);
    assert_eq!(r.body["error"], json!(code), "{what}: wrong error code in {}", r.body);
    let message = r.body["message"].as_str();
    assert!(message.is_some_and(|m| !m.trim().is_empty()), "{what}: no string message in {}", r.body);
    assert_no_leak(what, r);
    let content_type = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(content_type.starts_with("application/json"), "{what}: error content-type is {content_type:?}");
    let request_id = r.headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(!request_id.is_empty(), "{what}: the error response carries no x-request-id");
}

#[track_caller]
fn assert_no_leak(what: &str, r: &Reply) {
    let text = r.body.to_string();
    for needle in ["sqlx", "SELECT", "INSERT", "UPDATE ", "panicked", "/src/", ".rs:", "postgres"] {
        assert!(!text.contains(needle), "{what}: the body leaks {needle:?}: {text}");
    }
}

fn url(c: &Client, path: &str) -> String {
    format!("{}{path}", c.base)
}

/// A POST with a raw body and an optional Content-Type.
async fn post_raw(c: &Client, path: &str, content_type: Option<&str>, body: &str) -> Reply {
    let mut r = c.http.post(url(c, path)).body(body.to_owned());
    if let Some(ct) = content_type {
        r = r.header("content-type", ct);
    }
    c.send(r).await
}

/// A JSON POST with extra headers.
async fn post_with(c: &Client, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut r = c.http.post(url(c, path)).json(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    c.send(r).await
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql).fetch_one(&app.pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Everything a refused request must leave untouched.
#[derive(Debug, PartialEq)]
struct Snapshot {
    audit: AuditReport,
    users: i64,
    events: i64,
    seats: i64,
    seats_not_available: i64,
    seat_version: i64,
    holds: i64,
    active_holds: i64,
    checkouts: i64,
    bookings: i64,
    tickets: i64,
    payment_intents: i64,
}

async fn snapshot(app: &TestApp) -> Snapshot {
    Snapshot {
        audit: app.audit().await,
        users: count(app, "SELECT count(*) FROM users").await,
        events: count(app, "SELECT count(*) FROM events").await,
        seats: count(app, "SELECT count(*) FROM seats").await,
        seats_not_available: count(app, "SELECT count(*) FROM seats WHERE state <> 'available'").await,
        seat_version: count(app, "SELECT coalesce(max(version), 0)::bigint FROM seats").await,
        holds: count(app, "SELECT count(*) FROM holds").await,
        active_holds: count(app, "SELECT count(*) FROM holds WHERE state = 'active'").await,
        checkouts: count(app, "SELECT count(*) FROM checkouts").await,
        bookings: count(app, "SELECT count(*) FROM bookings").await,
        tickets: count(app, "SELECT count(*) FROM tickets").await,
        payment_intents: count(app, "SELECT count(*) FROM payment_intents").await,
    }
}

fn valid_event_body() -> Value {
    json!({
        "name": "Bad Input Night", "kind": "concert", "venue": "Test Hall",
        "starts_at": "2030-01-01T20:00:00Z", "sale_opens_at": "2020-01-01T10:00:00Z",
        "hold_ttl_seconds": 300, "max_seats_per_order": 4, "waiting_room_enabled": false,
        "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
        "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 10, "tier": "Standard" }] }]
    })
}

fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

fn without(mut body: Value, key: &str) -> Value {
    body.as_object_mut().expect("object").remove(key);
    body
}

fn hold_fields(r: &Reply) -> (String, String) {
    assert_eq!(r.status, 201, "hold: {}", r.body);
    (r.body["hold_id"].as_str().expect("hold_id").to_owned(), r.body["hold_token"].as_str().expect("hold_token").to_owned())
}

const MALFORMED_BODIES: &[&str] = &["{", "{\"email\": ", "{\"seat_ids\": [\"A-1-1\",]}", "not json at all", "{\"x\": 1,}", ""];

// ---------------------------------------------------------------------------
// accounts

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signup_refuses_bad_input_and_creates_nobody() {
    let app = spawn_app().await;
    let taken = app.client();
    let r = taken.post("/api/v1/auth/signup", json!({ "email": "Taken@Example.test", "password": PASSWORD, "name": "Taken" })).await;
    assert_eq!(r.status, 201, "setup signup: {}", r.body);
    let before = snapshot(&app).await;
    assert_eq!(before.users, 1);

    let c = app.client();
    let path = "/api/v1/auth/signup";
    let valid = json!({ "email": "new@example.test", "password": PASSWORD, "name": "New" });
    let big = "x".repeat(10 * 1024);

    // Wrong JSON types and missing fields.
    let unprocessable = [
        ("email is a number", with(valid.clone(), "email", json!(5))),
        ("password is a bool", with(valid.clone(), "password", json!(true))),
        ("name is an array", with(valid.clone(), "name", json!(["a"]))),
        ("email is null", with(valid.clone(), "email", Value::Null)),
        ("email missing", without(valid.clone(), "email")),
        ("password missing", without(valid.clone(), "password")),
        ("name missing", without(valid.clone(), "name")),
        ("empty object", json!({})),
        ("top-level array", json!([valid.clone()])),
        ("top-level string", json!("new@example.test")),
        // Contract validation.
        ("bad email", with(valid.clone(), "email", json!("not-an-email"))),
        ("email without a dot in the domain", with(valid.clone(), "email", json!("a@b"))),
        ("email without local part", with(valid.clone(), "email", json!("@example.test"))),
        ("email with a space", with(valid.clone(), "email", json!("a b@example.test"))),
        ("short password", with(valid.clone(), "password", json!("1234567"))),
        ("empty password", with(valid.clone(), "password", json!(""))),
        ("blank name", with(valid.clone(), "name", json!("   "))),
        // Oversized strings.
        ("10 KB email", with(valid.clone(), "email", json!(format!("{big}@example.test")))),
        ("10 KB name", with(valid.clone(), "name", json!(big.clone()))),
        ("10 KB password", with(valid.clone(), "password", json!(big.clone()))),
    ];
    for (what, body) in unprocessable {
        let r = c.post(path, body).await;
        assert_error(what, &r, 422, "invalid_input");
    }

    for body in MALFORMED_BODIES {
        let r = post_raw(&c, path, Some("application/json"), body).await;
        assert_error(&format!("malformed JSON {body:?}"), &r, 400, "invalid_json");
    }

    let text = valid.to_string();
    for ct in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data; boundary=x")] {
        let r = post_raw(&c, path, ct, &text).await;
        assert_error(&format!("content-type {ct:?}"), &r, 415, "unsupported_media_type");
    }

    for email in ["Taken@Example.test", "taken@example.test", "TAKEN@EXAMPLE.TEST", "  taken@example.test  "] {
        let r = c.post(path, json!({ "email": email, "password": PASSWORD, "name": "Again" })).await;
        assert_error(&format!("duplicate {email:?}"), &r, 409, "email_taken");
    }

    assert_eq!(snapshot(&app).await, before, "a refused signup changed the database");
    // None of the refused calls signed the client in.
    assert_error("me after refused signups", &c.get("/api/v1/me").await, 401, "unauthenticated");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_refuses_bad_input_without_signing_in() {
    let app = spawn_app().await;
    let owner = app.client();
    let r = owner.post("/api/v1/auth/signup", json!({ "email": "owner@example.test", "password": PASSWORD, "name": "Owner" })).await;
    assert_eq!(r.status, 201, "setup signup: {}", r.body);
    let before = snapshot(&app).await;

    let c = app.client();
    let path = "/api/v1/auth/login";
    let valid = json!({ "email": "owner@example.test", "password": PASSWORD });

    for (what, body) in [
        ("email is a number", with(valid.clone(), "email", json!(1))),
        ("password is an object", with(valid.clone(), "password", json!({ "p": 1 }))),
        ("password missing", without(valid.clone(), "password")),
        ("email missing", without(valid.clone(), "email")),
        ("empty object", json!({})),
        ("top-level array", json!([])),
    ] {
        assert_error(what, &c.post(path, body).await, 422, "invalid_input");
    }
    for body in MALFORMED_BODIES {
        let r = post_raw(&c, path, Some("application/json"), body).await;
        assert_error(&format!("malformed JSON {body:?}"), &r, 400, "invalid_json");
    }
    for ct in [None, Some("text/plain")] {
        let r = post_raw(&c, path, ct, &valid.to_string()).await;
        assert_error(&format!("content-type {ct:?}"), &r, 415, "unsupported_media_type");
    }

    let wrong_password = c.post(path, with(valid.clone(), "password", json!("wrong password"))).await;
    assert_error("wrong password", &wrong_password, 401, "invalid_credentials");
    let unknown = c.post(path, json!({ "email": "nobody@example.test", "password": PASSWORD })).await;
    assert_error("unknown email", &unknown, 401, "invalid_credentials");
    // The answer does not tell which accounts exist.
    assert_eq!(wrong_password.body, unknown.body, "wrong password and unknown email must look the same");
    let big = "y".repeat(10 * 1024);
    assert_error("10 KB email", &c.post(path, with(valid.clone(), "email", json!(big.clone()))).await, 401, "invalid_credentials");
    assert_error("10 KB password", &c.post(path, with(valid.clone(), "password", json!(big))).await, 401, "invalid_credentials");

    assert_error("me after refused logins", &c.get("/api/v1/me").await, 401, "unauthenticated");
    assert_eq!(snapshot(&app).await, before);
    // The account itself still works.
    assert_eq!(c.post(path, valid).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_reads_need_a_session() {
    let app = spawn_app().await;
    let anon = app.client();
    for path in ["/api/v1/me", "/api/v1/me/bookings"] {
        assert_error(path, &anon.get(path).await, 401, "unauthenticated");
    }

    // A forged or garbage session cookie is no session at all (not a 500).
    let raw = reqwest::Client::new();
    for cookie in ["frontrow_session=garbage", "frontrow_session=", "frontrow_session=AAAAAAAAAAAAAAAAAAAAAA", "frontrow_session=%00%01"] {
        for path in ["/api/v1/me", "/api/v1/me/bookings"] {
            let r = anon.send(raw.get(app.url(path)).header("cookie", cookie)).await;
            assert_error(&format!("{path} with {cookie:?}"), &r, 401, "unauthenticated");
        }
    }

    // Logout without a session is harmless and still leaves no session.
    let r = anon.send(anon.http.post(app.url("/api/v1/auth/logout"))).await;
    assert_eq!(r.status, 204, "anonymous logout: {}", r.body);
    assert_error("me after anonymous logout", &anon.get("/api/v1/me").await, 401, "unauthenticated");
    assert_eq!(count(&app, "SELECT count(*) FROM users").await, 0);
}

// ---------------------------------------------------------------------------
// catalogue

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalogue_unknown_and_malformed_ids_are_not_found() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let before = snapshot(&app).await;
    let c = app.client();

    let random = Uuid::new_v4();
    let long = "z".repeat(1000);
    for id in [
        random.to_string(),
        "not-a-uuid".into(),
        "123".into(),
        "00000000-0000-0000-0000-00000000000g".into(),
        format!("{event_id}x"),
        long,
        "%20".into(),
    ] {
        assert_error(&format!("event {id:?}"), &c.get(&format!("/api/v1/events/{id}")).await, 404, "not_found");
        assert_error(&format!("seats {id:?}"), &c.get(&format!("/api/v1/events/{id}/seats")).await, 404, "not_found");
    }

    let r = c.get(&format!("/api/v1/events/{event_id}/seats?section={}", "S".repeat(17))).await;
    assert_error("17-char section filter", &r, 422, "invalid_input");
    let r = c.get(&format!("/api/v1/events/{event_id}/seats?section={}", "S".repeat(10_000))).await;
    assert_error("10 KB section filter", &r, 422, "invalid_input");

    // The good reads still work, and unknown query parameters are ignored.
    let list = c.get("/api/v1/events?junk=%ff").await;
    assert_eq!(list.status, 200, "list: {}", list.body);
    assert_eq!(list.body["events"].as_array().map(Vec::len), Some(1));
    assert_eq!(c.get(&format!("/api/v1/events/{event_id}")).await.status, 200);
    let seats = c.get(&format!("/api/v1/events/{event_id}/seats?section=A")).await;
    assert_eq!(seats.status, 200);
    assert_eq!(seats.body["seats"].as_array().map(Vec::len), Some(10));

    assert_eq!(snapshot(&app).await, before);
}

// ---------------------------------------------------------------------------
// holds

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_creation_refuses_bad_input_and_holds_nothing() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let anon = app.client();
    let before = snapshot(&app).await;
    let path = format!("/api/v1/events/{event_id}/holds");

    assert_error("anonymous hold", &anon.hold(event_id, &["A-1-1"]).await, 401, "unauthenticated");

    let long_id = "A".repeat(65);
    let huge_id = "A".repeat(10 * 1024);
    let hundred_and_one: Vec<String> = (1..=101).map(|n| format!("A-1-{n}")).collect();
    for (what, body) in [
        ("seat_ids is a string", json!({ "seat_ids": "A-1-1" })),
        ("seat_ids are numbers", json!({ "seat_ids": [1, 2] })),
        ("seat_ids is null", json!({ "seat_ids": null })),
        ("seat_ids is an object", json!({ "seat_ids": { "A-1-1": true } })),
        ("seat_ids missing", json!({})),
        ("seats instead of seat_ids", json!({ "seats": ["A-1-1"] })),
        ("top-level array", json!(["A-1-1"])),
        ("empty seat_ids", json!({ "seat_ids": [] })),
        ("duplicate seat ids", json!({ "seat_ids": ["A-1-1", "A-1-1"] })),
        ("unknown seat id", json!({ "seat_ids": ["A-9-9"] })),
        ("unknown among known", json!({ "seat_ids": ["A-1-1", "B-1-1"] })),
        ("empty seat id", json!({ "seat_ids": [""] })),
        ("65-char seat id", json!({ "seat_ids": [long_id] })),
        ("10 KB seat id", json!({ "seat_ids": [huge_id] })),
        ("101 seat ids", json!({ "seat_ids": hundred_and_one })),
    ] {
        assert_error(what, &fan.post(&path, body).await, 422, "invalid_input");
    }

    let r = fan.hold(event_id, &["A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5"]).await;
    assert_error("5 seats over a limit of 4", &r, 422, "too_many_seats");

    for body in MALFORMED_BODIES {
        let r = post_raw(&fan, &path, Some("application/json"), body).await;
        assert_error(&format!("malformed JSON {body:?}"), &r, 400, "invalid_json");
    }
    let text = json!({ "seat_ids": ["A-1-1"] }).to_string();
    for ct in [None, Some("text/plain"), Some("text/json"), Some("application/xml")] {
        let r = post_raw(&fan, &path, ct, &text).await;
        assert_error(&format!("content-type {ct:?}"), &r, 415, "unsupported_media_type");
    }

    for id in [Uuid::new_v4().to_string(), "nope".into(), "1".repeat(300)] {
        let r = fan.post(&format!("/api/v1/events/{id}/holds"), json!({ "seat_ids": ["A-1-1"] })).await;
        assert_error(&format!("hold on event {id:?}"), &r, 404, "not_found");
    }

    assert_eq!(snapshot(&app).await, before, "a refused hold changed the database");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "available");
    // And the same fan can still hold normally.
    hold_fields(&fan.hold(event_id, &["A-1-1"]).await);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_conflicts_limits_and_closed_sales_hold_nothing() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let (first, second) = (app.fan().await, app.fan().await);
    hold_fields(&first.hold(event_id, &["A-1-1", "A-1-2", "A-1-3"]).await);
    let before = snapshot(&app).await;

    // All or nothing: the free seat in a conflicting request stays free.
    let r = second.hold(event_id, &["A-1-3", "A-1-4"]).await;
    assert_error("conflict", &r, 409, "seats_unavailable");
    assert_eq!(r.body["conflict_seats"], json!(["A-1-3"]), "conflict_seats: {}", r.body);
    assert_eq!(seat_state(&app.pool, event_id, "A-1-4").await, "available");

    // The per-order limit counts the fan's live holds.
    let r = first.hold(event_id, &["A-1-5", "A-1-6"]).await;
    assert_error("3 held + 2 over a limit of 4", &r, 422, "too_many_seats");
    assert_eq!(snapshot(&app).await, before);

    // A sale that has not opened.
    let staff = app.staff().await;
    let body = with(valid_event_body(), "sale_opens_at", json!("2099-01-01T00:00:00Z"));
    let created = staff.post("/api/v1/admin/events", body).await;
    assert_eq!(created.status, 201, "future event: {}", created.body);
    let future: Uuid = created.body["event_id"].as_str().expect("event_id").parse().expect("uuid");
    let before = snapshot(&app).await;
    assert_error("sale not open", &second.hold(future, &["A-1-1"]).await, 403, "sale_not_open");
    assert_eq!(snapshot(&app).await, before);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_read_and_release_refuse_bad_input() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let (owner, other, anon) = (app.fan().await, app.fan().await, app.client());
    let (hold_id, token) = hold_fields(&owner.hold(event_id, &["A-1-1"]).await);
    let before = snapshot(&app).await;
    let hold_path = format!("/api/v1/holds/{hold_id}");

    // Reads.
    assert_error("anonymous get", &anon.get(&hold_path).await, 401, "unauthenticated");
    assert_error("someone else's hold", &other.get(&hold_path).await, 404, "not_found");
    for id in [Uuid::new_v4().to_string(), "xyz".into(), format!("{hold_id}0"), "h".repeat(1000)] {
        assert_error(&format!("get hold {id:?}"), &owner.get(&format!("/api/v1/holds/{id}")).await, 404, "not_found");
    }

    // Releases.
    assert_error("release without X-Hold-Token", &owner.delete(&hold_path, &[]).await, 422, "invalid_input");
    assert_error("anonymous release", &anon.release(&hold_id, &token).await, 401, "unauthenticated");
    assert_error("someone else's release", &other.release(&hold_id, &token).await, 404, "not_found");
    assert_error("wrong token", &owner.release(&hold_id, "not-the-token").await, 410, "hold_expired");
    assert_error("empty token", &owner.release(&hold_id, "").await, 410, "hold_expired");
    assert_error("1000-char token", &owner.release(&hold_id, &"t".repeat(1000)).await, 410, "hold_expired");
    let non_ascii = owner
        .send(
            owner
                .http
                .delete(url(&owner, &hold_path))
                .header("x-hold-token", reqwest::header::HeaderValue::from_bytes(b"tok\xe9n").expect("header value")),
        )
        .await;
    assert_error("non-ASCII token", &non_ascii, 422, "invalid_input");
    for id in [Uuid::new_v4().to_string(), "xyz".into()] {
        let r = owner.release(&id, &token).await;
        assert_error(&format!("release hold {id:?}"), &r, 404, "not_found");
    }

    assert_eq!(snapshot(&app).await, before, "a refused read or release changed the database");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "held");
    let status = owner.get(&hold_path).await;
    assert_eq!(status.status, 200, "hold status: {}", status.body);
    assert_eq!(status.body["state"], json!("active"));

    // The real token still works, once.
    assert_eq!(owner.release(&hold_id, &token).await.status, 204);
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "available");
    assert_error("second release", &owner.release(&hold_id, &token).await, 410, "hold_expired");
    app.assert_invariants().await;
}

// ---------------------------------------------------------------------------
// checkout and bookings

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_refuses_bad_input_and_charges_nothing() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let (owner, other, anon) = (app.fan().await, app.fan().await, app.client());
    let (hold_id, token) = hold_fields(&owner.hold(event_id, &["A-1-1"]).await);
    let before = snapshot(&app).await;
    let path = format!("/api/v1/holds/{hold_id}/checkout");
    let valid = json!({ "hold_token": token, "payment_token": "tok_visa" });
    let key = [("idempotency-key", "key-1")];

    assert_error("missing Idempotency-Key", &owner.post(&path, valid.clone()).await, 422, "invalid_input");
    let long_key = "k".repeat(300);
    assert_error("300-char Idempotency-Key", &post_with(&owner, &path, &[("idempotency-key", &long_key)], &valid).await, 422, "invalid_input");
    assert_error("256-char Idempotency-Key", &owner.checkout(&hold_id, &token, "tok_visa", &"k".repeat(256)).await, 422, "invalid_input");
    assert_error("empty Idempotency-Key", &post_with(&owner, &path, &[("idempotency-key", "")], &valid).await, 422, "invalid_input");

    for (what, body) in [
        ("hold_token is a number", with(valid.clone(), "hold_token", json!(123))),
        ("payment_token is an array", with(valid.clone(), "payment_token", json!(["tok_visa"]))),
        ("hold_token missing", without(valid.clone(), "hold_token")),
        ("payment_token missing", without(valid.clone(), "payment_token")),
        ("empty object", json!({})),
        ("top-level array", json!([valid.clone()])),
        ("1000-char hold token", with(valid.clone(), "hold_token", json!("t".repeat(1000)))),
        ("10 KB payment token", with(valid.clone(), "payment_token", json!("p".repeat(10 * 1024)))),
        ("empty hold token", with(valid.clone(), "hold_token", json!(""))),
        ("empty payment token", with(valid.clone(), "payment_token", json!(""))),
    ] {
        assert_error(what, &post_with(&owner, &path, &key, &body).await, 422, "invalid_input");
    }
    for body in MALFORMED_BODIES {
        let mut r = owner.http.post(url(&owner, &path)).header("content-type", "application/json").body(body.to_string());
        r = r.header("idempotency-key", "key-1");
        assert_error(&format!("malformed JSON {body:?}"), &owner.send(r).await, 400, "invalid_json");
    }
    for ct in [None, Some("text/plain")] {
        let mut r = owner.http.post(url(&owner, &path)).header("idempotency-key", "key-1").body(valid.to_string());
        if let Some(ct) = ct {
            r = r.header("content-type", ct);
        }
        assert_error(&format!("content-type {ct:?}"), &owner.send(r).await, 415, "unsupported_media_type");
    }

    assert_error("anonymous checkout", &anon.checkout(&hold_id, &token, "tok_visa", "key-1").await, 401, "unauthenticated");
    assert_error("someone else's checkout", &other.checkout(&hold_id, &token, "tok_visa", "key-1").await, 404, "not_found");
    for id in [Uuid::new_v4().to_string(), "not-a-hold".into()] {
        assert_error(&format!("checkout hold {id:?}"), &owner.checkout(&id, &token, "tok_visa", "key-1").await, 404, "not_found");
    }

    assert_eq!(snapshot(&app).await, before, "a refused checkout changed the database");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "held");

    // A well-formed but stale token: 410, no booking, no money moved, seat still held.
    let audit = app.audit().await;
    let r = owner.checkout(&hold_id, "not-the-current-token", "tok_visa", "key-stale").await;
    assert_error("stale token", &r, 410, "hold_expired");
    assert_eq!(app.audit().await, audit);
    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 0);
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "held");

    // Checkout lookups.
    for id in [Uuid::new_v4().to_string(), "nope".into()] {
        assert_error(&format!("checkout {id:?}"), &owner.get(&format!("/api/v1/checkouts/{id}")).await, 404, "not_found");
    }
    let stale_id = r.body["checkout_id"].as_str().expect("checkout_id of the stale attempt").to_owned();
    assert_error("anonymous checkout view", &anon.get(&format!("/api/v1/checkouts/{stale_id}")).await, 401, "unauthenticated");
    assert_error("someone else's checkout view", &other.get(&format!("/api/v1/checkouts/{stale_id}")).await, 404, "not_found");

    // The real checkout still goes through.
    let done = owner.checkout(&hold_id, &token, "tok_visa", "key-1").await;
    assert_eq!(done.status, 201, "checkout: {}", done.body);
    let booking_id = done.body["booking_id"].as_str().expect("booking_id").to_owned();
    assert_eq!(seat_state(&app.pool, event_id, "A-1-1").await, "sold");

    // Booking lookups: owner and staff only, everyone else 404.
    let booking_path = format!("/api/v1/bookings/{booking_id}");
    assert_eq!(owner.get(&booking_path).await.status, 200);
    assert_eq!(app.staff().await.get(&booking_path).await.status, 200);
    assert_error("someone else's booking", &other.get(&booking_path).await, 404, "not_found");
    assert_error("anonymous booking", &anon.get(&booking_path).await, 401, "unauthenticated");
    for id in [Uuid::new_v4().to_string(), "b-1".into(), format!("{booking_id}-")] {
        assert_error(&format!("booking {id:?}"), &owner.get(&format!("/api/v1/bookings/{id}")).await, 404, "not_found");
    }
    let mine = owner.get("/api/v1/me/bookings").await;
    assert_eq!(mine.body["bookings"].as_array().map(Vec::len), Some(1), "my bookings: {}", mine.body);
    let theirs = other.get("/api/v1/me/bookings").await;
    assert_eq!(theirs.body["bookings"], json!([]));
    app.assert_invariants().await;
}

// ---------------------------------------------------------------------------
// box office

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_endpoints_refuse_bad_input_and_non_staff() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let (staff, fan, anon) = (app.staff().await, app.fan().await, app.client());
    let before = snapshot(&app).await;
    let path = "/api/v1/admin/events";
    let audit_path = format!("/api/v1/admin/events/{event_id}/audit");
    let valid = valid_event_body();

    assert_error("anonymous create", &anon.post(path, valid.clone()).await, 401, "unauthenticated");
    assert_error("fan create", &fan.post(path, valid.clone()).await, 403, "forbidden");
    assert_error("fan create, malformed", &post_raw(&fan, path, Some("application/json"), "{").await, 403, "forbidden");
    assert_error("anonymous audit", &anon.get(&audit_path).await, 401, "unauthenticated");
    assert_error("fan audit", &fan.get(&audit_path).await, 403, "forbidden");

    let big = "n".repeat(10 * 1024);
    let section = |v: Value| with(valid.clone(), "sections", v);
    for (what, body) in [
        ("hold_ttl_seconds is a string", with(valid.clone(), "hold_ttl_seconds", json!("ten"))),
        ("max_seats_per_order is a float", with(valid.clone(), "max_seats_per_order", json!(2.5))),
        ("waiting_room_enabled is a string", with(valid.clone(), "waiting_room_enabled", json!("yes"))),
        ("name is a number", with(valid.clone(), "name", json!(7))),
        ("tiers is an object", with(valid.clone(), "tiers", json!({ "tier": "Standard" }))),
        ("starts_at is not a time", with(valid.clone(), "starts_at", json!("tomorrow"))),
        ("sale_opens_at is a number", with(valid.clone(), "sale_opens_at", json!(1_700_000_000))),
        ("price is negative text", with(valid.clone(), "tiers", json!([{ "tier": "Standard", "price_cents": "-1" }]))),
        ("name missing", without(valid.clone(), "name")),
        ("tiers missing", without(valid.clone(), "tiers")),
        ("sections missing", without(valid.clone(), "sections")),
        ("starts_at missing", without(valid.clone(), "starts_at")),
        ("empty object", json!({})),
        ("top-level array", json!([valid.clone()])),
        ("hold_ttl_seconds 0", with(valid.clone(), "hold_ttl_seconds", json!(0))),
        ("hold_ttl_seconds 3601", with(valid.clone(), "hold_ttl_seconds", json!(3601))),
        ("max_seats_per_order 0", with(valid.clone(), "max_seats_per_order", json!(0))),
        ("max_seats_per_order 51", with(valid.clone(), "max_seats_per_order", json!(51))),
        ("10 KB name", with(valid.clone(), "name", json!(big.clone()))),
        ("10 KB venue", with(valid.clone(), "venue", json!(big.clone()))),
        ("blank name", with(valid.clone(), "name", json!("  "))),
        ("no tiers", with(valid.clone(), "tiers", json!([]))),
        ("negative price", with(valid.clone(), "tiers", json!([{ "tier": "Standard", "price_cents": -1 }]))),
        ("no sections", section(json!([]))),
        ("section label with a dash", section(json!([{ "section": "A-B", "rows": [{ "row": "1", "seats": 1, "tier": "Standard" }] }]))),
        ("10 KB section label", section(json!([{ "section": big.clone(), "rows": [{ "row": "1", "seats": 1, "tier": "Standard" }] }]))),
        ("row of 0 seats", section(json!([{ "section": "A", "rows": [{ "row": "1", "seats": 0, "tier": "Standard" }] }]))),
        ("unknown tier", section(json!([{ "section": "A", "rows": [{ "row": "1", "seats": 5, "tier": "Gold" }] }]))),
        (
            "duplicate row",
            section(json!([{ "section": "A", "rows": [
            { "row": "1", "seats": 5, "tier": "Standard" }, { "row": "1", "seats": 5, "tier": "Standard" }] }])),
        ),
    ] {
        assert_error(what, &staff.post(path, body).await, 422, "invalid_input");
    }
    for body in MALFORMED_BODIES {
        let r = post_raw(&staff, path, Some("application/json"), body).await;
        assert_error(&format!("malformed JSON {body:?}"), &r, 400, "invalid_json");
    }
    for ct in [None, Some("text/plain")] {
        let r = post_raw(&staff, path, ct, &valid.to_string()).await;
        assert_error(&format!("content-type {ct:?}"), &r, 415, "unsupported_media_type");
    }

    for id in [Uuid::new_v4().to_string(), "not-an-event".into(), "e".repeat(1000)] {
        let r = staff.get(&format!("/api/v1/admin/events/{id}/audit")).await;
        assert_error(&format!("audit {id:?}"), &r, 404, "not_found");
    }

    assert_eq!(snapshot(&app).await, before, "a refused box-office call changed the database");
    let report = staff.get(&audit_path).await;
    assert_eq!(report.status, 200, "audit: {}", report.body);
    assert_eq!(report.body["oversold_seats"], json!(0));
    assert_eq!(report.body["seats_available"], json!(10));
}

// ---------------------------------------------------------------------------
// every authenticated endpoint, anonymously

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_signed_in_endpoint_refuses_anonymous_callers() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let (hold_id, token) = hold_fields(&fan.hold(event_id, &["A-1-1"]).await);
    let before = snapshot(&app).await;
    let anon = app.client();
    let random = Uuid::new_v4();

    let gets = [
        "/api/v1/me".to_owned(),
        "/api/v1/me/bookings".to_owned(),
        format!("/api/v1/holds/{hold_id}"),
        format!("/api/v1/checkouts/{random}"),
        format!("/api/v1/bookings/{random}"),
        format!("/api/v1/admin/events/{event_id}/audit"),
    ];
    for path in &gets {
        assert_error(&format!("anonymous GET {path}"), &anon.get(path).await, 401, "unauthenticated");
    }
    assert_error("anonymous hold", &anon.hold(event_id, &["A-1-2"]).await, 401, "unauthenticated");
    assert_error("anonymous release", &anon.release(&hold_id, &token).await, 401, "unauthenticated");
    assert_error("anonymous checkout", &anon.checkout(&hold_id, &token, "tok_visa", "k").await, 401, "unauthenticated");
    assert_error("anonymous create event", &anon.post("/api/v1/admin/events", valid_event_body()).await, 401, "unauthenticated");
    assert_eq!(snapshot(&app).await, before);
}

// ---------------------------------------------------------------------------
// CSRF

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_requests_with_a_session_are_refused() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let (hold_id, token) = hold_fields(&fan.hold(event_id, &["A-1-1"]).await);
    let before = snapshot(&app).await;
    let evil = [("origin", "https://evil.example")];
    let hold_path = format!("/api/v1/events/{event_id}/holds");

    for origin in ["https://evil.example", "http://evil.example", "null", "https://127.0.0.1.evil.example"] {
        let r = post_with(&fan, &hold_path, &[("origin", origin)], &json!({ "seat_ids": ["A-1-2"] })).await;
        assert_error(&format!("cross-site hold from {origin}"), &r, 403, "csrf");
    }
    let mut release = fan.http.delete(url(&fan, &format!("/api/v1/holds/{hold_id}"))).header("x-hold-token", &token);
    release = release.header("origin", "https://evil.example");
    assert_error("cross-site release", &fan.send(release).await, 403, "csrf");
    let r = post_with(
        &fan,
        &format!("/api/v1/holds/{hold_id}/checkout"),
        &[evil[0], ("idempotency-key", "k1")],
        &json!({ "hold_token": token, "payment_token": "tok_visa" }),
    )
    .await;
    assert_error("cross-site checkout", &r, 403, "csrf");
    let r = fan.send(fan.http.post(app.url("/api/v1/auth/logout")).header("origin", "https://evil.example")).await;
    assert_error("cross-site logout", &r, 403, "csrf");

    assert_eq!(snapshot(&app).await, before, "a refused cross-site request changed the database");
    assert_eq!(fan.get("/api/v1/me").await.status, 200, "the cross-site logout must not sign the fan out");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-2").await, "available");

    // Reads are not state-changing: allowed from anywhere.
    let r = fan.send(fan.http.get(app.url("/api/v1/me")).header("origin", "https://evil.example")).await;
    assert_eq!(r.status, 200, "cross-site read: {}", r.body);

    // The same request without Origin (a non-browser client) is accepted,
    // and so is one from our own origin.
    let r = fan.post(&hold_path, json!({ "seat_ids": ["A-1-2"] })).await;
    assert_eq!(r.status, 201, "hold without Origin: {}", r.body);
    let r = post_with(&fan, &hold_path, &[("origin", app.base.as_str())], &json!({ "seat_ids": ["A-1-3"] })).await;
    assert_eq!(r.status, 201, "same-origin hold: {}", r.body);
    assert_eq!(seat_state(&app.pool, event_id, "A-1-2").await, "held");
    assert_eq!(seat_state(&app.pool, event_id, "A-1-3").await, "held");
    app.assert_invariants().await;
}

// ---------------------------------------------------------------------------
// transport-level refusals

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_payload_too_large() {
    let app = spawn_app().await;
    let event_id = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let before = snapshot(&app).await;

    let huge_name = "n".repeat(300 * 1024);
    let body = json!({ "email": "big@example.test", "password": PASSWORD, "name": huge_name }).to_string();
    assert!(body.len() > 256 * 1024);
    let anon = app.client();
    let r = post_raw(&anon, "/api/v1/auth/signup", Some("application/json"), &body).await;
    assert_error("300 KiB signup", &r, 413, "payload_too_large");

    let seat_ids: Vec<String> = (0..30_000).map(|n| format!("A-1-{n}")).collect();
    let body = json!({ "seat_ids": seat_ids }).to_string();
    assert!(body.len() > 256 * 1024);
    let r = post_raw(&fan, &format!("/api/v1/events/{event_id}/holds"), Some("application/json"), &body).await;
    assert_error("huge seat_ids", &r, 413, "payload_too_large");

    assert_eq!(snapshot(&app).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_api_paths_are_json_not_found() {
    let app = spawn_app().await;
    let fan = app.fan().await;
    let anon = app.client();
    for path in ["/api/v1/nope", "/api/v2/events", "/api/v1/events/x/y/z", "/api/v1/holds", "/api/v1/admin", "/api/x"] {
        assert_error(&format!("GET {path}"), &anon.get(path).await, 404, "not_found");
        assert_error(&format!("signed-in GET {path}"), &fan.get(path).await, 404, "not_found");
    }
    assert_error("POST unknown", &fan.post("/api/v1/unknown", json!({})).await, 404, "not_found");
    assert_error("DELETE unknown", &fan.delete("/api/v1/unknown/1", &[]).await, 404, "not_found");
}

/// The contract: every error is `{"error", "message"}`, including a method
/// the path does not serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_method_on_a_known_api_path_is_a_json_error() {
    let app = spawn_app().await;
    let event_id = app.event(1, 2, 300, 4).await;
    let fan = app.fan().await;
    let before = snapshot(&app).await;
    for (method, path) in [
        (reqwest::Method::POST, "/api/v1/events".to_owned()),
        (reqwest::Method::DELETE, format!("/api/v1/events/{event_id}")),
        (reqwest::Method::GET, "/api/v1/auth/login".to_owned()),
        (reqwest::Method::PUT, "/api/v1/me".to_owned()),
    ] {
        let r = fan.send(fan.http.request(method.clone(), url(&fan, &path)).json(&json!({}))).await;
        assert_eq!(r.status, 405, "{method} {path}: {} {}", r.status, r.body);
        assert!(r.body["error"].is_string() && r.body["message"].is_string(), "{method} {path}: not a JSON error: {:?}", r.body);
        assert_no_leak(&format!("{method} {path}"), &r);
    }
    assert_eq!(snapshot(&app).await, before);
}
