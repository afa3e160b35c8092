//! Events, their seats, and the layouts staff describe them with.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{EventId, LayoutId};
use crate::terms::{RefundPolicy, TicketType, TierPrice};
use crate::venue::{Placement, SectionKind, Stage, StandingArea};

/// An event: what it is, when, and its booking rules. Every view of an
/// event (the list, the detail, the page, the staff screens) is this plus
/// what that view adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Event {
    pub event_id: EventId,
    pub name: String,
    /// The category fans filter by: concert, theatre, sport, comedy, ...
    pub kind: String,
    pub venue: String,
    #[serde(flatten)]
    pub details: EventDetails,
    pub starts_at: DateTime<Utc>,
    pub sale_opens_at: DateTime<Utc>,
    pub hold_ttl_seconds: i32,
    pub max_seats_per_order: i32,
    pub waiting_room_enabled: bool,
    /// Joining the waiting room needs a verified email address.
    #[serde(default)]
    pub queue_requires_verified_email: bool,
    /// Unpublished events are invisible to fans.
    pub published: bool,
    /// Set once the event is cancelled: nothing more is sold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<DateTime<Utc>>,
    /// Whether fans may cancel their tickets, until when, at what cost.
    #[serde(default)]
    pub refund_policy: RefundPolicy,
    /// Dearest first.
    pub tiers: Vec<TierPrice>,
    /// Kinds of ticket (adult, child, ...) with their own prices; none: a
    /// seat sells at its tier's price.
    #[serde(default)]
    pub ticket_types: Vec<TicketType>,
    /// Presales before the public sale (for fans with a code), in order.
    #[serde(default)]
    pub presales: Vec<crate::presale::Presale>,
}

/// What a fan searches by and reads on an event's page, beyond its name,
/// category and venue. Every field may be left empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventDetails {
    /// The venue's city.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 100))]
    pub city: String,
    /// Performers, teams or other words the event is found by.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 20))]
    pub performers: Vec<String>,
    /// When the doors open (before `starts_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doors_at: Option<DateTime<Utc>>,
    /// The venue's street address.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200))]
    pub address: String,
    /// What to know before buying: age limits, accessibility, what to bring.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
    pub notes: String,
}

/// Performer names in the API's schema: 1 to 20 of them, each 1 to 100
/// characters, not blank, no control characters.
#[cfg(feature = "openapi")]
pub fn performer_names() -> utoipa::openapi::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let name = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(100))
        .pattern(Some("^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"));
    ArrayBuilder::new().items(name).max_items(Some(20)).build()
}

/// A price tier's name in the API's schema: 1 to 32 characters, not
/// blank, no control characters.
#[cfg(feature = "openapi")]
pub fn tier_name() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(32))
        .pattern(Some("^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"))
        .build()
}

/// The same, or null (a change that leaves them as they are).
#[cfg(feature = "openapi")]
pub fn performer_names_or_null() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    Schema::OneOf(OneOfBuilder::new().item(performer_names()).item(ObjectBuilder::new().schema_type(Type::Null)).build())
}

/// The categories the staff form offers (the API takes any word).
pub const CATEGORIES: [&str; 7] = ["concert", "theatre", "sport", "comedy", "festival", "family", "other"];

/// Where an event stands for a buyer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// The sale has not opened yet.
    Scheduled,
    OnSale,
    /// Nothing is free now, but seats are held or being paid for: some may
    /// come back (a hold lapses, a payment fails).
    AllHeld,
    /// Every seat is sold (or off sale).
    SoldOut,
    Cancelled,
    /// The show has started or is over.
    Past,
}

impl EventStatus {
    /// `available` seats free now, `held` held or being paid for.
    pub fn of(event: &Event, available: i64, held: i64, now: DateTime<Utc>) -> Self {
        if event.cancelled_at.is_some() {
            EventStatus::Cancelled
        } else if event.starts_at <= now {
            EventStatus::Past
        } else if event.sale_opens_at > now {
            EventStatus::Scheduled
        } else if available == 0 && held > 0 {
            EventStatus::AllHeld
        } else if available == 0 {
            EventStatus::SoldOut
        } else {
            EventStatus::OnSale
        }
    }
}

/// An event in the catalogue: the event and how its seats stand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventSummary {
    #[serde(flatten)]
    pub event: Event,
    pub status: EventStatus,
    pub seats_total: i64,
    pub seats_available: i64,
    /// Seats held or being paid for now (they may come back).
    #[serde(default)]
    pub seats_held: i64,
    /// The cheapest and dearest tier.
    pub price_min_cents: i32,
    pub price_max_cents: i32,
}

/// A section (or standing area) of an event and how much of it is left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SectionSummary {
    pub section: String,
    #[serde(default)]
    pub kind: SectionKind,
    pub rows: i64,
    /// Its seats (a standing area: its places).
    pub seats: i64,
    #[serde(default)]
    pub seats_available: i64,
    /// The cheapest of its seats.
    #[serde(default)]
    pub price_min_cents: i32,
}

/// `GET /events/{id}`: the summary and the sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventDetail {
    #[serde(flatten)]
    pub summary: EventSummary,
    pub sections: Vec<SectionSummary>,
}

