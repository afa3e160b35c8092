//! Finding an event: staff set what fans search by, and the home page and
//! `GET /api/v1/events` give the same answer to the same search.

use crate::common::*;
use serde_json::{json, Value};

async fn html(client: &Client, path: &str) -> (u16, String) {
    let r = client.http.get(format!("{}{path}", client.base)).send().await.expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

/// The events a page lists, in its order.
fn listed_on_page(html: &str) -> Vec<String> {
    html.split("<li ")
        .filter_map(|tag| tag.split('>').next())
        .filter(|attributes| attributes.contains(r#"class="event-card""#))
        .filter_map(|attributes| attributes.split_once(r#"data-event-id=""#).and_then(|(_, rest)| rest.split('"').next()))
        .map(str::to_owned)
        .collect()
}

fn listed_by_api(body: &Value) -> Vec<String> {
    body["events"].as_array().map(|list| list.iter().filter_map(|e| e["event_id"].as_str()).map(str::to_owned).collect()).unwrap_or_default()
}

/// A 4-seat event on sale now (or `opens_in_days` from now) with the
/// details fans search by.
async fn create(staff: &Client, name: &str, kind: &str, city: &str, performers: &[&str], starts_at: &str, opens_in_days: i64) -> String {
    let opens = chrono::Utc::now() + chrono::Duration::days(opens_in_days) - chrono::Duration::minutes(1);
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": name, "kind": kind, "venue": format!("{city} Hall"), "city": city, "performers": performers,
                "address": "1 Main Street", "notes": "Over-16s only.\nStep-free entrance.", "doors_at": null,
                "starts_at": starts_at, "sale_opens_at": opens.to_rfc3339(),
                "tiers": [{ "tier": "Adult", "price_cents": 3000 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 4, "tier": "Adult" }] }]
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["event_id"].as_str().expect("an id").to_owned()
}

#[tokio::test]
async fn fans_find_events_by_words_city_category_and_dates_alike_on_the_page_and_in_the_api() {
    let app = spawn_app().await;
    let staff = app.staff().await;
    let aurora = create(&staff, "Aurora Live", "concert", "Lisbon", &["The Midnight Aurora"], "2031-03-01T20:00:00Z", 0).await;
    let hamlet = create(&staff, "Hamlet", "theatre", "London", &["Quayside Players"], "2031-03-05T19:30:00Z", 0).await;
    let derby = create(&staff, "City Derby", "sport", "Manchester", &["Rovers", "United"], "2031-03-09T15:00:00Z", 0).await;
    let jazz = create(&staff, "Jazz by the River", "concert", "lisbon", &["Ana Costa Quartet"], "2031-04-02T21:00:00Z", 30).await;

    // Staff change what fans search by; the next search follows.
    let patched = staff
        .send(staff.http.patch(format!("{}/api/v1/admin/events/{derby}", staff.base)).json(&json!({
            "city": "Berlin", "performers": [" Berlin Bears ", "Hamburg Hawks"], "doors_at": "2031-03-09T13:30:00Z"
        })))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["performers"], json!(["Berlin Bears", "Hamburg Hawks"]));

    let cases: [(&str, Vec<&String>); 9] = [
        ("", vec![&aurora, &hamlet, &derby, &jazz]),
        ("q=aurora", vec![&aurora]),
        ("q=ana%20QUARTET", vec![&jazz]),
        ("q=hawks", vec![&derby]),
        ("city=LISBON", vec![&aurora, &jazz]),
        ("city=Lisbon&category=concert&on_sale=true", vec![&aurora]),
        ("category=sport&q=", vec![&derby]),
        ("from=2031-03-05&to=2031-03-09", vec![&hamlet, &derby]),
        ("q=nobody%20plays", vec![]),
    ];
    let fan = app.fan().await;
    for (query, expected) in cases {
        let api = fan.get(&format!("/api/v1/events?{query}")).await;
        assert_eq!(api.status, 200, "{query}: {}", api.body);
        let expected: Vec<String> = expected.into_iter().cloned().collect();
        assert_eq!(listed_by_api(&api.body), expected, "the API answers {query:?}");
        assert_eq!(api.body["total"], json!(expected.len()));
        let (status, page) = html(&fan, &format!("/?{query}")).await;
        assert_eq!(status, 200);
        assert_eq!(listed_on_page(&page), expected, "the home page answers {query:?} alike");
    }
    // Blank words, city or category filter nothing; a blank date is no date.
    let blank = fan.get("/api/v1/events?q=&city=&category=").await;
    assert_eq!((blank.status, blank.body["total"].clone()), (200, json!(4)), "{}", blank.body);
    assert_error("a blank date", &fan.get("/api/v1/events?from=").await, 422, "invalid_input");
    let all = fan.get("/api/v1/events").await;
    assert_eq!(all.body["cities"], json!(["Berlin", "Lisbon", "London"]));
    assert_eq!(all.body["categories"], json!(["concert", "sport", "theatre"]));
    let (_, home) = html(&fan, "/?city=Berlin").await;
    assert!(home.contains(r#"<option value="Berlin" selected"#), "the form shows the search it answered");

    // The event's page has what a fan looks for.
    let (status, page) = html(&fan, &format!("/events/{derby}")).await;
    assert_eq!(status, 200);
    for fact in [
        "Manchester Hall, 1 Main Street, Berlin",
        "(doors 13:30 UTC)",
        "Berlin Bears, Hamburg Hawks",
        "Over-16s only.\nStep-free entrance.",
        "Adult €30.00",
    ] {
        assert!(page.contains(fact), "the event page says {fact:?}");
    }
    let share = page.split(r#"class="share-link""#).nth(1).and_then(|rest| rest.split("</a>").next()).unwrap_or_default();
    assert!(share.ends_with(&format!(">/events/{derby}")), "a link to share: {share}");

    // Bad searches are refused and change nothing; so are bad details.
    for query in ["from=2031-13-01", "page=0", "page=-1", "on_sale=maybe", &format!("q={}", "x".repeat(201))] {
        assert_error(query, &fan.get(&format!("/api/v1/events?{query}")).await, 422, "invalid_input");
    }
    assert_eq!(fan.get("/api/v1/events?from=2031-03-09&to=2031-03-05").await.body["total"], json!(0), "a range backwards finds nothing");
    let (status, page) = html(&fan, "/?from=soon").await;
    assert_eq!(status, 400);
    assert!(page.contains("from must be a date"));
    let late_doors = staff
        .send(staff.http.patch(format!("{}/api/v1/admin/events/{derby}", staff.base)).json(&json!({ "doors_at": "2031-03-09T16:00:00Z" })))
        .await;
    assert_error("doors after the start", &late_doors, 422, "invalid_input");
    let blank =
        staff.send(staff.http.patch(format!("{}/api/v1/admin/events/{derby}", staff.base)).json(&json!({ "performers": ["Solo", " "] }))).await;
    assert_error("a blank performer", &blank, 422, "invalid_input");
    let bad = staff
        .post(
            "/api/v1/admin/events",
            json!({ "name": "X", "kind": "sport", "venue": "V", "city": "a\u{7}b",
        "starts_at": "2031-01-01T20:00:00Z", "sale_opens_at": "2020-01-01T00:00:00Z",
        "tiers": [{ "tier": "T", "price_cents": 100 }], "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 1, "tier": "T" }] }] }),
        )
        .await;
    assert_error("a control character in the city", &bad, 422, "invalid_input");
    assert_eq!(fan.get("/api/v1/events").await.body["total"], json!(4));
    let derby_now = fan.get(&format!("/api/v1/events/{derby}")).await;
    assert_eq!(derby_now.body["doors_at"], json!("2031-03-09T13:30:00Z"));
    assert_eq!(derby_now.body["performers"], json!(["Berlin Bears", "Hamburg Hawks"]));

    // Twelve to a page; the page links carry the search.
    for n in 0..10 {
        create(&staff, &format!("Lisbon Night {n:02}"), "concert", "Lisbon", &[], &format!("2031-05-{:02}T20:00:00Z", n + 1), 0).await;
    }
    let first = fan.get("/api/v1/events?city=lisbon").await;
    assert_eq!((first.body["total"].as_u64(), first.body["pages"].as_u64(), first.body["per_page"].as_u64()), (Some(12), Some(1), Some(12)));
    create(&staff, "Lisbon Night 10", "concert", "Lisbon", &[], "2031-05-11T20:00:00Z", 0).await;
    let first = fan.get("/api/v1/events?city=lisbon").await;
    assert_eq!((first.body["total"].as_u64(), first.body["pages"].as_u64()), (Some(13), Some(2)));
    let second = fan.get("/api/v1/events?city=lisbon&page=2").await;
    assert_eq!(second.body["events"][0]["name"], json!("Lisbon Night 10"));
    let (_, page_one) = html(&fan, "/?city=lisbon").await;
    assert!(page_one.contains(r#"<a rel="next" href="/?city=lisbon&amp;page=2">"#), "page one links to page two");
    let (_, page_two) = html(&fan, "/?city=lisbon&page=2").await;
    assert_eq!(listed_on_page(&page_two), listed_by_api(&second.body));
    app.stop().await;
}
