//! The demo: a 10,000-seat venue in six sections and three price tiers, a
//! stadium of 70,000 seats around a 10,000-place standing floor (the bowl
//! template), both on sale now, smaller events in other cities and
//! categories (one not yet on sale, one selling adults' and children's
//! tickets) for the catalogue's search, and a staff account to run the box
//! office with.

use chrono::{Duration, Utc};
use frontrow_app::admin::layout_spec::{sections, templates};
use frontrow_engine::accounts::NewUser;
use frontrow_engine::{Engine, EngineError};
use frontrow_model::{EventId, NewEvent, NewRow, NewSection, RefundPolicy, Role, TicketType, TierPrice};

/// What fans search an event by and read about it.
struct Listing {
    name: &'static str,
    kind: &'static str,
    venue: &'static str,
    city: &'static str,
    address: &'static str,
    performers: &'static [&'static str],
    /// Starts in this many days.
    days: i64,
    notes: &'static str,
    /// Whether and until when fans may cancel.
    refund: RefundPolicy,
}

/// Fans may cancel until two days before, and get 90% back.
const TWO_DAYS_LESS_TEN_PERCENT: RefundPolicy = RefundPolicy { cancel_until_hours: Some(48), keep_percent: 10, fee_cents: 0 };
/// Fans may cancel until the day before, less €1.50 a ticket.
const DAY_BEFORE_LESS_FEE: RefundPolicy = RefundPolicy { cancel_until_hours: Some(24), keep_percent: 0, fee_cents: 150 };
/// No cancelling by fans.
const FINAL_SALE: RefundPolicy = RefundPolicy { cancel_until_hours: None, keep_percent: 0, fee_cents: 0 };

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
    let listing = Listing {
        name: DEMO_EVENT_NAME,
        kind: "concert",
        venue: "Harbour Arena",
        city: "Lisbon",
        address: "Avenida do Porto 1, 1990-001 Lisbon",
        performers: &["The Midnight Aurora"],
        days: 30,
        notes: "All ages; under-14s with an adult. Step-free entrance at gate C; wheelchair spaces on request.",
        refund: TWO_DAYS_LESS_TEN_PERCENT,
    };
    on_sale(&listing, tiers, sections)
}

