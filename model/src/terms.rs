//! What a ticket costs and what a fan gets back: an event's price tiers,
//! its ticket types (their prices per tier) and its refund policy.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// A price tier of an event and what its seats cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TierPrice {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 32,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub tier: String,
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000_000))]
    pub price_cents: i32,
}

/// A kind of ticket (adult, child, concession, ...) and its price in each
/// tier it is sold in (a type may be absent from a tier). Where several
/// are sold, a seat is of the first one listed unless the buyer chooses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TicketType {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 32,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub name: String,
    /// Its price in each tier it is sold in (each tier once).
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20))]
    pub prices: Vec<TierPrice>,
}

impl TicketType {
    pub fn price_in(&self, tier: &str) -> Option<i32> {
        self.prices.iter().find(|p| p.tier == tier).map(|p| p.price_cents)
    }

    /// The types sold in `tier`, in the event's order (the first is a
    /// seat's type when none is chosen), with their prices there.
    pub fn sold_in(types: &[TicketType], tier: &str) -> Vec<(String, i32)> {
        types.iter().filter_map(|t| t.price_in(tier).map(|cents| (t.name.clone(), cents))).collect()
    }
}

/// Whether fans may cancel their own tickets, until when, and what the
/// seller keeps of each ticket's price: `keep_percent` of it plus
/// `fee_cents`, never more than the price. The default offers no
/// cancelling (staff can still refund).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RefundPolicy {
    /// Fans may cancel until this many hours before the start; null: fans
    /// cannot cancel.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 8760))]
    pub cancel_until_hours: Option<i32>,
    /// The share of each ticket's price the seller keeps, in percent.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 100))]
    pub keep_percent: i32,
    /// A fee per ticket the seller keeps as well.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000_000))]
    pub fee_cents: i32,
}

impl RefundPolicy {
    /// Every cent back (a refund by staff); offers fans no cancelling.
    pub const FULL: RefundPolicy = RefundPolicy { cancel_until_hours: None, keep_percent: 0, fee_cents: 0 };

    /// When fans can no longer cancel (none: they never could).
    pub fn deadline(&self, starts_at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cancel_until_hours.map(|hours| starts_at - Duration::hours(i64::from(hours)))
    }

    /// What the seller keeps of a ticket at this price.
    pub fn kept_of(&self, price_cents: i32) -> i64 {
        let price = i64::from(price_cents.max(0));
        // Half a cent and up rounds up, in the seller's favour as shops do.
        let share = (price * i64::from(self.keep_percent.clamp(0, 100)) + 50) / 100;
        (share + i64::from(self.fee_cents.max(0))).min(price)
    }

    /// What a fan gets back for a ticket at this price.
    pub fn refund_of(&self, price_cents: i32) -> i64 {
        i64::from(price_cents.max(0)) - self.kept_of(price_cents)
    }
}
