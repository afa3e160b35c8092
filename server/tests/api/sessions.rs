//! Sessions across instances and sign-in from other sites: signing out, a
//! password reset or disabling ends a session on every instance, and any
//! change to an account is heard by every instance; a
//! cross-site form cannot sign anyone in; sign-ups and sign-ins from one
//! address are few.

use crate::common::*;
use frontrow_server::api::SESSION_COOKIE;
use serde_json::{json, Value};
use uuid::Uuid;

/// Signs in (or up) through `app` without a cookie jar: the session id.
async fn session_id(app: &TestApp, path: &str, body: Value) -> String {
    let r = reqwest::Client::new().post(app.url(path)).json(&body).send().await.expect("sent");
    assert!(r.status().is_success(), "{path}: {}", r.status());
    let set_cookie = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{SESSION_COOKIE}=")))
        .expect("a session cookie")
        .to_owned();
    let pair = set_cookie.split(';').next().expect("name=value");
    pair.split_once('=').expect("name=value").1.to_owned()
}

/// `GET /api/v1/me` on `app` with `session`'s cookie.
async fn me_response(app: &TestApp, session: &str) -> reqwest::Response {
    reqwest::Client::new().get(app.url("/api/v1/me")).header("cookie", format!("{SESSION_COOKIE}={session}")).send().await.expect("sent")
}

async fn me(app: &TestApp, session: &str) -> u16 {
    me_response(app, session).await.status().as_u16()
}

