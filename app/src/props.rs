//! What crosses from the server to the page beyond the model's own types:
//! page data and island props (serialised into the HTML for hydration).

use frontrow_model::{Booking, Event, EventSummary, TierPrice, Ticket};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A live hold as the seat picker shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HoldInfo {
    pub hold_id: Uuid,
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
    pub summary: EventSummary,
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
    pub event_id: Uuid,
    /// Lets the browser read the server's clock off a fresh hold's expiry.
    pub hold_ttl_seconds: i32,
    pub on_sale: bool,
    pub signed_in: bool,
    pub max_seats: i32,
    pub tiers: Vec<TierPrice>,
    pub epoch: u32,
    pub seq: u64,
    pub hold: Option<HoldInfo>,
    pub server_now_ms: i64,
    pub admission_token: Option<String>,
    pub queue_token: Option<String>,
}

/// A ticket as its page shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TicketView {
    pub ticket: Ticket,
    pub seat_label: String,
    /// The ticket code as a QR code, an SVG drawn on the server.
    pub qr_svg: String,
}

/// A booking with its event, for the booking page.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BookingView {
    pub booking: Booking,
    pub event: Event,
    pub tickets: Vec<TicketView>,
}

/// A line of "My bookings".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BookingLine {
    pub booking: Booking,
    pub event: Event,
}
