//! Holds under contention, against real PostgreSQL: every race ends with the
//! database audited.

use std::collections::{HashMap, HashSet};

use crate::common::*;
use futures::future::join_all;
use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_fans_race_for_one_seat_and_exactly_one_wins() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fans = app.fans(220).await;

    let attempts = fans.iter().map(|fan| fan.hold(event, &["A-1-5"]));
    let replies = join_all(attempts).await;

    let winners: Vec<&Reply> = replies.iter().filter(|r| r.status == 201).collect();
    assert_eq!(winners.len(), 1, "exactly one hold must win");
    for loser in replies.iter().filter(|r| r.status != 201) {
        assert_eq!(loser.status, 409, "loser: {:?}", loser.body);
        assert_eq!(loser.body["error"], "seats_unavailable");
        assert_eq!(loser.body["conflict_seats"], serde_json::json!(["A-1-5"]));
    }

    let winner_hold = winners[0].body["hold_id"].as_str().unwrap().to_owned();
    let (state, hold_id): (String, Option<uuid::Uuid>) =
        sqlx::query_as("SELECT state::text, hold_id FROM seats WHERE event_id = $1 AND seat_id = 'A-1-5'")
            .bind(event)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(state, "held");
    assert_eq!(hold_id.unwrap().to_string(), winner_hold);
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM holds WHERE event_id = $1").bind(event).fetch_one(&app.pool).await.unwrap();
    assert_eq!(holds, 1, "losers leave no hold behind");
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_held, 1);
    assert_eq!(report.seats_available, 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlapping_group_holds_are_all_or_nothing() {
    let app = spawn_app().await;
    let event = app.event(2, 12, 300, 8).await;
    let fans = app.fans(80).await;

    // Each fan wants 2 to 4 adjacent seats somewhere in two short rows: heavy overlap.
    let requests: Vec<Vec<String>> = {
        let mut rng = rand::thread_rng();
        (0..fans.len())
            .map(|_| {
                let row = rng.gen_range(1..=2);
                let len = rng.gen_range(2..=4);
                let start = rng.gen_range(1..=12 - len + 1);
                let mut seats: Vec<String> = (start..start + len).map(|n| format!("A-{row}-{n}")).collect();
                seats.shuffle(&mut rng);
                seats
            })
            .collect()
    };
    let replies = join_all(fans.iter().zip(&requests).map(|(fan, seats)| {
        let seats: Vec<&str> = seats.iter().map(String::as_str).collect();
        async move { fan.hold(event, &seats).await }
    }))
    .await;

    let mut owner_of: HashMap<String, String> = HashMap::new();
    let mut won = 0;
    for (reply, wanted) in replies.iter().zip(&requests) {
        match reply.status {
            201 => {
                won += 1;
                let hold_id = reply.body["hold_id"].as_str().unwrap().to_owned();
                let got: HashSet<String> = reply.body["seat_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
                assert_eq!(got, wanted.iter().cloned().collect::<HashSet<_>>(), "a hold gets exactly what it asked for");
                for seat in got {
                    assert!(owner_of.insert(seat.clone(), hold_id.clone()).is_none(), "seat {seat} in two holds");
                }
            }
            409 => {
                let conflicts: Vec<&Value> = reply.body["conflict_seats"].as_array().unwrap().iter().collect();
                assert!(!conflicts.is_empty());
                for c in conflicts {
                    assert!(wanted.contains(&c.as_str().unwrap().to_owned()), "conflicts name requested seats only");
                }
            }
            other => panic!("unexpected {other}: {:?}", reply.body),
        }
    }
    assert!(won >= 1);

    // The database agrees seat by seat: held exactly by the winning holds, nothing else held.
    let rows: Vec<(String, String, Option<uuid::Uuid>)> =
        sqlx::query_as("SELECT seat_id, state::text, hold_id FROM seats WHERE event_id = $1").bind(event).fetch_all(&app.pool).await.unwrap();
    for (seat, state, hold) in rows {
        match owner_of.get(&seat) {
            Some(h) => {
                assert_eq!(state, "held");
                assert_eq!(hold.unwrap().to_string(), *h);
            }
            None => assert_eq!(state, "available", "seat {seat} held by a losing request"),
        }
    }
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM holds WHERE event_id = $1").bind(event).fetch_one(&app.pool).await.unwrap();
    assert_eq!(holds, won);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_fan_limit_counts_live_holds_even_when_racing() {
    let app = spawn_app().await;
    let event = app.event(1, 40, 300, 4).await;
    let fan = app.fan().await;
    // Ten concurrent single-seat holds by one fan with a limit of four.
    let replies = join_all((1..=10).map(|n| {
        let seat = format!("A-1-{n}");
        let fan = &fan;
        async move { fan.hold(event, &[seat.as_str()]).await }
    }))
    .await;
    let ok = replies.iter().filter(|r| r.status == 201).count();
    assert_eq!(ok, 4, "exactly the limit is granted");
    for r in replies.iter().filter(|r| r.status != 201) {
        assert_eq!(r.status, 422);
        assert_eq!(r.body["error"], "too_many_seats");
    }
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_frees_seats_at_once_and_only_with_the_current_token() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let (alice, bob) = (app.fan().await, app.fan().await);
    let hold = alice.hold(event, &["A-1-1", "A-1-2"]).await;
    assert_eq!(hold.status, 201);
    let hold_id = hold.body["hold_id"].as_str().unwrap();
    let token = hold.body["hold_token"].as_str().unwrap();

    // Another fan cannot release it (not theirs: 404) and a wrong token is 410.
    assert_eq!(bob.release(hold_id, token).await.status, 404);
    assert_eq!(alice.release(hold_id, "not-the-token").await.body["error"], "hold_expired");
    assert_eq!(bob.hold(event, &["A-1-2"]).await.status, 409);

    assert_eq!(alice.release(hold_id, token).await.status, 204);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    assert_eq!(alice.get(&format!("/api/v1/holds/{hold_id}")).await.body["state"], "released");
    // Available again at once, and the old token can no longer do anything.
    assert_eq!(bob.hold(event, &["A-1-2"]).await.status, 201);
    assert_eq!(alice.release(hold_id, token).await.status, 410);
    assert_eq!(alice.checkout(hold_id, token, "tok_visa", "k1").await.status, 410);
    app.assert_invariants().await;
}

/// Releases arriving together share one statement and one commit (of two
/// events at once here), yet each is judged on its own: a double click frees
/// the seats once, a wrong token or another fan's hold changes nothing, and
/// a release racing its own checkout loses or wins whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn releases_together_are_each_judged_alone() {
    let app = spawn_app().await;
    let events = [app.event(2, 20, 300, 8).await, app.event(2, 20, 300, 8).await];
    let fans = app.fans(40).await;
    let mut holds = Vec::new();
    for (i, fan) in fans.iter().enumerate() {
        let (event, row) = (events[i % 2], i / 2 % 2 + 1);
        let seats = [format!("A-{row}-{}", i / 4 * 2 + 1), format!("A-{row}-{}", i / 4 * 2 + 2)];
        let hold = fan.hold(event, &[seats[0].as_str(), seats[1].as_str()]).await;
        assert_eq!(hold.status, 201, "{}", hold.body);
        holds.push((hold.body["hold_id"].as_str().expect("id").to_owned(), hold.body["hold_token"].as_str().expect("token").to_owned()));
    }
    // Fans 0-29 release three times at once; 30-34 check out while they
    // release; 35-39 try a wrong token, and the next fan's release of
    // their hold is refused as not theirs.
    let attempts = fans.iter().zip(&holds).enumerate().flat_map(|(i, (fan, (id, token)))| {
        let mut tries: Vec<futures::future::BoxFuture<'_, (usize, &str, u16)>> = Vec::new();
        match i {
            0..30 => {
                for _ in 0..3 {
                    tries.push(Box::pin(async move { (i, "release", fan.release(id, token).await.status) }));
                }
            }
            30..35 => {
                tries.push(Box::pin(async move { (i, "release", fan.release(id, token).await.status) }));
                tries.push(Box::pin(async move { (i, "checkout", fan.checkout(id, token, "tok_visa", &format!("k{i}")).await.status) }));
            }
            _ => {
                tries.push(Box::pin(async move { (i, "wrong token", fan.release(id, "not-the-token").await.status) }));
                let other = &fans[(i + 1) % fans.len()];
                tries.push(Box::pin(async move { (i, "not theirs", other.release(id, token).await.status) }));
            }
        }
        tries
    });
    let answers = join_all(attempts).await;
    let mut by_fan: HashMap<usize, Vec<(&str, u16)>> = HashMap::new();
    for (i, what, status) in answers {
        by_fan.entry(i).or_default().push((what, status));
    }
    for (i, answers) in &by_fan {
        let mut statuses: Vec<u16> = answers.iter().map(|(_, s)| *s).collect();
        statuses.sort_unstable();
        match i {
            0..30 => assert_eq!(statuses, [204, 410, 410], "fan {i}: freed once"),
            30..35 => {
                assert!(statuses == [201, 409] || statuses == [201, 410] || statuses == [204, 410], "fan {i}: one of the two wins whole: {answers:?}")
            }
            _ => assert_eq!(statuses, [404, 410], "fan {i}: {answers:?}"),
        }
    }
    let state = |id: String| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>("SELECT state::text FROM holds WHERE hold_id = $1::uuid").bind(id).fetch_one(&pool).await.expect("hold")
        }
    };
    for (i, (id, _)) in holds.iter().enumerate() {
        let state = state(id.clone()).await;
        match i {
            0..30 => assert_eq!(state, "released"),
            30..35 => assert!(state == "released" || state == "converted", "fan {i}: {state}"),
            _ => assert_eq!(state, "active", "fan {i}: untouched"),
        }
    }
    let (freed, held): (i64, i64) =
        sqlx::query_as("SELECT count(*) FILTER (WHERE reason = 'release'), (SELECT count(*) FROM seats WHERE state = 'held') FROM seat_events")
            .fetch_one(&app.pool)
            .await
            .expect("counts");
    let checkouts_lost = by_fan.iter().filter(|(i, a)| (30..35).contains(*i) && a.contains(&("release", 204))).count() as i64;
    assert_eq!(freed, 2 * (30 + checkouts_lost), "each released seat logged once");
    assert_eq!(held, 2 * 5, "the wrong token's and the other fan's holds still stand");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_duplicate_seats_are_refused_without_holding_anything() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 8).await;
    let fan = app.fan().await;
    let r = fan.hold(event, &["A-1-1", "Z-9-99"]).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.body["error"], "invalid_input");
    assert!(r.body["message"].as_str().unwrap().contains("Z-9-99"));
    let r = fan.hold(event, &["A-1-1", "A-1-1"]).await;
    assert_eq!(r.status, 422);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_reaper_per_event_even_with_many_instances() {
    let app = spawn_app_with(|s| s.reaper_interval_ms = 60_000).await;
    let event = app.event(4, 25, 1, 50).await;
    let fans = app.fans(4).await;
    for (i, fan) in fans.iter().enumerate() {
        let seats: Vec<String> = (1..=25).map(|n| format!("A-{}-{n}", i + 1)).collect();
        let seats: Vec<&str> = seats.iter().map(String::as_str).collect();
        assert_eq!(fan.hold(event, &seats).await.status, 201);
    }
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    // Four "instances" reap at once, in small batches.
    let rounds = join_all((0..4).map(|_| app.engine.reap_once(7))).await;
    let mut freed: u64 = rounds.into_iter().map(|r| r.unwrap()).sum();
    // One that lost the lock left work for the next round; nothing is freed twice.
    freed += app.engine.reap_once(1000).await.unwrap();
    assert_eq!(freed, 100);
    let logged: i64 = sqlx::query_scalar("SELECT count(*) FROM seat_events WHERE event_id = $1 AND reason = 'expired'")
        .bind(event)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(logged, 100, "each seat expired exactly once");
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_available, 100);
}

