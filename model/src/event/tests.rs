use super::*;
use chrono::Duration;

fn event(starts_in: i64, opens_in: i64) -> Event {
    let now = Utc::now();
    Event {
        event_id: EventId::from_uuid(uuid::Uuid::nil()),
        name: "N".into(),
        kind: "concert".into(),
        venue: "V".into(),
        details: EventDetails::default(),
        starts_at: now + Duration::hours(starts_in),
        sale_opens_at: now + Duration::hours(opens_in),
        hold_ttl_seconds: 480,
        max_seats_per_order: 8,
        waiting_room_enabled: false,
        queue_requires_verified_email: false,
        published: true,
        cancelled_at: None,
        refund_policy: RefundPolicy::default(),
        tiers: vec![],
        ticket_types: vec![],
        presales: vec![],
    }
}

#[test]
fn an_events_status_follows_the_clock_the_seats_and_a_cancellation() {
    let now = Utc::now();
    assert_eq!(EventStatus::of(&event(10, -1), 5, 0, now), EventStatus::OnSale);
    assert_eq!(EventStatus::of(&event(10, -1), 0, 0, now), EventStatus::SoldOut);
    assert_eq!(EventStatus::of(&event(10, -1), 0, 2, now), EventStatus::AllHeld, "held seats may come back");
    assert_eq!(EventStatus::of(&event(10, 1), 5, 0, now), EventStatus::Scheduled);
    assert_eq!(EventStatus::of(&event(-1, -2), 5, 0, now), EventStatus::Past);
    let mut cancelled = event(10, -1);
    cancelled.cancelled_at = Some(now);
    assert_eq!(EventStatus::of(&cancelled, 5, 0, now), EventStatus::Cancelled);
}

#[test]
fn the_summary_flattens_the_event_into_the_contracts_fields() {
    let summary = EventSummary {
        event: event(10, -1),
        status: EventStatus::OnSale,
        seats_total: 3,
        seats_available: 2,
        seats_held: 0,
        price_min_cents: 1,
        price_max_cents: 2,
    };
    let json = serde_json::to_value(&summary).unwrap();
    for field in ["event_id", "name", "kind", "venue", "starts_at", "sale_opens_at", "status", "seats_total", "seats_available"] {
        assert!(json.get(field).is_some(), "{field} missing from {json}");
    }
    assert_eq!(json["status"], "on_sale");
}

#[test]
fn fans_see_blocked_seats_as_sold() {
    assert_eq!(SeatStatus::Blocked.for_fans(), SeatStatus::Sold);
    assert_eq!(SeatStatus::Held.for_fans(), SeatStatus::Held);
}
