//! `hold_batch` decides the common batch of an open sale (distinct fans,
//! disjoint named seats, each request granted or not admitted) in a few
//! statements over the whole batch, and any other batch request by request.
//! The two must answer and write alike. Each test sends the same requests to
//! two events alike: once as they are (decided together) and once behind a
//! request the database refuses (which sends the batch through the loop),
//! then compares the answers and the rows written.

use super::common::*;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

/// The fans' advisory lock key space the engine uses (`db::LOCK_FAN_LIMIT`).
const LOCK_FAN_LIMIT: i32 = 0x4652_0001;

/// One answer row of `hold_batch`, as compared across the two paths (the
/// lease's end is compared apart: each call sets its own).
type Answer = (i32, String, Option<Vec<String>>, Option<i64>, Option<Uuid>, bool);

async fn fan_ids(app: &TestApp, n: usize) -> Vec<Uuid> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let email = format!("batch-{}@example.test", Uuid::new_v4().simple());
        let user = app.engine.insert_user(&email, "Fan", "not-a-hash", frontrow_model::Role::Fan).await.expect("fan");
        ids.push(user.user_id.into());
    }
    ids
}

fn request(fan: Uuid, seats: &[&str], admitted: Option<&str>) -> Value {
    let token = format!("token-{}", Uuid::new_v4().simple());
    let mut r = json!({ "fan": fan, "seats": seats, "hold": Uuid::new_v4(), "token": token, "tag": &token[6..18],
                        "key": null, "hash": "h" });
    if let Some(phase) = admitted {
        r["admitted"] = json!(phase);
    }
    r
}

async fn hold_batch(pool: &PgPool, event: Uuid, requests: &[Value]) -> Vec<Answer> {
    let rows: Vec<(i32, String, Option<Vec<String>>, Option<chrono::DateTime<chrono::Utc>>, Option<i64>, Option<Uuid>, Option<String>)> =
        sqlx::query_as("SELECT * FROM hold_batch($1, $2, $3) ORDER BY request_index")
            .bind(event)
            .bind(LOCK_FAN_LIMIT)
            .bind(Value::Array(requests.to_vec()))
            .fetch_all(pool)
            .await
            .expect("hold_batch");
    rows.into_iter().map(|(i, outcome, seats, lease, total, hold, _)| (i, outcome, seats, total, hold, lease.is_some())).collect()
}

/// What the batch wrote for its fans: each hold (fan, seats, total, state)
/// and each of the event's seats taken (seat, state, holder), with the
/// audit rows, in a form that does not name the event or the hold ids.
async fn written(pool: &PgPool, event: Uuid) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT format('hold %s %s %s %s', user_id, seat_ids, total_cents, state) FROM holds WHERE event_id = $1
         UNION ALL
         SELECT format('seat %s %s %s', seat_id, state, holder_id) FROM seats WHERE event_id = $1 AND state <> 'available'
         UNION ALL
         SELECT format('audit %s %s->%s %s', seat_id, from_state, to_state, actor_id) FROM seat_events WHERE event_id = $1 AND reason = 'hold'
         ORDER BY 1",
    )
    .bind(event)
    .fetch_all(pool)
    .await
    .expect("rows written")
}

