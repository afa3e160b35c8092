//! The waiting room: joins under a burst, the opening draw, metered
//! admission, admission tokens, and one admitting instance at a time.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use frontrow_model::{HoldToken, QueueState, SalePhase, SeatId, UserId};

use crate::common::*;
use frontrow_engine::queue;
use futures::StreamExt;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

/// An event with its waiting room on; `opens_in_secs` < 0 means on sale.
pub(crate) async fn room_event(app: &TestApp, seats: usize, opens_in_secs: i64) -> Uuid {
    let staff = app.staff().await;
    let opens = chrono::Utc::now() + chrono::Duration::seconds(opens_in_secs);
    let rows: Vec<_> =
        (0..seats.div_ceil(10)).map(|r| json!({ "row": (r + 1).to_string(), "seats": 10.min(seats - r * 10), "tier": "Standard" })).collect();
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Queue Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                "sale_opens_at": opens.to_rfc3339(), "hold_ttl_seconds": 300, "max_seats_per_order": 4,
                "waiting_room_enabled": true,
                "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                "sections": [{ "section": "A", "rows": rows }]
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["event_id"].as_str().expect("id").parse().expect("uuid")
}

/// Fans inserted straight into the users table (joins through the engine
/// need no session, and hashing 10,000 passwords would dominate the test).
pub(crate) async fn bulk_fans(pool: &PgPool, n: i64) -> Vec<UserId> {
    sqlx::query_scalar(
        "INSERT INTO users (user_id, email, name, password_hash)
         SELECT gen_random_uuid(), 'bulk-' || gen_random_uuid() || '@example.test', 'Fan', 'x' FROM generate_series(1, $1)
         RETURNING user_id",
    )
    .bind(n)
    .fetch_all(pool)
    .await
    .expect("fans")
}

/// A join answers where the fan stands (read with the batch that joined
/// them, not a query each), the same answer a status call gives; joining
/// again gives the same place and token.
#[tokio::test]
async fn a_join_answers_the_place_a_status_call_gives() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 100, -60).await;
    let fans = bulk_fans(&app.pool, 5).await;
    for (place, &fan) in fans.iter().enumerate() {
        let joined = app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.expect("join");
        assert_eq!((joined.state, joined.position, joined.draw_pending), (QueueState::Waiting, place as i64, false), "{joined:?}");
        let status = app.engine.queue_status(event_id.into(), &joined.queue_token, fan, "test-binding").await.expect("status");
        assert_eq!(
            (status.state, status.position, status.eta_seconds, &status.queue_token),
            (joined.state, joined.position, joined.eta_seconds, &joined.queue_token)
        );
    }
    let again = app.engine.join_queue(event_id.into(), SalePhase::Public, fans[2], "test-binding").await.expect("rejoin");
    assert_eq!(again.position, 2, "the same place");
    // One fan twice at once (two tabs): one place, both answered with it.
    let late = bulk_fans(&app.pool, 1).await[0];
    let (a, b) = tokio::join!(
        app.engine.join_queue(event_id.into(), SalePhase::Public, late, "test-binding"),
        app.engine.join_queue(event_id.into(), SalePhase::Public, late, "test-binding")
    );
    let (a, b) = (a.expect("first tab"), b.expect("second tab"));
    assert_eq!((&a.queue_token, a.position), (&b.queue_token, 5));
    app.stop().await;
}

/// An admission round now, without waiting out the one-second spacing.
pub(crate) async fn round(app: &TestApp, event_id: Uuid) -> queue::TickOutcome {
    sqlx::query("UPDATE queues SET last_tick_at = NULL WHERE event_id = $1").bind(event_id).execute(&app.pool).await.expect("reset");
    app.engine.admission_round(event_id.into(), SalePhase::Public, Uuid::nil()).await.expect("tick").expect("a round")
}

/// The fan's admission, as their page would prove it: the signed token the
/// queue hands an admitted fan, checked by the engine.
async fn admission(app: &TestApp, event_id: Uuid, fan: UserId) -> frontrow_engine::Admission {
    let token: String = sqlx::query_scalar("SELECT queue_token FROM queue_entries WHERE event_id = $1 AND user_id = $2")
        .bind(event_id)
        .bind(fan)
        .fetch_one(&app.pool)
        .await
        .expect("queue token");
    let view = app.engine.queue_status(event_id.into(), &token, fan, "binding").await.expect("status");
    let signed = view.admission_token.expect("an admitted fan gets a token");
    app.engine.admission(&signed, event_id.into(), fan, "binding").expect("the token verifies")
}

async fn tickets(pool: &PgPool, event_id: Uuid) -> Vec<(Uuid, Option<i64>)> {
    sqlx::query_as("SELECT user_id, ticket FROM queue_entries WHERE event_id = $1 ORDER BY joined_at, user_id")
        .bind(event_id)
        .fetch_all(pool)
        .await
        .expect("tickets")
}