async fn hold_with_key(fan: &Client, event: uuid::Uuid, seats: &[&str], key: &str) -> Reply {
    fan.send(
        fan.http
            .post(format!("{}/api/v1/events/{event}/holds", fan.base))
            .header("idempotency-key", key)
            .json(&serde_json::json!({ "seat_ids": seats })),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_hold_with_its_key_gets_the_same_hold_back() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    // The first request's answer is lost; retries race each other.
    let answers = join_all((0..8).map(|_| hold_with_key(&fan, event, &["A-1-1", "A-1-2"], "retry-1"))).await;
    let first = answers.iter().find(|r| r.status == 201).expect("one made the hold");
    for r in &answers {
        assert!(r.status == 201 || r.status == 200, "{} {}", r.status, r.body);
        assert_eq!((&r.body["hold_id"], &r.body["hold_token"]), (&first.body["hold_id"], &first.body["hold_token"]));
    }
    assert_eq!(answers.iter().filter(|r| r.status == 201).count(), 1);
    let holds: i64 = sqlx::query_scalar("SELECT count(*) FROM holds").fetch_one(&app.pool).await.unwrap();
    assert_eq!(holds, 1);
    // The same key for other seats is another request.
    let other = hold_with_key(&fan, event, &["A-1-3"], "retry-1").await;
    assert_eq!((other.status, other.body["error"].as_str()), (409, Some("idempotency_key_reused")), "{}", other.body);
    // Once its hold has ended, the key answers so.
    let released = fan.release(first.body["hold_id"].as_str().unwrap(), first.body["hold_token"].as_str().unwrap()).await;
    assert_eq!(released.status, 204);
    let late = hold_with_key(&fan, event, &["A-1-2", "A-1-1"], "retry-1").await;
    assert_eq!((late.status, late.body["error"].as_str()), (410, Some("hold_expired")), "{}", late.body);
    assert_eq!(seat_state(&app.pool, event, "A-1-1").await, "available");
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_again_for_ones_own_held_seats_returns_that_hold() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let fan = app.fan().await;
    let first = fan.hold(event, &["A-1-4", "A-1-5"]).await;
    assert_eq!(first.status, 201);
    let again = fan.hold(event, &["A-1-5", "A-1-4"]).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["hold_id"], first.body["hold_id"]);
    // Not the same seats: the fan's own seat is named as taken, as for anyone.
    let overlap = fan.hold(event, &["A-1-5", "A-1-6"]).await;
    assert_eq!((overlap.status, overlap.body["conflict_seats"].clone()), (409, serde_json::json!(["A-1-5"])));
    // Someone else asking for them is refused.
    let rival = app.fan().await;
    assert_eq!(rival.hold(event, &["A-1-4", "A-1-5"]).await.status, 409);
    // The app's server function sends a key: the same answer.
    let body = serde_json::json!({ "event_id": event, "seat_ids": ["A-1-8"], "idempotency_key": "app-key-1" });
    let made = fan.post("/_app/hold", body.clone()).await;
    let remade = fan.post("/_app/hold", body).await;
    assert_eq!((made.status, remade.status), (201, 200), "{} / {}", made.body, remade.body);
    assert_eq!(made.body["hold_id"], remade.body["hold_id"]);
    app.assert_invariants().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holds_arriving_together_share_database_calls_and_each_gets_its_own_answer() {
    let app = spawn_app().await;
    let event = app.event(5, 30, 300, 8).await;
    let fans = app.fans(120).await;
    // Every fan a seat of their own, and every tenth fan also races for A-1-1.
    let attempts = fans.iter().enumerate().map(|(i, fan)| {
        let own = format!("A-{}-{}", 1 + (i + 1) / 30, 1 + (i + 1) % 30);
        async move {
            let mine = fan.hold(event, &[own.as_str()]).await;
            let contested = if i % 10 == 0 { Some(fan.hold(event, &["A-1-1"]).await) } else { None };
            (own, mine, contested)
        }
    });
    let replies = join_all(attempts).await;
    for (own, mine, _) in &replies {
        assert_eq!(mine.status, 201, "{own}: {}", mine.body);
        assert_eq!(mine.body["seat_ids"], serde_json::json!([own]));
    }
    let contested: Vec<u16> = replies.iter().filter_map(|(_, _, c)| c.as_ref().map(|r| r.status)).collect();
    assert_eq!(contested.iter().filter(|s| **s == 201).count(), 1, "one winner of A-1-1: {contested:?}");
    assert!(contested.iter().all(|s| *s == 201 || *s == 409), "{contested:?}");
    let (holds, calls, refused_from_board) = app.engine.hold_batching();
    assert_eq!(holds + refused_from_board, 132);
    assert!(holds >= 121, "every granted hold went to the database: {holds}");
    assert!(calls < holds, "{holds} holds in {calls} calls: none shared a commit");
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_held, 121);
}

