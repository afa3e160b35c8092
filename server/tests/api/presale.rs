//! Presale codes: staff make shared or unique codes that open some seats
//! before the public sale; each use is counted once under races, a lapsed
//! or released hold gives its use back, and guessing is throttled.

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

/// Front row 1 and Back row 2, `seats` seats each, public sale in 2029,
/// holds lasting `ttl` seconds.
async fn presale_event(staff: &Client, seats: usize, ttl: u32) -> Uuid {
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Presale Night", "kind": "concert", "venue": "Hall",
                "starts_at": "2030-01-01T20:00:00Z", "sale_opens_at": "2029-06-01T10:00:00Z",
                "hold_ttl_seconds": ttl, "max_seats_per_order": 6,
                "tiers": [{ "tier": "Front", "price_cents": 5000 }, { "tier": "Back", "price_cents": 2500 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": seats, "tier": "Front" }, { "row": "2", "seats": seats, "tier": "Back" }] }]
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["event_id"].as_str().and_then(|id| id.parse().ok()).expect("event_id")
}

/// A batch of codes open from now for an hour, with `fields` on top.
async fn make_codes(staff: &Client, event: Uuid, fields: Value) -> Reply {
    let now = chrono::Utc::now();
    let mut body = json!({
        "label": "Fan club", "max_uses": 1, "limit_unit": "orders",
        "starts_at": (now - chrono::Duration::minutes(1)).to_rfc3339(), "ends_at": (now + chrono::Duration::hours(1)).to_rfc3339()
    });
    if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
        body.extend(fields.clone());
    }
    staff.post(&format!("/api/v1/admin/events/{event}/access-codes"), body).await
}

async fn enter(fan: &Client, event: Uuid, code: &str) -> Reply {
    fan.post(&format!("/api/v1/events/{event}/presale-code"), json!({ "code": code })).await
}

/// Holds made with a code, as the database has them.
async fn holds_with_code(app: &TestApp, event: Uuid) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT count(*) FROM holds WHERE event_id = $1 AND access_code_id IS NOT NULL")
        .bind(event)
        .fetch_one(&app.pool)
        .await
        .expect("holds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_fans_race_one_single_use_code_one_wins_and_a_lapsed_or_released_hold_gives_its_use_back() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let event = presale_event(&staff, 30, 2).await;
    let made = make_codes(&staff, event, json!({ "count": 1 })).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let code = made.body["codes"][0].as_str().expect("a unique code").to_owned();
    assert_eq!(code.len(), 14, "XXXX-XXXX-XXXX: {code}");

    // Before the public sale, no code: no seats.
    let fans = app.fans(50).await;
    assert_error("no code before the sale", &fans[0].hold(event, &["A-1-1"]).await, 403, "sale_not_open");

    // The code leaked: 50 fans enter it and race for different seats.
    for fan in &fans {
        let pass = enter(fan, event, &code.to_lowercase()).await;
        assert_eq!(pass.status, 200, "{}", pass.body);
    }
    let seats: Vec<String> = (0..50).map(|i| format!("A-{}-{}", 1 + i / 30, 1 + i % 30)).collect();
    let holds = futures::future::join_all(fans.iter().zip(&seats).map(|(fan, seat)| async move { fan.hold(event, &[seat.as_str()]).await })).await;
    let won: Vec<&Reply> = holds.iter().filter(|r| r.status == 201).collect();
    assert_eq!(won.len(), 1, "one use, one hold: {:?}", holds.iter().map(|r| r.status).collect::<Vec<_>>());
    for lost in holds.iter().filter(|r| r.status != 201) {
        assert_error("the code's use is taken", lost, 409, "access_code_used_up");
    }
    assert_eq!(holds_with_code(&app, event).await, 1);
    app.assert_invariants().await;

    // The hold lapses: its use comes back at once, before any sweep.
    let winner = holds.iter().position(|r| r.status == 201).expect("a winner");
    let next = (winner + 1) % fans.len();
    let again = eventually(10, "the lapsed hold's use to come back", || async {
        let r = fans[next].hold(event, &[seats[next].as_str()]).await;
        (r.status == 201).then_some(r)
    })
    .await;
    // Released: given back again.
    let released =
        fans[next].release(again.body["hold_id"].as_str().unwrap_or_default(), again.body["hold_token"].as_str().unwrap_or_default()).await;
    assert_eq!(released.status, 204, "{}", released.body);
    let third = (winner + 2) % fans.len();
    let bought = fans[third].hold(event, &[seats[third].as_str()]).await;
    assert_eq!(bought.status, 201, "{}", bought.body);
    let paid = fans[third]
        .checkout(
            bought.body["hold_id"].as_str().unwrap_or_default(),
            bought.body["hold_token"].as_str().unwrap_or_default(),
            "tok_visa",
            "presale-1",
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    // Paid for, the use stays taken, however long the hold would have lasted.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_error("a paid use stays taken", &fans[next].hold(event, &[seats[next].as_str()]).await, 409, "access_code_used_up");

    // Staff see the use, and the code in the CSV with it.
    let list = staff.get(&format!("/api/v1/admin/events/{event}/access-codes")).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["batches"][0]["uses"], json!(1));
    assert_eq!(list.body["batches"][0]["codes_used"], json!(1));
    let batch = list.body["batches"][0]["batch_id"].as_str().unwrap_or_default().to_owned();
    let csv = staff.get(&format!("/api/v1/admin/events/{event}/access-codes/{batch}/codes.csv")).await;
    assert_eq!(csv.status, 200);
    let text = csv.body.as_str().unwrap_or_default();
    assert!(text.starts_with("code,uses,max_uses,limit_unit,label,starts_at,ends_at,revoked_at\n"), "{text}");
    assert!(text.contains(&format!("{code},1,1,orders,Fan club,")), "{text}");
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presale_code_opens_only_its_seats_in_its_window_and_guessing_it_is_throttled() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let event = presale_event(&staff, 8, 60).await;

    // Staff's batch is checked.
    let now = chrono::Utc::now();
    let refusals = [
        ("code and count", json!({ "code": "FANS-2030", "count": 3 })),
        ("neither", json!({})),
        ("a tier the event lacks", json!({ "code": "FANS-2030", "tiers": ["Balcony"] })),
        ("a section the event lacks", json!({ "code": "FANS-2030", "sections": ["Z"] })),
        ("a tier named twice", json!({ "code": "FANS-2030", "tiers": ["Front", "Front"] })),
        ("past the public sale", json!({ "code": "FANS-2030", "ends_at": "2029-06-02T10:00:00Z" })),
        ("a code too short", json!({ "code": "AB" })),
        ("an unknown field", json!({ "code": "FANS-2030", "price_cents": 1 })),
    ];
    for (what, fields) in refusals {
        let r = make_codes(&staff, event, fields).await;
        assert!(r.status == 422 || r.status == 400, "{what}: {} {}", r.status, r.body);
    }
    let fan = app.fan().await;
    assert_error("a fan makes codes", &make_codes(&fan, event, json!({ "code": "MINE-2030" })).await, 403, "forbidden");

    // A shared fan-club code: the front tier, 3 tickets over all its fans.
    let shared = make_codes(&staff, event, json!({ "code": "FANCLUB-2030", "tiers": ["Front"], "max_uses": 3, "limit_unit": "tickets" })).await;
    assert_eq!(shared.status, 201, "{}", shared.body);
    assert_eq!(shared.body["batch"]["shared"], json!(true));
    assert_eq!(shared.body["batch"]["hint"], json!("FA…"), "a shared code is kept only hashed");
    let again = make_codes(&staff, event, json!({ "code": "fanclub2030" })).await;
    assert_error("the same code twice in one event", &again, 422, "invalid_input");
    let stored: Option<String> =
        sqlx::query_scalar("SELECT code FROM access_codes WHERE event_id = $1").bind(event).fetch_one(&app.pool).await.expect("code row");
    assert_eq!(stored, None, "the shared code is not stored as typed");

    // Fans see the presale, never its codes.
    let detail = app.client().get(&format!("/api/v1/events/{event}")).await;
    assert_eq!(detail.body["presales"][0]["label"], json!("Fan club"), "{}", detail.body);
    assert!(!detail.body.to_string().contains("FANCLUB"), "{}", detail.body);

    // Entered in any case and spacing; it opens only the front.
    let pass = enter(&fan, event, " fanclub 2030 ").await;
    assert_eq!(pass.status, 200, "{}", pass.body);
    assert_eq!(pass.body["tiers"], json!(["Front"]));
    assert_error("a back seat", &fan.hold(event, &["A-2-1"]).await, 403, "access_code_scope");
    assert_error("a front and a back seat", &fan.hold(event, &["A-1-1", "A-2-1"]).await, 403, "access_code_scope");
    let first = fan.hold(event, &["A-1-1", "A-1-2"]).await;
    assert_eq!(first.status, 201, "{}", first.body);
    // Tickets are counted over every fan of the code: 1 of 3 left.
    let other = app.fan().await;
    assert_eq!(enter(&other, event, "FANCLUB-2030").await.status, 200);
    assert_error("two more than are left", &other.hold(event, &["A-1-3", "A-1-4"]).await, 409, "access_code_used_up");
    let last = other.hold(event, &["A-1-3"]).await;
    assert_eq!(last.status, 201, "{}", last.body);
    assert_eq!(holds_with_code(&app, event).await, 2);

    // A code for later is taken (its fan may queue for the presale's draw)
    // but opens nothing yet; a withdrawn one opens nothing.
    let later = make_codes(
        &staff,
        event,
        json!({ "code": "LATER-2030", "starts_at": (now + chrono::Duration::hours(1)).to_rfc3339(), "ends_at": (now + chrono::Duration::hours(2)).to_rfc3339() }),
    )
    .await;
    assert_eq!(later.status, 201, "{}", later.body);
    let third = app.fan().await;
    let early = enter(&third, event, "LATER-2030").await;
    assert_eq!(early.status, 200, "{}", early.body);
    assert!(
        early.body["starts_at"].as_str().is_some_and(|at| at.parse::<chrono::DateTime<chrono::Utc>>().is_ok_and(|at| at > now)),
        "{}",
        early.body
    );
    assert_error("a hold before the code's window", &third.hold(event, &["A-2-1"]).await, 403, "access_code_invalid");
    let batch = shared.body["batch"]["batch_id"].as_str().unwrap_or_default();
    let revoked = staff.post(&format!("/api/v1/admin/events/{event}/access-codes/{batch}/revoke"), json!({})).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert!(revoked.body["revoked_at"].is_string());
    assert_error("a withdrawn code", &enter(&third, event, "FANCLUB-2030").await, 403, "access_code_invalid");
    // The fan who entered it before: their next hold is refused too; their holds stand.
    let released = fan.release(first.body["hold_id"].as_str().unwrap_or_default(), first.body["hold_token"].as_str().unwrap_or_default()).await;
    assert_eq!(released.status, 204);
    assert_error("a hold with a withdrawn code", &fan.hold(event, &["A-1-5"]).await, 403, "access_code_invalid");
    assert_eq!(seat_state(&app.pool, event, "A-1-3").await, "held");
    let log = staff.get(&format!("/api/v1/admin/events/{event}/log")).await;
    let kinds: Vec<&str> = log.body["entries"].as_array().map(|es| es.iter().filter_map(|e| e["kind"].as_str()).collect()).unwrap_or_default();
    assert!(kinds.contains(&"access_codes_created") && kinds.contains(&"access_codes_revoked"), "{kinds:?}");

    // Guessing: wrong codes are counted per fan; soon every try waits,
    // even the right code, and nothing is told about which codes exist.
    let guesser = app.fan().await;
    let mut throttled = None;
    for n in 0..15 {
        let r = enter(&guesser, event, &format!("GUESS-{n:04}")).await;
        if r.status == 429 {
            throttled = Some(n);
            break;
        }
        assert_error("a wrong code", &r, 403, "access_code_invalid");
    }
    assert!(throttled.is_some_and(|n| n >= 10), "throttled after the free tries: {throttled:?}");
    // After the wait, one more try is counted, and the next wait is longer.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_error("a wrong code after the wait", &enter(&guesser, event, "GUESS-AGAIN").await, 403, "access_code_invalid");
    assert_error("the right code while waiting", &enter(&guesser, event, "LATER-2030").await, 429, "rate_limited");

    // Once the public sale opens, codes change nothing: anyone holds anything.
    let opened = staff
        .send(staff.http.patch(app.url(&format!("/api/v1/admin/events/{event}"))).json(&json!({ "sale_opens_at": "2020-01-01T10:00:00Z" })))
        .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let public = app.fan().await;
    let open_hold = eventually(10, "the public sale to open on the board", || async {
        let r = public.hold(event, &["A-2-2"]).await;
        (r.status == 201).then_some(r)
    })
    .await;
    assert_eq!(open_hold.status, 201);
    assert_eq!(holds_with_code(&app, event).await, 2, "a public hold uses no code");
    app.assert_invariants().await;
    app.stop().await;
}
