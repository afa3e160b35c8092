//! A presale's own waiting room: fans with a code queue for the presale
//! apart from the public sale, are drawn at random at the presale's
//! opening, and are admitted to hold during the presale only; the public
//! sale then draws its own pre-queue, presale fans included.

use std::collections::HashSet;

use frontrow_engine::queue::TickOutcome;
use frontrow_model::SalePhase;
use serde_json::json;
use uuid::Uuid;

use crate::common::*;

/// Front (row 1) and Back (row 2), 10 seats each, with the waiting room on
/// and the public sale three hours away.
async fn presale_room_event(staff: &Client) -> Uuid {
    let opens = chrono::Utc::now() + chrono::Duration::hours(3);
    let r = staff
        .post(
            "/api/v1/admin/events",
            json!({
                "name": "Presale Queue Night", "kind": "concert", "venue": "Hall", "starts_at": "2030-01-01T20:00:00Z",
                "sale_opens_at": opens.to_rfc3339(), "hold_ttl_seconds": 300, "max_seats_per_order": 4,
                "waiting_room_enabled": true,
                "tiers": [{ "tier": "Front", "price_cents": 5000 }, { "tier": "Back", "price_cents": 2500 }],
                "sections": [{ "section": "A", "rows": [{ "row": "1", "seats": 10, "tier": "Front" }, { "row": "2", "seats": 10, "tier": "Back" }] }]
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["event_id"].as_str().expect("id").parse().expect("uuid")
}

/// One round of the phase's queue, run now (the server's own loop is set
/// to an hour; the one-round-a-second rule is waived by clearing the last
/// round's time).
async fn round(app: &TestApp, event: Uuid, phase: SalePhase) -> Option<TickOutcome> {
    sqlx::query("UPDATE queues SET last_tick_at = NULL WHERE event_id = $1").bind(event).execute(&app.pool).await.expect("reset");
    app.engine.admission_round(event.into(), phase, Uuid::nil()).await.expect("round")
}

/// The tickets of a phase's queue, by fan.
async fn tickets(app: &TestApp, event: Uuid, phase: &str) -> Vec<(Uuid, Option<i64>)> {
    sqlx::query_as("SELECT user_id, ticket FROM queue_entries WHERE event_id = $1 AND phase = $2::sale_phase ORDER BY joined_at, user_id")
        .bind(event)
        .bind(phase)
        .fetch_all(&app.pool)
        .await
        .expect("tickets")
}

async fn join(fan: &Client, event: Uuid) -> Reply {
    fan.post(&format!("/api/v1/events/{event}/queue"), json!({})).await
}

async fn status(fan: &Client, event: Uuid, token: &str) -> Reply {
    fan.get(&format!("/api/v1/events/{event}/queue/{token}")).await
}

async fn hold(fan: &Client, event: Uuid, seat: &str, admission: Option<&str>) -> Reply {
    let mut request = fan.http.post(format!("{}/api/v1/events/{event}/holds", fan.base)).json(&json!({ "seat_ids": [seat] }));
    if let Some(token) = admission {
        request = request.header("X-Admission-Token", token);
    }
    fan.send(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presale_has_its_own_queue_and_draw_and_its_admissions_hold_only_during_the_presale() {
    let app = spawn_app_with(|s| s.admission_interval_ms = 3_600_000).await;
    let staff = app.staff().await;
    // The presale opens in an hour, for the 10 Front seats.
    let event = presale_room_event(&staff).await;
    let now = chrono::Utc::now();
    let codes = staff
        .post(
            &format!("/api/v1/admin/events/{event}/access-codes"),
            json!({ "label": "Fan club", "code": "CLUB-2030", "max_uses": 100, "limit_unit": "orders", "tiers": ["Front"],
                    "starts_at": (now + chrono::Duration::hours(1)).to_rfc3339(), "ends_at": (now + chrono::Duration::hours(2)).to_rfc3339() }),
        )
        .await;
    assert_eq!(codes.status, 201, "{}", codes.body);
    let settings =
        staff.send(staff.http.patch(format!("{}/api/v1/admin/events/{event}/waiting-room", staff.base)).json(&json!({ "max_active": 5 }))).await;
    assert_eq!(settings.status, 200, "{}", settings.body);

    // 30 fans enter the code before the presale opens, then all join at once;
    // 10 fans without a code join too.
    let mut club = Vec::new();
    for _ in 0..30 {
        let fan = app.fan().await;
        let entered = fan.post(&format!("/api/v1/events/{event}/presale-code"), json!({ "code": "club 2030" })).await;
        assert_eq!(entered.status, 200, "a code is taken before its window: {}", entered.body);
        club.push(fan);
    }
    let mut public = Vec::new();
    for _ in 0..10 {
        public.push(app.fan().await);
    }
    let club_joins = futures::future::join_all(club.iter().map(|fan| join(fan, event))).await;
    let public_joins = futures::future::join_all(public.iter().map(|fan| join(fan, event))).await;
    for joined in &club_joins {
        assert_eq!(joined.status, 201, "{}", joined.body);
        assert_eq!((joined.body["phase"].as_str(), joined.body["draw_pending"].as_bool()), (Some("presale"), Some(true)), "{}", joined.body);
    }
    for joined in &public_joins {
        assert_eq!((joined.body["phase"].as_str(), joined.body["draw_pending"].as_bool()), (Some("public"), Some(true)), "{}", joined.body);
    }
    let club_tokens: Vec<String> = club_joins.iter().map(|j| j.body["queue_token"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(status(&club[0], event, &club_tokens[0]).await.body["position"], 30, "the presale's pre-queue holds its 30 fans");
    // Presale fans wait in the public sale's pre-queue too: 40 there.
    assert_eq!(tickets(&app, event, "presale").await.len(), 30);
    assert_eq!(tickets(&app, event, "public").await.len(), 40);

    // Before the presale opens nobody is admitted or drawn, and a code
    // without an admission holds nothing.
    assert_eq!(round(&app, event, SalePhase::Presale).await.map(|r| r.admitted), Some(0));
    assert!(tickets(&app, event, "presale").await.iter().all(|(_, t)| t.is_none()));
    let r = hold(&club[0], event, "A-1-1", None).await;
    assert_eq!((r.status, r.body["error"].as_str()), (403, Some("not_admitted")), "{}", r.body);

    // The presale opens: its pre-queue is drawn at random, once, and the
    // first 5 (the most let in at a time) are admitted, against the 10
    // seats the code opens (not the hall's 20); the public sale's queue is
    // neither drawn nor admitted.
    sqlx::query("UPDATE access_code_batches SET starts_at = now() - interval '1 second' WHERE event_id = $1")
        .bind(event)
        .execute(&app.pool)
        .await
        .expect("open the presale");
    let opened = round(&app, event, SalePhase::Presale).await.expect("a presale round");
    assert_eq!((opened.remaining, opened.admitted, opened.admitted_through), (10, 5, 5), "{opened:?}");
    let drawn = tickets(&app, event, "presale").await;
    let mut numbers: Vec<i64> = drawn.iter().map(|(_, t)| t.expect("every presale fan is drawn")).collect();
    assert_ne!(numbers, (1..=30).collect::<Vec<_>>(), "the draw is not the arrival order");
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=30).collect::<Vec<_>>(), "a permutation");
    round(&app, event, SalePhase::Presale).await;
    assert_eq!(tickets(&app, event, "presale").await, drawn, "drawn once");
    assert_eq!(round(&app, event, SalePhase::Public).await.map(|r| r.admitted), Some(0));
    assert!(tickets(&app, event, "public").await.iter().all(|(_, t)| t.is_none()), "the public draw waits for the public sale");

    // Each presale fan's place is their ticket; the admitted ones hold with
    // their admission and code, the others are told how many are ahead.
    let mut admitted = Vec::new();
    for (fan, token) in club.iter().zip(&club_tokens) {
        let view = status(fan, event, token).await;
        assert_eq!(view.status, 200, "{}", view.body);
        match view.body["admission_token"].as_str() {
            Some(admission) => admitted.push((fan, admission.to_owned())),
            None => assert!(view.body["position"].as_i64().is_some_and(|p| (0..25).contains(&p)), "{}", view.body),
        }
    }
    assert_eq!(admitted.len(), 5);
    let outcomes = futures::future::join_all(admitted.iter().enumerate().map(|(i, (fan, admission))| {
        let seat = format!("A-1-{}", i + 1);
        async move { hold(fan, event, &seat, Some(admission)).await }
    }))
    .await;
    for r in &outcomes {
        assert_eq!(r.status, 201, "{}", r.body);
    }
    // A fan without a code is not in the presale's queue and holds nothing.
    let r = hold(&public[0], event, "A-2-1", None).await;
    assert_eq!(r.status, 403, "{}", r.body);

    // The public sale opens: presale admissions hold nothing more, the
    // presale's queue has no more rounds and tells its fans it is over,
    // and the public draw places presale and public fans together.
    sqlx::query("UPDATE events SET sale_opens_at = now() - interval '1 second' WHERE event_id = $1")
        .bind(event)
        .execute(&app.pool)
        .await
        .expect("open the sale");
    app.engine.board().refresh_facts(event.into()).await.expect("refresh");
    let (fan, admission) = &admitted[0];
    let r = hold(fan, event, "A-2-2", Some(admission)).await;
    assert_eq!((r.status, r.body["error"].as_str()), (403, Some("not_admitted")), "a presale admission after the presale: {}", r.body);
    assert!(round(&app, event, SalePhase::Presale).await.is_none(), "no presale rounds after the presale");
    let waiting = club.iter().zip(&club_tokens).find(|(f, _)| !admitted.iter().any(|(a, _)| std::ptr::eq(*a, *f))).expect("a waiting fan");
    let over = status(waiting.0, event, waiting.1).await;
    assert_eq!(over.body["state"], "presale_over", "{}", over.body);
    assert!(over.body["admission_token"].is_null());
    let public_round = round(&app, event, SalePhase::Public).await.expect("a public round");
    assert_eq!(public_round.remaining, 15, "the public sale admits for every seat left: {public_round:?}");
    let public_tickets = tickets(&app, event, "public").await;
    let numbers: HashSet<i64> = public_tickets.iter().map(|(_, t)| t.expect("every public fan is drawn")).collect();
    assert_eq!(numbers, (1..=40).collect::<HashSet<_>>(), "{public_tickets:?}");
    assert!(public_round.admitted > 0, "{public_round:?}");
    // The presale fan joins the public queue again and finds the place the
    // public draw gave them, not the back of the line.
    let rejoined = join(waiting.0, event).await;
    assert_eq!(rejoined.body["phase"], "public", "{}", rejoined.body);
    assert_ne!(rejoined.body["queue_token"].as_str(), Some(waiting.1.as_str()));
    let place = sqlx::query_scalar::<_, Option<i64>>(
        "SELECT e.ticket FROM queue_entries e WHERE e.event_id = $1 AND e.phase = 'public' AND e.queue_token = $2",
    )
    .bind(event)
    .bind(rejoined.body["queue_token"].as_str().unwrap_or_default())
    .fetch_one(&app.pool)
    .await
    .expect("place");
    assert!(place.is_some_and(|t| t <= 40), "{place:?}");

    let stats = staff.get(&format!("/api/v1/admin/events/{event}/waiting-room")).await;
    assert_eq!(stats.body["presale"]["admitted_total"], 5, "{}", stats.body);
    assert_eq!(stats.body["presale"]["queue_length"], 25, "{}", stats.body);
    assert!(stats.body["presale"]["drawn_at"].is_string(), "{}", stats.body);
    app.assert_invariants().await;
    app.stop().await;
}
