//! One seat as this instance's board keeps it: its state as last heard, the
//! change the database announces, and the holder's tag.

use frontrow_model::{SeatStatus, UserId};
use serde::Deserialize;

use crate::db::SeatState;

/// The mutable part of one seat, as last seen.
#[derive(Debug, Clone, Copy)]
pub(super) struct SeatCell {
    pub(super) state: SeatState,
    pub(super) version: i64,
    pub(super) hold_expires_ms: Option<i64>,
    /// Blocked by staff (kept while a counter sale holds it).
    pub(super) blocked: bool,
    /// The holder's tag ([`holder_tag`]), while someone holds or pays for it.
    pub(super) holder: Option<i32>,
    /// The board's `seq` when this cell last changed.
    pub(super) seq: u64,
}

impl SeatCell {
    /// What the seat is now, for staff (fans see [`SeatStatus::for_fans`]).
    pub(super) fn status(&self, now_ms: i64) -> SeatStatus {
        let lapsed = self.hold_expires_ms.is_some_and(|t| t <= now_ms);
        match self.state {
            SeatState::Available => SeatStatus::Available,
            SeatState::Blocked => SeatStatus::Blocked,
            // Lazy expiry, as in the hold predicate: a lapsed lease is free
            // now, or blocked again if it was a counter sale of a blocked seat.
            SeatState::Held if lapsed && self.blocked => SeatStatus::Blocked,
            SeatState::Held if lapsed => SeatStatus::Available,
            SeatState::Held | SeatState::PaymentPending => SeatStatus::Held,
            SeatState::Sold => SeatStatus::Sold,
        }
    }
}

/// The 32 bits of a holder's id the board keeps (the first four bytes, as
/// the database's `holder_tag` takes them): a different tag is surely
/// someone else; the same tag is perhaps the same fan.
pub fn holder_tag(holder: UserId) -> i32 {
    let b = holder.as_uuid().into_bytes();
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// One changed seat as the trigger reports it.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Change(
    pub(super) String,
    pub(super) i64,
    pub(super) SeatState,
    pub(super) Option<i64>,
    pub(super) bool,
    #[serde(default)] pub(super) Option<i32>,
);
