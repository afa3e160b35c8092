//! Data that crosses from the server to the page: server-function results
//! and island props (serialised into the HTML for hydration).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Viewer {
    pub name: String,
    pub email: String,
    pub is_staff: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventCard {
    pub event_id: String,
    pub name: String,
    pub venue: String,
    pub starts_at: String,
    pub status: String,
    pub seats_available: i64,
    pub seats_total: i64,
    pub price_min_cents: i32,
    pub price_max_cents: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TierInfo {
    pub tier: String,
    pub price_cents: i32,
}

/// A live hold as the seat picker shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HoldInfo {
    pub hold_id: String,
    pub hold_token: String,
    pub seat_ids: Vec<String>,
    /// Read-out names of the seats, in the same order.
    pub labels: Vec<String>,
    pub total_cents: i64,
    /// Unix milliseconds on the server's clock.
    pub expires_at_ms: i64,
}

/// Everything the event page needs, read from the live seat map.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventPageData {
    pub event_id: String,
    pub name: String,
    pub venue: String,
    pub starts_at: String,
    pub status: String,
    pub sale_opens_at: String,
    pub seats_available: i64,
    pub seats_total: i64,
    pub max_seats_per_order: i32,
    pub hold_ttl_seconds: i32,
    pub tiers: Vec<TierInfo>,
    pub sections: Vec<String>,
    /// The seat map, drawn on the server.
    pub svg: String,
    /// Where the live feed resumes from (see the seat-map socket).
    pub epoch: u32,
    pub seq: u64,
    pub signed_in: bool,
    pub hold: Option<HoldInfo>,
    /// Where to send the fan instead (the waiting room), if anywhere.
    pub gate: Option<String>,
    /// With the waiting room on: the fan's admission token and queue token.
    pub admission_token: Option<String>,
    pub queue_token: Option<String>,
    /// The server's clock when the page was rendered (Unix milliseconds), so
    /// the countdown does not depend on the fan's clock being right.
    pub server_now_ms: i64,
}

/// Props of the seat picker island.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PickerProps {
    pub event_id: String,
    /// Lets the browser read the server's clock off a fresh hold's expiry.
    pub hold_ttl_seconds: i32,
    pub on_sale: bool,
    pub signed_in: bool,
    pub max_seats: i32,
    pub tiers: Vec<TierInfo>,
    pub epoch: u32,
    pub seq: u64,
    pub hold: Option<HoldInfo>,
    pub server_now_ms: i64,
    pub admission_token: Option<String>,
    pub queue_token: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TicketView {
    pub ticket_id: String,
    pub seat_id: String,
    pub seat_label: String,
    pub code: String,
    /// The ticket code as a QR code, an SVG drawn on the server.
    pub qr_svg: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BookingView {
    pub booking_id: String,
    pub event_id: String,
    pub event_name: String,
    pub venue: String,
    pub starts_at: String,
    pub status: String,
    pub total_cents: i64,
    pub booked_at: String,
    pub tickets: Vec<TicketView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BookingLine {
    pub booking_id: String,
    pub event_name: String,
    pub starts_at: String,
    pub seats: usize,
    pub total_cents: i64,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckoutState {
    pub checkout_id: String,
    pub status: String,
    pub booking_id: Option<String>,
    pub reason: Option<String>,
}
