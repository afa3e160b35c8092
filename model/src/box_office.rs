//! What the box office sends and reads: event changes, blocks, counter
//! sales, refunds, check-ins, live figures, payments to settle, layouts and
//! staff accounts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{EventStatus, NewSection};
use crate::ids::{BookingId, CheckoutId, EventId, LayoutId, PaymentId, PaymentToken, SeatId, TicketId, UserId};
use crate::order::{BookingStatus, Channel, TicketChoices};
use crate::terms::{RefundPolicy, TicketType};
use crate::user::Role;
use crate::venue::Stage;

/// `PATCH /admin/events/{id}`: a field left out stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EventChanges {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: Option<String>,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub venue: Option<String>,
    /// The category.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 50,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub kind: Option<String>,
    #[cfg_attr(feature = "openapi", schema(max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub city: Option<String>,
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::event::performer_names_or_null))]
    pub performers: Option<Vec<String>>,
    /// Not after the start.
    pub doors_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(max_length = 200, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub address: Option<String>,
    #[cfg_attr(feature = "openapi", schema(max_length = 2000, pattern = "^[^\\u0000-\\u0009\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"))]
    pub notes: Option<String>,
    pub starts_at: Option<DateTime<Utc>>,
    pub sale_opens_at: Option<DateTime<Utc>>,
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 3600))]
    pub hold_ttl_seconds: Option<i32>,
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 50))]
    pub max_seats_per_order: Option<i32>,
    pub published: Option<bool>,
    /// Replaces the whole policy (`{}` stops fans cancelling).
    pub refund_policy: Option<RefundPolicy>,
    /// Replaces the ticket types (`[]`: none; tickets sold keep theirs).
    #[cfg_attr(feature = "openapi", schema(max_items = 10))]
    pub ticket_types: Option<Vec<TicketType>>,
}

/// An event in the box office's list, with its seats counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StaffEventLine {
    pub event_id: EventId,
    pub name: String,
    pub venue: String,
    pub starts_at: DateTime<Utc>,
    pub status: EventStatus,
    pub published: bool,
    pub seats_total: i64,
    pub seats_available: i64,
    pub seats_held: i64,
    pub seats_sold: i64,
    pub seats_blocked: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReasonBody {
    /// Why, for the change log.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 500,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BlockRequest {
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 1000))]
    pub seat_ids: Vec<SeatId>,
    /// Why (production hold, house seats...), for the change log.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 500,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UnblockRequest {
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 1000))]
    pub seat_ids: Vec<SeatId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Blocked {
    pub blocked: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Released {
    pub released: Vec<String>,
}

/// How a counter customer pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CounterPayment {
    Cash,
    Card,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CounterSaleRequest {
    /// The seats sold (or leave it empty and name `standing` places).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub seat_ids: Vec<SeatId>,
    /// Places of a standing area, by count: any free ones are sold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standing: Option<StandingPlaces>,
    pub payment: CounterPayment,
    /// The card's token from the terminal, for `card`.
    #[serde(default)]
    pub payment_token: Option<PaymentToken>,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub customer_name: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(format = Email, max_length = 254))]
    pub customer_email: Option<String>,
    /// The ticket type of each seat sold (seat id -> type); the rest are
    /// of the first type sold in their tier. Standing places take their
    /// area's first type.
    #[serde(default, skip_serializing_if = "TicketChoices::is_empty")]
    pub ticket_types: TicketChoices,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RefundRequest {
    /// The tickets to refund; none means every live ticket of the booking.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::order::ticket_list_schema))]
    pub ticket_ids: Option<Vec<TicketId>>,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 500,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefundResult {
    pub booking_id: BookingId,
    pub status: BookingStatus,
    pub refunded_cents: i64,
    pub seats_released: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CheckinRequest {
    /// The code on the ticket (what its QR code carries).
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub code: String,
    /// The event at this door; a ticket for another is refused.
    #[serde(default)]
    pub event_id: Option<EventId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CheckinOutcome {
    Admitted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CheckinResult {
    pub result: CheckinOutcome,
    pub ticket_id: TicketId,
    pub seat_id: String,
    /// How the door reads the seat out: "Section A, row 1, seat 4".
    pub seat_label: String,
    pub event_id: EventId,
    pub checked_in_at: DateTime<Utc>,
}

/// Why a payment needs a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AttentionState {
    /// The money was taken but no booking holds it and no refund is under way.
    CapturedWithoutBooking,
    /// The payment's outcome is still unknown past the checkout's wait.
    PendingPastWait,
    /// Its seats are gone and the charge is not proved either way yet: the
    /// provider is asked again with back-off (a found charge is refunded).
    Watched,
    /// Still unproved at the end of the provider's idempotency window:
    /// a person must check it with the provider.
    GaveUp,
    /// A refund has not gone through yet.
    RefundPending,
    /// The provider refused a refund.
    RefundFailed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaymentAttention {
    pub payment_id: PaymentId,
    pub checkout_id: CheckoutId,
    pub event_id: EventId,
    pub state: AttentionState,
    pub amount_cents: i64,
    pub reason: String,
    pub since: DateTime<Utc>,
}

/// A booking as the box office lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StaffBookingLine {
    pub booking_id: BookingId,
    pub event_id: EventId,
    pub status: BookingStatus,
    pub channel: Channel,
    pub customer_email: Option<String>,
    pub customer_name: Option<String>,
    pub seat_ids: Vec<String>,
    pub total_cents: i64,
    pub refunded_cents: i64,
    pub created_at: DateTime<Utc>,
}

/// A saved venue layout, reused by events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Layout {
    pub layout_id: LayoutId,
    pub name: String,
    /// The price tiers the rows name (an event using it prices each).
    pub tiers: Vec<String>,
    pub seats_total: i64,
    pub sections: Vec<NewSection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewLayout {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: String,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 200))]
    pub sections: Vec<NewSection>,
    /// What the sections face; without it, a stage along the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// `POST /admin/users` (admins only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewStaffUser {
    #[cfg_attr(feature = "openapi", schema(format = Email, max_length = 254))]
    pub email: String,
    #[cfg_attr(feature = "openapi", schema(min_length = 8, max_length = 1024))]
    pub password: String,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: String,
    pub role: Role,
}

