//! Server-rendered pages: the seat map in the HTML, bookings and printable
//! tickets only for their owner.


use crate::common::*;
use serde_json::json;
use uuid::Uuid;

async fn page(client: &Client, path: &str) -> (u16, String) {
    let r = client.http.get(format!("{}{path}", client.base)).send().await.expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

async fn booking(app: &TestApp, fan: &Client, event_id: Uuid, seats: &[&str]) -> serde_json::Value {
    let hold = fan.hold(event_id, seats).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let paid = fan
        .checkout(hold.body["hold_id"].as_str().unwrap_or_default(), hold.body["hold_token"].as_str().unwrap_or_default(), "tok_visa", &Uuid::new_v4().to_string())
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let _ = app;
    paid.body
}

#[tokio::test]
async fn the_seat_map_is_in_the_server_rendered_html() {
    let app = spawn_app().await;
    let event_id = app.event(3, 8, 300, 6).await;
    let fan = app.fan().await;
    assert_eq!(fan.hold(event_id, &["A-2-4"]).await.status, 201);

    let (status, html) = eventually(5, "the hold to show on the page", || async {
        let (status, html) = page(&app.client(), &format!("/events/{event_id}")).await;
        html.contains(r#"id="s-A-2-4" class="seat t0 hd""#).then_some((status, html))
    })
    .await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<svg id="seat-map""#));
    assert_eq!(html.matches(r#"<circle id="s-"#).count(), 24, "one circle per seat");
    assert!(html.contains(r#"aria-label="Section A, row 1, seat 1, 50.00""#), "accessible seat names with prices");
    assert!(html.contains(r#"aria-label="Section A, row 2, seat 4, 50.00, held" aria-disabled="true""#));
    assert!(html.contains("<leptos-island"), "the picker is an island");
    assert!(html.contains("Test Night"));
    app.stop().await;
}

#[tokio::test]
async fn unknown_pages_and_events_are_404() {
    let app = spawn_app().await;
    let client = app.client();
    assert_eq!(page(&client, &format!("/events/{}", Uuid::new_v4())).await.0, 404);
    assert_eq!(page(&client, "/events/not-an-id").await.0, 404);
    assert_eq!(page(&client, "/no/such/page").await.0, 404);
    app.stop().await;
}

#[tokio::test]
async fn bookings_and_printable_tickets_are_for_their_owner() {
    let app = spawn_app().await;
    let event_id = app.event(1, 6, 300, 6).await;
    let owner = app.fan().await;
    let body = booking(&app, &owner, event_id, &["A-1-2", "A-1-3"]).await;
    let booking_id = body["booking_id"].as_str().expect("booking id").to_owned();
    let codes: Vec<String> = body["tickets"].as_array().expect("tickets").iter().map(|t| t["code"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(codes.len(), 2);

    let (status, html) = page(&owner, &format!("/bookings/{booking_id}")).await;
    assert_eq!(status, 200);
    for code in &codes {
        assert!(html.contains(code.as_str()), "ticket code {code} on the booking page");
    }
    assert_eq!(html.matches(r#"class="ticket""#).count(), 2);
    assert!(html.contains(r#"role="img" aria-label="Ticket code"#), "a QR code per ticket");

    let (status, print) = page(&owner, &format!("/bookings/{booking_id}/print")).await;
    assert_eq!(status, 200);
    assert_eq!(print.matches(r#"<section class="ticket""#).count(), 2);
    assert!(print.contains("Section A, row 1, seat 2"));
    assert!(print.matches("<svg").count() >= 2);

    let stranger = app.fan().await;
    assert_eq!(page(&stranger, &format!("/bookings/{booking_id}")).await.0, 404);
    assert_eq!(page(&stranger, &format!("/bookings/{booking_id}/print")).await.0, 404);

    let anonymous = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let r = anonymous.get(app.url(&format!("/bookings/{booking_id}/print"))).send().await.expect("request");
    assert!(r.status().is_redirection());
    assert_eq!(r.headers()["location"], format!("/signin?next=/bookings/{booking_id}/print").as_str());

    let (status, account) = page(&owner, "/account").await;
    assert_eq!(status, 200);
    assert!(account.contains(&format!("/bookings/{booking_id}")), "my bookings lists it");
    app.assert_invariants().await;
    app.stop().await;
}

#[tokio::test]
async fn the_events_list_shows_prices_and_availability() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Price Range Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                "sale_opens_at": "2020-01-01T10:00:00Z", "hold_ttl_seconds": 60, "max_seats_per_order": 4, "waiting_room_enabled": false,
                "tiers": [{ "tier": "Front", "price_cents": 9000 }, { "tier": "Back", "price_cents": 2500 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 4, "tier": "Front" }, { "row": "2", "seats": 4, "tier": "Back" }] }]
            }),
        )
        .await;
    assert_eq!(r.status, 201);
    let list = app.client().get("/api/v1/events").await;
    let event = &list.body["events"][0];
    assert_eq!((event["price_min_cents"].as_i64(), event["price_max_cents"].as_i64()), (Some(2500), Some(9000)));
    let (status, html) = page(&app.client(), "/").await;
    assert_eq!(status, 200);
    assert!(html.contains("Price Range Night"));
    assert!(html.contains("€25.00 – €90.00"));
    assert!(html.contains("8 of 8 seats available"));
    app.stop().await;
}
