//! Ticket types: staff price adult, child and concession tickets per tier;
//! the buyer names a type per seat, never a price, online and at the
//! counter; the figures split by type.

use serde_json::{json, Value};
use uuid::Uuid;

use crate::common::*;

fn types() -> Value {
    json!([
        { "name": "Adult", "prices": [{ "tier": "Front", "price_cents": 5000 }, { "tier": "Back", "price_cents": 2500 }] },
        { "name": "Child", "prices": [{ "tier": "Back", "price_cents": 1200 }] },
        { "name": "Concession", "prices": [{ "tier": "Front", "price_cents": 4000 }, { "tier": "Back", "price_cents": 2000 }] }
    ])
}

/// Front row 1, Back row 2, 8 seats each, with `ticket_types`.
async fn event_with_types(staff: &Client, ticket_types: Value) -> Reply {
    staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Family Matinee", "kind": "theatre", "venue": "Hall",
                "starts_at": "2030-01-01T15:00:00Z", "sale_opens_at": "2020-01-01T10:00:00Z",
                "tiers": [{ "tier": "Front", "price_cents": 5000 }, { "tier": "Back", "price_cents": 2500 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 8, "tier": "Front" }, { "row": "2", "seats": 8, "tier": "Back" }] }],
                "ticket_types": ticket_types
            }),
        )
        .await
}

async fn pay(fan: &Client, hold: &Reply, key: &str, body: Value) -> Reply {
    let mut body = body;
    body["hold_token"] = hold.body["hold_token"].clone();
    body["payment_token"] = json!("tok_visa");
    let path = format!("{}/api/v1/holds/{}/checkout", fan.base, hold.body["hold_id"].as_str().unwrap_or_default());
    fan.send(fan.http.post(path).header("idempotency-key", key).json(&body)).await
}