/// The batch function decides requests in order, each all or nothing: a
/// request that loses one seat to an earlier one in the same batch takes
/// none, and a later one can still have the seat it left free. It gives the
/// whole answer: a retry (by key, or without one by exactly the seats) gets
/// the hold back, from the same batch or an earlier one; a key used for
/// another request and ids the event lacks are named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_batch_decides_its_requests_as_if_one_by_one() {
    let app = spawn_app().await;
    let event = app.event(1, 10, 300, 4).await;
    let fans: Vec<uuid::Uuid> = (0..4).map(|_| uuid::Uuid::new_v4()).collect();
    for (i, fan) in fans.iter().enumerate() {
        sqlx::query("INSERT INTO users (user_id, email, name, password_hash, role) VALUES ($1, $2, 'Fan', 'x', 'fan')")
            .bind(fan)
            .bind(format!("batch-{i}-{fan}@example.test"))
            .execute(&app.pool)
            .await
            .expect("fan");
    }
    let request = |fan: uuid::Uuid, seats: &[&str], key: Option<&str>, hash: &str| {
        serde_json::json!({ "fan": fan, "seats": seats, "hold": uuid::Uuid::new_v4(), "token": uuid::Uuid::new_v4().to_string(),
                            "tag": "t", "key": key, "hash": hash })
    };
    type Row = (i32, String, Option<Vec<String>>, Option<uuid::Uuid>, Option<String>);
    let decide = |batch: serde_json::Value| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<_, Row>("SELECT request_index, outcome, seat_ids, hold_id, hold_token FROM hold_batch($1, 1, $2) ORDER BY request_index")
                .bind(event)
                .bind(&batch)
                .fetch_all(&pool)
                .await
                .expect("hold_batch")
        }
    };
    let batch = serde_json::json!([
        request(fans[0], &["A-1-1", "A-1-2"], None, "h0"),
        request(fans[1], &["A-1-2", "A-1-3"], None, "h1"),
        request(fans[2], &["A-1-3"], Some("k"), "h2"),
        request(fans[2], &["A-1-4"], Some("k"), "h3"),
        request(fans[3], &["A-1-5", "A-1-6", "A-1-7", "A-1-8", "A-1-9"], None, "h4"),
        request(fans[2], &["A-1-3"], Some("k"), "h2"),
        request(fans[0], &["A-1-2", "A-1-1"], None, "h0"),
        request(fans[1], &["A-1-4", "Z-9-9"], None, "h5"),
        request(fans[3], &["A-1-2", "A-1-1"], None, "h0"),
    ]);
    let rows = decide(batch.clone()).await;
    let outcomes: Vec<(&str, Option<&Vec<String>>)> = rows.iter().map(|(_, o, f, ..)| (o.as_str(), f.as_ref())).collect();
    let seats = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(outcomes[0], ("held", Some(&seats(&["A-1-1", "A-1-2"]))));
    assert_eq!(outcomes[1], ("conflict", Some(&seats(&["A-1-3"]))), "A-1-2 went to the first request");
    assert_eq!(outcomes[2].0, "held", "A-1-3 was left free by the refused request");
    assert_eq!(outcomes[3].0, "key_reused", "the key was used for A-1-3");
    assert_eq!(outcomes[4].0, "too_many");
    let hold_of = |i: usize| batch[i]["hold"].as_str().and_then(|h| h.parse::<uuid::Uuid>().ok());
    assert_eq!((outcomes[5], rows[5].3), (("earlier", Some(&seats(&["A-1-3"]))), hold_of(2)), "the key's retry gets its hold");
    assert_eq!(rows[5].4.as_deref(), batch[2]["token"].as_str(), "with its token");
    assert_eq!((outcomes[6], rows[6].3), (("earlier", Some(&seats(&["A-1-1", "A-1-2"]))), hold_of(0)), "the same seats again, without a key");
    assert_eq!(outcomes[7], ("unknown", Some(&seats(&["Z-9-9"]))));
    assert_eq!((outcomes[8], rows[8].3), (("conflict", Some(&seats(&[]))), None), "another fan's hold is not theirs to have");
    for (seat, want) in [("A-1-1", "held"), ("A-1-2", "held"), ("A-1-3", "held"), ("A-1-4", "available"), ("A-1-5", "available")] {
        assert_eq!(seat_state(&app.pool, event, seat).await, want, "{seat}");
    }

    // In a later batch the same retries find the holds in the database.
    let again = serde_json::json!([
        request(fans[2], &["A-1-3"], Some("k"), "h2"),
        request(fans[0], &["A-1-1", "A-1-2"], None, "h0"),
        request(fans[0], &["A-1-1"], None, "h6"),
        request(fans[3], &["A-1-1"], None, "h7"),
    ]);
    let rows = decide(again).await;
    assert_eq!((rows[0].1.as_str(), rows[0].3), ("earlier", hold_of(2)));
    assert_eq!((rows[1].1.as_str(), rows[1].3), ("earlier", hold_of(0)));
    assert_eq!(rows[2].1, "conflict", "part of the fan's own hold is not that hold");
    assert_eq!(rows[3].1, "conflict");
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_held, 3);
}

