//! What crosses from the server to the page beyond the model's own types:
//! page data and island props (serialised into the HTML for hydration).

use frontrow_model::{Booking, Event, EventId, EventSummary, HoldId, Ticket, TicketId, TicketType, TierPrice};
use serde::{Deserialize, Serialize};

/// A live hold as the seat picker shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HoldInfo {
    pub hold_id: HoldId,
    pub hold_token: String,
    pub seat_ids: Vec<String>,
    /// Read-out names of the seats, in the same order.
    pub labels: Vec<String>,
    /// Their price tiers, in the same order.
    pub tiers: Vec<String>,
    pub total_cents: i64,
    /// Unix milliseconds on the server's clock.
    pub expires_at_ms: i64,
}

/// One section of a venue, as its own page shows it: what is left, and
/// the way to the sections beside it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SectionPlace {
    pub name: String,
    pub standing: bool,
    /// Seats (or places) in the section, and free now.
    pub total: i64,
    pub available: i64,
    pub price_min_cents: i64,
    /// Its tier (of a standing area, the one it is sold in).
    pub tier: String,
    /// The blocks of rows a very big section is shown in ("Rows 1 to 25"),
    /// and which one this page shows (one block for most sections).
    pub blocks: Vec<String>,
    pub block: usize,
    /// The sections before and after it in the layout.
    pub previous: Option<String>,
    pub next: Option<String>,
}

/// What an event page shows of the venue.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum Shown {
    /// Every seat, on one map (small venues).
    Whole,
    /// A shape per section, each a way in (big venues).
    Overview,
    /// One section's seats, or a standing area's places by count.
    Section(SectionPlace),
}

/// A standing area's places, held by count from the seat picker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StandingOffer {
    pub section: String,
    pub available: i64,
    pub price_cents: i64,
}

/// Everything the event page needs, read from the live seat map.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventPageData {
    pub summary: EventSummary,
    pub shown: Shown,
    /// The sections on the map (for the map tools' section filter).
    pub sections: Vec<String>,
    /// The seat map, drawn on the server.
    pub svg: String,
    /// What the live feed sends this page (see [`PickerProps::feed`]).
    pub feed: String,
    /// On an overview: the whole map may be asked for instead.
    pub whole_map: bool,
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
    /// During a presale: what the code the fan entered lets them hold.
    pub presale: Option<frontrow_model::PresalePass>,
    /// Tiers with no seat free now: a fan may join their waiting list.
    pub tiers_sold_out: Vec<String>,
}

/// Props of the seat picker island.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PickerProps {
    pub event_id: EventId,
    /// Lets the browser read the server's clock off a fresh hold's expiry.
    pub hold_ttl_seconds: i32,
    pub on_sale: bool,
    pub signed_in: bool,
    pub max_seats: i32,
    pub tiers: Vec<TierPrice>,
    pub epoch: u32,
    pub seq: u64,
    /// What the live feed sends this page: `""` every seat, `"overview"`
    /// the sections' counts, else one section's name.
    pub feed: String,
    /// On a standing area's page: its places, held by count.
    pub standing: Option<StandingOffer>,
    pub hold: Option<HoldInfo>,
    pub server_now_ms: i64,
    pub admission_token: Option<String>,
    pub queue_token: Option<String>,
    /// The event's cancellation terms, shown before paying.
    pub refund_terms: String,
    /// Kinds of ticket the fan chooses between for each seat (none: one
    /// price per tier).
    pub ticket_types: Vec<TicketType>,
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
    /// Whom the tickets are made out to.
    pub holder: String,
    /// The event's cancellation terms, when they concern the viewer (their
    /// own booking, online, with tickets of an event still on).
    pub refund_terms: Option<String>,
    /// They may cancel tickets now (within the event's policy).
    pub cancel_open: bool,
}

/// A ticket the fan may cancel, as the cancel panel lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CancellableTicket {
    pub ticket_id: TicketId,
    pub seat_label: String,
    /// What comes back for it under the policy.
    pub refund_cents: i64,
}

/// A line of "My bookings".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BookingLine {
    pub booking: Booking,
    pub event: Event,
}

/// A row of a section as the seat list offers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RowChoice {
    pub label: String,
    pub total: i64,
    pub available: i64,
    pub price_min_cents: i64,
}

/// A seat as the seat list offers it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeatChoice {
    pub seat_id: String,
    /// "Seat 7, Section 112, row 5, €65.00" (and its kind).
    pub label: String,
    pub available: bool,
    /// "held", "sold" for a seat that is not.
    pub status: String,
}

/// The seat list (the way to every seat without the map): an event's
/// sections, one section's rows (or a standing area's count), one row's
/// seats.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChoiceData {
    pub event: Event,
    /// Where to send the fan instead (the waiting room), if anywhere.
    pub gate: Option<String>,
    pub signed_in: bool,
    pub on_sale: bool,
    pub sections: Vec<frontrow_model::SectionSummary>,
    pub section: Option<frontrow_model::SectionSummary>,
    pub rows: Vec<RowChoice>,
    pub row: Option<String>,
    pub seats: Vec<SeatChoice>,
}
