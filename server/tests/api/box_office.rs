//! The box office against real PostgreSQL: counter sales racing online
//! holds, refunds racing refunds, scans racing scans, cancellation run twice
//! and cut short by a crash, roles, blocks, layouts, the change log and the
//! exports. Every concurrent test ends with the audit.

use futures::future::join_all;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;
use crate::crash::{client_for, start_server};

#[track_caller]
fn assert_error(what: &str, r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status, status, "{what}: expected {status} {code}, got {} {}", r.status, r.body);
    assert_eq!(r.body["error"], json!(code), "{what}: {}", r.body);
}

async fn post_key(c: &Client, path: impl AsRef<str>, key: impl AsRef<str>, body: Value) -> Reply {
    let url = format!("{}{}", c.base, path.as_ref());
    c.send(c.http.post(url).header("idempotency-key", key.as_ref()).json(&body)).await
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql).fetch_one(&app.pool).await.unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A fan's confirmed booking of `seats`; returns its id and ticket ids.
async fn booking(app: &TestApp, event: Uuid, seats: &[&str]) -> (Client, String, Vec<String>) {
    let fan = app.fan().await;
    let hold = fan.hold(event, seats).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let paid = fan.checkout(hold.body["hold_id"].as_str().unwrap(), hold.body["hold_token"].as_str().unwrap(), "tok_visa", "pay-1").await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let tickets = paid.body["tickets"].as_array().unwrap().iter().map(|t| t["ticket_id"].as_str().unwrap().to_owned()).collect();
    (fan, paid.body["booking_id"].as_str().unwrap().to_owned(), tickets)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_sale_and_online_holds_race_for_a_seat_and_exactly_one_wins() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let staff = app.staff().await;
    let fans = app.fans(30).await;
    let sale = post_key(
        &staff,
        format!("/api/v1/admin/events/{event}/counter-sales"),
        "counter-1",
        json!({ "seat_ids": ["A-1-5"], "payment": "cash", "customer_name": "Walk In" }),
    );
    let holds = join_all(fans.iter().map(|f| f.hold(event, &["A-1-5"])));
    let (sale, holds) = tokio::join!(sale, holds);
    let online_wins = holds.iter().filter(|r| r.status == 201).count();
    let counter_won = sale.status == 201;
    assert_eq!(online_wins + usize::from(counter_won), 1, "one winner: counter {} ({}), online {online_wins}", sale.status, sale.body);
    for r in holds.iter().filter(|r| r.status != 201) {
        assert_error("online loser", r, 409, "seats_unavailable");
    }
    if counter_won {
        assert_eq!(sale.body["channel"], json!("box_office"));
    } else {
        assert_error("counter loser", &sale, 409, "seats_unavailable");
    }
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_seats_are_refused_to_fans_and_sold_at_the_counter() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let staff = app.staff().await;
    let fan = app.fan().await;
    let blocks = format!("/api/v1/admin/events/{event}/blocks");
    let blocked = staff.post(&blocks, json!({ "seat_ids": ["A-1-1", "A-1-2", "A-1-3"], "reason": "house seats" })).await;
    assert_eq!(blocked.status, 200, "{}", blocked.body);
    assert_eq!(blocked.body["blocked"], json!(["A-1-1", "A-1-2", "A-1-3"]));
    // All or nothing: a held seat among them blocks none.
    assert_eq!(fan.hold(event, &["A-1-4"]).await.status, 201);
    let r = staff.post(&blocks, json!({ "seat_ids": ["A-1-4", "A-1-5"], "reason": "x" })).await;
    assert_error("block a held seat", &r, 409, "seats_unavailable");
    assert_eq!(r.body["conflict_seats"], json!(["A-1-4"]));
    assert_eq!(seat_state(&app.pool, event, "A-1-5").await, "available");

    // Fans see blocked seats as sold (once the board has heard) and cannot
    // hold them.
    eventually(5, "the blocked seat on the fans' map", || async {
        let map = app.client().get(&format!("/api/v1/events/{event}/seats")).await;
        let status = map.body["seats"].as_array().into_iter().flatten().find(|s| s["seat_id"] == json!("A-1-1")).map(|s| s["status"].clone());
        (status == Some(json!("sold"))).then_some(())
    })
    .await;
    let other = app.fan().await;
    assert_error("fan holds a blocked seat", &other.hold(event, &["A-1-1"]).await, 409, "seats_unavailable");
    let best = other.post(&format!("/api/v1/events/{event}/holds/best"), json!({ "count": 3, "tier": "Standard" })).await;
    assert_eq!(best.status, 201);
    assert!(best.body["seat_ids"].as_array().unwrap().iter().all(|s| !["A-1-1", "A-1-2", "A-1-3"].contains(&s.as_str().unwrap())));

    // Staff sell a blocked seat at the counter, by card.
    let sale = post_key(
        &staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        "sale-1",
        json!({ "seat_ids": ["A-1-1"], "payment": "card", "payment_token": "tok_visa", "customer_name": "Guest", "customer_email": "guest@example.test" }),
    )
    .await;
    assert_eq!(sale.status, 201, "{}", sale.body);
    assert_eq!(sale.body["channel"], json!("box_office"));
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "sold");
    // The same key again is the same sale.
    let again = post_key(
        &staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        "sale-1",
        json!({ "seat_ids": ["A-1-1"], "payment": "card", "payment_token": "tok_visa", "customer_name": "Guest", "customer_email": "guest@example.test" }),
    )
    .await;
    assert_eq!(again.body["booking_id"], sale.body["booking_id"]);
    // A declined card leaves the blocked seat blocked.
    let declined = post_key(
        &staff,
        &format!("/api/v1/admin/events/{event}/counter-sales"),
        "sale-2",
        json!({ "seat_ids": ["A-1-2"], "payment": "card", "payment_token": "tok_chargeDeclined", "customer_name": "Guest" }),
    )
    .await;
    assert_error("declined", &declined, 402, "payment_declined");
    // Unblocking puts the rest back on sale.
    let released = staff.send(staff.http.delete(format!("{}{blocks}", staff.base)).json(&json!({ "seat_ids": ["A-1-3"] }))).await;
    assert_eq!(released.body["released"], json!(["A-1-3"]));
    assert_eq!(seat_state(&app.pool, event, "A-1-3").await, "available");
    let bad = staff.send(staff.http.delete(format!("{}{blocks}", staff.base)).json(&json!({ "seat_ids": ["A-1-3"] }))).await;
    assert_error("unblock a free seat", &bad, 409, "seats_unavailable");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_refunds_of_one_booking_refund_once_and_free_the_seats_once() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let (fan, booking_id, tickets) = booking(&app, event, &["A-1-1", "A-1-2"]).await;
    let staff = app.staff().await;
    let path = format!("/api/v1/admin/bookings/{booking_id}/refund");
    let answers = join_all((0..12).map(|n| post_key(&staff, &path, format!("refund-{n}"), json!({ "reason": "customer asked" })))).await;
    let ok: Vec<&Reply> = answers.iter().filter(|r| r.status == 200).collect();
    assert_eq!(ok.len(), 1, "{:?}", answers.iter().map(|r| (r.status, r.body.clone())).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.status != 200) {
        assert_error("second refund", r, 409, "already_refunded");
    }
    assert_eq!(ok[0].body["status"], json!("refunded"));
    assert_eq!(ok[0].body["refunded_cents"], json!(10000));
    assert_eq!(ok[0].body["seats_released"], json!(["A-1-1", "A-1-2"]));
    assert_eq!(count(&app, "SELECT count(*) FROM seat_events WHERE reason = 'refund'").await, 2, "each seat came back once");
    assert_eq!(count(&app, "SELECT coalesce(sum(amount_cents), 0)::bigint FROM sim_provider_refunds").await, 10000, "the money went back once");
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    assert_eq!(fan.get(&format!("/api/v1/bookings/{booking_id}")).await.body["status"], json!("refunded"));
    // The same key replays the answer.
    let key_of_winner = answers.iter().position(|r| r.status == 200).unwrap();
    let replay = post_key(&staff, &path, &format!("refund-{key_of_winner}"), json!({ "reason": "customer asked" })).await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.body, ok[0].body);
    let _ = tickets;
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_ticket_is_refunded_and_a_checked_in_one_is_not() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let (_fan, booking_id, tickets) = booking(&app, event, &["A-1-1", "A-1-2", "A-1-3"]).await;
    let staff = app.staff().await;
    let path = format!("/api/v1/admin/bookings/{booking_id}/refund");
    let one = post_key(&staff, &path, "r1", json!({ "ticket_ids": [tickets[0]], "reason": "cannot come" })).await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["status"], json!("partially_refunded"));
    assert_eq!(one.body["refunded_cents"], json!(5000));
    assert_eq!(one.body["seats_released"], json!(["A-1-1"]));
    let again = post_key(&staff, &path, "r2", json!({ "ticket_ids": [tickets[0]], "reason": "cannot come" })).await;
    assert_error("the same ticket again", &again, 409, "already_refunded");

    let code: String = sqlx::query_scalar("SELECT code FROM tickets WHERE ticket_id = $1")
        .bind(tickets[1].parse::<Uuid>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let scan = staff.post("/api/v1/admin/checkins", json!({ "code": code, "event_id": event })).await;
    assert_eq!(scan.status, 200, "{}", scan.body);
    let used = post_key(&staff, &path, "r3", json!({ "ticket_ids": [tickets[1]], "reason": "late" })).await;
    assert_error("a checked-in ticket", &used, 409, "ticket_used");
    let whole = post_key(&staff, &path, "r4", json!({ "reason": "late" })).await;
    assert_error("a booking with a checked-in ticket", &whole, 409, "ticket_used");
    assert_eq!(seat_state(&app.pool, event, "A-1-2").await, "sold");
    let other = post_key(&staff, &path, "r5", json!({ "ticket_ids": [Uuid::new_v4()], "reason": "x" })).await;
    assert_error("a ticket of another booking", &other, 404, "not_found");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scans_of_one_ticket_admit_it_once() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let other_event = app.event(1, 10, 300, 4).await;
    let (_fan, booking_id, _) = booking(&app, event, &["A-1-7"]).await;
    let code: String = sqlx::query_scalar("SELECT code FROM tickets WHERE booking_id = $1")
        .bind(booking_id.parse::<Uuid>().unwrap())
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let scanners = join_all((0..4).map(|_| app.staff())).await;
    let wrong = scanners[0].post("/api/v1/admin/checkins", json!({ "code": code, "event_id": other_event })).await;
    assert_error("another event's door", &wrong, 409, "wrong_event");
    let scans =
        join_all((0..20).map(|n| scanners[n % 4].post("/api/v1/admin/checkins", json!({ "code": code.to_lowercase(), "event_id": event })))).await;
    let admitted: Vec<&Reply> = scans.iter().filter(|r| r.status == 200).collect();
    assert_eq!(admitted.len(), 1);
    assert_eq!(admitted[0].body["result"], json!("admitted"));
    assert_eq!(admitted[0].body["seat_id"], json!("A-1-7"));
    for r in scans.iter().filter(|r| r.status != 200) {
        assert_error("second scan", r, 409, "already_checked_in");
        assert_eq!(r.body["checked_in_at"], admitted[0].body["checked_in_at"]);
    }
    assert_error("unknown", &scanners[0].post("/api/v1/admin/checkins", json!({ "code": "NOPE00000000" })).await, 404, "unknown_ticket");
    let stats = scanners[0].get(&format!("/api/v1/admin/events/{event}/stats")).await;
    assert_eq!(stats.body["checked_in"], json!(1));
    app.assert_invariants().await;
}

