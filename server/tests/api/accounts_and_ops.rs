//! Accounts (sign-up, sign-in with session rotation, sign-out), the session
//! cookie, the operations endpoints, the OpenAPI document, request ids and
//! rate limits.

use crate::common::{assert_error, spawn_app, spawn_app_with, Client, Reply, TestApp, PASSWORD};
use serde_json::{json, Value};
use uuid::Uuid;

const SESSION_COOKIE: &str = "frontrow_session";

async fn user_count(app: &TestApp) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT count(*) FROM users").fetch_one(&app.pool).await.expect("count users")
}

/// The full Set-Cookie line for the session cookie, if the response set one.
fn session_set_cookie(r: &Reply) -> Option<String> {
    r.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok()).find(|v| v.starts_with(&format!("{SESSION_COOKIE}="))).map(str::to_owned)
}

/// The session id from a Set-Cookie line.
fn cookie_value(set_cookie: &str) -> String {
    let pair = set_cookie.split(';').next().expect("name=value");
    pair.split_once('=').expect("name=value").1.to_owned()
}

fn has_attribute(set_cookie: &str, attribute: &str) -> bool {
    set_cookie.split(';').skip(1).any(|a| {
        let a = a.trim();
        a.eq_ignore_ascii_case(attribute) || a.split_once('=').is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case(attribute))
    })
}

fn attribute_value(set_cookie: &str, attribute: &str) -> Option<String> {
    set_cookie
        .split(';')
        .skip(1)
        .filter_map(|a| a.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(attribute))
        .map(|(_, v)| v.trim().to_owned())
}

/// A client with no cookie jar: cookies are sent by hand.
fn bare_client(app: &TestApp) -> Client {
    Client { http: reqwest::Client::builder().build().expect("client"), base: app.base.clone() }
}

async fn post_with_cookie(c: &Client, path: &str, cookie: Option<&str>, body: Value) -> Reply {
    let mut r = c.http.post(format!("{}{path}", c.base)).json(&body);
    if let Some(id) = cookie {
        r = r.header("cookie", format!("{SESSION_COOKIE}={id}"));
    }
    c.send(r).await
}

async fn get_with_cookie(c: &Client, path: &str, cookie: &str) -> Reply {
    c.send(c.http.get(format!("{}{path}", c.base)).header("cookie", format!("{SESSION_COOKIE}={cookie}"))).await
}

fn new_email() -> String {
    format!("fan-{}@example.test", Uuid::new_v4().simple())
}

