//! The waiting list: fans waiting for seats of a sold-out tier, in the
//! order they joined, and the offers made to them as seats come back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{EventId, HoldId, SeatId, WaitlistEntryId};

/// A fan asks to join an event's waiting list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JoinWaitlist {
    /// The tier wanted; it must have no seat free now.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::event::tier_name))]
    pub tier: String,
    /// Seats wanted together, at most the event's per-order limit.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub quantity: i32,
}

/// Where an entry stands, read off its offer's hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WaitlistState {
    /// Still waiting for seats.
    Waiting,
    /// Seats are held for the fan until the offer's end.
    Offered,
    /// The fan is paying for the offered seats.
    Paying,
    /// The fan bought them.
    Bought,
    /// Declined or let lapse: the seats went on to the next fan.
    Passed,
}

impl WaitlistState {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitlistState::Waiting => "waiting",
            WaitlistState::Offered => "offered",
            WaitlistState::Paying => "paying",
            WaitlistState::Bought => "bought",
            WaitlistState::Passed => "passed",
        }
    }
}

/// Seats offered to a fan: a hold of theirs, bought through the usual
/// checkout with its token, or let go to decline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitlistOffer {
    pub hold_id: HoldId,
    pub hold_token: String,
    pub seat_ids: Vec<String>,
    pub total_cents: i64,
    pub expires_at: DateTime<Utc>,
}

/// A fan's own entry on an event's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitlistEntry {
    pub entry_id: WaitlistEntryId,
    pub event_id: EventId,
    pub event_name: String,
    pub tier: String,
    pub quantity: i32,
    pub joined_at: DateTime<Utc>,
    pub state: WaitlistState,
    /// While waiting: 1 for the next fan to be offered seats of this tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<i64>,
    /// While offered: the seats and the hold to buy them with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer: Option<WaitlistOffer>,
}

/// One fan on the list, as staff see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitlistLine {
    pub entry_id: WaitlistEntryId,
    pub email: String,
    pub name: String,
    pub tier: String,
    pub quantity: i32,
    pub joined_at: DateTime<Utc>,
    pub state: WaitlistState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer_ends_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub seat_ids: Vec<String>,
    /// Offered by staff rather than in the list's turn.
    #[serde(default)]
    pub offered_by_hand: bool,
}

/// An event's waiting list for staff: its settings, figures and lines
/// (waiting ones first, in order, then the offers, newest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Waitlist {
    pub event_id: EventId,
    pub paused: bool,
    pub offer_minutes: i32,
    /// Over the whole list, however many lines are shown.
    #[serde(flatten)]
    pub figures: WaitlistFigures,
    /// The first lines, at most the `limit` asked for.
    pub lines: Vec<WaitlistLine>,
    /// Lines on the whole list (a sold-out sale can put every fan on it).
    pub lines_total: i64,
}

impl Waitlist {
    /// Lines shown when no limit is asked for.
    pub const LINES_SHOWN: i64 = 500;
    /// The most lines one read shows.
    pub const MAX_LINES: i64 = 5000;
}

/// How long the list is and how many offers are open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WaitlistFigures {
    pub waiting: i64,
    pub offers_outstanding: i64,
}

/// Staff change how the list runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WaitlistSettings {
    /// Paused: seats that come back are free to everyone and no offer goes
    /// out in turn (staff may still offer by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// How long an offer holds its seats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 5, maximum = 10080))]
    pub offer_minutes: Option<i32>,
}

/// Staff offer seats to one fan on the list now, out of turn: the seats
/// named (they must be free), or any of the entry's tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HandOffer {
    pub entry_id: WaitlistEntryId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat_ids: Option<Vec<SeatId>>,
}

/// Which seats of `free` (seat id, row key, number, in layout order) to
/// offer for `quantity` seats together: the first run of adjacent seats in
/// one row, else the first `quantity` seats (closest in layout order).
pub fn pick_together<'a>(free: &'a [(String, String, i32)], quantity: usize) -> Option<Vec<&'a str>> {
    if quantity == 0 || free.len() < quantity {
        return None;
    }
    for start in 0..=free.len() - quantity {
        let run = &free[start..start + quantity];
        let together = run.windows(2).all(|w| w[0].1 == w[1].1 && w[1].2 == w[0].2 + 1);
        if together {
            return Some(run.iter().map(|s| s.0.as_str()).collect());
        }
    }
    Some(free[..quantity].iter().map(|s| s.0.as_str()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(id: &str, row: &str, n: i32) -> (String, String, i32) {
        (id.to_owned(), row.to_owned(), n)
    }

    #[test]
    fn seats_together_are_preferred_over_the_first_ones() {
        let free = [seat("A-1", "A", 1), seat("A-3", "A", 3), seat("B-4", "B", 4), seat("B-5", "B", 5)];
        assert_eq!(pick_together(&free, 2), Some(vec!["B-4", "B-5"]));
        assert_eq!(pick_together(&free, 1), Some(vec!["A-1"]));
        // No three together: the first three.
        assert_eq!(pick_together(&free, 3), Some(vec!["A-1", "A-3", "B-4"]));
        assert_eq!(pick_together(&free, 5), None);
    }
}
