//! The demo: a 10,000-seat venue in six sections and three price tiers, a
//! stadium of 70,000 seats around a 10,000-place standing floor (the bowl
//! template), both on sale now, and a staff account to run the box office
//! with.

use chrono::{Duration, Utc};
use frontrow_app::admin::layout_spec::{sections, templates};
use frontrow_engine::accounts::NewUser;
use frontrow_engine::{Engine, EngineError};
use frontrow_model::{EventId, NewEvent, NewRow, NewSection, Role, TierPrice};

pub const DEMO_EVENT_NAME: &str = "The Midnight Aurora: World Tour";
pub const DEMO_STADIUM_NAME: &str = "Summer Stadium Festival";

/// A stadium bowl as the layout generator's template makes it.
#[derive(Debug, Clone, Copy)]
pub struct Stadium {
    /// Sections in each ring (lower and upper tier).
    pub sections: u32,
    pub lower_rows: u32,
    pub upper_rows: u32,
    /// Standing places on the floor (0: none).
    pub floor: u32,
}

/// The demo stadium: 70,000 seats and a 10,000-place floor.
pub const DEMO_STADIUM: Stadium = Stadium { sections: 40, lower_rows: 46, upper_rows: 51, floor: 10_000 };
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
            placement: None,
            standing: None,
        })
        .collect();
    let tiers = vec![
        TierPrice { tier: "Premium".into(), price_cents: 12_500 },
        TierPrice { tier: "Standard".into(), price_cents: 6_500 },
        TierPrice { tier: "Value".into(), price_cents: 3_500 },
    ];
    on_sale(DEMO_EVENT_NAME, "concert", "Harbour Arena", 30, tiers, sections)
}

/// A published event on sale from a minute ago, starting in `days` days,
/// with the demo's rules.
fn on_sale(name: &str, kind: &str, venue: &str, days: i64, tiers: Vec<TierPrice>, sections: Vec<NewSection>) -> NewEvent {
    NewEvent {
        name: name.to_owned(),
        kind: kind.to_owned(),
        venue: venue.to_owned(),
        starts_at: Utc::now() + Duration::days(days),
        sale_opens_at: Utc::now() - Duration::minutes(1),
        hold_ttl_seconds: 480,
        max_seats_per_order: 8,
        waiting_room_enabled: false,
        published: true,
        layout_id: None,
        stage: None,
        tiers,
        sections,
    }
}

/// A stadium event named `name`, seated from the bowl template, on sale now.
pub fn stadium_event(name: &str, stadium: Stadium) -> Result<NewEvent, EngineError> {
    let template = templates::bowl(stadium.sections, stadium.lower_rows, stadium.upper_rows, stadium.floor);
    let mut tiers = vec![
        TierPrice { tier: "Premium".into(), price_cents: 14_500 },
        TierPrice { tier: "Standard".into(), price_cents: 8_900 },
        TierPrice { tier: "Value".into(), price_cents: 4_900 },
    ];
    if stadium.floor > 0 {
        tiers.push(TierPrice { tier: "Floor".into(), price_cents: 7_500 });
    }
    let seats = sections(&template.sections).map_err(EngineError::InvalidInput)?;
    Ok(NewEvent { stage: Some(template.stage), ..on_sale(name, "festival", "Northgate Stadium", 60, tiers, seats) })
}

/// Creates the event unless one of that name exists; returns its id.
pub async fn seed_event(engine: &Engine, event: &NewEvent) -> Result<EventId, EngineError> {
    if let Some(id) = engine.find_event_by_name(&event.name).await? {
        return Ok(id);
    }
    Ok(engine.create_event(event, None).await?.event_id)
}

/// Creates the demo events and staff account unless they exist; returns
/// the events' ids (the 10,000-seat hall, then the stadium).
pub async fn seed(engine: &Engine) -> Result<(EventId, EventId), EngineError> {
    let staff = NewUser { email: DEMO_STAFF_EMAIL, password: DEMO_STAFF_PASSWORD, name: "Box Office", role: Role::Admin };
    match engine.create_user(staff).await {
        Ok(_) | Err(EngineError::EmailTaken) => {}
        Err(e) => return Err(e),
    }
    let hall = seed_event(engine, &demo_event()).await?;
    let stadium = seed_event(engine, &stadium_event(DEMO_STADIUM_NAME, DEMO_STADIUM)?).await?;
    Ok((hall, stadium))
}
