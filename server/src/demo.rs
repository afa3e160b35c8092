//! The demo: a 10,000-seat venue in six sections and three price tiers, on
//! sale now, and a staff account to run the box office with.

use chrono::{Duration, Utc};
use frontrow_engine::accounts::NewUser;
use frontrow_engine::{Engine, EngineError};
use frontrow_model::{NewEvent, NewRow, NewSection, Role, TierPrice};
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
                .map(|r| NewRow {
                    row: r.to_string(),
                    seats,
                    tier: if r <= premium_rows { "Premium" } else { rest }.to_owned(),
                    aisles_after: Vec::new(),
                    wheelchair: Vec::new(),
                    companion: Vec::new(),
                })
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
        published: true,
        layout_id: None,
        tiers: vec![
            TierPrice { tier: "Premium".into(), price_cents: 12_500 },
            TierPrice { tier: "Standard".into(), price_cents: 6_500 },
            TierPrice { tier: "Value".into(), price_cents: 3_500 },
        ],
        sections,
    }
}

/// Creates the demo event and staff account unless they exist; returns the event id.
pub async fn seed(engine: &Engine) -> Result<Uuid, EngineError> {
    let staff = NewUser { email: DEMO_STAFF_EMAIL, password: DEMO_STAFF_PASSWORD, name: "Box Office", role: Role::Admin };
    match engine.create_user(staff).await {
        Ok(_) | Err(EngineError::EmailTaken) => {}
        Err(e) => return Err(e),
    }
    if let Some(id) = engine.find_event_by_name(DEMO_EVENT_NAME).await? {
        return Ok(id);
    }
    Ok(engine.create_event(&demo_event(), None).await?.event_id)
}