async fn admitted_tickets(pool: &PgPool, event_id: Uuid) -> Vec<i64> {
    sqlx::query_scalar("SELECT ticket FROM queue_entries WHERE event_id = $1 AND admission_id IS NOT NULL ORDER BY ticket")
        .bind(event_id)
        .fetch_all(pool)
        .await
        .expect("admitted")
}

#[tokio::test]
async fn ten_thousand_joins_get_unique_contiguous_places_and_are_admitted_in_order() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 100, -60).await;
    let fans = bulk_fans(&app.pool, 10_000).await;

    let started = Instant::now();
    // As many at once as a burst of HTTP requests would be.
    let joins = futures::stream::iter(fans.iter().map(|&fan| {
        let engine = app.engine.clone();
        async move { engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token) }
    }))
    .buffer_unordered(2000);
    let answers: Vec<_> = joins.collect().await;
    let elapsed = started.elapsed();
    println!("10000 joins answered in {} ms ({:.0} joins/s)", elapsed.as_millis(), 10_000.0 / elapsed.as_secs_f64());
    assert!(answers.iter().all(Result::is_ok), "every join answered");
    let tokens: HashSet<_> = answers.into_iter().map(|a| a.expect("token")).collect();
    assert_eq!(tokens.len(), 10_000, "one token per fan");

    let mut numbers: Vec<i64> = tickets(&app.pool, event_id).await.into_iter().map(|(_, t)| t.expect("numbered")).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=10_000).collect::<Vec<_>>(), "unique and contiguous");

    // Joining again keeps the place.
    let again =
        app.engine.join_queue(event_id.into(), SalePhase::Public, fans[17], "test-binding").await.map(|view| view.queue_token).expect("rejoin");
    let first: String = sqlx::query_scalar("SELECT queue_token FROM queue_entries WHERE event_id = $1 AND user_id = $2")
        .bind(event_id)
        .bind(fans[17])
        .fetch_one(&app.pool)
        .await
        .expect("token");
    assert_eq!(again, first);

    // 100 seats, k = 1.5: the first 150 tickets, in order.
    let r = round(&app, event_id).await;
    assert_eq!((r.remaining, r.target, r.admitted), (100, 150, 150));
    assert_eq!(admitted_tickets(&app.pool, event_id).await, (1..=150).collect::<Vec<_>>());
    assert_eq!(round(&app, event_id).await.admitted, 0, "the target is met");
    // Admitted fans who leave free their slots for the next in line.
    sqlx::query("UPDATE queue_entries SET admission_expires_at = now() - interval '1 second' WHERE event_id = $1 AND ticket <= 50")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("leave");
    let r = round(&app, event_id).await;
    assert_eq!(r.admitted, 50);
    let admitted = admitted_tickets(&app.pool, event_id).await;
    assert_eq!(admitted, (1..=200).collect::<Vec<_>>(), "in the announced order, nobody twice");
    let distinct: i64 = sqlx::query_scalar("SELECT count(DISTINCT admission_id) FROM queue_entries WHERE event_id = $1")
        .bind(event_id)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(distinct, 200);
    app.stop().await;
}

#[tokio::test]
async fn the_pre_queue_is_drawn_once_at_the_opening() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 50, 3600).await;
    let fans = bulk_fans(&app.pool, 500).await;
    for &fan in &fans {
        app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
    }
    assert!(tickets(&app.pool, event_id).await.iter().all(|(_, t)| t.is_none()), "no places before the draw");
    let (token, fan): (String, Uuid) = sqlx::query_as("SELECT queue_token, user_id FROM queue_entries WHERE event_id = $1 LIMIT 1")
        .bind(event_id)
        .fetch_one(&app.pool)
        .await
        .expect("token");
    let view = app.engine.queue_status(event_id.into(), &token, fan.into(), "b").await.expect("status");
    assert!(view.draw_pending);
    assert_eq!(view.position, 500);
    // Before the opening a round admits nobody and draws nothing.
    assert_eq!(round(&app, event_id).await.admitted, 0);
    assert!(tickets(&app.pool, event_id).await.iter().all(|(_, t)| t.is_none()));

    sqlx::query("UPDATE events SET sale_opens_at = now() WHERE event_id = $1").bind(event_id).execute(&app.pool).await.expect("open");
    round(&app, event_id).await;
    let drawn = tickets(&app.pool, event_id).await;
    let mut numbers: Vec<i64> = drawn.iter().map(|(_, t)| t.expect("drawn")).collect();
    assert_ne!(numbers, (1..=500).collect::<Vec<_>>(), "the draw is not the arrival order");
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=500).collect::<Vec<_>>(), "a permutation");

    round(&app, event_id).await;
    assert_eq!(tickets(&app.pool, event_id).await, drawn, "drawn once: later rounds keep the order");
    let late = bulk_fans(&app.pool, 1).await[0];
    app.engine.join_queue(event_id.into(), SalePhase::Public, late, "test-binding").await.map(|view| view.queue_token).expect("join");
    let late_ticket: Option<i64> = sqlx::query_scalar("SELECT ticket FROM queue_entries WHERE event_id = $1 AND user_id = $2")
        .bind(event_id)
        .bind(late)
        .fetch_one(&app.pool)
        .await
        .expect("ticket");
    assert_eq!(late_ticket, Some(501), "after the draw, first come first served");
    app.stop().await;
}