/// Books `n` fans one seat each on a fresh event with one seat to spare;
/// returns the event.
async fn event_with_bookings(app: &TestApp, n: usize) -> Uuid {
    let event = app.event(1, n + 1, 300, 4).await;
    for k in 1..=n {
        booking(app, event, &[&format!("A-1-{k}")]).await;
    }
    event
}

async fn assert_cancelled_and_refunded_once(app: &TestApp, event: Uuid, bookings: i64) {
    let db = &app.pool;
    let refunded: i64 = sqlx::query_scalar("SELECT count(*) FROM refunds WHERE kind = 'cancel'").fetch_one(db).await.unwrap();
    assert_eq!(refunded, bookings, "one refund per booking");
    let distinct: i64 = sqlx::query_scalar("SELECT count(DISTINCT booking_id) FROM refunds WHERE kind = 'cancel'").fetch_one(db).await.unwrap();
    assert_eq!(distinct, bookings);
    let money: i64 = sqlx::query_scalar("SELECT coalesce(sum(amount_cents), 0)::bigint FROM sim_provider_refunds").fetch_one(db).await.unwrap();
    assert_eq!(money, bookings * 5000, "each booking's money went back once");
    let live: i64 =
        sqlx::query_scalar("SELECT count(*) FROM bookings WHERE event_id = $1 AND status <> 'cancelled'").bind(event).fetch_one(db).await.unwrap();
    assert_eq!(live, 0);
    let valid: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tickets WHERE event_id = $1 AND state <> 'void'").bind(event).fetch_one(db).await.unwrap();
    assert_eq!(valid, 0, "every ticket is void");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_twice_at_once_refunds_every_booking_once_and_stops_sales() {
    let app = spawn_app().await;
    let event = event_with_bookings(&app, 6).await;
    // A fan mid-purchase on the one seat left when the event is cancelled.
    let fan = app.fan().await;
    let hold = fan.hold(event, &["A-1-7"]).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let (a, b) = (app.staff().await, app.staff().await);
    let path = format!("/api/v1/admin/events/{event}/cancel");
    let (one, two) = tokio::join!(a.post(&path, json!({ "reason": "storm" })), b.post(&path, json!({ "reason": "storm" })));
    assert_eq!((one.status, two.status), (202, 202), "{} / {}", one.body, two.body);
    assert_eq!(one.body["status"], json!("cancelled"));
    // Sales stop at once.
    assert_error("hold after cancel", &app.fan().await.hold(event, &["A-1-1"]).await, 409, "event_cancelled");
    let late = fan.checkout(hold.body["hold_id"].as_str().unwrap(), hold.body["hold_token"].as_str().unwrap(), "tok_visa", "late").await;
    assert_error("checkout after cancel", &late, 409, "event_cancelled");
    let bookings = eventually(10, "every booking refunded", || async {
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM bookings WHERE event_id = $1 AND status <> 'cancelled'")
            .bind(event)
            .fetch_one(&app.pool)
            .await
            .unwrap();
        (left == 0).then_some(6)
    })
    .await;
    assert_cancelled_and_refunded_once(&app, event, bookings).await;
    let listed = app.client().get(&format!("/api/v1/events/{event}")).await;
    assert_eq!(listed.body["status"], json!("cancelled"));
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_cut_short_by_a_crash_is_finished_once_after_the_restart() {
    let setup = spawn_app().await;
    let event = event_with_bookings(&setup, 5).await;
    let database_url = setup.database_url.clone();
    let staff_email = format!("door-{}@example.test", Uuid::new_v4().simple());
    setup
        .engine
        .create_user(frontrow_engine::accounts::NewUser { email: &staff_email, password: PASSWORD, name: "S", role: frontrow_model::Role::Staff })
        .await
        .unwrap();
    setup.stop().await;

    let mut doomed = start_server(&database_url, Some("abort_mid_cancellation")).await;
    let staff = client_for(&doomed.base);
    assert_eq!(staff.post("/api/v1/auth/login", json!({ "email": staff_email, "password": PASSWORD })).await.status, 200);
    let cancel = staff.http.post(format!("{}/api/v1/admin/events/{event}/cancel", staff.base)).json(&json!({ "reason": "flood" })).send().await;
    assert!(cancel.is_err() || !cancel.unwrap().status().is_success(), "the server died part-way");
    let _ = doomed.child.wait().await;
    let db = sqlx::PgPool::connect(&database_url).await.unwrap();
    let done: i64 =
        sqlx::query_scalar("SELECT count(*) FROM bookings WHERE event_id = $1 AND status = 'cancelled'").bind(event).fetch_one(&db).await.unwrap();
    assert_eq!(done, 1, "the crash came after the first booking");

    // Restarted: reconciliation finishes the cancellation, and sends the
    // refund the crash left recorded but unsent.
    let _restarted = start_server(&database_url, None).await;
    eventually(20, "every booking refunded", || async {
        let pending: i64 = sqlx::query_scalar(
            "SELECT (SELECT count(*) FROM bookings WHERE event_id = $1 AND status <> 'cancelled') + (SELECT count(*) FROM refunds WHERE status <> 'succeeded')",
        )
        .bind(event)
        .fetch_one(&db)
        .await
        .unwrap();
        (pending == 0).then_some(())
    })
    .await;
    let app = spawn_app_on(&database_url, |_| {}).await;
    assert_cancelled_and_refunded_once(&app, event, 5).await;
    app.assert_invariants().await;
}

#[tokio::test]
async fn the_door_refuses_a_cancelled_events_tickets_before_their_refunds_void_them() {
    // Reconciliation, which finishes a cancellation's refunds, does not come
    // by during the test.
    let app = spawn_app_with(|s| s.reconcile_interval_ms = 3_600_000).await;
    let event = event_with_bookings(&app, 1).await;
    let code: String = sqlx::query_scalar("SELECT code FROM tickets WHERE event_id = $1").bind(event).fetch_one(&app.pool).await.unwrap();
    // Cancelled, its refunds not yet come to this booking (they go one
    // booking at a time, and a crash can leave the rest to reconciliation).
    sqlx::query("UPDATE events SET cancelled_at = now() WHERE event_id = $1").bind(event).execute(&app.pool).await.unwrap();
    let staff = app.staff().await;
    for event_id in [None, Some(event)] {
        let scan = staff.post("/api/v1/admin/checkins", json!({ "code": code, "event_id": event_id })).await;
        assert_error("a cancelled event's ticket", &scan, 409, "event_cancelled");
    }
    let state: String = sqlx::query_scalar("SELECT state::text FROM tickets WHERE code = $1").bind(&code).fetch_one(&app.pool).await.unwrap();
    assert_eq!(state, "valid", "a refused scan changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_admin_route_refuses_fans_and_anonymous_callers() {
    let app = spawn_app().await;
    let event = app.event(1, 4, 300, 4).await;
    let id = Uuid::new_v4();
    let routes: Vec<(&str, String, Value)> = vec![
        ("POST", "/api/v1/admin/events".into(), json!({})),
        ("GET", "/api/v1/admin/events".into(), Value::Null),
        ("PATCH", format!("/api/v1/admin/events/{event}"), json!({ "name": "x" })),
        ("POST", format!("/api/v1/admin/events/{event}/cancel"), json!({ "reason": "x" })),
        ("GET", format!("/api/v1/admin/events/{event}/audit"), Value::Null),
        ("GET", format!("/api/v1/admin/events/{event}/stats"), Value::Null),
        ("POST", format!("/api/v1/admin/events/{event}/blocks"), json!({ "seat_ids": ["A-1-1"], "reason": "x" })),
        ("DELETE", format!("/api/v1/admin/events/{event}/blocks"), json!({ "seat_ids": ["A-1-1"] })),
        ("POST", format!("/api/v1/admin/events/{event}/counter-sales"), json!({})),
        ("GET", format!("/api/v1/admin/events/{event}/log"), Value::Null),
        ("GET", format!("/api/v1/admin/events/{event}/log.csv"), Value::Null),
        ("GET", format!("/api/v1/admin/events/{event}/sales.csv"), Value::Null),
        ("GET", format!("/api/v1/admin/events/{event}/sales-summary.csv?by=tier"), Value::Null),
        ("GET", format!("/api/v1/admin/events/{event}/waiting-room"), Value::Null),
        ("PATCH", format!("/api/v1/admin/events/{event}/waiting-room"), json!({})),
        ("POST", format!("/api/v1/admin/holds/{id}/release"), json!({ "reason": "x" })),
        ("GET", "/api/v1/admin/bookings".into(), Value::Null),
        ("POST", format!("/api/v1/admin/bookings/{id}/refund"), json!({ "reason": "x" })),
        ("POST", format!("/api/v1/admin/bookings/{id}/resend"), Value::Null),
        ("POST", "/api/v1/admin/checkins".into(), json!({ "code": "X" })),
        ("GET", "/api/v1/admin/payments?state=attention".into(), Value::Null),
        ("POST", format!("/api/v1/admin/payments/{id}/settle"), Value::Null),
        ("GET", "/api/v1/admin/layouts".into(), Value::Null),
        ("POST", "/api/v1/admin/layouts".into(), json!({})),
        ("GET", format!("/api/v1/admin/layouts/{id}"), Value::Null),
        ("GET", "/api/v1/admin/users".into(), Value::Null),
        ("POST", "/api/v1/admin/users".into(), json!({})),
        ("PATCH", format!("/api/v1/admin/users/{id}"), json!({})),
    ];
    let (fan, anonymous) = (app.fan().await, app.client());
    for (method, path, body) in &routes {
        for (who, client, status, code) in [("fan", &fan, 403, "forbidden"), ("anonymous", &anonymous, 401, "unauthenticated")] {
            let mut request = client.http.request(method.parse().unwrap(), format!("{}{path}", client.base)).header("idempotency-key", "k");
            if !body.is_null() {
                request = request.json(body);
            }
            let r = client.send(request).await;
            assert_error(&format!("{who} {method} {path}"), &r, status, code);
        }
    }
    // The staff pages: fans get 403, visitors are sent to sign in.
    for page in [
        "/admin",
        "/admin/events/new",
        &format!("/admin/events/{event}"),
        &format!("/admin/events/{event}/seats"),
        &format!("/admin/events/{event}/dashboard"),
        &format!("/admin/events/{event}/audit"),
        "/admin/bookings",
        "/admin/checkin",
        "/admin/payments",
        "/admin/layouts",
        "/admin/layouts/new",
        "/admin/staff",
    ] {
        let r = fan.http.get(format!("{}{page}", fan.base)).send().await.unwrap();
        assert_eq!(r.status(), 403, "fan on {page}");
        let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        let r = no_redirects.get(format!("{}{page}", app.base)).header("accept", "text/html").send().await.unwrap();
        assert!(r.status().is_redirection(), "anonymous on {page}: {}", r.status());
        assert!(r.headers()["location"].to_str().unwrap().starts_with("/signin?next="), "anonymous on {page}");
    }
    // Staff accounts are for admins only.
    let staff = app.staff().await;
    assert_error("staff lists accounts", &staff.get("/api/v1/admin/users").await, 403, "forbidden");
    assert_eq!(staff.http.get(format!("{}/admin/staff", staff.base)).send().await.unwrap().status(), 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_staff_accounts_and_a_disabled_account_is_shut_out() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let email = format!("new-staff-{}@example.test", Uuid::new_v4().simple());
    let created = admin.post("/api/v1/admin/users", json!({ "email": email, "password": PASSWORD, "name": "New", "role": "staff" })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let user_id = created.body["user_id"].as_str().unwrap().to_owned();
    let them = app.client();
    assert_eq!(them.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await.status, 200);
    assert_eq!(them.get("/api/v1/admin/events").await.status, 200);

    let disabled = admin.send(admin.http.patch(format!("{}/api/v1/admin/users/{user_id}", admin.base)).json(&json!({ "disabled": true }))).await;
    assert_eq!(disabled.body["disabled"], json!(true));
    assert_error("a disabled account's session", &them.get("/api/v1/admin/events").await, 401, "unauthenticated");
    assert_error(
        "a disabled account signing in",
        &app.client().post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await,
        401,
        "invalid_credentials",
    );

    let reset = admin
        .send(
            admin
                .http
                .patch(format!("{}/api/v1/admin/users/{user_id}", admin.base))
                .json(&json!({ "disabled": false, "password": "a brand new password" })),
        )
        .await;
    assert_eq!(reset.status, 200);
    assert_eq!(app.client().post("/api/v1/auth/login", json!({ "email": email, "password": "a brand new password" })).await.status, 200);
    let list = admin.get("/api/v1/admin/users").await;
    assert!(list.body["users"].as_array().unwrap().iter().any(|u| u["email"] == json!(email)));
    let log = count(&app, "SELECT count(*) FROM staff_actions WHERE kind IN ('account_created', 'account_disabled', 'account_enabled')").await;
    assert_eq!(log, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_built_from_saved_layouts_edited_published_and_logged() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let layout = staff
        .post(
            "/api/v1/admin/layouts",
            json!({ "name": "Small hall", "sections": [{ "section": "A", "rows": [
                { "row": "1", "seats": 6, "tier": "Front", "aisles_after": [3], "wheelchair": [1], "companion": [2] },
                { "row": "2", "seats": 6, "tier": "Back" }
            ]}]}),
        )
        .await;
    assert_eq!(layout.status, 201, "{}", layout.body);
    assert_eq!(layout.body["seats_total"], json!(12));
    assert_eq!(layout.body["tiers"], json!(["Front", "Back"]));
    let layout_id = layout.body["layout_id"].as_str().unwrap();
    let exported = staff.get(&format!("/api/v1/admin/layouts/{layout_id}")).await;
    assert_eq!(exported.body["sections"], layout.body["sections"], "export is the import's shape");

    let created = staff
        .post(
            "/api/v1/admin/events",
            json!({ "name": "Quiet Night", "kind": "theatre", "venue": "Small hall", "starts_at": "2030-01-01T20:00:00Z",
                    "sale_opens_at": "2020-01-01T10:00:00Z", "layout_id": layout_id, "published": false,
                    "tiers": [{ "tier": "Front", "price_cents": 4000 }, { "tier": "Back", "price_cents": 2000 }] }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event = created.body["event_id"].as_str().unwrap().to_owned();
    // Unpublished: unknown to fans, listed for staff.
    let fan = app.fan().await;
    assert_eq!(fan.get(&format!("/api/v1/events/{event}")).await.status, 404);
    assert_error("fan holds in an unpublished event", &fan.hold(event.parse().unwrap(), &["A-1-1"]).await, 404, "not_found");
    assert!(!app.client().get("/api/v1/events").await.body["events"].as_array().unwrap().iter().any(|e| e["event_id"] == json!(event)));
    let listed = staff.get("/api/v1/admin/events").await;
    let line = listed.body["events"].as_array().unwrap().iter().find(|e| e["event_id"] == json!(event)).cloned().unwrap();
    assert_eq!((line["published"].clone(), line["seats_total"].clone(), line["status"].clone()), (json!(false), json!(12), json!("on_sale")));

    let patched = staff
        .send(
            staff
                .http
                .patch(format!("{}/api/v1/admin/events/{event}", staff.base))
                .json(&json!({ "published": true, "name": "Loud Night", "hold_ttl_seconds": 60 })),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["name"], json!("Loud Night"));
    let seen = eventually(5, "the published event shows", || async {
        let r = fan.get(&format!("/api/v1/events/{event}")).await;
        (r.status == 200).then_some(r)
    })
    .await;
    assert_eq!(seen.body["hold_ttl_seconds"], json!(60));
    let seats = fan.get(&format!("/api/v1/events/{event}/seats")).await;
    let seat = |id: &str| seats.body["seats"].as_array().unwrap().iter().find(|s| s["seat_id"] == json!(id)).cloned().unwrap();
    assert_eq!(seat("A-1-1")["kind"], json!("wheelchair"));
    assert_eq!(seat("A-1-2")["kind"], json!("companion"));
    // An aisle after seat 3: seats 3 and 4 are not side by side.
    let best = fan.post(&format!("/api/v1/events/{event}/holds/best"), json!({ "count": 4, "tier": "Front" })).await;
    assert_error("four together across the aisle", &best, 409, "no_seats_together");
    let bad = staff.send(staff.http.patch(format!("{}/api/v1/admin/events/{event}", staff.base)).json(&json!({ "hold_ttl_seconds": 0 }))).await;
    assert_error("bad rule", &bad, 422, "invalid_input");

    let log = staff.get(&format!("/api/v1/admin/events/{event}/log")).await;
    let kinds: Vec<&str> = log.body["entries"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"event_created") && kinds.contains(&"event_published"), "{kinds:?}");
    assert!(log.body["entries"].as_array().unwrap().iter().all(|e| e["actor"].is_string()), "every staff action names who did it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_exports_stats_and_payments_tell_what_happened() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let (_fan, booking_id, _) = booking(&app, event, &["A-1-4", "A-1-5"]).await;
    let staff = app.staff().await;
    let held = app.fan().await.hold(event, &["A-1-9"]).await;
    let hold_id = held.body["hold_id"].as_str().unwrap();
    let released = staff.post(&format!("/api/v1/admin/holds/{hold_id}/release"), json!({ "reason": "stuck" })).await;
    assert_eq!(released.body["released"], json!(["A-1-9"]));

    let log = staff.get(&format!("/api/v1/admin/events/{event}/log?seat_id=A-1-9")).await;
    let kinds: Vec<&str> = log.body["entries"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["hold_released", "staff_release", "hold"], "newest first, staff action and seat transition");
    let csv = staff.http.get(format!("{}/api/v1/admin/events/{event}/log.csv?kind=sale", staff.base)).send().await.unwrap();
    assert!(csv.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
    let csv = csv.text().await.unwrap();
    assert!(csv.starts_with("at,kind,seat_ids,actor,detail\n") && csv.contains("A-1-4 A-1-5"), "{csv}");

    let sales = staff.http.get(format!("{}/api/v1/admin/events/{event}/sales.csv", staff.base)).send().await.unwrap().text().await.unwrap();
    let lines: Vec<&str> = sales.lines().collect();
    assert_eq!(lines[0], "booking_id,seat_id,section,tier,ticket_type,price_cents,channel,status,sold_at");
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with(&format!("{booking_id},A-1-4,A,Standard,,5000,online,valid,")));
    let by_tier =
        staff.http.get(format!("{}/api/v1/admin/events/{event}/sales-summary.csv?by=tier", staff.base)).send().await.unwrap().text().await.unwrap();
    assert_eq!(by_tier, "tier,tickets,revenue_cents\nStandard,2,10000\n");

    let stats = staff.get(&format!("/api/v1/admin/events/{event}/stats")).await;
    assert_eq!(stats.status, 200, "{}", stats.body);
    assert_eq!((stats.body["seats_sold"].clone(), stats.body["revenue_cents"].clone()), (json!(2), json!(10000)));
    assert_eq!(stats.body["tiers"][0]["sold"], json!(2));
    assert_eq!(stats.body["last_hour"].as_array().unwrap().len(), 60);
    assert!(stats.body["last_minute"]["holds"].as_i64().unwrap() >= 2);

    let found = staff.get(&format!("/api/v1/admin/bookings?q=A-1-5&event_id={event}")).await;
    assert_eq!(found.body["bookings"][0]["booking_id"], json!(booking_id));
    let by_id = staff.get(&format!("/api/v1/admin/bookings?q={}", &booking_id[..8])).await;
    assert_eq!(by_id.body["bookings"][0]["booking_id"], json!(booking_id));
    let payments = staff.get("/api/v1/admin/payments?state=attention").await;
    assert_eq!(payments.body["payments"], json!([]), "nothing to reconcile");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn box_office_reads_and_writes_refuse_bad_input_and_change_nothing() {
    let app = spawn_app().await;
    let event = app.event(1, 4, 300, 4).await;
    let admin = app.admin().await;
    let long = "q".repeat(255);
    for (what, path) in [
        ("limit 0", format!("/api/v1/admin/events/{event}/log?limit=0")),
        ("limit 5001", format!("/api/v1/admin/events/{event}/log.csv?limit=5001")),
        ("long seat filter", format!("/api/v1/admin/events/{event}/log?seat_id={}", "s".repeat(65))),
        // PostgreSQL refuses a NUL in text with an error of its own (a 500).
        ("NUL in the seat filter", format!("/api/v1/admin/events/{event}/log?seat_id=A%00")),
        ("control character in the kind filter", format!("/api/v1/admin/events/{event}/log.csv?kind=hold%01")),
        // A year PostgreSQL cannot store was another 500 ("timestamp out of range").
        ("a date before 4713 BC", format!("/api/v1/admin/events/{event}/log?since=-5000-01-01T00:00:00Z")),
        ("long search", format!("/api/v1/admin/bookings?q={long}")),
        ("unknown payment state", "/api/v1/admin/payments?state=all".to_owned()),
        ("unknown grouping", format!("/api/v1/admin/events/{event}/sales-summary.csv?by=week")),
    ] {
        assert_error(what, &admin.get(&path).await, 422, "invalid_input");
    }
    // serde would read a struct from an array of its fields; the API does not.
    let me = admin.get("/api/v1/admin/users").await.body["users"].as_array().unwrap().iter().find(|u| u["role"] == json!("admin")).unwrap()
        ["user_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let patch = |body: Value| admin.send(admin.http.patch(format!("{}/api/v1/admin/users/{me}", admin.base)).json(&body));
    assert_error("array body", &patch(json!([null, null])).await, 422, "invalid_input");
    assert_error("disable myself", &patch(json!({ "disabled": true })).await, 422, "invalid_input");
    let sale = post_key(&admin, format!("/api/v1/admin/events/{event}/counter-sales"), "k1", json!([["A-1-1"], "cash", "X"])).await;
    assert_error("array sale", &sale, 422, "invalid_input");

    // A row's seat lists name each seat once: a list can be no longer than
    // its row (and is checked without comparing every pair).
    let row = |extra: Value| {
        let mut row = json!({ "row": "1", "seats": 6, "tier": "Front" });
        row.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({ "name": "Twice hall", "sections": [{ "section": "A", "rows": [row] }] })
    };
    for (what, extra) in [
        ("a wheelchair seat twice", json!({ "wheelchair": [1, 1] })),
        ("more aisles than seats", json!({ "aisles_after": [1, 2, 3, 4, 5, 6, 2] })),
        ("a companion seat twice", json!({ "companion": [2, 3, 2] })),
    ] {
        assert_error(what, &admin.post("/api/v1/admin/layouts", row(extra)).await, 422, "invalid_input");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM layouts WHERE name = 'Twice hall'").await, 0);

    // The app's event form reads prices as euros; "nan" and "inf" parse as
    // numbers but are not prices.
    let layout = admin.post("/api/v1/admin/layouts", row(json!({}))).await;
    assert_eq!(layout.status, 201, "{}", layout.body);
    let layout_id = layout.body["layout_id"].as_str().unwrap().to_owned();
    // Nor is a ticket type's blank price free, and a date must be one the
    // database keeps (chrono reads a year of any sign and length).
    let good = ("12.50", "", "2035-01-01T20:00");
    let cases = [
        ("nan", "", "2035-01-01T20:00"),
        ("inf", "", "2035-01-01T20:00"),
        ("-1", "", "2035-01-01T20:00"),
        ("1e9", "", "2035-01-01T20:00"),
        ("12.50", "Adult: Front=12.50\nChild: Front=", "2035-01-01T20:00"),
        ("12.50", "", "-5000-01-01T20:00"),
        ("12.50", "", "+20000-01-01T20:00"),
        good,
    ];
    for case @ (price, types, starts_at) in cases {
        let prices = format!("Front={price}");
        let fields = [
            ("name", "Priceless"),
            ("kind", "concert"),
            ("venue", "Twice hall"),
            ("city", ""),
            ("address", ""),
            ("performers", ""),
            ("notes", ""),
            ("doors_at", ""),
            ("starts_at", starts_at),
            ("sale_opens_at", "2030-01-01T10:00"),
            ("hold_ttl_seconds", "300"),
            ("max_seats_per_order", "4"),
            ("layout_id", layout_id.as_str()),
            ("prices", prices.as_str()),
            ("cancel_until_hours", ""),
            ("cancel_keep_percent", ""),
            ("cancel_fee", ""),
            ("ticket_types", types),
        ];
        let made = admin.send(admin.http.post(format!("{}/_app/admin/create_event", admin.base)).form(&fields)).await;
        if case == good {
            // The same form with a real price: the refusals above were the price's.
            assert!(made.status < 400, "{case:?}: {} {}", made.status, made.body);
        } else {
            assert_error(&format!("{case:?}"), &made, 422, "invalid_input");
            assert_eq!(count(&app, "SELECT count(*) FROM events WHERE name = 'Priceless'").await, 0);
        }
    }
    let priced: Vec<i32> = sqlx::query_scalar("SELECT t.price_cents FROM price_tiers t JOIN events e USING (event_id) WHERE e.name = 'Priceless'")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(priced, vec![1250]);

    assert_eq!(admin.get("/api/v1/admin/events").await.status, 200, "still signed in and enabled");
    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 0);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
}
