//! Server-rendered pages: the seat map in the HTML, bookings and printable
//! tickets only for their owner.

use crate::common::*;
use serde_json::json;
use uuid::Uuid;

async fn page(client: &Client, path: &str) -> (u16, String) {
    let r = client.http.get(format!("{}{path}", client.base)).send().await.expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
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

/// A big map's page comes in gzip with the map deflated once per drawing:
/// it decodes to the very page a client without gzip gets, and a change to
/// the map is in the next page.
#[tokio::test]
async fn a_big_map_page_in_gzip_decodes_to_the_page_and_follows_changes() {
    use std::io::Read;
    let app = spawn_app().await;
    let event_id = app.event(20, 50, 300, 6).await;
    let fan = app.fan().await;
    let fetch = |encoding: &'static str| {
        let request = fan.http.get(format!("{}/events/{event_id}", fan.base)).header("accept-encoding", encoding);
        async move {
            let r = request.send().await.expect("page");
            assert_eq!(r.status(), 200);
            let encoding = r.headers().get("content-encoding").map(|v| v.to_str().expect("ascii").to_owned());
            let bytes = r.bytes().await.expect("body");
            let mut html = String::new();
            match encoding.as_deref() {
                Some("gzip") => {
                    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut html).expect("one valid gzip member");
                }
                None => html = String::from_utf8(bytes.to_vec()).expect("utf-8"),
                Some(other) => panic!("unexpected encoding {other}"),
            }
            (encoding, bytes.len(), html)
        }
    };
    let map_of = |html: &str| -> String {
        let start = html.find(r#"<svg id="seat-map""#).expect("the map");
        let end = start + html[start..].find("</svg>").expect("its end");
        html[start..end].to_owned()
    };
    let (encoding, sent, zipped) = fetch("gzip, deflate, br").await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    let (_, _, plain) = fetch("identity").await;
    assert_eq!(map_of(&zipped), map_of(&plain), "the same map either way");
    assert!(!zipped.contains("frontrow:seat-map") && !plain.contains("frontrow:seat-map"), "the map, not its marker");
    assert_eq!(zipped.matches(r#"<circle id="s-"#).count(), 1000);
    // Per request only a nonce and the clock's digits differ.
    assert!(zipped.len().abs_diff(plain.len()) < 64, "the whole page: {} bytes against {}", zipped.len(), plain.len());
    assert!(sent * 5 < zipped.len(), "{sent} bytes for a page of {}", zipped.len());

    assert_eq!(fan.hold(event_id, &["A-7-7"]).await.status, 201);
    eventually(5, "the hold in the gzipped page", || async {
        let (_, _, html) = fetch("gzip").await;
        html.contains(r#"id="s-A-7-7" class="seat t0 hd""#).then_some(())
    })
    .await;
    app.stop().await;
}

/// A signed-out viewer's page with its policy and the clock it shows.
async fn signed_out_page(app: &TestApp, path: &str) -> (String, String, i64) {
    let r = reqwest::Client::new().get(app.url(path)).header("accept", "text/html").send().await.expect("page");
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("set-cookie").is_none(), "no session for a viewer");
    let policy = r.headers()["content-security-policy"].to_str().expect("ascii").to_owned();
    let html = r.text().await.expect("body");
    let clock = clock_digits(&html).parse().expect("the clock in milliseconds");
    (html, policy, clock)
}

/// The digits of the clock a page's picker starts from.
fn clock_digits(html: &str) -> String {
    let at = html.find("server_now_ms").expect("the picker's clock") + "server_now_ms".len();
    html[at..].chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect()
}

/// Signed-out viewers of one address share one render, kept for a short
/// while (a minute here), but each gets a nonce of their own (the one
/// their policy names) and the clock of their own request; a signed-in fan
/// gets a page of their own, now.
#[tokio::test]
async fn signed_out_viewers_share_a_render_but_not_its_nonce_or_clock() {
    let app = spawn_app_with(|s| s.page_keep_ms = Some(60_000)).await;
    let event_id = app.event(2, 6, 300, 6).await;
    let path = format!("/events/{event_id}");
    let (first, first_policy, first_clock) = signed_out_page(&app, &path).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let fan = app.fan().await;
    let hold = fan.hold(event_id, &["A-1-1"]).await;
    assert_eq!(hold.status, 201);
    let (second, second_policy, second_clock) = signed_out_page(&app, &path).await;

    let nonce_of = |html: &str, policy: &str| {
        let nonce = policy.split("'nonce-").nth(1).and_then(|rest| rest.split('\'').next()).expect("a nonce in the policy").to_owned();
        assert!(html.matches(&format!(r#"nonce="{nonce}""#)).count() >= 2, "the page's scripts carry its policy's nonce");
        nonce
    };
    let (first_nonce, second_nonce) = (nonce_of(&first, &first_policy), nonce_of(&second, &second_policy));
    assert_ne!(first_nonce, second_nonce, "a nonce per viewer");
    assert!(second_clock >= first_clock + 1_000, "the clock of each request: {first_clock} then {second_clock}");
    let now = chrono::Utc::now().timestamp_millis();
    assert!((now - second_clock).abs() < 5_000, "the clock is now: {second_clock} at {now}");
    let same = |html: &str, nonce: &str, clock: i64| html.replace(nonce, "NONCE").replace(&clock.to_string(), "CLOCK");
    assert_eq!(same(&first, &first_nonce, first_clock), same(&second, &second_nonce, second_clock), "the rest is the kept render");
    assert!(second.contains(r#"id="s-A-1-1" class="seat t0 av""#), "kept from before the hold, for at most the time set");

    let (status, own) = page(&fan, &path).await;
    assert_eq!(status, 200);
    let hold_id = hold.body["hold_id"].as_str().expect("the hold's id");
    assert!(own.contains(hold_id) && !second.contains(hold_id), "a fan's own page, with their hold, is rendered for them");
    // The hold panel is read from the database; the map from this
    // instance's board, which hears the hold a moment after it commits.
    let own = eventually(5, "the map as it is now in the fan's own page", || async {
        let (_, own) = page(&fan, &path).await;
        own.contains(r#"id="s-A-1-1" class="seat t0 hd""#).then_some(own)
    })
    .await;
    let (third, _, _) = signed_out_page(&app, &path).await;
    assert!(third.contains(r#"id="s-A-1-1" class="seat t0 hd""#), "once the map is drawn anew, the kept page is rendered again");
    assert!(own.contains("signed_in&quot;:true") && second.contains("signed_in&quot;:false"));
    app.stop().await;
}

/// How many event pages this test binary's servers answered from a kept
/// page for signed-in fans (only tests that keep pages count).
async fn fan_pages_kept(app: &TestApp) -> f64 {
    let metrics = app.client().http.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    metrics
        .lines()
        .filter(|l| l.starts_with("frontrow_kept_pages_total") && l.contains(r#"viewer="fan""#) && l.contains(r#"outcome="kept""#))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// A signed-in fan's page as a browser asks for it, with its policy's nonce.
async fn fan_page(fan: &Client, path: &str) -> (String, String) {
    let r = fan.http.get(format!("{}{path}", fan.base)).header("accept", "text/html").send().await.expect("page");
    assert_eq!(r.status(), 200);
    let policy = r.headers()["content-security-policy"].to_str().expect("ascii").to_owned();
    let nonce = policy.split("'nonce-").nth(1).and_then(|rest| rest.split('\'').next()).expect("a nonce in the policy").to_owned();
    let html = r.text().await.expect("body");
    assert!(html.matches(&format!(r#"nonce="{nonce}""#)).count() >= 2, "the page's scripts carry its policy's nonce");
    (html, nonce)
}

/// Signed-in fans without a hold share one render too, each with their
/// own name (escaped) and links in the header (staff theirs, fans none of
/// staff's); a fan with a hold gets a page of their own, with it.
#[tokio::test]
async fn signed_in_fans_share_a_render_with_their_own_header() {
    let app = spawn_app_with(|s| s.page_keep_ms = Some(60_000)).await;
    let event_id = app.event(2, 6, 300, 6).await;
    let path = format!("/events/{event_id}");
    let (ann, bob, staff) = (app.fan_named("Ann Example").await, app.fan_named("Bob <b>&</b>").await, app.staff().await);
    let before = fan_pages_kept(&app).await;
    // Staff first: their links must not reach the fans after them.
    let (staff_page, staff_nonce) = fan_page(&staff, &path).await;
    let (ann_page, ann_nonce) = fan_page(&ann, &path).await;
    let (bob_page, bob_nonce) = fan_page(&bob, &path).await;
    assert!(fan_pages_kept(&app).await >= before + 2.0, "Ann's and Bob's pages were the staff member's render");

    assert!(staff_page.contains(r#"<a href="/admin">Box office</a><a href="/account">My bookings</a><span class="who">Staff</span>"#));
    assert!(!staff_page.contains("Ann Example") && !staff_page.contains("Bob"));
    assert!(ann_page.contains(r#"<span class="who">Ann Example</span>"#) && !ann_page.contains("Bob"));
    assert!(!ann_page.contains(r#"href="/admin""#) && !ann_page.contains(r#"class="who">Staff<"#), "no staff links for a fan");
    assert!(bob_page.contains(r#"<span class="who">Bob &lt;b&gt;&amp;&lt;/b&gt;</span>"#), "the name escaped");
    assert!(!bob_page.contains("Ann Example") && !bob_page.contains("<b>&"), "nobody else's name");
    for page in [&ann_page, &bob_page, &staff_page] {
        assert!(page.contains("signed_in&quot;:true"), "a signed-in picker");
    }
    let same = |html: &str, nonce: &str, who: &str| html.replace(nonce, "NONCE").replace(who, "WHO").replace(&clock_digits(html), "CLOCK");
    assert_eq!(
        same(&ann_page, &ann_nonce, r#"<a href="/account">My bookings</a><span class="who">Ann Example</span>"#),
        same(&bob_page, &bob_nonce, r#"<a href="/account">My bookings</a><span class="who">Bob &lt;b&gt;&amp;&lt;/b&gt;</span>"#),
        "the rest is the one render"
    );
    assert_ne!(ann_nonce, bob_nonce);
    assert_ne!(ann_nonce, staff_nonce);
    let sections = format!("{path}/sections");
    let kept = fan_pages_kept(&app).await;
    let (ann_list, _) = fan_page(&ann, &sections).await;
    let (bob_list, _) = fan_page(&bob, &sections).await;
    assert!(fan_pages_kept(&app).await >= kept + 1.0, "the lists are shared too");
    assert!(ann_list.contains("Ann Example") && bob_list.contains("Bob &lt;b&gt;") && !bob_list.contains("Ann Example"));

    let hold = bob.hold(event_id, &["A-1-2"]).await;
    assert_eq!(hold.status, 201, "{}", hold.body);
    let hold_id = hold.body["hold_id"].as_str().expect("the hold's id");
    let (own, _) = fan_page(&bob, &path).await;
    assert!(own.contains(hold_id), "a fan with a hold gets their own page, with it");
    // The map comes from this instance's board, which hears the hold a
    // moment after it commits.
    eventually(5, "the hold on the map of the fan's own page", || async {
        fan_page(&bob, &path).await.0.contains(r#"id="s-A-1-2" class="seat t0 hd""#).then_some(())
    })
    .await;
    let (ann_again, _) = fan_page(&ann, &path).await;
    assert!(!ann_again.contains(hold_id), "nobody else's hold");
    assert!(ann_again.contains(r#"id="s-A-1-2" class="seat t0 hd""#), "once the map is drawn anew, the kept page is rendered again");
    app.stop().await;
}

/// A hold made through another instance reaches this one's board, and from
/// then on the fan's page here is their own, with it (the board's holder
/// tags tell, not a query per page); once released they share the fans'
/// page again.
#[tokio::test]
async fn a_hold_made_on_another_instance_is_on_the_fans_page_once_the_board_hears_it() {
    let app = spawn_app_with(|s| s.page_keep_ms = Some(60_000)).await;
    let other = spawn_app_on(&app.database_url, |_| {}).await;
    let event_id = app.event(2, 6, 300, 6).await;
    let path = format!("/events/{event_id}");
    let cy = app.fan_named("Cy Elsewhere").await;
    let cy_id: Uuid = sqlx::query_scalar("SELECT user_id FROM users WHERE name = 'Cy Elsewhere'").fetch_one(&app.pool).await.expect("Cy");
    let (before, _) = fan_page(&cy, &path).await;
    assert!(before.contains(r#"id="s-A-2-2" class="seat t0 av""#));
    let seat = frontrow_model::SeatId::parse("A-2-2").expect("a seat id");
    let held = other.engine.hold(cy_id.into(), event_id.into(), &[seat], None, None).await.expect("hold").hold;
    let hold_id = held.hold_id.to_string();
    let own = eventually(5, "the hold on this instance's board and page", || async {
        let (html, _) = fan_page(&cy, &path).await;
        html.contains(&hold_id).then_some(html)
    })
    .await;
    assert!(own.contains(r#"id="s-A-2-2" class="seat t0 hd""#));
    let token = frontrow_model::HoldToken::parse(held.hold_token.as_str()).expect("a hold token");
    other.engine.release(cy_id.into(), held.hold_id, &token).await.expect("release");
    eventually(5, "the fans' page again", || async {
        let (html, _) = fan_page(&cy, &path).await;
        (!html.contains(&hold_id) && html.contains(r#"id="s-A-2-2" class="seat t0 av""#)).then_some(())
    })
    .await;
    other.stop().await;
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
    let body = buy(&owner, event_id, &["A-1-2", "A-1-3"]).await;
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