#[tokio::test]
async fn admission_follows_remaining_seats_stops_at_zero_and_resumes() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 20, -60).await;
    let fans = bulk_fans(&app.pool, 100).await;
    for &fan in &fans {
        app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
    }
    let r = round(&app, event_id).await;
    assert_eq!((r.remaining, r.target, r.admitted), (20, 30, 30));

    // Ten seats go (held by admitted fans): the target falls to 15.
    let seat_ids: Vec<String> = (1..=10).map(|n| format!("A-1-{n}")).collect();
    let mut holds = Vec::new();
    for (i, seat) in seat_ids.iter().enumerate() {
        let admitted = admission(&app, event_id, fans[i]).await;
        let seat = SeatId::parse(seat.as_str()).expect("seat id");
        holds.push((fans[i], app.engine.hold(fans[i], event_id.into(), &[seat], Some(&admitted), None).await.expect("hold").hold));
    }
    sqlx::query("UPDATE queue_entries SET admission_expires_at = now() - interval '1 second' WHERE event_id = $1 AND ticket BETWEEN 11 AND 30")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("leave");
    let r = round(&app, event_id).await;
    assert_eq!((r.remaining, r.target, r.active, r.admitted), (10, 15, 10, 5), "active shoppers kept near k x remaining");

    // The rest go: admission stops, and everyone waiting hears that every
    // seat is held and may come back, and keeps their place. (Held by fans
    // still admitted: the five just let in, and five of the first ten
    // taking a second seat.)
    for (k, seat) in (1..=10).map(|n| format!("A-2-{n}")).enumerate() {
        let fan = if k < 5 { fans[30 + k] } else { fans[k - 5] };
        let admitted = admission(&app, event_id, fan).await;
        let seat = SeatId::parse(seat).expect("seat id");
        holds.push((fan, app.engine.hold(fan, event_id.into(), &[seat], Some(&admitted), None).await.expect("hold").hold));
    }
    let r = round(&app, event_id).await;
    assert_eq!((r.remaining, r.admitted), (0, 0));
    let (waiting, fan): (String, Uuid) = sqlx::query_as("SELECT queue_token, user_id FROM queue_entries WHERE event_id = $1 AND ticket = 90")
        .bind(event_id)
        .fetch_one(&app.pool)
        .await
        .expect("token");
    let view = eventually(5, "every seat held on the board", || async {
        let view = app.engine.queue_status(event_id.into(), &waiting, fan.into(), "b").await.expect("status");
        (view.state == QueueState::AllHeld).then_some(view)
    })
    .await;
    assert_eq!((view.position, view.eta_seconds), (90 - 35 - 1, None), "the place is kept, with no ETA while nothing is free");
    let detail = app.client().get(&format!("/api/v1/events/{event_id}")).await;
    assert_eq!((detail.body["status"].as_str(), detail.body["seats_held"].as_i64()), (Some("all_held"), Some(20)), "{}", detail.body);

    // Held seats come back: admission resumes.
    for (fan, h) in &holds {
        let token = HoldToken::parse(h.hold_token.as_str()).expect("token");
        app.engine.release(*fan, h.hold_id, &token).await.expect("release");
    }
    // Releasing ends their shopping too, so the whole target goes to the queue.
    let r = round(&app, event_id).await;
    assert_eq!((r.remaining, r.target, r.active, r.admitted), (20, 30, 0, 30), "admission resumed");

    // Sold out means nothing is free or held: every seat taken off sale.
    let staff = app.staff().await;
    let all: Vec<String> = (1..=2).flat_map(|row| (1..=10).map(move |n| format!("A-{row}-{n}"))).collect();
    let blocked = staff.post(&format!("/api/v1/admin/events/{event_id}/blocks"), json!({ "seat_ids": all, "reason": "production" })).await;
    assert_eq!(blocked.status, 200, "{}", blocked.body);
    let view = eventually(5, "sold out on the board", || async {
        let view = app.engine.queue_status(event_id.into(), &waiting, fan.into(), "b").await.expect("status");
        (view.state == QueueState::SoldOut).then_some(view)
    })
    .await;
    assert_eq!(view.state, QueueState::SoldOut);
    let detail = app.client().get(&format!("/api/v1/events/{event_id}")).await;
    assert_eq!(detail.body["status"], json!("sold_out"), "{}", detail.body);
    app.assert_invariants().await;
    app.stop().await;
}

