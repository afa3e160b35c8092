//! Venues drawn as venues: sections placed, turned and curved, standing
//! areas sold by count under the same invariants as seats, the overview
//! and section pages, the seat list without the map, and live feeds per
//! view.

use std::collections::HashSet;
use std::time::Duration;

use crate::common::*;
use crate::live::{next_frame, Socket};
use serde_json::{json, Value};
use uuid::Uuid;

/// A venue of one seated section (3 rows of 10, turned and curved), and a
/// standing area FLOOR of `floor` places, on sale now.
fn venue(floor: u32, max_seats: u32) -> Value {
    let rows: Vec<Value> = (1..=3).map(|r| json!({ "row": r.to_string(), "seats": 10, "tier": "Standard" })).collect();
    json!({
        "name": "Open Air", "kind": "concert", "venue": "The Park",
        "starts_at": "2030-06-01T18:00:00Z", "sale_opens_at": "2020-01-01T10:00:00Z",
        "hold_ttl_seconds": 300, "max_seats_per_order": max_seats,
        "tiers": [{ "tier": "Standard", "price_cents": 5000 }, { "tier": "Floor", "price_cents": 3000 }],
        "stage": { "label": "STAGE", "x": 0.0, "y": 0.0, "width": 400.0, "height": 80.0, "round": false },
        "sections": [
            { "section": "A", "rows": rows, "placement": { "x": 300.0, "y": 200.0, "rotation": -30.0, "curve": 400.0 } },
            { "section": "FLOOR", "standing": { "capacity": floor, "tier": "Floor", "width": 300.0, "depth": 200.0 },
              "placement": { "x": 0.0, "y": 200.0, "rotation": 0.0 } }
        ]
    })
}

async fn create_venue_event(app: &TestApp, floor: u32, max_seats: u32) -> Uuid {
    let staff = app.staff().await;
    let r = staff.post("/api/v1/admin/events", venue(floor, max_seats)).await;
    assert_eq!(r.status, 201, "create event: {}", r.body);
    r.body["event_id"].as_str().expect("event_id").parse().expect("uuid")
}

async fn hold_places(fan: &Client, event_id: Uuid, count: u32, key: Option<&str>) -> Reply {
    let mut request =
        fan.http.post(format!("{}/api/v1/events/{event_id}/holds/standing", fan.base)).json(&json!({ "section": "FLOOR", "count": count }));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    fan.send(request).await
}

async fn page(client: &Client, path: &str) -> (u16, String) {
    let r = client.http.get(format!("{}{path}", client.base)).send().await.expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

/// Places of FLOOR in each state, straight from the database.
async fn floor_states(app: &TestApp, event_id: Uuid) -> std::collections::HashMap<String, i64> {
    sqlx::query_as::<_, (String, i64)>("SELECT state::text, count(*) FROM seats WHERE event_id = $1 AND section = 'FLOOR' GROUP BY state")
        .bind(event_id)
        .fetch_all(&app.pool)
        .await
        .expect("states")
        .into_iter()
        .collect()
}

#[tokio::test]
async fn two_hundred_fans_race_for_the_last_ten_standing_places_and_ten_win_whole() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 40, 8).await;
    // Thirty places go first: ten are left.
    let early = app.fans(10).await;
    for fan in &early {
        assert_eq!(hold_places(fan, event_id, 3, None).await.status, 201);
    }
    let fans = app.fans(200).await;
    // Most ask for one place, some for two: a hold is all of its places or none.
    let attempts = fans.iter().enumerate().map(|(i, fan)| async move {
        let count = if i % 5 == 0 { 2 } else { 1 };
        (count, hold_places(fan, event_id, count, None).await)
    });
    let results = futures::future::join_all(attempts).await;
    let mut held = 0;
    let mut places = HashSet::new();
    for (count, reply) in &results {
        match reply.status {
            201 => {
                let seats = reply.body["seat_ids"].as_array().expect("seat_ids");
                assert_eq!(seats.len() as u32, *count, "a hold has every place it asked for: {}", reply.body);
                for seat in seats {
                    let seat = seat.as_str().expect("id");
                    assert!(seat.starts_with("FLOOR-GA-"), "{seat}");
                    assert!(places.insert(seat.to_owned()), "{seat} held twice");
                }
                held += count;
            }
            409 => assert_eq!(reply.body["error"], "not_enough_places", "{}", reply.body),
            other => panic!("unexpected {other}: {}", reply.body),
        }
    }
    assert_eq!(held, 10, "exactly the last ten places were held");
    let states = floor_states(&app, event_id).await;
    assert_eq!(states.get("held"), Some(&40), "{states:?}");
    assert_eq!(states.get("available"), None, "{states:?}");
    app.assert_invariants().await;
    // Sold out: the next fan is told at once, and nothing changes.
    let late = app.fan().await;
    let refused = hold_places(&late, event_id, 1, None).await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.body["available"], 0);
    app.stop().await;
}

