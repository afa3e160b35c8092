//! A database outage, survived: the real binary on its own PostgreSQL, which
//! is stopped mid-sale and started again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::crash::{client_for, start_server};
use crate::live::{next_frame, Socket};
use frontrow_server::pgcluster::PrivateCluster;

async fn cluster() -> PrivateCluster {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/outage-pg");
    PrivateCluster::ensure(&dir, 54335).await.expect("the outage test's own PostgreSQL")
}

/// A request during the outage: answered (never hung) with 503 and a code.
#[track_caller]
fn assert_unavailable(what: &str, r: &Reply, asked: Instant) {
    assert_eq!((r.status, r.body["error"].as_str()), (503, Some("unavailable")), "{what}: {}", r.body);
    assert!(asked.elapsed() < Duration::from_secs(10), "{what} took {:?}", asked.elapsed());
}

async fn signed_up(base: &str) -> Client {
    let c = client_for(base);
    let email = format!("outage-{}@example.test", uuid::Uuid::new_v4().simple());
    let r = c.post("/api/v1/auth/signup", json!({ "email": email, "password": PASSWORD, "name": "Fan" })).await;
    assert_eq!(r.status, 201, "{}", r.body);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_stops_mid_sale_and_the_server_rides_it_out() {
    let pg = cluster().await;
    let database = format!("outage_{}", uuid::Uuid::new_v4().simple());
    pg.create_database(&database).await.unwrap();
    let database_url = pg.url(&database);
    {
        let pool = frontrow_server::startup::connect(&database_url, 2).await.unwrap();
        frontrow_server::startup::migrate(&pool).await.unwrap();
        let staff = frontrow_engine::accounts::NewUser {
            email: "outage-staff@example.test",
            password: PASSWORD,
            name: "S",
            role: frontrow_model::Role::Staff,
        };
        frontrow_server::startup::engine(&test_settings(), pool.clone()).unwrap().create_user(staff).await.unwrap();
        pool.close().await;
    }
    let server = start_server(&database_url, None).await;
    let base = server.base.clone();
    let staff = client_for(&base);
    assert_eq!(staff.post("/api/v1/auth/login", json!({ "email": "outage-staff@example.test", "password": PASSWORD })).await.status, 200);
    let created = staff
        .post(
            "/api/v1/admin/events",
            json!({ "name": "Outage Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                    "sale_opens_at": "2020-01-01T10:00:00Z", "hold_ttl_seconds": 600, "max_seats_per_order": 4,
                    "tiers": [{ "tier": "Standard", "price_cents": 5000 }],
                    "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 10, "tier": "Standard" }] }] }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event: uuid::Uuid = created.body["event_id"].as_str().unwrap().parse().unwrap();

    // Before: one fan has paid, another holds seats, a third watches the map.
    let (booked, holding, late) = (signed_up(&base).await, signed_up(&base).await, signed_up(&base).await);
    let h = booked.hold(event, &["A-1-1"]).await;
    let paid = booked.checkout(h.body["hold_id"].as_str().unwrap(), h.body["hold_token"].as_str().unwrap(), "tok_visa", "before").await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let booking_id = paid.body["booking_id"].as_str().unwrap().to_owned();
    let held = holding.hold(event, &["A-1-2", "A-1-3"]).await;
    assert_eq!(held.status, 201);
    let page = |c: &Client| c.http.get(format!("{base}/events/{event}")).send();
    assert_eq!(page(&booked).await.unwrap().status(), 200);
    let url = format!("ws://{}/api/v1/events/{event}/live", base.trim_start_matches("http://"));
    let (mut socket, _): (Socket, _) = tokio_tungstenite::connect_async(url).await.expect("socket");
    assert_eq!(next_frame(&mut socket).await["type"], "snapshot");

    pg.stop().await.expect("stopping PostgreSQL");

    // During: writes are refused quickly with a code; reads from memory go on.
    let asked = Instant::now();
    assert_unavailable("a hold", &late.hold(event, &["A-1-5"]).await, asked);
    let asked = Instant::now();
    let checkout = holding.checkout(held.body["hold_id"].as_str().unwrap(), held.body["hold_token"].as_str().unwrap(), "tok_visa", "during").await;
    assert_unavailable("a checkout", &checkout, asked);
    let asked = Instant::now();
    let signup = client_for(&base).post("/api/v1/auth/signup", json!({ "email": "new@example.test", "password": PASSWORD, "name": "N" })).await;
    assert_unavailable("a sign-up", &signup, asked);
    assert_eq!(client_for(&base).get("/readyz").await.status, 503);
    assert_eq!(client_for(&base).get("/healthz").await.status, 200);
    let map = late.get(&format!("/api/v1/events/{event}/seats")).await;
    assert_eq!(map.status, 200, "the seat map is served from memory");
    let response = page(&booked).await.unwrap();
    assert_eq!(response.status(), 200, "a signed-in fan's seat map page renders");
    let html = response.text().await.unwrap();
    assert!(html.contains("id=\"seat-map\"") && html.contains("Fan"), "the map, and the fan still signed in");

    // After: PostgreSQL is back; the server recovers by itself.
    let pg = cluster().await;
    eventually(30, "readiness after the outage", || async { (client_for(&base).get("/readyz").await.status == 200).then_some(()) }).await;
    let again = eventually(20, "holds to work again", || async {
        let r = late.hold(event, &["A-1-5"]).await;
        (r.status != 503).then_some(r)
    })
    .await;
    assert_eq!(again.status, 201, "{}", again.body);
    // The viewer who stayed connected hears of it (the feed resynchronised).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        assert!(Instant::now() < deadline, "the new hold never reached the live map");
        let Ok(frame) = tokio::time::timeout(Duration::from_secs(1), next_frame(&mut socket)).await else { continue };
        let changes = frame["changes"].as_array().or(frame["seats"].as_array()).cloned().unwrap_or_default();
        if changes.iter().any(|c| c["seat_id"] == "A-1-5" && c["status"] == "held") {
            break;
        }
    }
    // What was acknowledged before the outage is still there and works.
    assert_eq!(booked.get(&format!("/api/v1/bookings/{booking_id}")).await.status, 200);
    let paid_later = holding.checkout(held.body["hold_id"].as_str().unwrap(), held.body["hold_token"].as_str().unwrap(), "tok_visa", "after").await;
    assert_eq!(paid_later.status, 201, "the hold made before the outage is paid for after it: {}", paid_later.body);

    let pool = frontrow_server::startup::connect(&database_url, 2).await.unwrap();
    let report = frontrow_server::startup::engine(&test_settings(), pool.clone()).unwrap().audit(None).await.unwrap();
    assert!(report.violations().is_empty(), "{report:?}");
    assert_eq!((report.seats_sold, report.seats_held), (3, 1));
    drop(server);
    pool.close().await;
    let _ = pg;
}