pub(crate) async fn admitted_fan(app: &TestApp, event_id: Uuid) -> (Client, String, String) {
    let fan = app.fan().await;
    let joined = fan.post(&format!("/api/v1/events/{event_id}/queue"), json!({})).await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    let token = joined.body["queue_token"].as_str().expect("queue token").to_owned();
    let admission = eventually(10, "admission", || async {
        let view = fan.get(&format!("/api/v1/events/{event_id}/queue/{token}")).await;
        view.body["admission_token"].as_str().map(str::to_owned)
    })
    .await;
    (fan, token, admission)
}

async fn hold_with(fan: &Client, event_id: Uuid, seat: &str, admission: Option<&str>) -> Reply {
    let mut request = fan.http.post(format!("{}/api/v1/events/{event_id}/holds", fan.base)).json(&json!({ "seat_ids": [seat] }));
    if let Some(token) = admission {
        request = request.header("X-Admission-Token", token);
    }
    fan.send(request).await
}

#[tokio::test]
async fn holds_need_a_valid_admission_token_of_this_fan_session_and_event() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 100).await;
    let event_id = room_event(&app, 20, -60).await;
    let other_event = room_event(&app, 20, -60).await;

    let newcomer = app.fan().await;
    let r = hold_with(&newcomer, event_id, "A-1-1", None).await;
    assert_eq!((r.status, r.body["error"].as_str()), (403, Some("not_admitted")));

    let (fan, queue_token, admission) = admitted_fan(&app, event_id).await;
    // The last character changed (to one it is not already).
    let last = if admission.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &admission[..admission.len() - 1]);
    for (token, why) in [(forged.as_str(), "forged"), ("not-a-token", "malformed")] {
        let r = hold_with(&fan, event_id, "A-1-1", Some(token)).await;
        assert_eq!((r.status, r.body["error"].as_str()), (403, Some("not_admitted")), "{why}");
    }
    let r = hold_with(&fan, other_event, "A-1-1", Some(&admission)).await;
    assert_eq!(r.status, 403, "another event's seats");
    let r = hold_with(&newcomer, event_id, "A-1-1", Some(&admission)).await;
    assert_eq!(r.status, 403, "another fan's session");
    let r = newcomer.get(&format!("/api/v1/events/{event_id}/queue/{queue_token}")).await;
    assert_eq!((r.status, r.body["error"].as_str()), (404, Some("not_found")), "another fan's queue token names nothing");
    let (other_fan, _, _) = admitted_fan(&app, event_id).await;
    let r = hold_with(&other_fan, event_id, "A-1-1", Some(&admission)).await;
    assert_eq!(r.status, 403, "another admitted fan");
    assert_eq!(app.audit().await.seats_held, 0, "refused holds changed nothing");

    let r = hold_with(&fan, event_id, "A-1-1", Some(&admission)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn joining_over_http() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 10, -60).await;
    let path = format!("/api/v1/events/{event_id}/queue");
    assert_eq!(app.client().post(&path, json!({})).await.status, 401);
    let fan = app.fan().await;
    assert_eq!(fan.post(&format!("/api/v1/events/{}/queue", Uuid::new_v4()), json!({})).await.status, 404);
    let plain = app.event(1, 4, 60, 4).await;
    let r = fan.post(&format!("/api/v1/events/{plain}/queue"), json!({})).await;
    assert_eq!((r.status, r.body["error"].as_str()), (409, Some("waiting_room_off")));

    let first = fan.post(&path, json!({})).await;
    assert_eq!(first.status, 201);
    assert_eq!(first.body["state"], "waiting");
    assert_eq!(first.body["position"], 0);
    let again = fan.post(&path, json!({})).await;
    assert_eq!(again.body["queue_token"], first.body["queue_token"], "joining again keeps the place");
    let second = app.fan().await.post(&path, json!({})).await;
    assert_eq!(second.body["position"], 1, "one fan ahead");
    assert_eq!(fan.get(&format!("{path}/not-a-token")).await.status, 404);
    app.stop().await;
}