#[tokio::test]
async fn standing_places_are_held_by_count_with_the_seat_rules() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 20, 4).await;
    let fan = app.fan().await;
    // The per-fan limit counts places like seats.
    let too_many = hold_places(&fan, event_id, 5, None).await;
    assert_eq!(too_many.status, 422, "{}", too_many.body);
    assert_eq!(too_many.body["error"], "too_many_seats");
    // A retry under the same key answers the same hold.
    let first = hold_places(&fan, event_id, 3, Some("floor-key-1")).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = hold_places(&fan, event_id, 3, Some("floor-key-1")).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["hold_id"], first.body["hold_id"]);
    assert_eq!(again.body["hold_token"], first.body["hold_token"]);
    assert_eq!(first.body["total_cents"], 9000);
    // The same key for another request is refused; the limit still holds.
    assert_eq!(hold_places(&fan, event_id, 2, Some("floor-key-1")).await.body["error"], "idempotency_key_reused");
    assert_eq!(hold_places(&fan, event_id, 2, None).await.status, 422);
    // Not a standing area, or no such section: well-formed, just not there.
    let r = fan.post(&format!("/api/v1/events/{event_id}/holds/standing"), json!({ "section": "A", "count": 1 })).await;
    assert_eq!((r.status, r.body["error"].as_str()), (404, Some("not_found")), "{}", r.body);
    let r = fan.post(&format!("/api/v1/events/{event_id}/holds/standing"), json!({ "section": "NOPE", "count": 1 })).await;
    assert_eq!(r.status, 404, "{}", r.body);
    // Released by its fencing token, the places are free again at once.
    let (hold_id, token) = (first.body["hold_id"].as_str().unwrap_or_default(), first.body["hold_token"].as_str().unwrap_or_default());
    assert_eq!(fan.release(hold_id, token).await.status, 204);
    assert_eq!(floor_states(&app, event_id).await.get("available"), Some(&20));
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn a_lapsed_standing_hold_frees_its_places_at_once() {
    let app = spawn_app_with(|s| s.reaper_interval_ms = 60_000).await;
    let staff = app.staff().await;
    let mut body = venue(2, 8);
    body["hold_ttl_seconds"] = json!(1);
    let r = staff.post("/api/v1/admin/events", body).await;
    let event_id: Uuid = r.body["event_id"].as_str().expect("id").parse().expect("uuid");
    let (a, b) = (app.fan().await, app.fan().await);
    assert_eq!(hold_places(&a, event_id, 2, None).await.status, 201);
    assert_eq!(hold_places(&b, event_id, 1, None).await.status, 409);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // No reaper has run: the lapsed lease is free by the hold's own rule.
    let taken = hold_places(&b, event_id, 2, None).await;
    assert_eq!(taken.status, 201, "{}", taken.body);
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn standing_places_go_through_checkout_refund_counter_sale_and_check_in() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 10, 8).await;
    let fan = app.fan().await;
    let hold = hold_places(&fan, event_id, 3, None).await;
    assert_eq!(hold.status, 201);
    let paid = fan
        .checkout(
            hold.body["hold_id"].as_str().unwrap_or_default(),
            hold.body["hold_token"].as_str().unwrap_or_default(),
            "tok_visa",
            &Uuid::new_v4().to_string(),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let booking_id = paid.body["booking_id"].as_str().expect("booking").to_owned();
    assert_eq!(paid.body["seat_ids"].as_array().map(Vec::len), Some(3));

    // At the counter: two places by count, for cash.
    let staff = app.staff().await;
    let sale = staff
        .send(
            staff
                .http
                .post(format!("{}/api/v1/admin/events/{event_id}/counter-sales", staff.base))
                .header("idempotency-key", "counter-floor-1")
                .json(&json!({ "standing": { "section": "FLOOR", "count": 2 }, "payment": "cash", "customer_name": "Walk In" })),
        )
        .await;
    assert_eq!(sale.status, 201, "{}", sale.body);
    let sold: Vec<String> = sale.body["seat_ids"].as_array().expect("seats").iter().filter_map(|s| s.as_str().map(str::to_owned)).collect();
    assert_eq!(sold.len(), 2);
    assert!(sold.iter().all(|s| s.starts_with("FLOOR-GA-")));
    assert_eq!(floor_states(&app, event_id).await.get("sold"), Some(&5));

    // Refund one of the fan's tickets: its place is on sale again.
    let booking = fan.get(&format!("/api/v1/bookings/{booking_id}")).await;
    let tickets = booking.body["tickets"].as_array().expect("tickets").clone();
    let refund = staff
        .send(
            staff
                .http
                .post(format!("{}/api/v1/admin/bookings/{booking_id}/refund", staff.base))
                .header("idempotency-key", "refund-floor-1")
                .json(&json!({ "ticket_ids": [tickets[0]["ticket_id"]], "reason": "changed plans" })),
        )
        .await;
    assert!((200..300).contains(&refund.status), "{}", refund.body);
    assert_eq!(floor_states(&app, event_id).await.get("available"), Some(&6));

    // Check in another: once.
    let code = tickets[1]["code"].as_str().expect("code");
    let first = staff.post("/api/v1/admin/checkins", json!({ "code": code, "event_id": event_id })).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let second = staff.post("/api/v1/admin/checkins", json!({ "code": code, "event_id": event_id })).await;
    assert_eq!(second.status, 409, "{}", second.body);
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn a_layout_with_arcs_rotations_and_a_standing_area_round_trips_through_json() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let plan = venue(500, 8);
    let layout = json!({ "name": "The Park", "stage": plan["stage"], "sections": plan["sections"] });
    let saved = staff.post("/api/v1/admin/layouts", layout.clone()).await;
    assert_eq!(saved.status, 201, "{}", saved.body);
    assert_eq!(saved.body["seats_total"], 530);
    let id = saved.body["layout_id"].as_str().expect("id");
    let read = staff.get(&format!("/api/v1/admin/layouts/{id}")).await;
    assert_eq!(read.body["stage"], layout["stage"]);
    assert_eq!(read.body["sections"], layout["sections"], "the geometry comes back as it went in");
    assert_eq!(read.body["tiers"], json!(["Standard", "Floor"]));

    // An event seated from it is drawn as placed.
    let mut event = venue(500, 8);
    if let Some(e) = event.as_object_mut() {
        e.remove("sections");
        e.remove("stage");
        e.insert("layout_id".into(), json!(id));
    }
    let created = staff.post("/api/v1/admin/events", event).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event_id = created.body["event_id"].as_str().expect("id");
    let detail = app.client().get(&format!("/api/v1/events/{event_id}")).await;
    let sections = detail.body["sections"].as_array().expect("sections");
    assert_eq!(sections[1]["kind"], "standing");
    assert_eq!(sections[1]["seats"], 500);
    assert_eq!(sections[1]["seats_available"], 500);
    assert_eq!(sections[0]["price_min_cents"], 5000);
    app.stop().await;
}