// ---------------------------------------------------------------------------
// sign-up

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signup_creates_a_signed_in_fan() {
    let app = spawn_app().await;
    let c = app.client();
    let email = new_email();
    let r = c.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Ada Fan" })).await;
    assert_eq!(r.status, 201, "signup: {}", r.body);
    let user_id = r.body["user_id"].as_str().expect("user_id string");
    user_id.parse::<Uuid>().expect("user_id is a UUID");
    assert_eq!(r.body["email"], json!(email));
    assert_eq!(r.body["name"], json!("Ada Fan"));
    assert_eq!(r.body["role"], json!("fan"));
    let keys: Vec<&String> = r.body.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 4, "exactly user_id, email, name, role: {keys:?}");
    assert!(!r.body.to_string().contains("argon2"), "the password hash leaked: {}", r.body);

    // Signed in: /me answers the same user.
    let me = c.get("/api/v1/me").await;
    assert_eq!(me.status, 200, "me: {}", me.body);
    assert_eq!(me.body, r.body);
    let bookings = c.get("/api/v1/me/bookings").await;
    assert_eq!(bookings.status, 200, "my bookings: {}", bookings.body);
    assert_eq!(bookings.body, json!({ "bookings": [] }));

    assert_eq!(user_count(&app).await, 1);
    let role: String =
        sqlx::query_scalar("SELECT role::text FROM users WHERE email = $1").bind(&email).fetch_one(&app.pool).await.expect("stored user");
    assert_eq!(role, "fan");
    // The password is stored hashed, never as given.
    let hash: String =
        sqlx::query_scalar("SELECT password_hash FROM users WHERE email = $1").bind(&email).fetch_one(&app.pool).await.expect("stored hash");
    assert_ne!(hash, PASSWORD);
    assert!(hash.starts_with("$argon2"), "hash: {hash}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_email_is_taken_case_insensitively() {
    let app = spawn_app().await;
    let first = app.client();
    let r = first.post("/api/v1/auth/signup", json!({ "email": "Mixed.Case@Example.test", "password": PASSWORD, "name": "First" })).await;
    assert_eq!(r.status, 201, "first signup: {}", r.body);

    for email in ["Mixed.Case@Example.test", "mixed.case@example.test", "MIXED.CASE@EXAMPLE.TEST"] {
        let c = app.client();
        let r = c.post("/api/v1/auth/signup", json!({ "email": email, "password": "another password", "name": "Second" })).await;
        assert_error(email, &r, 409, "email_taken");
        assert_error("not signed in after a refused signup", &c.get("/api/v1/me").await, 401, "unauthenticated");
    }
    assert_eq!(user_count(&app).await, 1);
    // The first account's password was not replaced.
    let login = app.client().post("/api/v1/auth/login", json!({ "email": "Mixed.Case@Example.test", "password": PASSWORD })).await;
    assert_eq!(login.status, 200, "login: {}", login.body);
    assert_eq!(login.body["name"], json!("First"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_passwords_and_bad_emails_are_invalid_input() {
    let app = spawn_app().await;
    let c = app.client();
    for password in ["", "a", "1234567", "seven77"] {
        let r = c.post("/api/v1/auth/signup", json!({ "email": new_email(), "password": password, "name": "Short" })).await;
        assert_error(&format!("password {password:?}"), &r, 422, "invalid_input");
    }
    for email in ["", "plainaddress", "no-at-sign.example.test", "@example.test", "a@b", "a@.example", "a@example.", "a b@example.test"] {
        let r = c.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Bad" })).await;
        assert_error(&format!("email {email:?}"), &r, 422, "invalid_input");
    }
    assert_eq!(user_count(&app).await, 0);
    assert_error("not signed in", &c.get("/api/v1/me").await, 401, "unauthenticated");

    // Exactly 8 characters is enough.
    let r = c.post("/api/v1/auth/signup", json!({ "email": new_email(), "password": "12345678", "name": "Eight" })).await;
    assert_eq!(r.status, 201, "8-char password: {}", r.body);
    assert_eq!(user_count(&app).await, 1);
}

// ---------------------------------------------------------------------------
// sign-in and sign-out

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_with_a_wrong_password_is_invalid_credentials() {
    let app = spawn_app().await;
    let email = new_email();
    let r = app.client().post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Bo" })).await;
    assert_eq!(r.status, 201);
    let user = r.body;

    let c = app.client();
    let r = c.post("/api/v1/auth/login", json!({ "email": email, "password": "not the password" })).await;
    assert_error("wrong password", &r, 401, "invalid_credentials");
    assert!(session_set_cookie(&r).is_none(), "a failed login must not start a session: {:?}", r.headers);
    assert_error("me after a failed login", &c.get("/api/v1/me").await, 401, "unauthenticated");
    let r = c.post("/api/v1/auth/login", json!({ "email": new_email(), "password": PASSWORD })).await;
    assert_error("unknown email", &r, 401, "invalid_credentials");
    // Found by fuzzing: text PostgreSQL cannot store is refused, not a 500.
    let r = c.post("/api/v1/auth/login", json!({ "email": "a\u{0}b@example.test", "password": PASSWORD })).await;
    assert_error("NUL in the email", &r, 401, "invalid_credentials");
    let r = c.post("/api/v1/auth/signup", json!({ "email": "nul@example.test", "password": PASSWORD, "name": "Bo\u{0}" })).await;
    assert_error("NUL in the name", &r, 422, "invalid_input");

    let r = c.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await;
    assert_eq!(r.status, 200, "login: {}", r.body);
    assert_eq!(r.body, user, "login answers the same body as signup");
    assert_eq!(c.get("/api/v1/me").await.body, user);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_rotates_the_session_id() {
    let app = spawn_app().await;
    let c = bare_client(&app);
    let email = new_email();

    let signup = post_with_cookie(&c, "/api/v1/auth/signup", None, json!({ "email": email, "password": PASSWORD, "name": "Rot" })).await;
    assert_eq!(signup.status, 201, "signup: {}", signup.body);
    let before = cookie_value(&session_set_cookie(&signup).expect("signup sets the session cookie"));
    assert!(!before.is_empty());
    assert_eq!(get_with_cookie(&c, "/api/v1/me", &before).await.status, 200, "the signup session works");

    let login = post_with_cookie(&c, "/api/v1/auth/login", Some(&before), json!({ "email": email, "password": PASSWORD })).await;
    assert_eq!(login.status, 200, "login: {}", login.body);
    let after = cookie_value(&session_set_cookie(&login).expect("login sets a new session cookie"));
    assert_ne!(after, before, "the session id must change at login");

    let me = get_with_cookie(&c, "/api/v1/me", &after).await;
    assert_eq!(me.status, 200, "the new session works: {}", me.body);
    assert_eq!(me.body["email"], json!(email));
    let old = get_with_cookie(&c, "/api/v1/me", &before).await;
    assert_error("the pre-login session id is dead", &old, 401, "unauthenticated");

    // A planted (fixated) id is not adopted either.
    let again = post_with_cookie(&c, "/api/v1/auth/login", Some(&before), json!({ "email": email, "password": PASSWORD })).await;
    assert_eq!(again.status, 200);
    let third = cookie_value(&session_set_cookie(&again).expect("login sets a session cookie"));
    assert_ne!(third, before);
    assert_ne!(third, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_is_http_only_and_same_site_lax() {
    let app = spawn_app().await;
    let c = bare_client(&app);
    let r = post_with_cookie(&c, "/api/v1/auth/signup", None, json!({ "email": new_email(), "password": PASSWORD, "name": "Jar" })).await;
    assert_eq!(r.status, 201);
    let set_cookie = session_set_cookie(&r).expect("session cookie");
    assert!(has_attribute(&set_cookie, "HttpOnly"), "HttpOnly missing: {set_cookie}");
    assert_eq!(attribute_value(&set_cookie, "SameSite").map(|v| v.to_ascii_lowercase()), Some("lax".into()), "{set_cookie}");
    assert!(!has_attribute(&set_cookie, "Secure"), "plain http must not set Secure: {set_cookie}");
    assert_eq!(attribute_value(&set_cookie, "Path").as_deref(), Some("/"), "{set_cookie}");

    // Served over https, the cookie is Secure too.
    let https = spawn_app_with(|s| {
        s.public_url = Some("https://tickets.example".into());
        s.payment_provider = Some(frontrow_server::config::ProviderKind::Simulated);
    })
    .await;
    let c = bare_client(&https);
    let r = post_with_cookie(&c, "/api/v1/auth/signup", None, json!({ "email": new_email(), "password": PASSWORD, "name": "Tls" })).await;
    assert_eq!(r.status, 201);
    let set_cookie = session_set_cookie(&r).expect("session cookie");
    assert!(has_attribute(&set_cookie, "Secure"), "Secure missing behind https: {set_cookie}");
    assert!(has_attribute(&set_cookie, "HttpOnly"), "{set_cookie}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logout_ends_the_session() {
    let app = spawn_app().await;
    let c = bare_client(&app);
    let r = post_with_cookie(&c, "/api/v1/auth/signup", None, json!({ "email": new_email(), "password": PASSWORD, "name": "Out" })).await;
    assert_eq!(r.status, 201);
    let id = cookie_value(&session_set_cookie(&r).expect("session cookie"));
    assert_eq!(get_with_cookie(&c, "/api/v1/me", &id).await.status, 200);

    let out = c.send(c.http.post(app.url("/api/v1/auth/logout")).header("cookie", format!("{SESSION_COOKIE}={id}"))).await;
    assert_eq!(out.status, 204, "logout: {}", out.body);
    assert_eq!(out.body, Value::Null, "204 has no body");
    // The stolen or kept cookie no longer signs anyone in.
    let me = get_with_cookie(&c, "/api/v1/me", &id).await;
    assert_error("me with the old cookie", &me, 401, "unauthenticated");

    // The same through a browser-like client with a cookie jar.
    let fan = app.fan().await;
    assert_eq!(fan.get("/api/v1/me").await.status, 200);
    let out = fan.send(fan.http.post(app.url("/api/v1/auth/logout"))).await;
    assert_eq!(out.status, 204);
    assert_error("me after logout", &fan.get("/api/v1/me").await, 401, "unauthenticated");
    assert_error("my bookings after logout", &fan.get("/api/v1/me/bookings").await, 401, "unauthenticated");
}

// ---------------------------------------------------------------------------
// operations

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let app = spawn_app().await;
    let c = app.client();
    let health = c.get("/healthz").await;
    assert_eq!(health.status, 200, "healthz: {}", health.body);
    let ready = c.get("/readyz").await;
    assert_eq!(ready.status, 200, "readyz: {}", ready.body);

    // Make a couple of API requests, then scrape.
    assert_eq!(c.get("/api/v1/events").await.status, 200);
    assert_eq!(c.get("/api/v1/me").await.status, 401);
    let r = c.send(c.http.get(app.url("/metrics"))).await;
    assert_eq!(r.status, 200);
    let content_type = r.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(content_type.starts_with("text/plain"), "metrics content-type: {content_type}");
    let text = r.body.as_str().expect("metrics is text, not JSON");
    assert!(text.contains("frontrow_http_requests_total"), "no request counter in:\n{text}");
    assert!(
        text.lines().any(|l| l.starts_with("frontrow_http_requests_total{") && l.contains("route=\"/api/v1/events\"")),
        "no counter line for /api/v1/events in:\n{text}"
    );
    assert!(text.contains("# TYPE frontrow_http_requests_total counter"), "not Prometheus text format:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_the_api() {
    let app = spawn_app().await;
    let c = app.client();
    let r = c.send(c.http.get(app.url("/api/openapi.json"))).await;
    assert_eq!(r.status, 200);
    let doc = &r.body;
    assert!(doc.is_object(), "not a JSON document: {doc:?}");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "openapi version: {}", doc["openapi"]);
    let paths = doc["paths"].as_object().expect("paths object");
    for path in [
        "/api/v1/events/{event_id}/holds",
        "/api/v1/holds/{hold_id}/checkout",
        "/api/v1/auth/signup",
        "/api/v1/auth/login",
        "/api/v1/auth/logout",
        "/api/v1/me",
        "/api/v1/me/bookings",
        "/api/v1/events",
        "/api/v1/events/{event_id}",
        "/api/v1/events/{event_id}/seats",
        "/api/v1/holds/{hold_id}",
        "/api/v1/checkouts/{checkout_id}",
        "/api/v1/bookings/{booking_id}",
        "/api/v1/admin/events",
        "/api/v1/admin/events/{event_id}/audit",
    ] {
        assert!(paths.contains_key(path), "{path} missing from the OpenAPI paths: {:?}", paths.keys().collect::<Vec<_>>());
    }
    assert!(paths["/api/v1/events/{event_id}/holds"]["post"].is_object());
    assert!(paths["/api/v1/holds/{hold_id}/checkout"]["post"].is_object());
    assert!(paths["/api/v1/holds/{hold_id}"]["delete"].is_object());

    // Every schema named (the typed ids among them) is in the document.
    fn refs<'a>(value: &'a serde_json::Value, found: &mut Vec<&'a str>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(target) = map.get("$ref").and_then(|r| r.as_str()) {
                    found.push(target);
                }
                map.values().for_each(|v| refs(v, found));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    refs(doc, &mut found);
    let schemas = doc["components"]["schemas"].as_object().expect("component schemas");
    for target in &found {
        let name = target.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("a reference outside the schemas: {target}"));
        assert!(schemas.contains_key(name), "{target} is referred to but not in the document");
    }
    assert!(schemas.contains_key("EventId"), "the typed ids are schemas: {:?}", schemas.keys().collect::<Vec<_>>());
    assert_eq!(schemas["EventId"]["format"], "uuid");
    // Lists the engine refuses with a repeat say so.
    for (schema, field) in
        [("NewRow", "wheelchair"), ("NewRow", "companion"), ("NewRow", "aisles_after"), ("NewAccessCodes", "tiers"), ("NewAccessCodes", "sections")]
    {
        assert_eq!(schemas[schema]["properties"][field]["uniqueItems"], true, "{schema}.{field}: {}", schemas[schema]["properties"][field]);
    }
    // A tier's name is described once, wherever it is asked for.
    for schema in ["NewRow", "JoinWaitlist"] {
        assert_eq!(schemas[schema]["properties"]["tier"]["maxLength"], 32, "{schema}: {}", schemas[schema]);
        assert!(schemas[schema]["required"].as_array().is_some_and(|r| r.contains(&serde_json::json!("tier"))), "{schema}: {}", schemas[schema]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_response_carries_a_request_id() {
    let app = spawn_app().await;
    let event_id = app.event(1, 4, 300, 2).await;
    let fan = app.fan().await;
    let anon = app.client();
    let taken = fan.get("/api/v1/me").await.body["email"].as_str().expect("email").to_owned();

    let mut replies: Vec<(&str, Reply)> = vec![
        ("401 me", anon.get("/api/v1/me").await),
        ("404 unknown path", anon.get("/api/v1/nothing-here").await),
        ("404 malformed id", anon.get("/api/v1/events/not-a-uuid").await),
        ("404 unknown event", anon.get(&format!("/api/v1/events/{}", Uuid::new_v4())).await),
        ("422 signup", anon.post("/api/v1/auth/signup", json!({ "email": "bad", "password": PASSWORD, "name": "x" })).await),
        ("409 email taken", anon.post("/api/v1/auth/signup", json!({ "email": taken, "password": PASSWORD, "name": "x" })).await),
        ("401 login", anon.post("/api/v1/auth/login", json!({ "email": "no@example.test", "password": PASSWORD })).await),
        ("403 forbidden", fan.get(&format!("/api/v1/admin/events/{event_id}/audit")).await),
        ("422 too many seats", fan.hold(event_id, &["A-1-1", "A-1-2", "A-1-3"]).await),
        (
            "422 no idempotency key",
            fan.post(&format!("/api/v1/holds/{}/checkout", Uuid::new_v4()), json!({ "hold_token": "t", "payment_token": "tok_visa" })).await,
        ),
    ];
    let bad_json = anon.send(anon.http.post(app.url("/api/v1/auth/login")).header("content-type", "application/json").body("{")).await;
    replies.push(("400 invalid json", bad_json));
    let no_type = anon.send(anon.http.post(app.url("/api/v1/auth/login")).body("{}")).await;
    replies.push(("415 no content type", no_type));
    let csrf = fan
        .send(
            fan.http
                .post(app.url(&format!("/api/v1/events/{event_id}/holds")))
                .header("origin", "https://evil.example")
                .json(&json!({ "seat_ids": ["A-1-1"] })),
        )
        .await;
    replies.push(("403 csrf", csrf));
    let big = anon.send(anon.http.post(app.url("/api/v1/auth/signup")).header("content-type", "application/json").body("x".repeat(300 * 1024))).await;
    replies.push(("413 too large", big));

    let mut seen = std::collections::HashSet::new();
    for (what, r) in &replies {
        assert!(r.status >= 400, "{what}: expected an error, got {} {}", r.status, r.body);
        assert!(r.body["error"].is_string() && r.body["message"].is_string(), "{what}: not a contract error: {:?}", r.body);
        let id = r.headers.get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("{what}: no x-request-id"));
        assert!(!id.trim().is_empty(), "{what}: empty x-request-id");
        assert!(seen.insert(id.to_owned()), "{what}: x-request-id {id} was reused");
    }
    assert_eq!(replies.iter().find(|(w, _)| *w == "403 csrf").map(|(_, r)| r.body["error"].clone()), Some(json!("csrf")));
    assert_eq!(replies.iter().find(|(w, _)| *w == "413 too large").map(|(_, r)| r.status), Some(413));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hammering_login_is_rate_limited() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 2;
    })
    .await;
    let c = app.client();
    let attempts = (0..20).map(|_| c.post("/api/v1/auth/login", json!({ "email": "nobody@example.test", "password": "wrong password" })));
    let replies = futures::future::join_all(attempts).await;

    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert!(!limited.is_empty(), "no 429 among: {:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
    for r in &limited {
        assert_error("rate limited", r, 429, "rate_limited");
        let retry_after = r.headers.get("retry-after").and_then(|v| v.to_str().ok()).expect("Retry-After header");
        let secs: u64 = retry_after.parse().unwrap_or_else(|_| panic!("Retry-After is not whole seconds: {retry_after}"));
        assert!(secs >= 1, "Retry-After {secs}");
        assert!(r.headers.get("x-request-id").is_some(), "429 without x-request-id");
    }
    // The calls that got through were answered normally.
    let passed: Vec<&Reply> = replies.iter().filter(|r| r.status != 429).collect();
    assert!(!passed.is_empty(), "every call was limited, even the first");
    for r in passed {
        assert_error("a login that got through", r, 401, "invalid_credentials");
    }
    // Reads that are not limited still answer.
    assert_eq!(c.get("/api/v1/events").await.status, 200);
    assert_eq!(c.get("/healthz").await.status, 200);
}