#[tokio::test]
async fn one_instance_admits_per_round_and_another_takes_over() {
    let database = fresh_database().await;
    let a = spawn_app_on(&database, |s| s.admission_interval_ms = 100).await;
    let b = spawn_app_on(&database, |s| s.admission_interval_ms = 100).await;
    let event_id = room_event(&a, 1000, -60).await;
    let fans = bulk_fans(&a.pool, 20).await;
    for &fan in &fans {
        a.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
    }
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let rounds: Vec<(Uuid, f64)> =
        sqlx::query_as("SELECT instance_id, extract(epoch FROM at)::float8 FROM admission_ticks WHERE event_id = $1 ORDER BY at")
            .bind(event_id)
            .fetch_all(&a.pool)
            .await
            .expect("rounds");
    assert!(rounds.len() >= 2, "{rounds:?}");
    let leader = rounds[0].0;
    assert!(rounds.iter().all(|(i, _)| *i == leader), "one instance admits: {rounds:?}");
    assert!(rounds.windows(2).all(|w| w[1].1 - w[0].1 >= 0.85), "at most one round a second: {rounds:?}");
    assert_eq!(admitted_tickets(&a.pool, event_id).await, (1..=20).collect::<Vec<_>>());

    // Stop whichever instance leads; the other takes over once its lease lapses.
    let (leader_app, follower) = if a.instance_id == leader { (a, b) } else { (b, a) };
    leader_app.stop().await;
    let stopped_at = Instant::now();
    let follower_id = follower.instance_id;
    eventually(8, "the other instance to take over", || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM admission_ticks WHERE event_id = $1 AND instance_id = $2")
            .bind(event_id)
            .bind(follower_id)
            .fetch_one(&follower.pool)
            .await
            .expect("count");
        (n > 0).then_some(())
    })
    .await;
    println!("takeover after {} ms", stopped_at.elapsed().as_millis());
    follower.stop().await;
}

#[tokio::test]
async fn the_seat_map_page_sends_fans_to_the_queue_until_admitted() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 100).await;
    let event_id = room_event(&app, 20, -60).await;
    let no_redirects = |c: &Client| c.http.clone();
    let fan = app.fan().await;
    let page = format!("{}/events/{event_id}", app.base);

    let anonymous = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let r = anonymous.get(&page).header("accept", "text/html").send().await.expect("page");
    assert_eq!(r.headers().get("location").and_then(|v| v.to_str().ok()), Some(format!("/signin?next=/events/{event_id}/queue").as_str()));

    // The fan's client follows redirects: not yet admitted, the page is the waiting room.
    let r = no_redirects(&fan).get(&page).header("accept", "text/html").send().await.expect("page");
    assert_eq!(r.url().path(), format!("/events/{event_id}/queue"));
    let html = r.text().await.expect("html");
    assert!(html.contains("How the queue works"), "the fairness rule is shown");
    assert!(!html.contains("/pkg/frontrow"), "the waiting room does not load the app bundle");

    let (admitted, _, _) = admitted_fan(&app, event_id).await;
    let r = admitted.http.get(&page).send().await.expect("page");
    assert_eq!(r.url().path(), format!("/events/{event_id}"));
    let html = r.text().await.expect("html");
    assert!(html.contains(r#"<svg id="seat-map""#), "admitted: the seat map");
    assert!(html.contains("admission_token"), "the picker gets the admission token");
    app.stop().await;
}

#[tokio::test]
async fn staff_see_the_queue_and_change_its_controls() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 10, -60).await;
    let staff = app.staff().await;
    let path = format!("/api/v1/admin/events/{event_id}/waiting-room");
    for fan in bulk_fans(&app.pool, 30).await {
        app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
    }
    round(&app, event_id).await;
    let s = staff.get(&path).await;
    assert_eq!(s.status, 200, "{}", s.body);
    assert_eq!((s.body["queue_length"].as_i64(), s.body["active_shoppers"].as_i64()), (Some(15), Some(15)));

    let r = staff.send(staff.http.patch(app.url(&path)).json(&json!({ "paused": true, "admission_factor": 3.0, "max_active": 100 }))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["paused"].as_bool(), r.body["admission_factor"].as_f64()), (Some(true), Some(3.0)));
    assert_eq!(round(&app, event_id).await.admitted, 0, "paused");
    staff.send(staff.http.patch(app.url(&path)).json(&json!({ "paused": false }))).await;
    let r = round(&app, event_id).await;
    assert_eq!((r.target, r.admitted), (30, 15), "k = 3 over 10 seats");

    let bad = staff.send(staff.http.patch(app.url(&path)).json(&json!({ "admission_factor": 0 }))).await;
    assert_eq!(bad.status, 422);
    let fan = app.fan().await;
    assert_eq!(fan.get(&path).await.status, 403);
    let controls = |c: &Client| c.http.get(app.url(&format!("/admin/events/{event_id}/waiting-room"))).header("accept", "text/html").send();
    assert_eq!(controls(&staff).await.expect("page").status(), 200);
    assert_eq!(controls(&fan).await.expect("page").status(), 403, "staff pages refuse fans");
    app.stop().await;
}

