//! The live dashboard's figures for staff: seats, takings, the last minute
//! and hour, the queue.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A tier's seats and takings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TierStats {
    pub tier: String,
    pub sold: i64,
    pub held: i64,
    pub available: i64,
    pub blocked: i64,
    pub revenue_cents: i64,
}

/// A ticket type's tickets and takings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TypeStats {
    pub ticket_type: String,
    pub sold: i64,
    pub revenue_cents: i64,
}

/// What happened in the last minute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MinuteStats {
    pub holds: i64,
    pub holds_expired: i64,
    pub checkouts: i64,
    pub payment_failures: i64,
    pub refunds: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueFigures {
    pub waiting: i64,
    pub active: i64,
    pub admitted_per_minute: i64,
}

/// One minute of the last hour, for the dashboard's charts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MinutePoint {
    pub at: DateTime<Utc>,
    pub holds: i64,
    pub expired: i64,
    pub sold: i64,
    pub payment_failures: i64,
    pub admitted: i64,
}

/// `GET /admin/events/{id}/stats`: the live dashboard's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventStats {
    pub seats_available: i64,
    pub seats_held: i64,
    pub seats_sold: i64,
    pub seats_blocked: i64,
    pub checked_in: i64,
    pub revenue_cents: i64,
    pub tiers: Vec<TierStats>,
    /// By ticket type, in the event's order (none: it has no types).
    #[serde(default)]
    pub types: Vec<TypeStats>,
    pub last_minute: MinuteStats,
    pub queue: QueueFigures,
    /// The waiting list's length and offers open now.
    #[serde(default)]
    pub waitlist: crate::waitlist::WaitlistFigures,
    /// Per minute, oldest first.
    pub last_hour: Vec<MinutePoint>,
}
