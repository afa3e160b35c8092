//! The waiting room, as fans and staff see it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueueState {
    Waiting,
    Admitted,
    /// Every seat is sold (or off sale): waiting longer would not help.
    SoldOut,
    /// No seat is free now, but some are held or being paid for and may
    /// come back (a hold lapses, a payment fails): the fan keeps their
    /// place (`position`; no ETA while nothing is free).
    AllHeld,
    /// The fan's admission lapsed; joining again puts them at the back.
    Expired,
    /// The presale this entry queued for has given way to the public
    /// sale: joining again puts the fan in the public sale's queue (where
    /// the public draw placed them if they joined before it).
    PresaleOver,
}

/// Which of an event's sales a queue (and an admission) is for: each has
/// its own queue, pre-queue and draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "sale_phase", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SalePhase {
    /// Before the public sale, for fans with a presale code.
    Presale,
    #[default]
    Public,
}

impl SalePhase {
    pub fn as_str(self) -> &'static str {
        match self {
            SalePhase::Presale => "presale",
            SalePhase::Public => "public",
        }
    }
}

/// What a fan in the queue is told.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueView {
    pub queue_token: String,
    /// The sale this queue is for.
    #[serde(default)]
    pub phase: SalePhase,
    pub state: QueueState,
    /// Fans ahead of this one (0 when admitted). In the pre-queue, before the
    /// opening draw, the number of fans in the pre-queue.
    pub position: i64,
    /// Seconds until admission at the measured admission rate, if known.
    pub eta_seconds: Option<i64>,
    /// True while waiting for the random draw at the sale's opening.
    pub draw_pending: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_expires_at: Option<DateTime<Utc>>,
}

/// Staff view of an event's waiting room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueStats {
    pub waiting_room_enabled: bool,
    pub require_verified_email: bool,
    pub paused: bool,
    pub admission_factor: f64,
    pub max_active: i32,
    /// The public sale's queue.
    #[serde(flatten)]
    pub counts: QueueCounts,
    pub last_tick_at: Option<DateTime<Utc>>,
    /// The presale's own queue, where the event has a presale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presale: Option<PresaleQueueStats>,
}

/// How one of an event's queues stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueCounts {
    /// Fans waiting (numbered and in the pre-queue).
    pub queue_length: i64,
    pub prequeue: i64,
    /// Admitted fans whose admission has not lapsed.
    pub active_shoppers: i64,
    pub admitted_total: i64,
    /// Admissions per second, smoothed over recent rounds.
    pub admission_rate: f64,
    pub drawn_at: Option<DateTime<Utc>>,
}

/// Staff figures of a presale's queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PresaleQueueStats {
    /// When it opens and draws its pre-queue: the earliest presale window.
    pub opens_at: DateTime<Utc>,
    #[serde(flatten)]
    pub counts: QueueCounts,
}

/// Staff changes to an event's waiting room; a field left out stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QueueSettings {
    pub waiting_room_enabled: Option<bool>,
    /// Only fans who have verified their email may join.
    pub require_verified_email: Option<bool>,
    pub paused: Option<bool>,
    /// k in `target = min(k x remaining seats, max_active)`.
    #[cfg_attr(feature = "openapi", schema(exclusive_minimum = 0.0, maximum = 20.0))]
    pub admission_factor: Option<f64>,
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    pub max_active: Option<i32>,
}