#[tokio::test]
async fn a_venue_with_a_standing_area_opens_on_its_overview_and_a_section_shows_only_its_seats() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 50, 8).await;
    let fan = app.fan().await;
    assert_eq!(fan.hold(event_id, &["A-1-1"]).await.status, 201);
    let client = app.client();
    // Pages are drawn from memory, which hears of the hold a moment after it commits.
    let held = r#"aria-label="Section A, 29 of 30 available, from €50.00""#;
    let html = eventually(5, "the overview to count the hold", || async {
        let (status, html) = page(&client, &format!("/events/{event_id}")).await;
        assert_eq!(status, 200);
        html.contains(held).then_some(html)
    })
    .await;
    assert!(html.contains(r#"<svg id="venue-overview""#), "the overview");
    assert!(!html.contains(r#"<circle id="s-"#), "no seats on the overview");
    assert!(html.contains(r#"aria-label="Standing area FLOOR, 50 of 50 places left, €30.00""#));
    assert!(html.contains(&format!(r#"href="/events/{event_id}/sections/A""#)));

    let (status, html) = page(&client, &format!("/events/{event_id}/sections/A")).await;
    assert_eq!(status, 200);
    assert_eq!(html.matches(r#"<circle id="s-"#).count(), 30, "only this section's seats");
    assert!(html.contains(r#"aria-label="Section A, row 1, seat 1, 50.00, held" aria-disabled="true""#));
    assert!(html.contains(r#"rel="next""#) && html.contains("Whole venue"), "one step to the neighbour and back");

    let (status, html) = page(&client, &format!("/events/{event_id}/sections/FLOOR")).await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"id="standing-area""#) && html.contains(r#"<strong id="places-available">50</strong>"#), "{html}");
    assert!(html.contains(r#"aria-label="Standing area FLOOR, 50 of 50 places left, €30.00""#));
    assert!(html.contains(r#"id="hold-places-button""#), "the picker holds places by count");
    assert_eq!(page(&client, &format!("/events/{event_id}/sections/NOPE")).await.0, 404);
    assert_eq!(page(&client, &format!("/events/{event_id}/sections/A?block=9")).await.0, 404);
    app.stop().await;
}

#[tokio::test]
async fn a_very_big_section_is_shown_a_block_of_rows_at_a_time() {
    let app = spawn_app_with(|s| s.section_block_seats = 10).await;
    let event_id = create_venue_event(&app, 5, 8).await;
    let client = app.client();
    let (_, html) = page(&client, &format!("/events/{event_id}/sections/A?block=2")).await;
    assert_eq!(html.matches(r#"<circle id="s-"#).count(), 10, "one row of ten per block");
    assert!(html.contains(r#"id="s-A-2-1""#) && !html.contains(r#"id="s-A-1-1""#));
    assert!(html.contains("Rows 3 to 3"), "the other blocks are one step away");
    app.stop().await;
}

#[tokio::test]
async fn every_seat_is_reachable_and_held_from_the_list_without_javascript() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 5, 8).await;
    let fan = app.fan().await;
    let (_, html) = page(&fan, &format!("/events/{event_id}/sections")).await;
    assert!(html.contains(&format!(r#"href="/events/{event_id}/sections/A/rows""#)), "{html}");
    let (_, html) = page(&fan, &format!("/events/{event_id}/sections/A/rows")).await;
    assert!(html.contains("Row 2: 10 of 10 available, from €50.00"));
    let (_, html) = page(&fan, &format!("/events/{event_id}/sections/A/rows/2")).await;
    assert!(html.contains(r#"name="seat_ids[]" value="A-2-5""#));
    assert!(html.contains("Section A, row 2, seat 5, €50.00"));

    // The form posts like a browser without JavaScript: a redirect to the
    // page where the hold is paid for.
    let form = [("event_id", event_id.to_string()), ("section", "A".into()), ("seat_ids[]", "A-2-5".into()), ("seat_ids[]", "A-2-6".into())];
    let posted = fan
        .http
        .post(format!("{}/_app/hold_from_list", fan.base))
        .header("accept", "text/html")
        .header("referer", format!("{}/events/{event_id}/sections/A/rows/2", fan.base))
        .form(&form)
        .send()
        .await
        .expect("posted");
    let (status, url) = (posted.status(), posted.url().clone());
    let html = posted.text().await.expect("page");
    assert!(url.path().starts_with(&format!("/events/{event_id}/sections/A")), "{status} {url}: {html}");
    assert_eq!(seat_state(&app.pool, event_id, "A-2-5").await, "held");
    assert_eq!(seat_state(&app.pool, event_id, "A-2-6").await, "held");
    assert!(html.contains("Held for you"), "the page shows the hold and its countdown");

    // Places of the standing area by count, the same way.
    let form = [("event_id", event_id.to_string()), ("section", "FLOOR".into()), ("count", "2".into())];
    let posted = fan.http.post(format!("{}/_app/hold_from_list", fan.base)).header("accept", "text/html").form(&form).send().await.expect("posted");
    assert!(posted.status().is_success(), "{}", posted.status());
    assert_eq!(floor_states(&app, event_id).await.get("held"), Some(&2));
    app.assert_invariants().await;
    app.stop().await;
}

async fn live(app: &TestApp, event_id: Uuid, query: &str) -> (Socket, Value) {
    let url = format!("ws://{}/api/v1/events/{event_id}/live{query}", app.addr);
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("websocket connects");
    let first = next_frame(&mut socket).await;
    (socket, first)
}

#[tokio::test]
async fn each_viewer_is_sent_only_what_it_shows() {
    let app = spawn_app().await;
    let event_id = create_venue_event(&app, 20, 8).await;
    let (mut section, first) = live(&app, event_id, "?section=A").await;
    assert_eq!(first["type"], "snapshot");
    assert_eq!(first["seats"].as_array().map(Vec::len), Some(30), "the section's seats only");
    let (mut overview, first) = live(&app, event_id, "?view=overview").await;
    assert_eq!(first["type"], "counts");
    assert_eq!(first["sections"], json!([{ "section": "A", "available": 30, "total": 30 }, { "section": "FLOOR", "available": 20, "total": 20 }]));
    let (mut floor, first) = live(&app, event_id, "?section=FLOOR").await;
    assert_eq!(first["sections"], json!([{ "section": "FLOOR", "available": 20, "total": 20 }]));

    let fan = app.fan().await;
    assert_eq!(hold_places(&fan, event_id, 2, None).await.status, 201);
    let counts = next_frame(&mut overview).await;
    assert_eq!(counts["sections"], json!([{ "section": "FLOOR", "available": 18, "total": 20 }]));
    let counts = next_frame(&mut floor).await;
    assert_eq!(counts["sections"][0]["available"], 18);
    let other = app.fan().await;
    assert_eq!(other.hold(event_id, &["A-3-3"]).await.status, 201);
    let diff = next_frame(&mut section).await;
    assert_eq!(diff["type"], "diff", "the floor's change never reached the section's viewer: {diff}");
    assert_eq!(diff["changes"], json!([{ "seat_id": "A-3-3", "status": "held", "version": diff["changes"][0]["version"] }]));
    assert_eq!(next_frame(&mut overview).await["sections"], json!([{ "section": "A", "available": 29, "total": 30 }]));

    // A section that does not exist, or both at once, is the caller's mistake.
    let client = app.client();
    assert_eq!(client.get(&format!("/api/v1/events/{event_id}/live?section=NOPE")).await.status, 404);
    assert_eq!(client.get(&format!("/api/v1/events/{event_id}/live?section=A&view=overview")).await.status, 422);
    app.stop().await;
}
