//! Best available: adjacent seats in one row of a tier, held atomically.

use std::collections::HashSet;

use crate::common::*;
use serde_json::json;

fn numbers(seat_ids: &serde_json::Value) -> (String, Vec<i32>) {
    let ids: Vec<&str> = seat_ids.as_array().expect("seat_ids").iter().filter_map(|v| v.as_str()).collect();
    let row = ids[0].rsplit_once('-').map(|(r, _)| r.to_owned()).unwrap_or_default();
    assert!(ids.iter().all(|id| id.starts_with(&format!("{row}-"))), "one row: {ids:?}");
    let mut n: Vec<i32> = ids.iter().filter_map(|id| id.rsplit_once('-').and_then(|(_, n)| n.parse().ok())).collect();
    n.sort_unstable();
    (row, n)
}

#[tokio::test]
async fn picks_the_front_row_centre_and_holds_it() {
    let app = spawn_app().await;
    let event_id = app.event(3, 10, 300, 6).await;
    let fan = app.fan().await;
    let r = fan.post(&format!("/api/v1/events/{event_id}/holds/best"), json!({ "count": 3, "tier": "Standard" })).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let (row, seats) = numbers(&r.body["seat_ids"]);
    assert_eq!(row, "A-1");
    assert_eq!(seats, vec![4, 5, 6], "centred in a row of ten");
    assert_eq!(r.body["total_cents"], 15000);
    for n in seats {
        assert_eq!(seat_state(&app.pool, event_id, &format!("A-1-{n}")).await, "held");
    }
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn does_not_strand_a_single_seat() {
    let app = spawn_app().await;
    let event_id = app.event(2, 4, 300, 6).await;
    // Row 1 has seats 1-3 free after someone takes seat 4; two of them would
    // leave one alone, so the pair goes to row 2.
    let other = app.fan().await;
    assert_eq!(other.hold(event_id, &["A-1-4"]).await.status, 201);
    let fan = app.fan().await;
    let r = fan.post(&format!("/api/v1/events/{event_id}/holds/best"), json!({ "count": 2, "tier": "Standard" })).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let (row, seats) = numbers(&r.body["seat_ids"]);
    assert_eq!(row, "A-2");
    assert!(seats == vec![1, 2] || seats == vec![3, 4] || seats == vec![2, 3], "{seats:?}");
    app.stop().await;
}

#[tokio::test]
async fn refuses_what_cannot_be_done_and_changes_nothing() {
    let app = spawn_app().await;
    let event_id = app.event(1, 3, 300, 6).await;
    let fan = app.fan().await;
    let path = format!("/api/v1/events/{event_id}/holds/best");

    let r = fan.post(&path, json!({ "count": 4, "tier": "Standard" })).await;
    assert_eq!((r.status, r.body["error"].as_str()), (409, Some("no_seats_together")));
    let r = fan.post(&path, json!({ "count": 2, "tier": "Balcony" })).await;
    assert_eq!((r.status, r.body["error"].as_str()), (422, Some("invalid_input")));
    let r = fan.post(&path, json!({ "count": 0, "tier": "Standard" })).await;
    assert_eq!(r.status, 422);
    let r = fan.post(&path, json!({ "count": "two", "tier": "Standard" })).await;
    assert_eq!(r.status, 422);
    let r = fan.post(&format!("/api/v1/events/{}/holds/best", uuid::Uuid::new_v4()), json!({ "count": 1, "tier": "Standard" })).await;
    assert_eq!(r.status, 404);
    let r = app.client().post(&path, json!({ "count": 1, "tier": "Standard" })).await;
    assert_eq!(r.status, 401);
    let report = app.assert_invariants().await;
    assert_eq!(report.seats_held, 0, "nothing was held by refused requests");
    app.stop().await;
}

#[tokio::test]
async fn concurrent_fans_get_disjoint_adjacent_pairs() {
    let app = spawn_app().await;
    let event_id = app.event(4, 10, 300, 6).await;
    let fans = app.fans(30).await;
    let path = format!("/api/v1/events/{event_id}/holds/best");
    let attempts = fans.iter().map(|f| f.post(&path, json!({ "count": 2, "tier": "Standard" })));
    let replies = futures::future::join_all(attempts).await;

    let mut taken = HashSet::new();
    let mut granted = 0;
    for r in &replies {
        match r.status {
            201 => {
                granted += 1;
                let (row, seats) = numbers(&r.body["seat_ids"]);
                assert_eq!(seats.len(), 2);
                assert_eq!(seats[1], seats[0] + 1, "side by side: {seats:?}");
                for n in seats {
                    assert!(taken.insert(format!("{row}-{n}")), "seat {row}-{n} given twice");
                }
            }
            409 => assert!(matches!(r.body["error"].as_str(), Some("no_seats_together" | "seats_unavailable")), "{}", r.body),
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert!(granted >= 10, "40 seats, 30 fans wanting two: at least a quarter served, got {granted}");
    let held: i64 = sqlx::query_scalar("SELECT count(*) FROM seats WHERE event_id = $1 AND state = 'held'")
        .bind(event_id)
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(held as usize, taken.len());
    app.assert_invariants().await;
    app.stop().await;
}
