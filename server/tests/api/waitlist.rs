//! The waiting list: fans join a sold-out tier's list; seats that come back
//! (a lapsed hold, a refund, staff unblocking) are kept from everyone else
//! and offered in the order fans joined, one fan per seat; an offer let
//! lapse or declined passes on; a leader killed mid-round offers nothing;
//! the waiting room lets nobody in for a seat the list keeps.

use std::time::Duration;

use frontrow_model::SalePhase;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;
use crate::crash::{client_for, start_server};

fn outbox_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("frontrow-outbox-{}.jsonl", Uuid::new_v4().simple()))
}

async fn join(fan: &Client, event: Uuid, quantity: i32) -> Reply {
    fan.post(&format!("/api/v1/events/{event}/waitlist"), json!({ "tier": "Standard", "quantity": quantity })).await
}

async fn entry(fan: &Client, event: Uuid) -> Value {
    let r = fan.get(&format!("/api/v1/events/{event}/waitlist")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// Each entry's offer hold (none: waiting), in the order fans joined.
async fn offers_in_order(pool: &sqlx::PgPool, event: Uuid) -> Vec<Option<Uuid>> {
    sqlx::query_scalar("SELECT hold_id FROM waitlist_entries WHERE event_id = $1 ORDER BY seq").bind(event).fetch_all(pool).await.expect("entries")
}

/// No seat is in two offers standing (open, paying or bought: a passed
/// one's seats went on), and no fan has two.
async fn assert_one_fan_per_seat(pool: &sqlx::PgPool, event: Uuid) {
    let doubled: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT s FROM waitlist_entries w JOIN holds h USING (hold_id), unnest(h.seat_ids) s
                                WHERE w.event_id = $1 AND (hold_live(h.state, h.expires_at) OR h.state IN ('checking_out', 'converted'))
                                GROUP BY s HAVING count(*) > 1) d",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .expect("doubles");
    assert_eq!(doubled, 0, "a seat offered twice");
    let offers_per_fan: i64 = sqlx::query_scalar(
        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM holds h JOIN waitlist_entries w ON w.user_id = h.user_id AND w.event_id = h.event_id
                                          WHERE h.event_id = $1 GROUP BY h.user_id) c",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .expect("per fan");
    assert!(offers_per_fan <= 1, "a fan on the list holds through more than one offer");
}

/// Moves the hold's lease into the past, as if its time had run out.
async fn lapse(pool: &sqlx::PgPool, hold: Uuid) {
    sqlx::query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE hold_id = $1").bind(hold).execute(pool).await.expect("lapse hold");
    sqlx::query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE hold_id = $1")
        .bind(hold)
        .execute(pool)
        .await
        .expect("lapse seats");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_fans_wait_and_ten_seats_that_come_back_are_offered_in_order_one_fan_per_seat() {
    let outbox = outbox_file();
    let app = spawn_app_with({
        let outbox = outbox.clone();
        move |s| s.mail_outbox = Some(outbox)
    })
    .await;
    let event = app.event(1, 20, 3, 4).await;
    let staff = app.staff().await;
    let outsider = app.fan().await;

    // Before the sell-out the list is not needed.
    assert_error("seats are free", &join(&outsider, event, 1).await, 409, "waitlist_not_needed");

    // Sold out: 2 blocked, 6 held (they will lapse), 2 in a booking to be
    // refunded, 10 sold for good.
    let blocked = staff.post(&format!("/api/v1/admin/events/{event}/blocks"), json!({ "seat_ids": ["A-1-19", "A-1-20"], "reason": "camera" })).await;
    assert_eq!(blocked.status, 200, "{}", blocked.body);
    let refunded = buy(&app.fan().await, event, &["A-1-1", "A-1-2"]).await;
    let buyer = app.fan().await;
    buy(&buyer, event, &["A-1-3", "A-1-4"]).await;
    for n in (11..19).step_by(2) {
        buy(&app.fan().await, event, &[&format!("A-1-{n}"), &format!("A-1-{}", n + 1)]).await;
    }
    let holders = app.fans(3).await;
    // The fans are signed in first: the holds last 3 seconds.
    let fans = app.fans(30).await;
    for (k, holder) in holders.iter().enumerate() {
        let seats = [format!("A-1-{}", 5 + 2 * k), format!("A-1-{}", 6 + 2 * k)];
        let r = holder.hold(event, &[&seats[0], &seats[1]]).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }

    // 30 fans join while every seat is taken: the first wants 2 together.
    for (k, fan) in fans.iter().enumerate() {
        let r = join(fan, event, if k == 0 { 2 } else { 1 }).await;
        assert_eq!(r.status, 201, "fan {k}: {}", r.body);
        assert_eq!(r.body["place"], json!(k + 1), "{}", r.body);
    }
    assert_error("once per event", &join(&fans[3], event, 1).await, 409, "already_on_waitlist");
    assert_error("over the order limit", &join(&outsider, event, 5).await, 422, "invalid_input");
    let nul = outsider.post(&format!("/api/v1/events/{event}/waitlist"), json!({ "tier": "Stand\u{0}ard", "quantity": 1 })).await;
    assert_error("a NUL in the tier", &nul, 422, "invalid_input");

    // Meanwhile someone not on the list keeps trying for the seats that
    // come back: every try must fail.
    let stop = tokio_util::sync::CancellationToken::new();
    let snatcher = tokio::spawn({
        let (stop, outsider) = (stop.clone(), outsider.clone());
        async move {
            let mut tries = Vec::new();
            let seats = ["A-1-5", "A-1-6", "A-1-7", "A-1-8", "A-1-9", "A-1-10", "A-1-1", "A-1-2", "A-1-19", "A-1-20"];
            while !stop.is_cancelled() {
                for seat in seats {
                    tries.push(outsider.hold(event, &[seat]).await);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tries
        }
    });

    // The holds lapse: 6 seats go to the first five fans (two together for
    // the first).
    let offered = |n: usize| {
        let pool = app.pool.clone();
        move || {
            let pool = pool.clone();
            async move { offers_in_order(&pool, event).await.iter().take_while(|h| h.is_some()).count().ge(&n).then_some(()) }
        }
    };
    eventually(15, "the lapsed seats offered", offered(5)).await;
    let first = entry(&fans[0], event).await;
    assert_eq!(first["state"], json!("offered"), "{first}");
    assert_eq!(first["offer"]["seat_ids"], json!(["A-1-5", "A-1-6"]), "two seats together for the first fan");
    // Staff refund the booking of 2, then unblock 2: four more fans.
    let booking_id = refunded["booking"]["booking_id"].as_str().or(refunded["booking_id"].as_str()).unwrap_or_default().to_owned();
    let refund = staff
        .send(
            staff
                .http
                .post(format!("{}/api/v1/admin/bookings/{booking_id}/refund", staff.base))
                .header("idempotency-key", "refund-1")
                .json(&json!({ "reason": "could not come" })),
        )
        .await;
    assert_eq!(refund.status, 200, "{}", refund.body);
    eventually(10, "the refunded seats offered", offered(7)).await;
    let unblocked = staff
        .send(staff.http.delete(format!("{}/api/v1/admin/events/{event}/blocks", staff.base)).json(&json!({ "seat_ids": ["A-1-19", "A-1-20"] })))
        .await;
    assert_eq!(unblocked.status, 200, "{}", unblocked.body);
    eventually(10, "the unblocked seats offered", offered(9)).await;
    stop.cancel();
    let tries = snatcher.await.expect("snatcher");
    assert!(!tries.is_empty());
    for r in &tries {
        assert_eq!(r.status, 409, "an outsider got a seat meant for the list: {}", r.body);
        assert!(["seats_unavailable", "seats_for_waiting_list"].contains(&r.body["error"].as_str().unwrap_or_default()), "{}", r.body);
    }
    // In list order, and no further.
    let order = offers_in_order(&app.pool, event).await;
    assert!(order[..9].iter().all(Option::is_some) && order[9..].iter().all(Option::is_none), "{order:?}");
    assert_one_fan_per_seat(&app.pool, event).await;
    assert_eq!(entry(&fans[9], event).await["place"], json!(1), "the next fan is first in line now");

    // A lapsed offer passes on to the next fan; so does one declined.
    let second = entry(&fans[1], event).await;
    lapse(&app.pool, second["offer"]["hold_id"].as_str().unwrap_or_default().parse().expect("hold id")).await;
    eventually(10, "the lapsed offer passed on", offered(10)).await;
    assert_eq!(entry(&fans[1], event).await["state"], json!("passed"));
    assert_eq!(entry(&fans[9], event).await["offer"]["seat_ids"], second["offer"]["seat_ids"]);
    let declined = fans[2].delete(&format!("/api/v1/events/{event}/waitlist"), &[]).await;
    assert_eq!(declined.status, 200, "{}", declined.body);
    assert_eq!(declined.body["state"], json!("passed"));
    eventually(10, "the declined offer passed on", offered(11)).await;

    // An accepted offer is an ordinary hold: the first fan buys it.
    let offer = &entry(&fans[0], event).await["offer"];
    let paid = fans[0]
        .checkout(offer["hold_id"].as_str().unwrap_or_default(), offer["hold_token"].as_str().unwrap_or_default(), "tok_visa", "waitlist-buy")
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    assert_eq!(entry(&fans[0], event).await["state"], json!("bought"));
    // A fan still waiting leaves.
    assert_eq!(fans[29].delete(&format!("/api/v1/events/{event}/waitlist"), &[]).await.status, 200);
    assert_eq!(fans[29].get(&format!("/api/v1/events/{event}/waitlist")).await.status, 404);

    // Staff see the list, its figures and the dashboard's.
    let list = staff.get(&format!("/api/v1/admin/events/{event}/waitlist")).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["waiting"], json!(18));
    assert_eq!(list.body["offers_outstanding"], json!(8), "{}", list.body);
    let stats = staff.get(&format!("/api/v1/admin/events/{event}/stats")).await;
    assert_eq!(stats.body["waitlist"], json!({ "waiting": 18, "offers_outstanding": 8 }));
    let lines_total = list.body["lines_total"].as_i64().expect("lines_total");
    assert_eq!(list.body["lines"].as_array().map(Vec::len), Some(lines_total as usize), "all of a short list: {}", list.body);
    // A long list is read a page at a time; the figures still count it all.
    let first = staff.get(&format!("/api/v1/admin/events/{event}/waitlist?limit=3")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!((first.body["waiting"].clone(), first.body["lines_total"].clone()), (json!(18), json!(lines_total)));
    let shown = first.body["lines"].as_array().cloned().unwrap_or_default();
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[..], list.body["lines"].as_array().unwrap()[..3], "the first lines, waiting fans in order");
    for limit in ["0", "5001", "x"] {
        let r = staff.get(&format!("/api/v1/admin/events/{event}/waitlist?limit={limit}")).await;
        assert!(r.status == 422 || r.status == 400, "limit {limit}: {} {}", r.status, r.body);
    }

    // Paused, nothing more goes out in turn; staff may still offer by hand.
    let paused = staff
        .send(staff.http.patch(format!("{}/api/v1/admin/events/{event}/waitlist", staff.base)).json(&json!({ "paused": true, "offer_minutes": 45 })))
        .await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    let third = entry(&fans[3], event).await;
    fans[3].release(third["offer"]["hold_id"].as_str().unwrap_or_default(), third["offer"]["hold_token"].as_str().unwrap_or_default()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(offers_in_order(&app.pool, event).await[11].is_none(), "paused: no offer in turn");
    let freed = third["offer"]["seat_ids"][0].as_str().unwrap_or_default().to_owned();
    let entry_id = list.body["lines"].as_array().into_iter().flatten().find(|l| l["state"] == json!("waiting")).map(|l| l["entry_id"].clone());
    let by_hand = staff.post(&format!("/api/v1/admin/events/{event}/waitlist/offers"), json!({ "entry_id": entry_id, "seat_ids": [freed] })).await;
    assert_eq!(by_hand.status, 201, "{}", by_hand.body);
    let again = staff.post(&format!("/api/v1/admin/events/{event}/waitlist/offers"), json!({ "entry_id": entry_id })).await;
    assert_error("one offer per fan", &again, 422, "invalid_input");
    let expires: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT expires_at FROM holds WHERE hold_id = $1")
        .bind(by_hand.body["hold_id"].as_str().unwrap_or_default().parse::<Uuid>().expect("hold id"))
        .fetch_one(&app.pool)
        .await
        .expect("offer hold");
    let minutes = (expires - chrono::Utc::now()).num_minutes();
    assert!((44..=45).contains(&minutes), "the offer lasts the 45 minutes staff set: {minutes}");
    let log = staff.get(&format!("/api/v1/admin/events/{event}/log")).await;
    assert!(log.body.to_string().contains("waitlist_offer_by_hand"), "{}", log.body);

    // The first fan was mailed the offer, with its seats and where to buy.
    let to = fans[0].get("/api/v1/me").await.body["email"].as_str().unwrap_or_default().to_owned();
    let mail = eventually(10, "the offer's mail", || async {
        let text = std::fs::read_to_string(&outbox).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["to"] == json!(to) && m["subject"].as_str().unwrap_or_default().starts_with("Seats for"))
    })
    .await;
    let body = mail["body"].as_str().unwrap_or_default();
    assert!(body.contains("seat 5") && body.contains("seat 6") && body.contains(&format!("/events/{event}")), "{body}");

    assert_one_fan_per_seat(&app.pool, event).await;
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_killed_mid_round_offers_nothing_and_the_next_offers_each_seat_once() {
    let setup = spawn_app().await;
    let event = setup.event(1, 3, 300, 2).await;
    let staff = setup.staff().await;
    let blocked =
        staff.post(&format!("/api/v1/admin/events/{event}/blocks"), json!({ "seat_ids": ["A-1-1", "A-1-2", "A-1-3"], "reason": "desk" })).await;
    assert_eq!(blocked.status, 200, "{}", blocked.body);
    let fans = setup.fans(4).await;
    for fan in &fans {
        assert_eq!(join(fan, event, 1).await.status, 201);
    }
    let email = format!("staff-{}@example.test", Uuid::new_v4().simple());
    setup
        .engine
        .create_user(frontrow_engine::accounts::NewUser {
            email: &email,
            password: PASSWORD,
            name: "Desk",
            role: frontrow_engine::model::Role::Staff,
        })
        .await
        .expect("staff");
    let database_url = setup.database_url.clone();
    setup.stop().await;
    let pool = sqlx::PgPool::connect(&database_url).await.expect("pool");

    // The only server left dies in its first round, after writing an offer.
    let mut doomed = start_server(&database_url, Some("abort_mid_waitlist_round")).await;
    let desk = client_for(&doomed.base);
    assert_eq!(desk.post("/api/v1/auth/login", json!({ "email": email, "password": PASSWORD })).await.status, 200);
    let unblocked = desk
        .send(desk.http.delete(format!("{}/api/v1/admin/events/{event}/blocks", desk.base)).json(&json!({ "seat_ids": ["A-1-1", "A-1-2", "A-1-3"] })))
        .await;
    assert_eq!(unblocked.status, 200, "{}", unblocked.body);
    let status = tokio::time::timeout(Duration::from_secs(15), doomed.child.wait()).await.expect("the leader died").expect("exit status");
    assert!(!status.success(), "the leader was killed mid-round");
    assert!(offers_in_order(&pool, event).await.iter().all(Option::is_none), "nothing of the killed round stands");
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM holds WHERE event_id = $1").bind(event).fetch_one(&pool).await.expect("holds");
    assert_eq!(holds, 0);

    // The next leader offers the three seats to the first three fans, once.
    let next = spawn_app_on(&database_url, |_| {}).await;
    eventually(15, "the next leader's offers", || async {
        (offers_in_order(&next.pool, event).await.iter().filter(|h| h.is_some()).count() == 3).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let order = offers_in_order(&next.pool, event).await;
    assert!(order[..3].iter().all(Option::is_some) && order[3].is_none(), "{order:?}");
    assert_one_fan_per_seat(&next.pool, event).await;
    next.assert_invariants().await;
    next.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_room_admits_nobody_for_a_seat_the_waiting_list_keeps() {
    // Neither the admission loop nor the list's rounds run by themselves here.
    let app = spawn_app_with(|s| {
        s.admission_interval_ms = 3_600_000;
        s.reaper_interval_ms = 3_600_000;
    })
    .await;
    let event = app.event(1, 4, 300, 4).await;
    let staff = app.staff().await;
    buy(&app.fan().await, event, &["A-1-1", "A-1-2", "A-1-3"]).await;
    let blocks = format!("{}/api/v1/admin/events/{event}/blocks", staff.base);
    assert_eq!(staff.send(staff.http.post(&blocks).json(&json!({ "seat_ids": ["A-1-4"], "reason": "desk" }))).await.status, 200);
    assert_eq!(join(&app.fan().await, event, 1).await.status, 201);
    let room = staff
        .send(staff.http.patch(format!("{}/api/v1/admin/events/{event}/waiting-room", staff.base)).json(&json!({ "waiting_room_enabled": true })))
        .await;
    assert_eq!(room.status, 200, "{}", room.body);
    let queued = app.fan().await;
    assert_eq!(queued.post(&format!("/api/v1/events/{event}/queue"), json!({})).await.status, 201);

    // The seat comes back: it is the list's, so nobody is let in for it.
    assert_eq!(staff.send(staff.http.delete(&blocks).json(&json!({ "seat_ids": ["A-1-4"] }))).await.status, 200);
    let round = app.engine.admission_round(event.into(), SalePhase::Public, app.instance_id).await.expect("round").expect("this instance leads");
    assert_eq!((round.remaining, round.admitted), (0, 0), "{round:?}");

    // Paused, the list keeps nothing: the seat is everyone's and the queue moves.
    let paused = staff.send(staff.http.patch(format!("{}/api/v1/admin/events/{event}/waitlist", staff.base)).json(&json!({ "paused": true }))).await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let round = app.engine.admission_round(event.into(), SalePhase::Public, app.instance_id).await.expect("round").expect("this instance leads");
    assert_eq!((round.remaining, round.admitted), (1, 1), "{round:?}");
    app.assert_invariants().await;
    app.stop().await;
}
