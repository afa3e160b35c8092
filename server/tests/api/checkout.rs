//! Checkout: fencing, idempotency, every payment outcome, reconciliation.

use std::time::Duration;

use crate::common::*;
use futures::future::join_all;
use serde_json::Value;
use uuid::Uuid;

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(&app.pool).await.unwrap()
}

fn ids(reply: &Reply) -> (String, String) {
    (reply.body["hold_id"].as_str().unwrap().to_owned(), reply.body["hold_token"].as_str().unwrap().to_owned())
}

/// Polls GET /checkouts/{id} until it leaves payment_pending.
async fn settled(fan: &Client, checkout_id: &str) -> Value {
    eventually(20, "checkout to settle", || async {
        let r = fan.get(&format!("/api/v1/checkouts/{checkout_id}")).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        (r.body["status"] != "payment_pending").then_some(r.body)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approved_payment_books_the_seats_with_one_ticket_each() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let hold = fan.hold(event, &["A-1-3", "A-1-4"]).await;
    assert_eq!(hold.status, 201);
    assert_eq!(hold.body["total_cents"], 10_000);
    let (hold_id, token) = ids(&hold);

    let r = fan.checkout(&hold_id, &token, "tok_visa", "order-1").await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["status"], "confirmed");
    assert_eq!(r.body["total_cents"], 10_000);
    let tickets = r.body["tickets"].as_array().unwrap();
    assert_eq!(tickets.len(), 2);
    assert_ne!(tickets[0]["code"], tickets[1]["code"]);
    let booking_id = r.body["booking_id"].as_str().unwrap();

    assert_eq!(seat_state(&app.pool, event, "A-1-3").await, "sold");
    let mine = fan.get("/api/v1/me/bookings").await;
    assert_eq!(mine.body["bookings"][0]["booking_id"], booking_id);
    assert_eq!(fan.get(&format!("/api/v1/bookings/{booking_id}")).await.status, 200);
    // Someone else's booking does not exist for them; staff can see it.
    assert_eq!(app.fan().await.get(&format!("/api/v1/bookings/{booking_id}")).await.status, 404);
    assert_eq!(app.staff().await.get(&format!("/api/v1/bookings/{booking_id}")).await.status, 200);
    // A sold seat cannot be held again.
    assert_eq!(app.fan().await.hold(event, &["A-1-3"]).await.status, 409);
    let report = app.assert_invariants().await;
    assert_eq!((report.seats_sold, report.bookings), (2, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_with_the_same_key_returns_the_same_booking_and_charges_once() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-1"]).await);

    let first = fan.checkout(&hold_id, &token, "tok_visa", "same-key").await;
    assert_eq!(first.status, 201);
    let again = fan.checkout(&hold_id, &token, "tok_visa", "same-key").await;
    assert_eq!(again.status, 201);
    assert_eq!(again.body["booking_id"], first.body["booking_id"]);
    assert_eq!(again.body["tickets"], first.body["tickets"]);

    // Same key, different request: refused, nothing changes.
    let reused = fan.checkout(&hold_id, &token, "tok_chargeDeclined", "same-key").await;
    assert_eq!(reused.status, 409);
    assert_eq!(reused.body["error"], "idempotency_key_reused");
    // A new key on a converted hold cannot buy it twice.
    assert_eq!(fan.checkout(&hold_id, &token, "tok_visa", "other-key").await.status, 410);

    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 1);
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await, 1);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_replays_make_one_booking_and_one_charge() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-1", "A-1-2"]).await);

    let replies = join_all((0..24).map(|_| fan.checkout(&hold_id, &token, "tok_visa", "double-click"))).await;
    let mut booking_ids = std::collections::HashSet::new();
    for r in &replies {
        match r.status {
            201 => {
                booking_ids.insert(r.body["booking_id"].as_str().unwrap().to_owned());
            }
            409 => assert_eq!(r.body["error"], "idempotency_key_in_use"),
            other => panic!("unexpected {other}: {:?}", r.body),
        }
    }
    assert_eq!(booking_ids.len(), 1, "every success names the same booking");
    let last = fan.checkout(&hold_id, &token, "tok_visa", "double-click").await;
    assert!(booking_ids.contains(last.body["booking_id"].as_str().unwrap()));
    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 1);
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await, 1);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declined_card_keeps_the_hold_and_a_good_card_then_books_once() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-7"]).await);

    let declined = fan.checkout(&hold_id, &token, "tok_chargeDeclined", "try-1").await;
    assert_eq!(declined.status, 402);
    assert_eq!(declined.body["error"], "payment_declined");
    assert_eq!(seat_state(&app.pool, event, "A-1-7").await, "held");
    assert_eq!(fan.get(&format!("/api/v1/holds/{hold_id}")).await.body["state"], "active");
    // Nobody else can take it meanwhile.
    assert_eq!(app.fan().await.hold(event, &["A-1-7"]).await.status, 409);
    // Replaying the declined attempt replays the decline.
    assert_eq!(fan.checkout(&hold_id, &token, "tok_chargeDeclined", "try-1").await.status, 402);

    let ok = fan.checkout(&hold_id, &token, "tok_visa", "try-2").await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);
    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 1);
    let captured = count(&app, "SELECT count(*) FROM sim_provider_payments WHERE status = 'succeeded'").await;
    assert_eq!(captured, 1);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_payment_answers_pending_then_reconciliation_confirms() {
    let app = spawn_app_with(|s| s.sim_slow_ms = 1500).await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-2"]).await);

    let r = fan.checkout(&hold_id, &token, "tok_slow", "slow-1").await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    assert_eq!(r.body["status"], "payment_pending");
    let checkout_id = r.body["checkout_id"].as_str().unwrap().to_owned();
    // Reserved while pending: nobody else can take the seat, and it shows as held.
    assert_eq!(seat_state(&app.pool, event, "A-1-2").await, "payment_pending");
    assert_eq!(app.fan().await.hold(event, &["A-1-2"]).await.status, 409);

    let done = settled(&fan, &checkout_id).await;
    assert_eq!(done["status"], "confirmed", "{done:?}");
    assert_eq!(seat_state(&app.pool, event, "A-1-2").await, "sold");
    // Replaying the original request now returns the booking.
    let replay = fan.checkout(&hold_id, &token, "tok_slow", "slow-1").await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.body["booking_id"], done["booking"]["booking_id"]);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_reply_is_found_by_reconciliation_and_booked() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-9"]).await);

    let r = fan.checkout(&hold_id, &token, "tok_lost", "lost-1").await;
    assert_eq!(r.status, 202, "{:?}", r.body);
    let checkout_id = r.body["checkout_id"].as_str().unwrap().to_owned();
    let done = settled(&fan, &checkout_id).await;
    assert_eq!(done["status"], "confirmed", "{done:?}");
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await, 1, "found, not charged again");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn money_that_arrives_after_the_deadline_is_refunded() {
    // The payment settles after 2.5 s, but seats wait for it only 1 s.
    let app = spawn_app_with(|s| {
        s.sim_slow_ms = 2500;
        s.payment_grace_secs = 1;
    })
    .await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-4"]).await);

    let r = fan.checkout(&hold_id, &token, "tok_slow", "late-1").await;
    assert_eq!(r.status, 202);
    let checkout_id = r.body["checkout_id"].as_str().unwrap().to_owned();

    // Past the deadline the seat goes back on sale and another fan takes it.
    let rival = app.fan().await;
    let rival_hold = eventually(10, "seat released at the payment deadline", || async {
        let r = rival.hold(event, &["A-1-4"]).await;
        (r.status == 201).then_some(r)
    })
    .await;
    let done = settled(&fan, &checkout_id).await;
    assert_eq!(done["status"], "refunded", "{done:?}");
    // The refund is recorded with the answer, and sent right after it.
    eventually(10, "the refund to go through", || async {
        (count(&app, "SELECT count(*) FROM refunds WHERE status = 'succeeded'").await == 1).then_some(())
    })
    .await;
    let provider_refunded = count(&app, "SELECT count(*) FROM sim_provider_payments WHERE refunded_cents = amount_cents").await;
    assert_eq!(provider_refunded, 1);
    // The release was recorded on the payment.
    assert_eq!(count(&app, "SELECT count(*) FROM payment_intents WHERE seats_released_at IS NOT NULL").await, 1);

    // The rival's purchase goes through; one booking for the seat.
    let (rh, rt) = ids(&rival_hold);
    assert_eq!(rival.checkout(&rh, &rt, "tok_visa", "rival").await.status, 201);
    let report = app.assert_invariants().await;
    assert_eq!(report.refunds_pending, 0);
    assert_eq!(report.bookings, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_hold_retaken_by_another_fan_fences_out_the_first() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 1, 8).await;
    let (alice, bob) = (app.fan().await, app.fan().await);
    let (a_hold, a_token) = ids(&alice.hold(event, &["A-1-1"]).await);
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Lazy expiry: Bob gets the seat at once, reaper or not.
    let b = bob.hold(event, &["A-1-1"]).await;
    assert_eq!(b.status, 201, "{:?}", b.body);
    let (b_hold, b_token) = ids(&b);
    assert_ne!(a_token, b_token);

    let release = alice.release(&a_hold, &a_token).await;
    assert_eq!((release.status, release.body["error"].as_str()), (410, Some("hold_expired")));
    let pay = alice.checkout(&a_hold, &a_token, "tok_visa", "alice").await;
    assert_eq!((pay.status, pay.body["error"].as_str()), (410, Some("hold_expired")));
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await, 0, "nothing charged");

    let ok = bob.checkout(&b_hold, &b_token, "tok_visa", "bob").await;
    assert_eq!(ok.status, 201, "{:?}", ok.body);
    assert_eq!(alice.get(&format!("/api/v1/holds/{a_hold}")).await.body["state"], "expired");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reaper_racing_late_checkouts_never_sells_a_released_seat() {
    let app = spawn_app_with(|s| s.reaper_interval_ms = 20).await;
    let event = app.event(2, 20, 1, 2).await;
    let fans = app.fans(20).await;
    let mut holds = Vec::new();
    for (i, fan) in fans.iter().enumerate() {
        let seats = [format!("A-{}-{}", i / 10 + 1, (i % 10) * 2 + 1), format!("A-{}-{}", i / 10 + 1, (i % 10) * 2 + 2)];
        let r = fan.hold(event, &[seats[0].as_str(), seats[1].as_str()]).await;
        assert_eq!(r.status, 201);
        holds.push(ids(&r));
    }
    // Check out right around the moment the holds lapse, while the reaper sweeps.
    tokio::time::sleep(Duration::from_millis(950)).await;
    let replies = join_all(fans.iter().zip(&holds).enumerate().map(|(i, (fan, (h, t)))| async move {
        tokio::time::sleep(Duration::from_millis((i as u64 % 10) * 10)).await;
        fan.checkout(h, t, "tok_visa", &format!("late-{i}")).await
    }))
    .await;
    let mut sold = 0;
    for r in &replies {
        match r.status {
            201 => sold += 2,
            410 => assert_eq!(r.body["error"], "hold_expired"),
            other => panic!("unexpected {other}: {:?}", r.body),
        }
    }
    // Whatever won, the books agree: sold seats have bookings, the rest are free, no stray charges.
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_sold, sold);
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await * 2, sold);
    // Released seats are immediately sellable again.
    let rest = app.fans(1).await;
    let free_seat: String = sqlx::query_scalar("SELECT seat_id FROM seats WHERE event_id = $1 AND state <> 'sold' LIMIT 1")
        .bind(event)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
        .unwrap_or_default();
    if !free_seat.is_empty() {
        assert_eq!(rest[0].hold(event, &[free_seat.as_str()]).await.status, 201);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_of_someone_elses_or_unknown_hold_is_not_found() {
    let app = spawn_app().await;
    let event = app.event(1, 5, 300, 8).await;
    let (alice, mallory) = (app.fan().await, app.fan().await);
    let (hold_id, token) = ids(&alice.hold(event, &["A-1-1"]).await);
    assert_eq!(mallory.checkout(&hold_id, &token, "tok_visa", "steal").await.status, 404);
    assert_eq!(alice.checkout(&Uuid::new_v4().to_string(), &token, "tok_visa", "x").await.status, 404);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "held");
    app.assert_invariants().await;
}