/// Prints how long after an admission round a waiting fan's socket hears
/// its new position (the README quotes it).
#[tokio::test]
async fn positions_reach_waiting_fans_right_after_each_round() {
    // Every round's place, however far back (see `queue_load` for the spacing).
    let app = spawn_app_with(|s| {
        s.admission_interval_ms = 3_600_000;
        s.queue_frame_every_ms = 0;
    })
    .await;
    let event_id = room_event(&app, 1000, -60).await;
    let fans = bulk_fans(&app.pool, 300).await;
    let mut sockets = Vec::new();
    for &fan in &fans {
        let token = app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
        // The fan's own socket: signed in as the ticket's owner.
        let cookie = crate::holds_money_sockets::session_cookie(&app, fan).await;
        let socket = crate::holds_money_sockets::queue_socket(&app, event_id, &token, Some(&cookie)).await.expect("socket");
        sockets.push(socket);
    }
    // Admit 20 at a time: every round moves everyone's position.
    sqlx::query("UPDATE events SET max_active = 20, admission_factor = 1 WHERE event_id = $1")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("limit");
    let mut latencies = Vec::new();
    for _ in 0..5 {
        sqlx::query("UPDATE queue_entries SET admission_expires_at = now() - interval '1 second' WHERE event_id = $1 AND admission_id IS NOT NULL")
            .bind(event_id)
            .execute(&app.pool)
            .await
            .expect("leave");
        let started = Instant::now();
        let r = round(&app, event_id).await;
        assert_eq!(r.admitted, 20);
        let last = sockets.len() - 1;
        let frame = tokio::time::timeout(Duration::from_secs(5), sockets[last].next()).await.expect("a push").expect("open").expect("frame");
        latencies.push(started.elapsed());
        let frame: serde_json::Value = serde_json::from_str(frame.to_text().expect("text")).expect("json");
        assert_eq!(frame["state"], "waiting");
        assert_eq!(frame["position"].as_i64(), Some(299 - r.admitted_through), "{frame}");
    }
    latencies.sort();
    println!("position pushed {} ms (median) after the admission round, 300 fans connected", latencies[2].as_millis());
    app.stop().await;
}

#[tokio::test]
async fn polling_and_joining_are_rate_limited_per_fan() {
    let app = spawn_app_with(|s| {
        s.admission_interval_ms = 3_600_000;
        s.rate_limits = frontrow_server::config::Switch::On;
        s.rate_per_second = 2;
    })
    .await;
    let event_id = room_event(&app, 10, -60).await;
    let fan = app.fan().await;
    // Set-up calls came from the same address; let its bucket refill.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let joined = fan.post(&format!("/api/v1/events/{event_id}/queue"), json!({})).await;
    assert_eq!(joined.status, 201);
    let token = joined.body["queue_token"].as_str().expect("token").to_owned();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let r = fan.get(&format!("/api/v1/events/{event_id}/queue/{token}")).await;
        if r.status == 429 {
            assert!(r.headers.get("retry-after").is_some(), "429 says when to come back");
        }
        statuses.push(r.status);
    }
    assert!(statuses.contains(&429), "a fan polling at machine speed is slowed down: {statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429), "{statuses:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_queue_token_that_cannot_be_one_names_nothing() {
    let app = spawn_app().await;
    let event_id = room_event(&app, 20, -60).await;
    let fan = app.fan().await;
    // Found by fuzzing: a NUL in the path used to reach PostgreSQL (a 500).
    for token in ["%00", "abc%00def", "not-hex!", &"a".repeat(65)] {
        let r = fan.get(&format!("/api/v1/events/{event_id}/queue/{token}")).await;
        assert_eq!(r.status, 404, "{token}: {}", r.body);
        assert_eq!(r.body["error"], json!("not_found"));
    }
}

#[tokio::test]
async fn waiting_sockets_cost_no_query_per_round_and_one_read_at_the_draw() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 1000, 3600).await;
    let fans = bulk_fans(&app.pool, 200).await;
    let mut sockets = Vec::new();
    for &fan in &fans {
        let token = app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
        let cookie = crate::holds_money_sockets::session_cookie(&app, fan).await;
        sockets.push(crate::holds_money_sockets::queue_socket(&app, event_id, &token, Some(&cookie)).await.expect("socket"));
    }
    // Rounds before the opening: nothing to tell, nothing read per socket.
    for _ in 0..3 {
        round(&app, event_id).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.engine.queue_feed().ticket_loads(), 0);
    // The opening: the draw, then one read of the tickets for all 200 sockets.
    sqlx::query("UPDATE events SET sale_opens_at = now() - interval '1 second', max_active = 10, admission_factor = 1 WHERE event_id = $1")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("open");
    let r = round(&app, event_id).await;
    let mut positions = Vec::new();
    for socket in &mut sockets {
        let frame = tokio::time::timeout(Duration::from_secs(10), socket.next()).await.expect("a push").expect("open").expect("frame");
        let frame: serde_json::Value = serde_json::from_str(frame.to_text().expect("text")).expect("json");
        if frame["state"] == "waiting" {
            positions.push(frame["position"].as_i64().expect("position"));
        }
    }
    assert_eq!(app.engine.queue_feed().ticket_loads(), 1, "one read of the drawn tickets, not one per socket");
    positions.sort_unstable();
    assert_eq!(positions, (0..(200 - r.admitted)).collect::<Vec<_>>(), "every waiting fan has a distinct place");
    app.stop().await;
}