/// Sends `requests` to one new event as they are, and to another behind a
/// request for a seat a fan holds already; returns both answers (the second
/// without its first row) and both sets of rows.
async fn both_paths(app: &TestApp, waiting_room: bool, requests: impl Fn(&[Uuid]) -> Vec<Value>) -> [(Vec<Answer>, Vec<String>); 2] {
    let fans = fan_ids(app, 6).await;
    let mut results = Vec::new();
    for through_loop in [false, true] {
        let event = app.event(2, 10, 600, 4).await;
        sqlx::query("UPDATE events SET waiting_room_enabled = $2 WHERE event_id = $1")
            .bind(event)
            .bind(waiting_room)
            .execute(&app.pool)
            .await
            .expect("waiting room");
        let mut batch = requests(&fans);
        if through_loop {
            // The last fan holds A-2-10 first; asking for it again in the
            // batch is refused, so the batch cannot be decided at once.
            let first = hold_batch(&app.pool, event, &[request(fans[5], &["A-2-10"], Some("public"))]).await;
            assert_eq!(first[0].1, "held", "{first:?}");
            batch.insert(0, request(fans[4], &["A-2-10"], Some("public")));
        }
        let mut answers = hold_batch(&app.pool, event, &batch).await;
        if through_loop {
            assert_eq!(answers[0].1, "conflict", "the request that sends the batch through the loop: {answers:?}");
            answers.remove(0);
            for a in &mut answers {
                a.0 -= 1;
            }
        }
        let mut rows = written(&app.pool, event).await;
        if through_loop {
            rows.retain(|r| !r.contains(&fans[5].to_string()) && !r.contains("A-2-10"));
        }
        results.push((answers, rows));
    }
    let loop_path = results.pop().expect("loop");
    let together = results.pop().expect("together");
    [together, loop_path]
}

#[tokio::test]
async fn a_batch_decided_together_answers_and_writes_as_the_loop_does() {
    let app = spawn_app().await;
    let [together, loop_path] = both_paths(&app, false, |fans| {
        vec![
            request(fans[0], &["A-1-1", "A-1-2"], None),
            request(fans[1], &["A-1-3"], None),
            request(fans[2], &["A-1-10", "A-1-4", "A-1-7"], None),
            request(fans[3], &["A-2-1"], None),
        ]
    })
    .await;
    assert_eq!(together.0.len(), 4);
    assert!(together.0.iter().all(|a| a.1 == "held" && a.5), "every request held, with its lease: {:?}", together.0);
    assert_eq!(together.0[2].2.as_deref(), Some(&["A-1-10".to_owned(), "A-1-4".to_owned(), "A-1-7".to_owned()][..]), "seats in the order asked");
    assert_eq!(together.0[2].3, Some(15_000), "three seats at 5000");
    assert_eq!(together, loop_path, "the same answers and rows either way");
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn with_the_waiting_room_on_the_fans_not_admitted_are_refused_either_way() {
    let app = spawn_app().await;
    let [together, loop_path] = both_paths(&app, true, |fans| {
        vec![
            request(fans[0], &["A-1-1"], Some("public")),
            request(fans[1], &["A-1-2"], None),
            request(fans[2], &["A-1-3", "A-1-4"], Some("presale")),
            request(fans[3], &["A-1-5"], Some("public")),
        ]
    })
    .await;
    let outcomes: Vec<&str> = together.0.iter().map(|a| a.1.as_str()).collect();
    assert_eq!(outcomes, ["held", "not_admitted", "not_admitted", "held"]);
    assert!(together.0[1].2.is_none() && together.0[1].3.is_none() && !together.0[1].5, "a refusal names no seats: {:?}", together.0[1]);
    assert_eq!(together, loop_path, "the same answers and rows either way");
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn a_fan_at_the_limit_or_a_seat_taken_sends_the_batch_through_the_loop_with_the_same_answers() {
    // A batch that cannot be decided together (one fan three times, two
    // requests for one seat, a fan over the limit): each answer is what the
    // request would get alone, after the ones before it.
    let app = spawn_app().await;
    let fans = fan_ids(&app, 3).await;
    let event = app.event(1, 10, 600, 2).await;
    let answers = hold_batch(
        &app.pool,
        event,
        &[
            request(fans[0], &["A-1-1"], None),
            request(fans[0], &["A-1-2"], None),
            request(fans[0], &["A-1-3"], None),
            request(fans[1], &["A-1-1"], None),
            request(fans[2], &["A-1-4"], None),
        ],
    )
    .await;
    let outcomes: Vec<&str> = answers.iter().map(|a| a.1.as_str()).collect();
    assert_eq!(outcomes, ["held", "held", "too_many", "conflict", "held"], "{answers:?}");
    assert_eq!(seat_state(&app.pool, event, "A-1-3").await, "available");
    app.assert_invariants().await;
    app.stop().await;
}
