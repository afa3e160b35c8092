//! The seats as this instance's board keeps them: each one's state as last
//! heard, the change the database announces, and the holder's tag.

use std::sync::Arc;

use frontrow_model::{SeatStatus, UserId};
use serde::Deserialize;

use super::holders::HolderCounts;
use crate::db::SeatState;
use crate::venue::seating::EventLayout;

/// An event's seats on the board (behind its lock).
#[derive(Default)]
pub(super) struct Cells {
    /// Set by the first load, under the same lock as the cells.
    pub(super) layout: Option<Arc<EventLayout>>,
    /// Aligned with `EventLayout::seats` once loaded.
    pub(super) seats: Vec<SeatCell>,
    /// Changes heard before the first load finished; merged by version.
    pub(super) early: Vec<Change>,
    pub(super) version: i64,
    /// Changes applied so far, in arrival order.
    pub(super) seq: u64,
    /// A fan whose tag is on no seat holds nothing here, as far as this
    /// board has heard.
    pub(super) holders: HolderCounts,
}

impl Cells {
    /// Puts `cell` in seat `i` (in range), keeping the holders' counts.
    pub(super) fn set(&mut self, i: usize, cell: SeatCell) {
        self.holders.replace(self.seats[i].holding(), cell.holding());
        self.seats[i] = cell;
    }

    /// Takes `change` if it is newer than the seat's version; returns the
    /// seat, its status now and the version.
    pub(super) fn merge(&mut self, layout: &EventLayout, change: Change, now_ms: i64) -> Option<(usize, SeatStatus, i64)> {
        let Change(seat_id, version, state, hold_expires_ms, blocked, holder) = change;
        let i = layout.seat_index(&seat_id)?;
        let seq = self.seq + 1;
        if version <= self.seats.get(i)?.version {
            return None;
        }
        let cell = SeatCell { state, version, hold_expires_ms, blocked, holder, seq };
        self.set(i, cell);
        let status = cell.status(now_ms);
        self.seq = seq;
        self.version = self.version.max(version);
        Some((i, status, version))
    }
}

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
    /// The holder's tag while the seat is held or paid for (lapsed or not).
    pub(super) fn holding(&self) -> Option<i32> {
        matches!(self.state, SeatState::Held | SeatState::PaymentPending).then_some(self.holder).flatten()
    }

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

/// Seats free now, and seats held or being paid for (which may come back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatsLeft {
    pub free: i64,
    pub held: i64,
}

impl SeatsLeft {
    /// Nothing is free now, but held seats may come back.
    pub fn all_held(&self) -> bool {
        self.free <= 0 && self.held > 0
    }
}