#[tokio::test]
async fn a_queue_token_holds_few_sockets_and_an_address_a_bounded_number() {
    let app = spawn_app_with(|s| {
        s.admission_interval_ms = 3_600_000;
        s.sockets_per_address = 6;
    })
    .await;
    let event_id = room_event(&app, 10, 3600).await;
    let fans = bulk_fans(&app.pool, 2).await;
    let token = app.engine.join_queue(event_id.into(), SalePhase::Public, fans[0], "test-binding").await.map(|view| view.queue_token).expect("join");
    let cookie = crate::holds_money_sockets::session_cookie(&app, fans[0]).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(crate::holds_money_sockets::queue_socket(&app, event_id, &token, Some(&cookie)).await.expect("within the token's cap"));
    }
    let refused = crate::holds_money_sockets::queue_socket(&app, event_id, &token, Some(&cookie)).await.expect_err("a fifth socket for one token");
    assert!(matches!(refused, tokio_tungstenite::tungstenite::Error::Http(ref r) if r.status() == 429), "{refused:?}");
    // The address's cap counts seat-map sockets too.
    let map = format!("ws://{}/api/v1/events/{event_id}/live", app.addr);
    open.push(tokio_tungstenite::connect_async(&map).await.expect("fifth for the address").0);
    open.push(tokio_tungstenite::connect_async(&map).await.expect("sixth for the address").0);
    let refused = tokio_tungstenite::connect_async(&map).await.expect_err("a seventh from one address");
    assert!(matches!(refused, tokio_tungstenite::tungstenite::Error::Http(ref r) if r.status() == 429), "{refused:?}");
    // Closing one frees its place.
    let mut first = open.remove(0);
    first.close(None).await.expect("close");
    drop(first);
    eventually(5, "the place to be given back", || async { tokio_tungstenite::connect_async(&map).await.ok().map(|_| ()) }).await;
    app.stop().await;
}

/// The code in the last message the file mailer kept for `email`.
fn mailed_code(outbox: &std::path::Path, email: &str) -> String {
    let text = std::fs::read_to_string(outbox).expect("outbox");
    let mail: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["to"] == email)
        .last()
        .expect("a mail to the fan");
    crate::common::mailed_code_in(&mail).expect("a code in the mail")
}

#[tokio::test]
async fn a_room_that_asks_for_a_verified_email_lets_in_fans_who_typed_their_code() {
    let outbox = std::env::temp_dir().join(format!("frontrow-outbox-{}.jsonl", Uuid::new_v4().simple()));
    let app = spawn_app_with({
        let outbox = outbox.clone();
        move |s| {
            s.admission_interval_ms = 3_600_000;
            s.mail_outbox = Some(outbox);
        }
    })
    .await;
    let event_id = room_event(&app, 10, -60).await;
    let open_room = room_event(&app, 10, -60).await;
    let staff = app.staff().await;
    let set = staff
        .send(staff.http.patch(app.url(&format!("/api/v1/admin/events/{event_id}/waiting-room"))).json(&json!({ "require_verified_email": true })))
        .await;
    assert_eq!((set.status, &set.body["require_verified_email"]), (200, &json!(true)), "{}", set.body);

    let fan = app.client();
    let email = format!("verify-{}@example.test", Uuid::new_v4().simple());
    assert_eq!(fan.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "V" })).await.status, 201);
    let join = |event: Uuid| {
        let path = format!("/api/v1/events/{event}/queue");
        let fan = &fan;
        async move { fan.post(&path, json!({})).await }
    };
    let refused = eventually(5, "the room's rule to reach this instance", || async {
        let r = join(event_id).await;
        (r.status == 403).then_some(r)
    })
    .await;
    assert_eq!(refused.body["error"], "email_not_verified");
    assert_eq!(join(open_room).await.status, 201, "other rooms do not ask");

    let sent = fan.post("/api/v1/me/email-code", json!({})).await;
    assert_eq!((sent.status, &sent.body["sent"]), (202, &json!(true)), "{}", sent.body);
    assert_eq!(fan.post("/api/v1/me/email-code", json!({})).await.status, 429, "one code every 30 s");
    let code = mailed_code(&outbox, &email);
    assert_eq!(code.len(), 6);
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let r = fan.post("/api/v1/me/email-code/confirm", json!({ "code": wrong })).await;
    assert_eq!((r.status, r.body["error"].as_str()), (403, Some("wrong_code")));
    assert_eq!(fan.post("/api/v1/me/email-code/confirm", json!({ "code": "12ab56" })).await.status, 422, "malformed");
    assert_eq!(join(event_id).await.status, 403, "still unverified");
    let r = fan.post("/api/v1/me/email-code/confirm", json!({ "code": code })).await;
    assert_eq!((r.status, &r.body["verified"]), (200, &json!(true)), "{}", r.body);
    assert_eq!(join(event_id).await.status, 201);
    assert_eq!(fan.post("/api/v1/me/email-code", json!({})).await.body["sent"], json!(false), "verified: nothing to send");

    // Five wrong tries use the code up.
    let other = app.fan().await;
    assert_eq!(other.post("/api/v1/me/email-code", json!({})).await.status, 202);
    for _ in 0..5 {
        assert_eq!(other.post("/api/v1/me/email-code/confirm", json!({ "code": "999999" })).await.status, 403);
    }
    let other_email: String = other.get("/api/v1/me").await.body["email"].as_str().unwrap().to_owned();
    let spent = other.post("/api/v1/me/email-code/confirm", json!({ "code": mailed_code(&outbox, &other_email) })).await;
    assert_eq!((spent.status, spent.body["error"].as_str()), (403, Some("wrong_code")), "the code is spent: {}", spent.body);
    let _ = std::fs::remove_file(&outbox);
    app.stop().await;
}