async fn stored_sessions(app: &TestApp, session: &str) -> i64 {
    sqlx::query_scalar(r#"SELECT count(*) FROM "tower_sessions"."session" WHERE id = $1"#).bind(session).fetch_one(&app.pool).await.expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_on_one_instance_ends_the_session_on_every_instance_and_no_save_brings_it_back() {
    let a = spawn_app().await;
    let b = spawn_app_on(&a.database_url, |_| {}).await;
    let email = format!("fan-{}@example.test", Uuid::new_v4().simple());
    let session = session_id(&a, "/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Both" })).await;
    // B reads the session once and keeps it in memory.
    assert_eq!(me(&b, &session).await, 200);

    let out =
        reqwest::Client::new().post(a.url("/api/v1/auth/logout")).header("cookie", format!("{SESSION_COOKIE}={session}")).send().await.expect("sent");
    assert_eq!(out.status().as_u16(), 204);
    eventually(5, "B to hear of the sign-out", || async { (me(&b, &session).await == 401).then_some(()) }).await;

    // A request on B that writes to its session does not revive it.
    let event_id = a.event(1, 5, 300, 4).await;
    let hold = reqwest::Client::new()
        .post(b.url(&format!("/api/v1/events/{event_id}/holds")))
        .header("cookie", format!("{SESSION_COOKIE}={session}"))
        .json(&json!({ "seat_ids": ["A-1-1"] }))
        .send()
        .await
        .expect("sent");
    assert_eq!(hold.status().as_u16(), 401);
    assert_eq!(stored_sessions(&a, &session).await, 0, "the ended session is back in the table");
    assert_eq!(me(&a, &session).await, 401);
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_reset_or_disabling_ends_the_accounts_sessions_everywhere_and_enabling_does_not_revive_them() {
    let a = spawn_app().await;
    let b = spawn_app_on(&a.database_url, |_| {}).await;
    let admin = a.admin().await;
    let email = format!("staff-{}@example.test", Uuid::new_v4().simple());
    let created = admin.post("/api/v1/admin/users", json!({ "email": email, "password": PASSWORD, "name": "Desk", "role": "staff" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let user_id = created.body["user_id"].as_str().expect("id").to_owned();
    let change = |body: Value| {
        let admin = &admin;
        let path = format!("{}/api/v1/admin/users/{user_id}", admin.base);
        async move { admin.send(admin.http.patch(path).json(&body)).await }
    };
    let login = json!({ "email": email, "password": PASSWORD });
    let on_a = session_id(&a, "/api/v1/auth/login", login.clone()).await;
    let on_b = session_id(&b, "/api/v1/auth/login", login).await;
    assert_eq!((me(&a, &on_a).await, me(&b, &on_b).await, me(&b, &on_a).await), (200, 200, 200));

    // An admin sets a new password: every session from before ends.
    assert_eq!(change(json!({ "password": "a brand new password" })).await.status, 200);
    eventually(5, "the reset to end both sessions on both instances", || async {
        let all = [me(&a, &on_a).await, me(&b, &on_b).await, me(&b, &on_a).await, me(&a, &on_b).await];
        all.iter().all(|s| *s == 401).then_some(())
    })
    .await;

    // Disabled, then enabled again: the session from before stays ended.
    let fresh = session_id(&b, "/api/v1/auth/login", json!({ "email": email, "password": "a brand new password" })).await;
    assert_eq!(me(&a, &fresh).await, 200);
    assert_eq!(change(json!({ "disabled": true })).await.status, 200);
    eventually(5, "disabling to end the session", || async { (me(&a, &fresh).await == 401 && me(&b, &fresh).await == 401).then_some(()) }).await;
    assert_eq!(change(json!({ "disabled": false })).await.status, 200);
    tokio::time::sleep(frontrow_engine::accounts::USER_FRESH * 2).await;
    assert_eq!((me(&a, &fresh).await, me(&b, &fresh).await), (401, 401), "enabling the account revived an old session");
    assert!(!session_id(&a, "/api/v1/auth/login", json!({ "email": email, "password": "a brand new password" })).await.is_empty());
    b.stop().await;
    a.stop().await;
}

/// The name on `session`'s account as `app` answers it.
async fn name_on(app: &TestApp, session: &str) -> String {
    let me: Value = me_response(app, session).await.json().await.expect("json");
    me["name"].as_str().expect("a name").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_change_made_anywhere_is_heard_by_every_instance_which_otherwise_reads_the_account_no_more() {
    let a = spawn_app().await;
    let b = spawn_app_on(&a.database_url, |_| {}).await;
    let email = format!("fan-{}@example.test", Uuid::new_v4().simple());
    let session = session_id(&a, "/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Before" })).await;
    assert_eq!(name_on(&b, &session).await, "Before");

    // Changed by hand in the database, not through either instance: the
    // trigger on `users` announces it and B forgets what it kept.
    let rename = |name: &'static str| {
        let (pool, email) = (a.pool.clone(), email.clone());
        async move { sqlx::query("UPDATE users SET name = $1 WHERE email = $2").bind(name).bind(email).execute(&pool).await.expect("renamed") }
    };
    rename("Announced").await;
    eventually(5, "B to hear of the change", || async { (name_on(&b, &session).await == "Announced").then_some(()) }).await;

    // With the announcement switched off, B goes on answering from memory
    // well past the time it would trust an account without the feed: a
    // signed-in request costs no read of the account.
    sqlx::query("ALTER TABLE users DISABLE TRIGGER account_changed").execute(&a.pool).await.expect("trigger off");
    rename("Unannounced").await;
    tokio::time::sleep(frontrow_engine::accounts::USER_FRESH * 2).await;
    assert_eq!(name_on(&b, &session).await, "Announced", "B read the account again while the feed was heard");
    // What was kept while nobody listened may have missed a change: once the
    // listeners' connections are cut, every account is read again.
    let cut: i64 = sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
          WHERE datname = current_database() AND query ILIKE '%LISTEN%' AND pid <> pg_backend_pid()",
    )
    .fetch_one(&a.pool)
    .await
    .expect("listeners cut");
    assert!(cut >= 1, "no listener was found to cut");
    eventually(10, "B to read the account again after hearing the feed anew", || async {
        (name_on(&b, &session).await == "Unannounced").then_some(())
    })
    .await;
    sqlx::query("ALTER TABLE users ENABLE TRIGGER account_changed").execute(&a.pool).await.expect("trigger on");
    rename("After").await;
    eventually(5, "B to hear of the next change", || async { (name_on(&b, &session).await == "After").then_some(()) }).await;
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_on_another_site_cannot_sign_a_visitor_in_or_up() {
    let app = spawn_app().await;
    let email = format!("victim-{}@example.test", Uuid::new_v4().simple());
    let visitor = reqwest::Client::new();
    let cross_site = [
        ("/api/v1/auth/login", "application/json", json!({ "email": email, "password": PASSWORD }).to_string()),
        ("/api/v1/auth/signup", "application/json", json!({ "email": email, "password": PASSWORD, "name": "X" }).to_string()),
        ("/_app/sign_in", "application/x-www-form-urlencoded", format!("email={email}&password=correct+horse+battery")),
        ("/_app/sign_up", "application/x-www-form-urlencoded", format!("name=X&email={email}&password=correct+horse+battery")),
    ];
    for (path, content_type, body) in cross_site {
        let r = visitor
            .post(app.url(path))
            .header("origin", "https://evil.example")
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .expect("sent");
        assert_eq!(r.status().as_u16(), 403, "{path} from another site");
        assert!(r.headers().get("set-cookie").is_none(), "{path} set a cookie");
    }
    let accounts: i64 = sqlx::query_scalar("SELECT count(*) FROM users WHERE email = $1").bind(&email).fetch_one(&app.pool).await.expect("count");
    assert_eq!(accounts, 0, "a cross-site sign-up made an account");
    // From our own pages it works.
    let own = visitor
        .post(app.url("/api/v1/auth/signup"))
        .header("origin", app.base.clone())
        .json(&json!({ "email": email, "password": PASSWORD, "name": "X" }))
        .send()
        .await
        .expect("sent");
    assert_eq!(own.status().as_u16(), 201);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ups_and_sign_ins_from_one_address_are_a_few_a_minute_after_a_burst() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.account_attempts_per_minute = 5;
    })
    .await;
    let client = app.client();
    let mut answers = Vec::new();
    for n in 0..60 {
        let email = format!("bot-{n}-{}@example.test", Uuid::new_v4().simple());
        let r = client.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Bot" })).await;
        if r.status == 429 {
            let retry_after: u64 = r.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("Retry-After");
            assert!((1..=60).contains(&retry_after), "{retry_after}");
        }
        answers.push(r.status);
    }
    let made = answers.iter().filter(|s| **s == 201).count();
    assert!(made <= 10, "{made} accounts from one address in a row");
    assert_eq!(answers.iter().filter(|s| **s == 429).count(), 60 - made);
    // Sign-ins draw on the same small allowance.
    let r = client.post("/api/v1/auth/login", json!({ "email": "anyone@example.test", "password": "guess" })).await;
    assert_eq!(r.status, 429);
    app.stop().await;
}