async fn provider_control(app: &TestApp, set: &str) {
    sqlx::query(&format!("UPDATE sim_provider_control SET {set}")).execute(&app.pool).await.unwrap();
}

/// A charge whose reply was lost, then the provider down until past the
/// payment deadline: the seats go back on sale with the payment unproved.
async fn lost_charge_with_seats_released(app: &TestApp) -> (Client, String) {
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let (hold_id, token) = ids(&fan.hold(event, &["A-1-4"]).await);
    // The provider's search lags an hour behind its charges, as real ones can.
    provider_control(app, "search_lag = '1 hour'").await;
    let r = fan.checkout(&hold_id, &token, "tok_lost", "lost-lagging").await;
    assert_eq!(r.status, 202, "{}", r.body);
    provider_control(app, "outage_until = now() + interval '1 hour'").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let round = app.engine.reconcile_once().await.unwrap();
    assert_eq!(round.released, 1, "{round:?}");
    assert_eq!(seat_state(&app.pool, event, "A-1-4").await, "available");
    let report = app.assert_invariants().await;
    assert_eq!(report.payments_unresolved, 1, "the charge is neither proved nor disproved: watched");
    assert_eq!(count(app, "SELECT count(*) FROM sim_provider_payments WHERE status = 'succeeded' AND refunded_cents = 0").await, 1);
    (fan, r.body["checkout_id"].as_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_charge_the_search_cannot_find_is_asked_for_again_and_refunded() {
    let app = spawn_app_with(|s| {
        s.payment_grace_secs = 1;
        s.checkout_wait_ms = 500;
        s.reconcile_interval_ms = 3_600_000;
    })
    .await;
    let (fan, checkout_id) = lost_charge_with_seats_released(&app).await;
    // The provider is back; its search still cannot see the charge. Asked
    // again with the same key, it answers the original, which is refunded.
    provider_control(&app, "outage_until = NULL").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let round = app.engine.reconcile_once().await.unwrap();
    assert_eq!(round.refunded, 1, "{round:?}");
    eventually(10, "the refund to reach the provider", || async {
        let left = count(&app, "SELECT count(*) FROM sim_provider_payments WHERE refunded_cents <> amount_cents").await;
        (left == 0).then_some(())
    })
    .await;
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments").await, 1, "asked again, not charged again");
    assert_eq!(settled(&fan, &checkout_id).await["status"], "refunded");
    let report = app.assert_invariants().await;
    assert_eq!(report.payments_unresolved, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unprovable_charge_is_watched_then_handed_to_a_person_who_settles_it() {
    let app = spawn_app_with(|s| {
        s.payment_grace_secs = 1;
        s.checkout_wait_ms = 500;
        s.reconcile_interval_ms = 3_600_000;
        s.payment_watch_secs = 3;
    })
    .await;
    let (_fan, _) = lost_charge_with_seats_released(&app).await;
    let staff = app.staff().await;
    let attention = staff.get("/api/v1/admin/payments?state=attention").await;
    assert_eq!(attention.body["payments"][0]["state"], "watched", "{}", attention.body);
    // Back-off: the next look is not due at once.
    let round = app.engine.reconcile_once().await.unwrap();
    assert_eq!((round.watched, round.released), (0, 0), "{round:?}");
    // Still down past the watch: a person is told, and the audit keeps counting it.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let round = app.engine.reconcile_once().await.unwrap();
    assert_eq!(round.gave_up, 1, "{round:?}");
    assert_eq!(app.assert_invariants().await.payments_unresolved, 1);
    let attention = staff.get("/api/v1/admin/payments?state=attention").await;
    assert_eq!(attention.body["payments"][0]["state"], "gave_up");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(app.engine.reconcile_once().await.unwrap(), Default::default(), "no more automatic looks");
    // The provider is back; staff ask again by hand: found, refunded.
    provider_control(&app, "outage_until = NULL").await;
    let payment_id = attention.body["payments"][0]["payment_id"].as_str().unwrap().to_owned();
    let settled = staff.post(&format!("/api/v1/admin/payments/{payment_id}/settle"), Value::Null).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    eventually(10, "the refund to reach the provider", || async {
        let left = count(&app, "SELECT count(*) FROM sim_provider_payments WHERE refunded_cents <> amount_cents").await;
        (left == 0).then_some(())
    })
    .await;
    assert_eq!(app.assert_invariants().await.payments_unresolved, 0);
}

/// Checkouts sent together share their database calls (two a batch: seats
/// to payment, then the sale); each must still be decided alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkouts_together_are_each_decided_alone() {
    let app = spawn_app().await;
    let events = [app.event(2, 20, 300, 8).await, app.event(2, 20, 300, 8).await];
    let fans = app.fans(40).await;
    // Fan i holds seat A-1-(i/2+1) (and, for every third, the one behind it in
    // row 2 too) of event i % 2.
    let mut holds = Vec::new();
    for (i, fan) in fans.iter().enumerate() {
        let (a, b) = (format!("A-1-{}", i / 2 + 1), format!("A-2-{}", i / 2 + 1));
        let seats: Vec<&str> = if i % 3 == 0 { vec![&a, &b] } else { vec![&a] };
        let held = fan.hold(events[i % 2], &seats).await;
        assert_eq!(held.status, 201, "{:?}", held.body);
        holds.push(ids(&held));
    }

    // 0..28 pay with a good card; 28..32 are declined; 32..36 send a stale
    // token; 36..40 check out twice at once under two keys.
    let attempts = fans.iter().zip(&holds).enumerate().flat_map(|(i, (fan, (hold, token)))| {
        let (card, token) = match i {
            0..=27 => ("tok_visa", token.clone()),
            28..=31 => ("tok_chargeDeclined", token.clone()),
            _ if i < 36 => ("tok_visa", "0".repeat(32)),
            _ => ("tok_visa", token.clone()),
        };
        let keys = if i >= 36 { vec![format!("first-{i}"), format!("second-{i}")] } else { vec![format!("only-{i}")] };
        keys.into_iter().map(move |key| {
            let (hold, token) = (hold.clone(), token.clone());
            async move { (i, fan.checkout(&hold, &token, card, &key).await) }
        })
    });
    let replies = join_all(attempts).await;

    let mut booked = vec![0; fans.len()];
    for (i, r) in &replies {
        match (*i, r.status) {
            (0..=27 | 36..=39, 201) => {
                booked[*i] += 1;
                // The answer stored in the batch is the booking as the API shows it.
                let booking_id = r.body["booking_id"].as_str().unwrap();
                let shown = fans[*i].get(&format!("/api/v1/bookings/{booking_id}")).await;
                assert_eq!(shown.status, 200);
                assert_eq!(shown.body, r.body, "fan {i}: the checkout's answer and the booking differ");
                let seats = if i % 3 == 0 { 2 } else { 1 };
                assert_eq!(r.body["tickets"].as_array().map(Vec::len), Some(seats), "fan {i}: {:?}", r.body);
            }
            (28..=31, 402) => assert_eq!(r.body["error"], "payment_declined"),
            (32..=35, 410) => assert_eq!(r.body["error"], "hold_expired"),
            // The other key finds the seats paid for, or already sold.
            (36..=39, 409) => assert_eq!(r.body["error"], "checkout_in_progress", "{:?}", r.body),
            (36..=39, 410) => assert_eq!(r.body["error"], "hold_expired"),
            (i, status) => panic!("fan {i}: unexpected {status}: {:?}", r.body),
        }
    }
    for (i, n) in booked.iter().enumerate() {
        let expected = usize::from(i < 28 || i >= 36);
        assert_eq!(*n, expected, "fan {i} booked {n} times");
    }
    // The declined and the fenced-out still hold their seats.
    for i in 28..36 {
        let seat = format!("A-1-{}", i / 2 + 1);
        assert_eq!(seat_state(&app.pool, events[i % 2], &seat).await, "held", "fan {i}");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM bookings").await, 32);
    assert_eq!(count(&app, "SELECT count(*) FROM tickets").await, 32 + (0..28).chain(36..40).filter(|i| i % 3 == 0).count() as i64);
    // Ticket codes: 24 hex digits (96 bits), upper case, all different.
    assert_eq!(
        count(&app, "SELECT count(DISTINCT code) FROM tickets WHERE code ~ '^[0-9A-F]{24}$'").await,
        count(&app, "SELECT count(*) FROM tickets").await
    );
    assert_eq!(count(&app, "SELECT count(*) FROM sim_provider_payments WHERE status = 'succeeded'").await, 32);
    app.assert_invariants().await;
}