/// A fan who has bought leaves the admitted at once: their slot goes to the
/// next in line, not minutes later when their admission would lapse.
#[tokio::test]
async fn a_fan_who_books_frees_their_admission_slot_at_once() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 100).await;
    let event_id = room_event(&app, 20, -60).await;
    let (fan, _, admission) = admitted_fan(&app, event_id).await;
    let active = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM queue_entries WHERE event_id = $1 AND admission_expires_at > now()")
            .bind(event_id)
            .fetch_one(&app.pool)
            .await
            .expect("active")
    };
    assert_eq!(active().await, 1);
    let hold = hold_with(&fan, event_id, "A-1-1", Some(&admission)).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let paid = fan.checkout(hold.body["hold_id"].as_str().unwrap(), hold.body["hold_token"].as_str().unwrap(), "tok_visa", "book-and-go").await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    assert_eq!(active().await, 0, "the buyer no longer takes an admitted place");
    app.assert_invariants().await;
}

#[tokio::test]
async fn only_fans_shopping_now_count_against_the_target() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let event_id = room_event(&app, 20, -60).await;
    sqlx::query("UPDATE events SET max_active = 4 WHERE event_id = $1").bind(event_id).execute(&app.pool).await.expect("cap");
    let fans = bulk_fans(&app.pool, 20).await;
    for &fan in &fans {
        app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "test-binding").await.map(|view| view.queue_token).expect("join");
    }
    let r = round(&app, event_id).await;
    assert_eq!((r.active, r.target, r.admitted), (0, 4, 4));
    // Just let in and choosing: all four count.
    assert_eq!(round(&app, event_id).await.admitted, 0, "fans just admitted count as shopping");

    let hold = |i: usize, seat: &'static str| {
        let app = &app;
        let fan = fans[i];
        async move {
            let admitted = admission(app, event_id, fan).await;
            let seat = SeatId::parse(seat).expect("seat id");
            app.engine.hold(fan, event_id.into(), &[seat], Some(&admitted), None).await.expect("hold").hold
        }
    };
    // The first releases what they held.
    let released = hold(0, "A-1-1").await;
    let token = HoldToken::parse(released.hold_token.as_str()).expect("token");
    app.engine.release(fans[0], released.hold_id, &token).await.expect("release");
    // The second lets their hold lapse.
    let lapsed = hold(1, "A-1-2").await;
    sqlx::query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE hold_id = $1")
        .bind(lapsed.hold_id)
        .execute(&app.pool)
        .await
        .expect("lapse");
    sqlx::query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1")
        .bind(lapsed.hold_id)
        .execute(&app.pool)
        .await
        .expect("lapse");
    // The third closed the page without holding anything.
    sqlx::query("UPDATE queue_entries SET last_seen_at = now() - make_interval(secs => $3) WHERE event_id = $1 AND user_id = $2")
        .bind(event_id)
        .bind(fans[2])
        .bind(queue::SHOPPING_WINDOW.as_secs_f64() + 1.0)
        .execute(&app.pool)
        .await
        .expect("leave");
    // The fourth holds on.
    hold(3, "A-1-3").await;

    let r = round(&app, event_id).await;
    assert_eq!((r.active, r.admitted), (1, 3), "three slots freed at once, one fan still shopping");
    let stats = app.engine.queue_stats(event_id.into()).await.expect("stats");
    assert_eq!(stats.counts.active_shoppers, 4, "staff see the same count: the holder and the three just let in");
    assert_eq!(admitted_tickets(&app.pool, event_id).await, (1..=7).collect::<Vec<i64>>(), "in ticket order");

    // A fan whose page keeps renewing still counts after the window.
    sqlx::query("UPDATE queue_entries SET last_seen_at = now() - interval '1 hour', admitted_at = now() - interval '1 hour' WHERE event_id = $1 AND ticket BETWEEN 5 AND 7")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("age");
    admission(&app, event_id, fans[4]).await;
    let r = round(&app, event_id).await;
    assert_eq!((r.active, r.admitted), (2, 2), "the renewing fan and the holder");
    app.assert_invariants().await;
    app.stop().await;
}