/// The board keeps 32 bits of each seat's holder: the database's tag and
/// the engine's agree, so a fan's own seats are never taken for someone
/// else's.
#[tokio::test]
async fn the_board_and_the_database_tag_a_holder_alike() {
    let app = spawn_app().await;
    let mut ids: Vec<uuid::Uuid> = (0..32).map(|_| uuid::Uuid::new_v4()).collect();
    ids.extend(
        ["ffffffff-0000-4000-8000-000000000000", "80000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000000"]
            .map(|s| s.parse::<uuid::Uuid>().expect("uuid")),
    );
    for id in ids {
        let tag: i32 = sqlx::query_scalar("SELECT holder_tag($1)").bind(id).fetch_one(&app.pool).await.expect("holder_tag");
        assert_eq!(tag, frontrow_engine::venue::live::holder_tag(id.into()), "{id}");
    }
}

/// While holds wait for the database, a seat the board already shows taken
/// is refused from memory; the database still decides every grant, and a
/// refused fan's other seats are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seat_the_board_shows_taken_is_refused_without_waiting_for_the_database() {
    let app = spawn_app().await;
    let event = app.event(5, 30, 300, 8).await;
    let fans = app.fans(101).await;
    let first = fans[0].hold(event, &["A-1-1"]).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let viewer = app.client();
    eventually(10, "the board hears of the hold", || {
        let viewer = &viewer;
        async move {
            let map = viewer.get(&format!("/api/v1/events/{event}/seats")).await;
            let held = map.body["seats"].as_array().into_iter().flatten().any(|s| s["seat_id"] == "A-1-1" && s["status"] == "held");
            held.then_some(())
        }
    })
    .await;

    // A hundred fans each hold a free seat of their own; every fifth also
    // asks for the taken seat together with a free one.
    let attempts = fans[1..].iter().enumerate().map(|(i, fan)| {
        let own = format!("A-{}-{}", 2 + i / 30, 1 + i % 30);
        async move {
            let mine = fan.hold(event, &[own.as_str()]).await;
            let spare = format!("A-1-{}", 2 + i % 28);
            let contested = if i % 5 == 0 { Some(fan.hold(event, &["A-1-1", spare.as_str()]).await) } else { None };
            (mine, contested)
        }
    });
    // Meanwhile the first fan asks for its seat again, without a key: the
    // board shows it taken, but perhaps by this fan, so the database answers
    // with the fan's own hold.
    let retries = (0..10).map(|_| fans[0].hold(event, &["A-1-1"]));
    let (replies, retries) = tokio::join!(join_all(attempts), join_all(retries));
    for (mine, contested) in &replies {
        assert_eq!(mine.status, 201, "{}", mine.body);
        if let Some(r) = contested {
            assert_eq!(r.status, 409, "{}", r.body);
            assert_eq!(r.body["conflict_seats"], serde_json::json!(["A-1-1"]));
        }
    }
    for retry in &retries {
        assert_eq!((retry.status, &retry.body["hold_id"]), (200, &first.body["hold_id"]), "{}", retry.body);
    }
    let (_, _, refused_from_board) = app.engine.hold_batching();
    assert!(refused_from_board >= 1, "no refusal came from the board");
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_held, 101, "the first hold and one seat per fan; nothing for the refused pairs");
}
