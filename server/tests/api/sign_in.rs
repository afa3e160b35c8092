//! Sign-in throttling and email codes: guesses are counted in the database,
//! before the password is checked, on every instance alike; the owner of an
//! account under attack still gets in from a device they used before; an
//! address spraying many accounts waits; a resent email code keeps the
//! wrong tries, and codes per hour are few.

use crate::common::*;
use serde_json::{json, Value};
use uuid::Uuid;

async fn account(app: &TestApp) -> String {
    let email = format!("owner-{}@example.test", Uuid::new_v4().simple());
    let r = app.client().post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Owner" })).await;
    assert_eq!(r.status, 201, "{}", r.body);
    email
}

fn login(email: &str, password: &str) -> Value {
    json!({ "email": email, "password": password })
}

fn retry_after(r: &Reply) -> u64 {
    let value = r.headers.get("retry-after").and_then(|v| v.to_str().ok()).expect("Retry-After");
    value.parse().expect("whole seconds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_guesses_at_one_account_are_counted_before_any_is_checked() {
    let app = spawn_app().await;
    let email = account(&app).await;
    let attacker = app.client();
    let guesses = (0..30).map(|i| attacker.post("/api/v1/auth/login", login(&email, &format!("guess number {i}"))));
    let replies = futures::future::join_all(guesses).await;

    let checked = replies.iter().filter(|r| r.status == 401).count();
    let refused: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert_eq!(checked + refused.len(), 30, "only 401 or 429: {:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(checked <= 5, "{checked} of 30 parallel guesses had their password checked");
    for r in refused {
        assert_error("throttled", r, 429, "rate_limited");
        assert!(retry_after(r) >= 1);
    }
    // The right password from a client the account never used waits too.
    assert_eq!(app.client().post("/api/v1/auth/login", login(&email, PASSWORD)).await.status, 429);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_instance_sees_the_same_count() {
    let a = spawn_app().await;
    let b = spawn_app_on(&a.database_url, |_| {}).await;
    let email = account(&a).await;
    for i in 0..5 {
        let r = a.client().post("/api/v1/auth/login", login(&email, &format!("wrong {i}"))).await;
        assert_eq!(r.status, 401, "guess {i} on the first instance");
    }
    let r = b.client().post("/api/v1/auth/login", login(&email, "wrong on the other instance")).await;
    assert_error("the other instance", &r, 429, "rate_limited");
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_gets_in_from_their_own_device_while_someone_guesses() {
    let app = spawn_app().await;
    let email = account(&app).await;
    // The owner signed in from this browser before: it keeps the device cookie.
    let owner = app.client();
    let r = owner.post("/api/v1/auth/login", login(&email, PASSWORD)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let cookie =
        r.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find(|v| v.starts_with("frontrow_device=")).map(str::to_owned);
    let cookie = cookie.expect("a device cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert_eq!(owner.post("/api/v1/auth/logout", json!({})).await.status, 204);

    // Someone else guesses until the account makes them wait; a device
    // cookie of their own account does not help them.
    let attacker = app.client();
    let own = account(&app).await;
    assert_eq!(attacker.post("/api/v1/auth/login", login(&own, PASSWORD)).await.status, 200);
    let mut last = 0;
    for i in 0..8 {
        last = attacker.post("/api/v1/auth/login", login(&email, &format!("guess {i}"))).await.status;
    }
    assert_eq!(last, 429, "the guesser waits");
    assert_eq!(attacker.post("/api/v1/auth/login", login(&email, PASSWORD)).await.status, 429, "even with the right password, on an unknown device");

    // The owner, on their device, is let through with the right password.
    let r = owner.post("/api/v1/auth/login", login(&email, PASSWORD)).await;
    assert_eq!(r.status, 200, "the owner is locked out: {}", r.body);
    assert_eq!(owner.get("/api/v1/me").await.body["email"], json!(email));
    // Wrong passwords on that device count against the device only.
    for i in 0..5 {
        assert_eq!(owner.post("/api/v1/auth/login", login(&email, &format!("typo {i}"))).await.status, 401);
    }
    assert_eq!(owner.post("/api/v1/auth/login", login(&email, "typo again")).await.status, 429);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_spraying_many_accounts_waits() {
    let app = spawn_app_with(|s| s.trusted_proxies = vec!["127.0.0.1".parse().expect("address")]).await;
    let victim = account(&app).await;
    let from = |address: &'static str, body: Value| {
        let c = app.client();
        async move { c.send(c.http.post(format!("{}/api/v1/auth/login", c.base)).header("x-forwarded-for", address).json(&body)).await }
    };
    for i in 0..50 {
        let r = from("203.0.113.7", login(&format!("sprayed-{i}@example.test"), "Summer2026!")).await;
        assert_eq!(r.status, 401, "spray {i}: {}", r.body);
    }
    let r = from("203.0.113.7", login(&victim, PASSWORD)).await;
    assert_error("the spraying address", &r, 429, "rate_limited");
    assert!(retry_after(&r) >= 1);
    // Other addresses, and the account itself, are untouched.
    assert_eq!(from("198.51.100.9", login(&victim, PASSWORD)).await.status, 200);
    app.stop().await;
}

fn mails_to(outbox: &std::path::Path, email: &str) -> Vec<String> {
    let text = std::fs::read_to_string(outbox).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["to"] == email)
        .filter_map(|m| crate::common::mailed_code_in(&m))
        .collect()
}

/// Thirty seconds pass for the account's code (the time between resends).
async fn later(app: &TestApp, email: &str, interval: &str) {
    sqlx::query("UPDATE email_codes SET sent_at = sent_at - $2::interval, window_started_at = window_started_at - $2::interval WHERE user_id = (SELECT user_id FROM users WHERE email = $1)")
        .bind(email)
        .bind(interval)
        .execute(&app.pool)
        .await
        .expect("time passes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_email_code_keeps_the_wrong_tries_and_codes_are_few_an_hour() {
    let outbox = std::env::temp_dir().join(format!("frontrow-outbox-{}.jsonl", Uuid::new_v4().simple()));
    let app = spawn_app_with({
        let outbox = outbox.clone();
        move |s| s.mail_outbox = Some(outbox)
    })
    .await;

    // Five wrong tries, then a new code: no fresh tries come with it.
    let guesser = app.fan().await;
    let email = guesser.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();
    assert_eq!(guesser.post("/api/v1/me/email-code", json!({})).await.status, 202);
    for _ in 0..5 {
        assert_eq!(guesser.post("/api/v1/me/email-code/confirm", json!({ "code": "999999" })).await.status, 403);
    }
    later(&app, &email, "31 seconds").await;
    let r = guesser.post("/api/v1/me/email-code", json!({})).await;
    assert_error("a new code after the hour's tries", &r, 429, "rate_limited");
    assert!(retry_after(&r) > 30 * 60, "waits for the hour, not {}", retry_after(&r));
    assert_eq!(mails_to(&outbox, &email).len(), 1, "no second code was mailed");
    let code = mails_to(&outbox, &email).pop().expect("the code");
    assert_eq!(guesser.post("/api/v1/me/email-code/confirm", json!({ "code": code })).await.status, 403, "the hour's tries are used up");
    // An hour on, the count starts again.
    later(&app, &email, "61 minutes").await;
    assert_eq!(guesser.post("/api/v1/me/email-code", json!({})).await.status, 202);
    let code = mails_to(&outbox, &email).pop().expect("the new code");
    assert_eq!(guesser.post("/api/v1/me/email-code/confirm", json!({ "code": code })).await.status, 200);

    // Codes asked for again and again: five an hour, then a wait.
    let asker = app.fan().await;
    let email = asker.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();
    for n in 1..=5 {
        let r = asker.post("/api/v1/me/email-code", json!({})).await;
        assert_eq!(r.status, 202, "code {n}: {}", r.body);
        later(&app, &email, "31 seconds").await;
    }
    let r = asker.post("/api/v1/me/email-code", json!({})).await;
    assert_error("a sixth code in the hour", &r, 429, "rate_limited");
    assert!(retry_after(&r) > 30 * 60, "waits for the hour, not {}", retry_after(&r));
    assert_eq!(mails_to(&outbox, &email).len(), 5);
    let _ = std::fs::remove_file(&outbox);
    app.stop().await;
}