/// A seat as someone looking at the map sees it. Fans see a blocked seat
/// as sold; staff see it blocked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SeatStatus {
    Available,
    Held,
    Sold,
    Blocked,
}

impl SeatStatus {
    /// What a fan is shown: a blocked seat is simply not for sale.
    pub fn for_fans(self) -> Self {
        match self {
            SeatStatus::Blocked => SeatStatus::Sold,
            other => other,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            SeatStatus::Available => "available",
            SeatStatus::Held => "held",
            SeatStatus::Sold => "sold",
            SeatStatus::Blocked => "blocked",
        }
    }
}

/// What kind of place a seat is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "seat_kind", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SeatKind {
    #[default]
    Standard,
    /// A space for a wheelchair user.
    Wheelchair,
    /// A seat beside a wheelchair space, for a companion.
    Companion,
    /// A place in a standing area: unnumbered for the fan, sold by count.
    Standing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeatView {
    pub seat_id: String,
    pub section: String,
    pub row: String,
    pub number: i32,
    pub tier: String,
    pub price_cents: i32,
    pub status: SeatStatus,
    #[serde(default, skip_serializing_if = "is_standard")]
    pub kind: SeatKind,
}

fn is_standard(kind: &SeatKind) -> bool {
    *kind == SeatKind::Standard
}

/// `GET /events/{id}/seats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeatMap {
    pub event_id: EventId,
    pub version: i64,
    pub seats: Vec<SeatView>,
}

/// A new event as box-office staff describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewEvent {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: String,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 50,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub kind: String,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub venue: String,
    /// The venue's city.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub city: String,
    /// Performers, teams or other words the event is found by.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = performer_names))]
    pub performers: Vec<String>,
    /// When the doors open (not after `starts_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doors_at: Option<DateTime<Utc>>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 200, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub address: String,
    /// Age limits, accessibility, what to bring (line breaks allowed).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 2000, pattern = "^[^\\u0000-\\u0009\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"))]
    pub notes: String,
    pub starts_at: DateTime<Utc>,
    /// In the past: on sale at once.
    pub sale_opens_at: DateTime<Utc>,
    /// Left out: fans cannot cancel.
    #[serde(default)]
    pub refund_policy: RefundPolicy,
    /// Left out: each seat sells at its tier's price.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 10))]
    pub ticket_types: Vec<TicketType>,
    #[serde(default = "default_hold_ttl")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 3600, default = 480))]
    pub hold_ttl_seconds: i32,
    #[serde(default = "default_max_seats")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 50, default = 8))]
    pub max_seats_per_order: i32,
    #[serde(default)]
    pub waiting_room_enabled: bool,
    /// Unpublished events are 404 to fans until published.
    #[serde(default = "published_by_default")]
    pub published: bool,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20))]
    pub tiers: Vec<TierPrice>,
    /// The seating plan; or leave it out and name a saved layout.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 200))]
    pub sections: Vec<NewSection>,
    /// A saved venue layout to seat the event with (instead of `sections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout_id: Option<LayoutId>,
    /// What the sections face (with `sections`; a layout brings its own).
    /// Without it, a stage is drawn along the top of the map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

impl NewEvent {
    /// The details a fan searches by and reads (the API takes them as
    /// fields of their own, since a new event refuses unknown fields).
    pub fn details(&self) -> EventDetails {
        EventDetails {
            city: self.city.clone(),
            performers: self.performers.clone(),
            doors_at: self.doors_at,
            address: self.address.clone(),
            notes: self.notes.clone(),
        }
    }
}

fn default_hold_ttl() -> i32 {
    480
}
fn default_max_seats() -> i32 {
    8
}
fn published_by_default() -> bool {
    true
}

/// A section of seats in rows, or (with `standing`) a standing area.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSection {
    /// Letters and digits (it becomes part of every seat id).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]+$"))]
    pub section: String,
    /// The rows, front first (none for a standing area).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 500))]
    pub rows: Vec<NewRow>,
    /// Where it sits on the map; without it, sections are set out in a grid
    /// facing a stage along the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// A standing area instead of rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<StandingArea>,
}

impl NewSection {
    pub fn kind(&self) -> SectionKind {
        if self.standing.is_some() {
            SectionKind::Standing
        } else {
            SectionKind::Seated
        }
    }

    /// Its seats, or a standing area's places.
    pub fn places(&self) -> i64 {
        match &self.standing {
            Some(area) => i64::from(area.capacity),
            None => self.rows.iter().map(|r| i64::from(r.seats)).sum(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewRow {
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]+$"))]
    pub row: String,
    /// Number of seats in the row, numbered 1..=seats.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1000))]
    pub seats: i32,
    #[cfg_attr(feature = "openapi", schema(schema_with = tier_name))]
    pub tier: String,
    /// Seat numbers after which an aisle runs: the seats either side are
    /// not side by side.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub aisles_after: Vec<i32>,
    /// Seat numbers that are wheelchair spaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub wheelchair: Vec<i32>,
    /// Seat numbers kept for companions of wheelchair users.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub companion: Vec<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedEvent {
    pub event_id: EventId,
    pub seats_total: i64,
}

#[cfg(test)]
mod tests;
