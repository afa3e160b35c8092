//! Domain types shared by the engine, the JSON API and the Leptos app.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type, ToSchema)]
#[sqlx(type_name = "user_role", rename_all = "lowercase")]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Fan,
    Staff,
    Admin,
}

impl Role {
    pub fn is_staff(self) -> bool {
        matches!(self, Role::Staff | Role::Admin)
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fan" => Ok(Role::Fan),
            "staff" => Ok(Role::Staff),
            "admin" => Ok(Role::Admin),
            other => Err(format!("unknown role {other:?} (fan, staff or admin)")),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct User {
    pub user_id: Uuid,
    pub email: String,
    pub name: String,
    pub role: Role,
}

/// The seat states stored in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, sqlx::Type)]
#[sqlx(type_name = "seat_state", rename_all = "snake_case")]
#[serde(rename_all = "snake_case")]
pub enum SeatState {
    Available,
    Held,
    PaymentPending,
    Sold,
}

/// What a viewer of the seat map sees: a payment-pending seat is simply held,
/// and a held seat whose lease ran out is already available again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeatStatus {
    Available,
    Held,
    Sold,
}

impl SeatStatus {
    pub fn of(state: SeatState, hold_expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Self {
        match state {
            SeatState::Available => SeatStatus::Available,
            SeatState::Held if hold_expires_at.is_some_and(|t| t <= now) => SeatStatus::Available,
            SeatState::Held | SeatState::PaymentPending => SeatStatus::Held,
            SeatState::Sold => SeatStatus::Sold,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventSummary {
    pub event_id: Uuid,
    pub name: String,
    pub kind: String,
    pub venue: String,
    pub starts_at: DateTime<Utc>,
    pub sale_opens_at: DateTime<Utc>,
    /// `on_sale`, `upcoming` (sale not open yet), `sold_out` or `past`.
    pub status: String,
    pub seats_total: i64,
    pub seats_available: i64,
    /// The cheapest and dearest tier.
    pub price_min_cents: i32,
    pub price_max_cents: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TierPrice {
    pub tier: String,
    pub price_cents: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SectionSummary {
    pub section: String,
    pub rows: i64,
    pub seats: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventDetail {
    #[serde(flatten)]
    pub summary: EventSummary,
    pub hold_ttl_seconds: i32,
    pub max_seats_per_order: i32,
    pub waiting_room_enabled: bool,
    pub tiers: Vec<TierPrice>,
    pub sections: Vec<SectionSummary>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeatView {
    pub seat_id: String,
    pub section: String,
    pub row: String,
    pub number: i32,
    pub tier: String,
    pub price_cents: i32,
    pub status: SeatStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeatMap {
    pub event_id: Uuid,
    pub version: i64,
    pub seats: Vec<SeatView>,
}

/// A new event as box-office staff describe it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewEvent {
    pub name: String,
    pub kind: String,
    pub venue: String,
    pub starts_at: DateTime<Utc>,
    pub sale_opens_at: DateTime<Utc>,
    #[serde(default = "default_hold_ttl")]
    pub hold_ttl_seconds: i32,
    #[serde(default = "default_max_seats")]
    pub max_seats_per_order: i32,
    #[serde(default)]
    pub waiting_room_enabled: bool,
    pub tiers: Vec<TierPrice>,
    pub sections: Vec<NewSection>,
}

fn default_hold_ttl() -> i32 {
    480
}
fn default_max_seats() -> i32 {
    8
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewSection {
    pub section: String,
    pub rows: Vec<NewRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct NewRow {
    pub row: String,
    /// Number of seats in the row, numbered 1..=seats.
    pub seats: i32,
    pub tier: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CreatedEvent {
    pub event_id: Uuid,
    pub seats_total: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Hold {
    pub hold_id: Uuid,
    pub hold_token: String,
    pub event_id: Uuid,
    pub seat_ids: Vec<String>,
    pub expires_at: DateTime<Utc>,
    pub total_cents: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HoldStatus {
    pub hold_id: Uuid,
    pub event_id: Uuid,
    pub seat_ids: Vec<String>,
    pub expires_at: DateTime<Utc>,
    /// `active`, `released`, `expired`, `checking_out` or `converted`.
    pub state: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Ticket {
    pub ticket_id: Uuid,
    pub seat_id: String,
    pub code: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Booking {
    pub booking_id: Uuid,
    pub event_id: Uuid,
    pub seat_ids: Vec<String>,
    pub total_cents: i64,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub tickets: Vec<Ticket>,
}

/// The invariant audit of one event or of all events.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct AuditReport {
    /// Seats with more than one live ticket, or sold without exactly one. Must be 0.
    pub oversold_seats: i64,
    pub seats_sold: i64,
    pub seats_held: i64,
    pub seats_available: i64,
    pub bookings: i64,
    /// Captured money with neither a booking nor a completed refund (once settled).
    pub payments_captured_without_booking: i64,
    pub refunds_pending: i64,
    /// Seats held (lease not lapsed) or payment-pending whose hold is not live with the same token.
    pub held_without_live_hold: i64,
    /// Sold seats whose booking is missing, or live tickets on unsold seats.
    pub sold_mismatched: i64,
}

impl AuditReport {
    /// The invariants that must hold at every instant.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.oversold_seats != 0 {
            v.push(format!("{} oversold seats", self.oversold_seats));
        }
        if self.payments_captured_without_booking != 0 {
            v.push(format!("{} captured payments neither booked nor refunded", self.payments_captured_without_booking));
        }
        if self.held_without_live_hold != 0 {
            v.push(format!("{} held seats without a live hold", self.held_without_live_hold));
        }
        if self.sold_mismatched != 0 {
            v.push(format!("{} sold seats whose booking and tickets disagree", self.sold_mismatched));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn a_lapsed_hold_reads_as_available_and_payment_pending_as_held() {
        let now = Utc::now();
        assert_eq!(SeatStatus::of(SeatState::Held, Some(now - Duration::seconds(1)), now), SeatStatus::Available);
        assert_eq!(SeatStatus::of(SeatState::Held, Some(now), now), SeatStatus::Available);
        assert_eq!(SeatStatus::of(SeatState::Held, Some(now + Duration::seconds(1)), now), SeatStatus::Held);
        assert_eq!(SeatStatus::of(SeatState::PaymentPending, Some(now - Duration::seconds(9)), now), SeatStatus::Held);
        assert_eq!(SeatStatus::of(SeatState::Sold, None, now), SeatStatus::Sold);
    }

    #[test]
    fn only_invariant_breaches_are_violations() {
        let clean = AuditReport { seats_sold: 5, seats_held: 3, refunds_pending: 1, ..Default::default() };
        assert!(clean.violations().is_empty());
        let oversold = AuditReport { oversold_seats: 1, ..Default::default() };
        assert_eq!(oversold.violations().len(), 1);
        let stray = AuditReport { held_without_live_hold: 2, payments_captured_without_booking: 1, ..Default::default() };
        assert_eq!(stray.violations().len(), 2);
    }

    #[test]
    fn roles_parse_and_rank() {
        assert_eq!("staff".parse::<Role>(), Ok(Role::Staff));
        assert!("root".parse::<Role>().is_err());
        assert!(Role::Admin.is_staff() && Role::Staff.is_staff() && !Role::Fan.is_staff());
    }
}