fn ticket_of<'a>(booking: &'a Value, seat: &str) -> &'a Value {
    booking["tickets"].as_array().and_then(|ts| ts.iter().find(|t| t["seat_id"] == json!(seat))).unwrap_or(&Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_seat_is_priced_by_its_type_on_the_server_and_the_figures_split_by_type() {
    let app = spawn_app().await;
    let staff = app.staff().await;

    // Staff's list is checked: every tier sold by some type, only the event's tiers.
    let uncovered = event_with_types(&staff, json!([{ "name": "Child", "prices": [{ "tier": "Back", "price_cents": 1200 }] }])).await;
    assert_error("a tier no type sells", &uncovered, 422, "invalid_input");
    let stray = event_with_types(&staff, json!([{ "name": "Adult", "prices": [{ "tier": "Balcony", "price_cents": 1 }, { "tier": "Front", "price_cents": 5000 }, { "tier": "Back", "price_cents": 2500 }] }])).await;
    assert_error("a tier the event lacks", &stray, 422, "invalid_input");
    let off_price = event_with_types(
        &staff,
        json!([{ "name": "Adult", "prices": [{ "tier": "Front", "price_cents": 4999 }, { "tier": "Back", "price_cents": 2500 }] }]),
    )
    .await;
    assert_error("a seat's default type not at its tier's price", &off_price, 422, "invalid_input");
    let created = event_with_types(&staff, types()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event: Uuid = created.body["event_id"].as_str().and_then(|id| id.parse().ok()).expect("event_id");
    let detail = app.client().get(&format!("/api/v1/events/{event}")).await;
    assert_eq!(detail.body["ticket_types"], types());

    let fan = app.fan().await;
    let hold = fan.hold(event, &["A-1-1", "A-2-1", "A-2-2"]).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    assert_eq!(hold.body["tiers"], json!(["Front", "Back", "Back"]), "a hold says each seat's tier");

    // The buyer names types, never prices: a price is refused as an
    // unknown field or a malformed choice, a type not sold in the seat's
    // tier or not the event's, or a seat not held, is refused; nothing moves.
    let refusals = [
        ("a price", json!({ "ticket_types": {}, "price_cents": 1 })),
        ("a price as the type", json!({ "ticket_types": { "A-2-1": { "price_cents": 1 } } })),
        ("a child in the front", json!({ "ticket_types": { "A-1-1": "Child" } })),
        ("a type the event lacks", json!({ "ticket_types": { "A-2-1": "Pensioner" } })),
        ("a seat not held", json!({ "ticket_types": { "A-2-8": "Adult" } })),
    ];
    for (n, (what, body)) in refusals.into_iter().enumerate() {
        let refused = pay(&fan, &hold, &format!("bad-{n}"), body).await;
        assert_error(what, &refused, 422, "invalid_input");
    }
    let intents: i64 = sqlx::query_scalar("SELECT count(*) FROM payment_intents").fetch_one(&app.pool).await.expect("count");
    assert_eq!(intents, 0, "nothing was charged");
    assert_eq!(seat_state(&app.pool, event, "A-2-1").await, "held");

    // A child and a concession at the back, the front seat an adult's by default.
    let choice = json!({ "ticket_types": { "A-2-1": "Child", "A-2-2": "Concession" } });
    let paid = pay(&fan, &hold, "good", choice.clone()).await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    assert_eq!(paid.body["total_cents"], json!(5000 + 1200 + 2000));
    for (seat, kind, cents) in [("A-1-1", "Adult", 5000), ("A-2-1", "Child", 1200), ("A-2-2", "Concession", 2000)] {
        let ticket = ticket_of(&paid.body, seat);
        assert_eq!((ticket["ticket_type"].clone(), ticket["price_cents"].clone()), (json!(kind), json!(cents)), "{seat}");
    }
    let charged: i64 = sqlx::query_scalar("SELECT amount_cents FROM sim_provider_payments").fetch_one(&app.pool).await.expect("payment");
    assert_eq!(charged, 8200, "the provider was asked for the server's price");
    let booking_id = paid.body["booking_id"].as_str().expect("booking_id").to_owned();
    let read = fan.get(&format!("/api/v1/bookings/{booking_id}")).await;
    assert_eq!(read.body, paid.body, "the booking reads as it was answered");
    let again = pay(&fan, &hold, "good", choice).await;
    assert_eq!((again.status, &again.body), (201, &paid.body), "a retry gets the first answer");
    let other_types = pay(&fan, &hold, "good", json!({ "ticket_types": { "A-2-1": "Adult" } })).await;
    assert_error("the same key with other types", &other_types, 409, "idempotency_key_reused");

    // On sale, the prices fans were shown stay: a change is refused, the
    // same list again (a form saved as it was) changes nothing.
    let mut cheaper = types();
    cheaper[1]["prices"][0]["price_cents"] = json!(1500);
    let patch = |body: Value| staff.send(staff.http.patch(app.url(&format!("/api/v1/admin/events/{event}"))).json(&body));
    assert_error("a price change on sale", &patch(json!({ "ticket_types": cheaper })).await, 422, "invalid_input");
    let same = patch(json!({ "ticket_types": types(), "name": "Family Matinee" })).await;
    assert_eq!((same.status, &same.body["ticket_types"]), (200, &types()), "{}", same.body);
    let second = fan.hold(event, &["A-2-3"]).await;
    let child = pay(&fan, &second, "second", json!({ "ticket_types": { "A-2-3": "Child" } })).await;
    assert_eq!(child.body["total_cents"], json!(1200), "{}", child.body);

    // At the counter: a concession in the front, paid in cash.
    let sale = staff
        .send(staff.http.post(app.url(&format!("/api/v1/admin/events/{event}/counter-sales"))).header("idempotency-key", "till-1").json(&json!({
            "seat_ids": ["A-1-3"], "payment": "cash", "customer_name": "Walk-in", "ticket_types": { "A-1-3": "Concession" }
        })))
        .await;
    assert_eq!(sale.status, 201, "{}", sale.body);
    assert_eq!(sale.body["total_cents"], json!(4000));
    assert_eq!(ticket_of(&sale.body, "A-1-3")["ticket_type"], json!("Concession"));
    let till = staff
        .send(staff.http.post(app.url(&format!("/api/v1/admin/events/{event}/counter-sales"))).header("idempotency-key", "till-2").json(&json!({
            "seat_ids": ["A-1-4"], "payment": "cash", "customer_name": "Walk-in", "ticket_types": { "A-1-4": "Child" }
        })))
        .await;
    assert_error("a child in the front at the counter", &till, 422, "invalid_input");
    assert_eq!(seat_state(&app.pool, event, "A-1-4").await, "available", "the refused sale held nothing");

    // The figures and the summary split by type.
    let stats = staff.get(&format!("/api/v1/admin/events/{event}/stats")).await;
    assert_eq!(
        stats.body["types"],
        json!([
            { "ticket_type": "Adult", "sold": 1, "revenue_cents": 5000 },
            { "ticket_type": "Child", "sold": 2, "revenue_cents": 2400 },
            { "ticket_type": "Concession", "sold": 2, "revenue_cents": 6000 }
        ])
    );
    let by_type = staff.get(&format!("/api/v1/admin/events/{event}/sales-summary.csv?by=type")).await;
    assert_eq!(by_type.body.as_str(), Some("type,tickets,revenue_cents\nAdult,1,5000\nChild,2,2400\nConcession,2,6000\n"));
    app.assert_invariants().await;
}
