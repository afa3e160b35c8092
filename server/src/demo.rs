//! The demo: a 10,000-seat venue in six sections and three price tiers, on
//! sale now, and a staff account to run the box office with.

use chrono::{Duration, Utc};
use frontrow_engine::accounts::{self, NewUser};
use frontrow_engine::catalogue;
use frontrow_engine::model::{NewEvent, NewRow, NewSection, Role, TierPrice};
use frontrow_engine::EngineError;
use uuid::Uuid;

pub const DEMO_EVENT_NAME: &str = "The Midnight Aurora: World Tour";
pub const DEMO_STAFF_EMAIL: &str = "staff@frontrow.test";
pub const DEMO_STAFF_PASSWORD: &str = "frontrow-demo";

/// (section, rows, seats per row, rows in the premium tier, tier of the rest)
const LAYOUT: [(&str, i32, i32, i32, &str); 6] = [
    ("A", 25, 60, 8, "Standard"),
    ("B", 25, 50, 5, "Standard"),
    ("C", 25, 50, 5, "Standard"),
    ("D", 30, 60, 0, "Standard"),
    ("E", 30, 60, 0, "Value"),
    ("F", 40, 60, 0, "Value"),
];

pub fn demo_event() -> NewEvent {
    let sections = LAYOUT
        .iter()
        .map(|&(section, rows, seats, premium_rows, rest)| NewSection {
            section: section.to_owned(),
            rows: (1..=rows)
                .map(|r| NewRow { row: r.to_string(), seats, tier: if r <= premium_rows { "Premium" } else { rest }.to_owned() })
                .collect(),
        })
        .collect();
    NewEvent {
        name: DEMO_EVENT_NAME.to_owned(),
        kind: "concert".to_owned(),
        venue: "Harbour Arena".to_owned(),
        starts_at: Utc::now() + Duration::days(30),
        sale_opens_at: Utc::now() - Duration::minutes(1),
        hold_ttl_seconds: 480,
        max_seats_per_order: 8,
        waiting_room_enabled: false,
        tiers: vec![
            TierPrice { tier: "Premium".into(), price_cents: 12_500 },
            TierPrice { tier: "Standard".into(), price_cents: 6_500 },
            TierPrice { tier: "Value".into(), price_cents: 3_500 },
        ],
        sections,
    }
}

/// Creates the demo event and staff account unless they exist; returns the event id.
pub async fn seed(pool: &sqlx::PgPool) -> Result<Uuid, EngineError> {
    let staff = NewUser { email: DEMO_STAFF_EMAIL, password: DEMO_STAFF_PASSWORD, name: "Box Office", role: Role::Admin };
    match accounts::create_user(pool, staff).await {
        Ok(_) | Err(EngineError::EmailTaken) => {}
        Err(e) => return Err(e),
    }
    if let Some(id) = catalogue::find_event_by_name(pool, DEMO_EVENT_NAME).await? {
        return Ok(id);
    }
    Ok(catalogue::create_event(pool, &demo_event(), None).await?.event_id)
}