/// A published event on sale from a minute ago, starting at 19:30 UTC on
/// its day, its doors open an hour before, with the demo's rules.
fn on_sale(listing: &Listing, tiers: Vec<TierPrice>, sections: Vec<NewSection>) -> NewEvent {
    let day = Utc::now() + Duration::days(listing.days);
    let starts_at = day.date_naive().and_hms_opt(19, 30, 0).map_or(day, |at| at.and_utc());
    NewEvent {
        name: listing.name.to_owned(),
        kind: listing.kind.to_owned(),
        venue: listing.venue.to_owned(),
        city: listing.city.to_owned(),
        performers: listing.performers.iter().map(|p| (*p).to_owned()).collect(),
        doors_at: Some(starts_at - Duration::hours(1)),
        address: listing.address.to_owned(),
        notes: listing.notes.to_owned(),
        starts_at,
        sale_opens_at: Utc::now() - Duration::minutes(1),
        refund_policy: listing.refund,
        ticket_types: Vec::new(),
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

/// The smaller events: (listing, rows, seats per row, price of the front
/// half, of the back half, days until the sale opens).
const SMALL_EVENTS: [(Listing, i32, i32, i32, i32, i64); 5] = [
    (
        Listing {
            name: "Hamlet",
            kind: "theatre",
            venue: "Old Quay Playhouse",
            city: "London",
            address: "12 Quay Street, London SE1 9PX",
            performers: &["The Quayside Players"],
            days: 21,
            notes: "Suitable for ages 12 and over. Running time 3 hours with one interval.",
            refund: DAY_BEFORE_LESS_FEE,
        },
        12,
        20,
        4_800,
        2_900,
        0,
    ),
    (
        Listing {
            name: "Stand-up Saturday",
            kind: "comedy",
            venue: "The Laughing Cellar",
            city: "Manchester",
            address: "3 Deansgate Arches, Manchester M3 4LY",
            performers: &["Dee Moss", "Sam Okafor"],
            days: 10,
            notes: "Over-18s only: photo ID may be asked for at the door.",
            refund: FINAL_SALE,
        },
        8,
        15,
        2_500,
        1_800,
        0,
    ),
    (
        Listing {
            name: "City Derby",
            kind: "sport",
            venue: "Riverside Ground",
            city: "Manchester",
            address: "Riverside Way, Manchester M11 3FF",
            performers: &["Riverside Rovers", "Northgate United"],
            days: 45,
            notes: "Away fans sit in the back rows. No bags larger than A4.",
            refund: TWO_DAYS_LESS_TEN_PERCENT,
        },
        20,
        30,
        6_000,
        3_500,
        0,
    ),
    (
        Listing {
            name: "Jazz by the River",
            kind: "concert",
            venue: "Riverside Jazz Club",
            city: "Lisbon",
            address: "Cais do Sodré 8, 1200-450 Lisbon",
            performers: &["Ana Costa Quartet"],
            days: 90,
            notes: "Seated tables; the bar opens with the doors.",
            refund: DAY_BEFORE_LESS_FEE,
        },
        6,
        12,
        5_500,
        3_500,
        14,
    ),
    (
        Listing {
            name: "Circus of Wonders",
            kind: "family",
            venue: "Big Top at Tempelhof",
            city: "Berlin",
            address: "Tempelhofer Damm 1, 12101 Berlin",
            performers: &["Cirque Lumen"],
            days: 14,
            notes: "Every child needs a ticket. Ear defenders are lent at the entrance.",
            refund: TWO_DAYS_LESS_TEN_PERCENT,
        },
        10,
        24,
        3_900,
        2_400,
        0,
    ),
];

/// A small event: one section of `rows` rows, the front half dearer.
fn small_event(listing: &Listing, rows: i32, seats: i32, front_cents: i32, back_cents: i32, opens_in_days: i64) -> NewEvent {
    let tiers = vec![TierPrice { tier: "Front".into(), price_cents: front_cents }, TierPrice { tier: "Back".into(), price_cents: back_cents }];
    let section = NewSection {
        section: "A".to_owned(),
        rows: (1..=rows)
            .map(|r| NewRow {
                row: r.to_string(),
                seats,
                tier: if r <= rows / 2 { "Front" } else { "Back" }.to_owned(),
                aisles_after: Vec::new(),
                wheelchair: Vec::new(),
                companion: Vec::new(),
            })
            .collect(),
        placement: None,
        standing: None,
    };
    let event = on_sale(listing, tiers, vec![section]);
    // A family show sells adults' and children's tickets (60% of the price).
    let ticket_types = match listing.kind {
        "family" => vec![
            TicketType { name: "Adult".into(), prices: event.tiers.clone() },
            TicketType {
                name: "Child".into(),
                prices: event.tiers.iter().map(|t| TierPrice { tier: t.tier.clone(), price_cents: t.price_cents * 3 / 5 }).collect(),
            },
        ],
        _ => Vec::new(),
    };
    NewEvent { sale_opens_at: Utc::now() + Duration::days(opens_in_days), ticket_types, ..event }
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
    let listing = Listing {
        name: "",
        kind: "festival",
        venue: "Northgate Stadium",
        city: "Manchester",
        address: "Stadium Way, Manchester M11 3FF",
        performers: &["The Midnight Aurora", "Solar Tide"],
        days: 60,
        notes: "Standing floor for over-16s. Accessible platforms in every lower section.",
        refund: FINAL_SALE,
    };
    Ok(NewEvent { name: name.to_owned(), stage: Some(template.stage), ..on_sale(&listing, tiers, seats) })
}

/// Creates the event unless one of that name exists; returns its id.
pub async fn seed_event(engine: &Engine, event: &NewEvent) -> Result<EventId, EngineError> {
    if let Some(id) = engine.find_event_by_name(&event.name).await? {
        return Ok(id);
    }
    Ok(engine.create_event(event, None).await?.event_id)
}

/// Creates the demo events and staff account unless they exist; returns
/// the ids of the 10,000-seat hall and the stadium.
pub async fn seed(engine: &Engine) -> Result<(EventId, EventId), EngineError> {
    let staff = NewUser { email: DEMO_STAFF_EMAIL, password: DEMO_STAFF_PASSWORD, name: "Box Office", role: Role::Admin };
    match engine.create_user(staff).await {
        Ok(_) | Err(EngineError::EmailTaken) => {}
        Err(e) => return Err(e),
    }
    let hall = seed_event(engine, &demo_event()).await?;
    let stadium = seed_event(engine, &stadium_event(DEMO_STADIUM_NAME, DEMO_STADIUM)?).await?;
    for (listing, rows, seats, front, back, opens_in) in &SMALL_EVENTS {
        seed_event(engine, &small_event(listing, *rows, *seats, *front, *back, *opens_in)).await?;
    }
    Ok((hall, stadium))
}
