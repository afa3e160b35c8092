//! Holds, money, sockets (issue 16): a retried hold holding most of the
//! limit, the server functions' per-fan limit, live sockets' caps, idle
//! readers and whose queue ticket it is, refunds racing the door, and the
//! demo refusing the network. (A re-sent payment refused by the HTTP
//! provider is in `payment_http`, next to its fake provider.)

use std::time::Duration;

use frontrow_model::{SalePhase, UserId};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use uuid::Uuid;

use crate::common::*;
use crate::live::Socket;

// ---------------------------------------------------------------------------
// Holds
// ---------------------------------------------------------------------------

async fn hold_with_key(fan: &Client, event: Uuid, seats: &[&str], key: &str) -> Reply {
    fan.send(fan.http.post(format!("{}/api/v1/events/{event}/holds", fan.base)).header("idempotency-key", key).json(&json!({ "seat_ids": seats })))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_hold_holding_most_of_the_limit_gets_its_own_hold_back() {
    let app = spawn_app().await;
    // Four seats a fan; each hold below takes three of them.
    let event = app.event(2, 10, 300, 4).await;
    let fan = app.fan().await;
    let seats = ["A-1-1", "A-1-2", "A-1-3"];
    let first = hold_with_key(&fan, event, &seats, "most-of-the-limit").await;
    assert_eq!(first.status, 201, "{}", first.body);
    // The answer was lost: the same request again, with its key.
    let again = hold_with_key(&fan, event, &["A-1-3", "A-1-1", "A-1-2"], "most-of-the-limit").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!((&again.body["hold_id"], &again.body["hold_token"]), (&first.body["hold_id"], &first.body["hold_token"]));
    // Without a key, exactly the same seats again are that hold too.
    let same_seats = fan.hold(event, &seats).await;
    assert_eq!((same_seats.status, &same_seats.body["hold_id"]), (200, &first.body["hold_id"]), "{}", same_seats.body);
    // Other seats over the limit are still too many.
    let more = fan.hold(event, &["A-2-1", "A-2-2"]).await;
    assert_eq!((more.status, more.body["error"].as_str()), (422, Some("too_many_seats")), "{}", more.body);

    // The picker's retry, through the server function.
    let picker = app.fan().await;
    let body = json!({ "event_id": event, "seat_ids": ["A-2-5", "A-2-6", "A-2-7"], "idempotency_key": "picker-retry" });
    let made = picker.post("/_app/hold", body.clone()).await;
    let remade = picker.post("/_app/hold", body).await;
    assert_eq!((made.status, remade.status), (201, 200), "{} / {}", made.body, remade.body);
    assert_eq!(made.body["hold_id"], remade.body["hold_id"]);
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM holds").fetch_one(&app.pool).await.unwrap();
    assert_eq!(holds, 2);
    app.assert_invariants().await;
}

// ---------------------------------------------------------------------------
// The server functions' per-fan limit
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_server_functions_are_held_to_the_per_fan_limit_from_any_address() {
    let app = spawn_app_with(|s| {
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 5;
        s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let event = app.event(2, 10, 300, 4).await;
    let fans = app.fans(3).await;
    let calls = [
        ("/_app/hold", json!({ "event_id": event, "seat_ids": ["A-1-1"] })),
        ("/_app/hold_best", json!({ "event_id": event, "count": 1, "tier": "Standard" })),
        ("/_app/renew_admission", json!({ "event_id": event, "queue_token": "0".repeat(64) })),
    ];
    for ((path, body), fan) in calls.iter().zip(&fans) {
        // Each call from another address: only the fan's own limit can stop them.
        let mut replies = Vec::new();
        for n in 0..15 {
            let request = fan.http.post(format!("{}{path}", fan.base)).header("x-forwarded-for", format!("198.51.100.{}", n + 1)).json(body);
            replies.push(fan.send(request).await);
        }
        let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
        assert!(!limited.is_empty(), "{path}: no 429 among {:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
        for r in limited {
            assert_eq!(r.body["error"], "rate_limited", "{path}: {}", r.body);
            let wait: u64 = r.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("Retry-After in seconds");
            assert!(wait >= 1, "{path}: Retry-After {wait}");
        }
        assert!(replies.iter().all(|r| r.status != 500), "{path}: {:?}", replies.iter().map(|r| (r.status, &r.body)).collect::<Vec<_>>());
    }
    // Another fan still has their allowance.
    let other = app.fans(1).await.pop().unwrap();
    let r = other.post("/_app/hold", json!({ "event_id": event, "seat_ids": ["A-2-9"] })).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

// ---------------------------------------------------------------------------
// Live sockets
// ---------------------------------------------------------------------------

async fn viewer(app: &TestApp, event: Uuid) -> Socket {
    let url = format!("ws://{}/api/v1/events/{event}/live", app.addr);
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connects");
    let first = crate::live::next_frame(&mut socket).await;
    assert_eq!(first["type"], "snapshot");
    socket
}

/// Reads until the server ends the socket (a close frame, an error, the
/// end of the stream); false if it is still open after `within`.
async fn closed_within(socket: &mut Socket, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, socket.next()).await {
            Err(_) => return false,
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => return true,
            Ok(Some(Ok(_))) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_socket_sending_a_large_message_is_closed() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    // A small message is ignored: the viewer still gets its diffs.
    let mut polite = viewer(&app, event).await;
    polite.send(Message::Text("hello".into())).await.expect("sent");
    let fan = app.fan().await;
    assert_eq!(fan.hold(event, &["A-1-1"]).await.status, 201);
    let diff = crate::live::next_frame(&mut polite).await;
    assert_eq!(diff["type"], "diff", "{diff}");
    // 64 KiB in one message (far over what a viewer ever sends) ends the socket.
    let mut big = viewer(&app, event).await;
    let _ = big.send(Message::Text("x".repeat(64 * 1024).into())).await;
    assert!(closed_within(&mut big, Duration::from_secs(5)).await, "a 64 KiB message was accepted");
    // So does one large binary frame on the waiting room's socket's cousin, the seat map.
    let mut binary = viewer(&app, event).await;
    let _ = binary.send(Message::Binary(vec![0u8; 32 * 1024].into())).await;
    assert!(closed_within(&mut binary, Duration::from_secs(5)).await, "a 32 KiB frame was accepted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_live_readers_are_pinged_and_closed_and_answering_ones_stay() {
    let app = spawn_app_with(|s| s.socket_idle_ms = 800).await;
    let event = app.event(1, 10, 300, 4).await;
    // Signed up first: while the test does anything else, the answering
    // reader is not reading, and on a busy machine that can outlast the idle limit.
    let fan = app.fan().await;
    let mut silent = viewer(&app, event).await;
    let mut answering = viewer(&app, event).await;
    // The answering reader keeps reading (tungstenite answers pings as it
    // reads); the silent one reads nothing for three idle periods.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(2400);
    let mut pings = 0;
    loop {
        match tokio::time::timeout_at(deadline, answering.next()).await {
            Err(_) => break,
            Ok(Some(Ok(Message::Ping(_)))) => pings += 1,
            Ok(Some(Ok(Message::Text(_)))) => {}
            other => panic!("a reader that answers pings was dropped: {other:?}"),
        }
    }
    assert!(pings >= 2, "pinged {pings} times in three idle periods");
    // The answering reader goes on reading while the silent one is closed.
    let silent_closed = tokio::select! {
        closed = closed_within(&mut silent, Duration::from_secs(2)) => closed,
        other = async {
            loop {
                match answering.next().await {
                    Some(Ok(Message::Ping(_) | Message::Text(_))) => {}
                    other => return other,
                }
            }
        } => panic!("a reader that answers pings was dropped: {other:?}"),
    };
    assert!(silent_closed, "a reader silent for three idle periods is still open");
    // The answering one still gets changes.
    assert_eq!(fan.hold(event, &["A-1-2"]).await.status, 201);
    loop {
        let frame = crate::live::next_frame(&mut answering).await;
        if frame["type"] == "diff" {
            break;
        }
    }
}

/// A session cookie for `user_id`, written straight to the session store.
pub(crate) async fn session_cookie(app: &TestApp, user_id: UserId) -> String {
    let user = app.engine.user(user_id).await.expect("user read").expect("user exists");
    let store = tower_sessions_sqlx_store::PostgresStore::new(app.pool.clone());
    let id = frontrow_session::create_signed_in(&store, &user, tower_sessions::cookie::time::Duration::hours(1)).await.expect("session");
    format!("{}={id}", frontrow_server::api::SESSION_COOKIE)
}

/// Opens a waiting-room socket with `cookie` (none: signed out).
pub(crate) async fn queue_socket(
    app: &TestApp,
    event: Uuid,
    token: &str,
    cookie: Option<&str>,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let mut request = format!("ws://{}/api/v1/events/{event}/queue/{token}/live", app.addr).into_client_request().expect("request");
    if let Some(cookie) = cookie {
        request.headers_mut().insert("cookie", cookie.parse().expect("cookie header"));
    }
    tokio_tungstenite::connect_async(request).await.map(|(socket, _)| socket)
}

fn refused_with(result: Result<Socket, tokio_tungstenite::tungstenite::Error>) -> u16 {
    match result {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("refused otherwise: {e}"),
        Ok(_) => 101,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_socket_is_only_for_the_fan_whose_ticket_it_is() {
    let app = spawn_app().await;
    let event = crate::waiting_room::room_event(&app, 10, 3600).await;
    let owner: Uuid = sqlx::query_scalar("INSERT INTO users (user_id, email, name, password_hash) VALUES (gen_random_uuid(), 'owner-' || gen_random_uuid() || '@example.test', 'Fan', 'x') RETURNING user_id")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let other: Uuid = sqlx::query_scalar("INSERT INTO users (user_id, email, name, password_hash) VALUES (gen_random_uuid(), 'other-' || gen_random_uuid() || '@example.test', 'Fan', 'x') RETURNING user_id")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let token =
        app.engine.join_queue(event.into(), SalePhase::Public, owner.into(), "test-binding").await.map(|view| view.queue_token).expect("join");
    let (owner_cookie, other_cookie) = (session_cookie(&app, owner.into()).await, session_cookie(&app, other.into()).await);
    assert_eq!(refused_with(queue_socket(&app, event, &token, None).await), 401, "signed out");
    assert_eq!(refused_with(queue_socket(&app, event, &token, Some(&other_cookie)).await), 403, "another fan's ticket");
    assert_eq!(refused_with(queue_socket(&app, event, &"0".repeat(64), Some(&other_cookie)).await), 404, "no such ticket");
    let mut mine = queue_socket(&app, event, &token, Some(&owner_cookie)).await.expect("the owner listens");
    assert!(!closed_within(&mut mine, Duration::from_millis(300)).await);
}

// ---------------------------------------------------------------------------
// Refunds and the door
// ---------------------------------------------------------------------------

async fn post_key(c: &Client, path: &str, key: &str, body: Value) -> Reply {
    c.send(c.http.post(format!("{}{path}", c.base)).header("idempotency-key", key).json(&body)).await
}

/// A counter sale (cash) of `seats`: its booking id and tickets (id, code).
async fn counter_booking(app: &TestApp, staff: &Client, event: Uuid, seats: &[&str]) -> (String, Vec<(String, String)>) {
    let sale = post_key(
        staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        &Uuid::new_v4().to_string(),
        json!({ "seat_ids": seats, "payment": "card", "payment_token": "tok_visa", "customer_name": "Walk In" }),
    )
    .await;
    assert_eq!(sale.status, 201, "{}", sale.body);
    let booking = sale.body["booking_id"].as_str().expect("booking").to_owned();
    let mut tickets = Vec::new();
    for t in sale.body["tickets"].as_array().expect("tickets") {
        let id = t["ticket_id"].as_str().expect("ticket").to_owned();
        let code: String =
            sqlx::query_scalar("SELECT code FROM tickets WHERE ticket_id = $1").bind(id.parse::<Uuid>().unwrap()).fetch_one(&app.pool).await.unwrap();
        tickets.push((id, code));
    }
    (booking, tickets)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refunds_racing_check_ins_answer_conflicts_never_500() {
    let app = spawn_app().await;
    let event = app.event(4, 20, 300, 4).await;
    let (staff, door) = (app.staff().await, app.staff().await);
    let mut bookings = Vec::new();
    for n in 0..40 {
        let seats = [format!("A-{}-{}", 1 + n / 10, 1 + 2 * (n % 10)), format!("A-{}-{}", 1 + n / 10, 2 + 2 * (n % 10))];
        bookings.push(counter_booking(&app, &staff, event, &[seats[0].as_str(), seats[1].as_str()]).await);
    }
    let races = bookings.iter().enumerate().map(|(n, (booking, tickets))| {
        let (staff, door) = (&staff, &door);
        async move {
            let path = format!("/api/v1/admin/bookings/{booking}/refund");
            // Half the refunds name the ticket at the door, half the whole booking.
            let body = if n % 2 == 0 { json!({ "ticket_ids": [tickets[0].0], "reason": "race" }) } else { json!({ "reason": "race" }) };
            let key = format!("race-{n}");
            let (refund, scan) = tokio::join!(
                post_key(staff, &path, &key, body),
                door.post("/api/v1/admin/checkins", json!({ "code": tickets[0].1, "event_id": event })),
            );
            (refund, scan)
        }
    });
    let outcomes = futures::future::join_all(races).await;
    for (refund, scan) in &outcomes {
        assert!(matches!(refund.status, 200 | 409 | 422), "refund answered {}: {}", refund.status, refund.body);
        assert!(matches!(scan.status, 200 | 409), "check-in answered {}: {}", scan.status, scan.body);
        // Never both: a ticket is refunded or used, once.
        assert!(!(refund.status == 200 && scan.status == 200), "refunded and admitted: {} / {}", refund.body, scan.body);
    }
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_naming_a_ticket_twice_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let staff = app.staff().await;
    let (booking, tickets) = counter_booking(&app, &staff, event, &["A-1-1", "A-1-2"]).await;
    let path = format!("/api/v1/admin/bookings/{booking}/refund");
    let twice = post_key(&staff, &path, "dup-1", json!({ "ticket_ids": [tickets[0].0, tickets[0].0], "reason": "twice" })).await;
    assert_eq!((twice.status, twice.body["error"].as_str()), (422, Some("invalid_input")), "{}", twice.body);
    let refunds: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds").fetch_one(&app.pool).await.unwrap();
    assert_eq!(refunds, 0);
    let states: Vec<String> = sqlx::query_scalar("SELECT state::text FROM tickets WHERE booking_id = $1")
        .bind(booking.parse::<Uuid>().unwrap())
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(states, ["valid", "valid"]);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "sold");
    // The same ticket once is refunded as usual.
    let once = post_key(&staff, &path, "dup-2", json!({ "ticket_ids": [tickets[0].0], "reason": "once" })).await;
    assert_eq!(once.status, 200, "{}", once.body);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refund_retries_back_off_as_long_as_they_have_been_failing() {
    let app = spawn_app_with(|s| s.reconcile_interval_ms = 3_600_000).await;
    let event = app.event(1, 10, 300, 4).await;
    let staff = app.staff().await;
    let (old, _) = counter_booking(&app, &staff, event, &["A-1-1"]).await;
    let (young, _) = counter_booking(&app, &staff, event, &["A-1-2"]).await;
    // The provider is down: both refunds stay pending.
    sqlx::query("UPDATE sim_provider_control SET outage_until = now() + interval '1 hour'").execute(&app.pool).await.unwrap();
    for (booking, key) in [(&old, "r-old"), (&young, "r-young")] {
        let r = post_key(&staff, &format!("/api/v1/admin/bookings/{booking}/refund"), key, json!({ "reason": "provider down" })).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // One has been failing for an hour (tried 10 s ago: not due for an hour),
    // the other for 3 s (tried 2 s ago: due after 1 s).
    let set = |booking: &String, created: &str, updated: &str| {
        let sql = format!(
            "UPDATE refunds SET created_at = now() - interval '{created}', updated_at = now() - interval '{updated}'
              WHERE payment_id = (SELECT pi.payment_id FROM checkouts c JOIN payment_intents pi USING (checkout_id) WHERE c.booking_id = $1)"
        );
        let pool = app.pool.clone();
        let booking: Uuid = booking.parse().unwrap();
        async move { sqlx::query(&sql).bind(booking).execute(&pool).await.unwrap() }
    };
    set(&old, "1 hour", "10 seconds").await;
    set(&young, "3 seconds", "2 seconds").await;
    let tried_ago = |booking: &String| {
        let pool = app.pool.clone();
        let booking: Uuid = booking.parse().unwrap();
        async move {
            sqlx::query_scalar::<_, f64>(
                "SELECT extract(epoch FROM now() - r.updated_at)::float8 FROM refunds r JOIN payment_intents pi USING (payment_id)
                   JOIN checkouts c USING (checkout_id) WHERE c.booking_id = $1",
            )
            .bind(booking)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let stats = app.engine.reconcile_once().await.expect("a round");
    assert_eq!(stats.refunds_retried, 1, "{stats:?}");
    assert!(tried_ago(&old).await >= 9.0, "the refund failing for an hour was tried again 10 s after its last try");
    assert!(tried_ago(&young).await < 1.0, "the refund due was not tried");
    // Back up: the due one goes through; the other waits its turn.
    sqlx::query("UPDATE sim_provider_control SET outage_until = NULL").execute(&app.pool).await.unwrap();
    set(&young, "4 seconds", "3 seconds").await;
    app.engine.reconcile_once().await.expect("a round");
    let status: String = sqlx::query_scalar(
        "SELECT r.status::text FROM refunds r JOIN payment_intents pi USING (payment_id) JOIN checkouts c USING (checkout_id) WHERE c.booking_id = $1",
    )
    .bind(young.parse::<Uuid>().unwrap())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(status, "succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_event_that_cannot_be_refunded_does_not_stop_the_others() {
    let app = spawn_app_with(|s| s.reconcile_interval_ms = 3_600_000).await;
    let (broken, fine) = (app.event(1, 10, 300, 4).await, app.event(1, 10, 300, 4).await);
    let staff = app.staff().await;
    let (broken_booking, _) = counter_booking(&app, &staff, broken, &["A-1-1"]).await;
    let (fine_booking, _) = counter_booking(&app, &staff, fine, &["A-1-1"]).await;
    // One booking's payment can no longer be found (its refund fails every
    // time); both events were cancelled by a cancel cut short.
    sqlx::query("UPDATE checkouts SET booking_id = NULL WHERE booking_id = $1")
        .bind(broken_booking.parse::<Uuid>().unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE events SET cancelled_at = now() - interval '1 minute' WHERE event_id = $1").bind(broken).execute(&app.pool).await.unwrap();
    sqlx::query("UPDATE events SET cancelled_at = now() WHERE event_id = $1").bind(fine).execute(&app.pool).await.unwrap();
    let round = app.engine.reconcile_once().await;
    assert!(round.is_ok(), "one event's failure failed the whole round: {round:?}");
    let status = |booking: String| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT status::text FROM bookings WHERE booking_id = $1")
                .bind(booking.parse::<Uuid>().unwrap())
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(status(fine_booking).await, "cancelled", "the other event's booking was refunded");
    assert_eq!(status(broken_booking).await, "confirmed", "the broken one is left for a person and the next round");
    // And the next round runs too.
    assert!(app.engine.reconcile_once().await.is_ok());
}

// ---------------------------------------------------------------------------
// The demo and the network
// ---------------------------------------------------------------------------

/// Runs `frontrow serve` with `env` until it exits or `until` shows up in
/// its output (then it is stopped); answers whether it exited by itself,
/// successfully or not, and everything it printed.
async fn serve_output(env: &[(&str, &str)], until: Option<&str>) -> (Option<bool>, String) {
    use tokio::io::AsyncReadExt;
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_frontrow"));
    cmd.arg("serve").env("RUST_LOG", "warn").env_remove("FRONTROW_PUBLIC_URL").kill_on_drop(true);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("frontrow runs");
    let (mut out, mut err) = (child.stdout.take().expect("stdout"), child.stderr.take().expect("stderr"));
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (mut out_buf, mut err_buf) = ([0u8; 4096], [0u8; 4096]);
    let (mut out_open, mut err_open) = (true, true);
    while out_open || err_open {
        if until.is_some_and(|u| text.contains(u)) {
            let _ = child.kill().await;
            return (None, text);
        }
        tokio::select! {
            n = out.read(&mut out_buf), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => text.push_str(&String::from_utf8_lossy(&out_buf[..n])),
            },
            n = err.read(&mut err_buf), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => text.push_str(&String::from_utf8_lossy(&err_buf[..n])),
            },
            _ = tokio::time::sleep_until(deadline) => {
                let _ = child.kill().await;
                panic!("frontrow neither exited nor printed {until:?} within 30 s: {text}");
            }
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exits").expect("status");
    (Some(status.success()), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_says_so_at_start_and_refuses_the_network_unless_asked() {
    let database_url = fresh_database().await;
    let secret = ("FRONTROW_SECRET", "a-test-secret-of-some-length");
    let database = ("DATABASE_URL", database_url.as_str());
    // On loopback: it starts, and warns of the simulated provider and the demo account.
    let (exited, text) = serve_output(&[database, secret, ("FRONTROW_ADDR", "127.0.0.1:0")], Some("demo staff account")).await;
    assert_eq!(exited, None, "it stopped: {text}");
    assert!(text.contains("WARN") && text.contains("SIMULATED provider"), "{text}");
    // Beyond loopback: refused, saying what to do.
    let (exited, text) = serve_output(&[database, secret, ("FRONTROW_ADDR", "0.0.0.0:0")], None).await;
    assert_eq!(exited, Some(false), "{text}");
    assert!(text.contains("refusing to start") && text.contains("FRONTROW_ALLOW_DEMO_ON_NETWORK=1"), "{text}");
    // ... unless asked for.
    let allowed = [database, secret, ("FRONTROW_ADDR", "0.0.0.0:0"), ("FRONTROW_ALLOW_DEMO_ON_NETWORK", "1")];
    let (exited, text) = serve_output(&allowed, Some("serving the demo beyond loopback")).await;
    assert_eq!(exited, None, "{text}");
    // A site with its public URL is no demo: no warning, and the network is fine.
    let mut settings = test_settings();
    settings.addr = "0.0.0.0:0".parse().unwrap();
    settings.public_url = Some("http://tickets.example.test".into());
    settings.payment_provider = Some(frontrow_server::config::ProviderKind::Simulated);
    let pool = frontrow_server::startup::connect(&database_url, 2).await.unwrap();
    assert!(frontrow_server::startup::Application::build(settings.clone(), pool.clone()).await.is_ok());
    settings.public_url = None;
    assert!(frontrow_server::startup::Application::build(settings.clone(), pool.clone()).await.is_err(), "the demo on the network");
    settings.allow_demo_on_network = true;
    assert!(frontrow_server::startup::Application::build(settings, pool).await.is_ok());
}