/// `PATCH /admin/users/{id}` (admins only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UserChanges {
    pub disabled: Option<bool>,
    /// A new password.
    #[cfg_attr(feature = "openapi", schema(min_length = 8, max_length = 1024))]
    pub password: Option<String>,
}

/// An account as admins see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StaffAccount {
    pub user_id: UserId,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub disabled: bool,
    pub created_at: DateTime<Utc>,
}

/// One line of an event's change log: a seat transition (the seats one
/// statement changed together) or a staff action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogEntry {
    pub at: DateTime<Utc>,
    /// A seat transition's reason (`hold`, `sale`, `expired`, `block`...) or
    /// a staff action (`event_published`, `counter_sale`, `refund`...).
    pub kind: String,
    pub seat_ids: Vec<String>,
    /// Who did it (email), if anyone did.
    pub actor: Option<String>,
    pub detail: String,
}

/// Filters of the change log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
pub struct LogFilter {
    /// Only entries touching this seat.
    #[cfg_attr(feature = "openapi", param(max_length = 64, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub seat_id: Option<String>,
    /// Only entries of this kind.
    #[cfg_attr(feature = "openapi", param(max_length = 64, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"))]
    pub kind: Option<String>,
    /// Only entries at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only entries before this time.
    pub until: Option<DateTime<Utc>>,
    /// At most this many entries (default 200, at most 5000).
    #[cfg_attr(feature = "openapi", param(minimum = 1, maximum = 5000))]
    pub limit: Option<i64>,
}

impl LogFilter {
    pub const MAX_LIMIT: i64 = 5000;

    /// Out-of-range filters are refused rather than quietly clamped.
    pub fn check(&self) -> Result<(), crate::InvalidValue> {
        let bad = |f: &Option<String>| f.as_ref().is_some_and(|v| v.chars().count() > 64 || v.chars().any(char::is_control));
        if bad(&self.seat_id) || bad(&self.kind) {
            return Err(crate::InvalidValue("seat_id and kind are at most 64 characters, none of them control characters".into()));
        }
        if self.limit.is_some_and(|l| !(1..=Self::MAX_LIMIT).contains(&l)) {
            return Err(crate::InvalidValue(format!("limit is from 1 to {}", Self::MAX_LIMIT)));
        }
        for (field, when) in [("since", self.since), ("until", self.until)] {
            if let Some(when) = when {
                crate::check_date(field, when)?;
            }
        }
        Ok(())
    }
}

/// How the sales summary is grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SalesBy {
    Tier,
    Section,
    Day,
    /// Ticket type (`-`: tickets of no type).
    Type,
}

/// A payment after it was settled by hand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaymentInfo {
    pub payment_id: PaymentId,
    pub checkout_id: CheckoutId,
    pub event_id: EventId,
    /// Our record of it: `created`, `processing`, `succeeded`, `declined`, `canceled` or `unknown`.
    pub status: String,
    pub settled: bool,
    pub amount_cents: i64,
    pub booking_id: Option<BookingId>,
    /// Refunds of it not yet confirmed by the provider.
    pub refunds_pending: i64,
}

/// Places of a standing area, asked for by count (`POST …/holds/standing`,
/// and a counter sale's `standing`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StandingPlaces {
    /// The standing area's section name.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 16, pattern = "^[A-Za-z0-9]+$"))]
    pub section: String,
    /// At most the event's `max_seats_per_order` for a fan.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub count: i32,
}
