//! What a crowd in the waiting room costs: fans asking where they stand at
//! once share one database call (each still answered with their own entry
//! alone), and a waiting socket far back hears a new place only now and
//! then, near the front or admitted at once.

use std::time::Duration;

use frontrow_model::{QueueState, SalePhase};
use futures::future::join_all;
use futures::StreamExt;

use crate::common::*;
use crate::holds_money_sockets::{queue_socket, session_cookie};
use crate::waiting_room::{bulk_fans, room_event, round};

/// Hundreds of status calls and live-socket lookups at once, two events
/// mixed in one batch: every fan gets their own place; a token asked for
/// with another event or by another fan names nothing.
#[tokio::test]
async fn status_reads_arriving_together_answer_each_fan_their_own_entry() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let (first, second) = (room_event(&app, 100, -60).await, room_event(&app, 100, -60).await);
    let fans = bulk_fans(&app.pool, 300).await;
    let mut joined = Vec::new();
    for (i, &fan) in fans.iter().enumerate() {
        let event_id = if i % 3 == 0 { second } else { first };
        let view = app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "b").await.expect("join");
        joined.push((event_id, fan, view));
    }

    let statuses =
        join_all(joined.iter().map(|(event_id, fan, view)| app.engine.queue_status((*event_id).into(), &view.queue_token, *fan, "b"))).await;
    let entries = join_all(joined.iter().map(|(event_id, _, view)| app.engine.queue_entry((*event_id).into(), &view.queue_token))).await;
    for ((event_id, fan, view), (status, entry)) in joined.iter().zip(statuses.into_iter().zip(entries)) {
        let status = status.expect("status");
        assert_eq!(
            (status.state, status.position, &status.queue_token),
            (QueueState::Waiting, view.position, &view.queue_token),
            "fan {fan} of {event_id}"
        );
        let (owner, phase, ticket) = entry.expect("entry");
        assert_eq!((owner, phase, ticket.map(|t| t > 0)), (*fan, SalePhase::Public, Some(true)));
    }
    // Places within each event are distinct: nobody was given another's.
    for event_id in [first, second] {
        let mut places: Vec<i64> = joined.iter().filter(|j| j.0 == event_id).map(|j| j.2.position).collect();
        let count = places.len();
        places.sort_unstable();
        places.dedup();
        assert_eq!(places.len(), count);
    }

    // joined[1] and joined[2] queue for the first event.
    let (event_id, fan, view) = &joined[1];
    let (_, other_fan, _) = &joined[2];
    let wrong = join_all([
        app.engine.queue_status(second.into(), &view.queue_token, *fan, "b"),
        app.engine.queue_status((*event_id).into(), &view.queue_token, *other_fan, "b"),
        app.engine.queue_status((*event_id).into(), "0123456789abcdef0123456789abcdef", *fan, "b"),
    ])
    .await;
    for answer in wrong {
        assert!(matches!(answer, Err(frontrow_engine::EngineError::NotFound)), "{answer:?}");
    }
    assert!(matches!(app.engine.queue_entry(second.into(), &view.queue_token).await, Err(frontrow_engine::EngineError::NotFound)));
    app.stop().await;
}

/// The next frame on a queue socket within `wait`, as JSON.
async fn next_frame(socket: &mut crate::live::Socket, wait: Duration) -> Option<serde_json::Value> {
    let frame = tokio::time::timeout(wait, socket.next()).await.ok()?.expect("open").expect("frame");
    Some(serde_json::from_str(frame.to_text().expect("text")).expect("json"))
}

#[tokio::test]
async fn a_fan_far_back_hears_a_new_place_now_and_then_one_near_the_front_or_admitted_at_once() {
    let app = spawn_app_with(|s| {
        s.admission_interval_ms = 3_600_000;
        s.queue_frame_every_ms = 60_000;
    })
    .await;
    let event_id = room_event(&app, 1000, -60).await;
    let fans = bulk_fans(&app.pool, 300).await;
    let mut tokens = Vec::new();
    for &fan in &fans {
        tokens.push(app.engine.join_queue(event_id.into(), SalePhase::Public, fan, "b").await.expect("join").queue_token);
    }
    // Tickets follow the joins: fan i has ticket i + 1.
    let (admitted_next, near, far) = (35, 50, 299);
    let mut sockets = Vec::new();
    for i in [admitted_next, near, far] {
        let cookie = session_cookie(&app, fans[i]).await;
        sockets.push(queue_socket(&app, event_id, &tokens[i], Some(&cookie)).await.expect("socket"));
    }
    sqlx::query("UPDATE events SET max_active = 20, admission_factor = 1 WHERE event_id = $1")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("limit");
    // The first round: everyone hears their place.
    assert_eq!(round(&app, event_id).await.admitted_through, 20);
    let mut places = Vec::new();
    for socket in &mut sockets {
        let frame = next_frame(socket, Duration::from_secs(5)).await.expect("a first frame");
        places.push((frame["state"].clone(), frame["position"].as_i64()));
    }
    let waiting = serde_json::json!("waiting");
    assert_eq!(places, vec![(waiting.clone(), Some(15)), (waiting.clone(), Some(30)), (waiting.clone(), Some(279))]);

    // The second round, right after: 20 more let in.
    sqlx::query("UPDATE queue_entries SET admission_expires_at = now() - interval '1 second' WHERE event_id = $1 AND admission_id IS NOT NULL")
        .bind(event_id)
        .execute(&app.pool)
        .await
        .expect("leave");
    assert_eq!(round(&app, event_id).await.admitted_through, 40);
    let admitted = next_frame(&mut sockets[0], Duration::from_secs(5)).await.expect("admitted at once");
    assert_eq!(admitted["state"], "admitted");
    let nearer = next_frame(&mut sockets[1], Duration::from_secs(5)).await.expect("near the front: at once");
    assert_eq!((&nearer["state"], nearer["position"].as_i64()), (&waiting, Some(10)));
    assert!(next_frame(&mut sockets[2], Duration::from_millis(800)).await.is_none(), "far back: not again within the interval");
    app.stop().await;
}
