//! Holds decided many at a time (see [`super::group_commit`]): each event's
//! share of a batch is one call of the `hold_batch` function. Inside it the
//! requests are decided in arrival order, each all or nothing, exactly as if
//! they had run one by one (see the migration).

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, Hold, HoldId, UserId};
use serde::Serialize;
use sqlx::PgConnection;

use super::group_commit::{in_request_order, Batch, GroupCommit};
use crate::db::LOCK_FAN_LIMIT;
use crate::error::{EngineError, Result};

/// One fan's hold request, as the database function takes it: named
/// seats, or (`area` and `count`) any free places of a standing area.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct HoldRequest {
    pub fan: UserId,
    pub seats: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub area: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    pub hold: HoldId,
    pub token: String,
    /// The token's tag for the seat audit rows.
    pub tag: String,
    pub key: Option<String>,
    pub hash: String,
    /// The sale whose queue admitted the fan, from a valid admission they
    /// showed (the database decides whether the event needs one, and for
    /// which sale).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admitted: Option<frontrow_model::SalePhase>,
    /// The presale code presented (its id), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<uuid::Uuid>,
}

/// What the database decided for one request: the whole answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HoldOutcome {
    /// Held: these seats (the ones named, or the places found).
    Held {
        seats: Vec<String>,
        expires_at: DateTime<Utc>,
        total_cents: i64,
    },
    /// The same request came before and its hold lives (by its key, or
    /// without one, a live hold of this fan on exactly these seats).
    Earlier(Hold),
    /// Not every seat was free: these were.
    Conflict {
        free: Vec<String>,
    },
    /// Seat ids this event does not have.
    Unknown(Vec<String>),
    TooMany,
    /// The key was used for another request.
    KeyReused,
    /// The key's hold has ended.
    HoldEnded,
    /// The event's waiting room is on and the fan was not admitted.
    NotAdmitted,
    /// The sale has not opened (and no presale code was presented).
    NotOpen,
    /// The presale code opens nothing now (not this event's, withdrawn,
    /// outside its window).
    CodeClosed,
    /// The presale code does not open these seats.
    CodeScope,
    /// Every use of the presale code is taken.
    CodeUsedUp,
    /// Free, but kept for the waiting list.
    ForWaitingList,
    /// Unpublished or cancelled.
    Closed,
}

/// Fans' holds, one `hold_batch` call per event of a batch. Two batches of
/// one event are safe together: each takes its locks up front in the one
/// global order (see the migration).
pub(crate) struct Holds;

pub(crate) type HoldBatcher = GroupCommit<Holds>;

impl Batch for Holds {
    type Request = HoldRequest;
    type Outcome = HoldOutcome;
    type Key = EventId;
    const SIZE_METRIC: &'static str = "frontrow_hold_batch_size";

    async fn call(connection: &mut PgConnection, event_id: EventId, requests: &[HoldRequest]) -> Result<Vec<Result<HoldOutcome>>> {
        call(connection, event_id, requests).await
    }
}

/// One call of `hold_batch`: one answer per request, in order.
async fn call(connection: &mut PgConnection, event_id: EventId, requests: &[HoldRequest]) -> Result<Vec<Result<HoldOutcome>>> {
    let body = serde_json::to_value(requests).map_err(|e| EngineError::Internal(e.to_string()))?;
    let rows = sqlx::query!(
        r#"SELECT request_index AS "request_index!", outcome AS "outcome!", seat_ids,
                  lease_ends_at AS "lease_ends_at: DateTime<Utc>", hold_total_cents, hold_id, hold_token
             FROM hold_batch($1, $2, $3)"#,
        event_id.as_uuid(),
        LOCK_FAN_LIMIT,
        body,
    )
    .fetch_all(&mut *connection)
    .await?;
    let outcomes = rows.into_iter().map(|row| {
        let seats = row.seat_ids.unwrap_or_default();
        let outcome = match (row.outcome.as_str(), row.lease_ends_at, row.hold_total_cents) {
            ("held", Some(expires_at), Some(total_cents)) => Ok(HoldOutcome::Held { seats, expires_at, total_cents }),
            ("earlier", Some(expires_at), Some(total_cents)) => match (row.hold_id, row.hold_token) {
                (Some(hold_id), Some(hold_token)) => Ok(HoldOutcome::Earlier(Hold {
                    hold_id: hold_id.into(),
                    hold_token,
                    event_id,
                    seat_ids: seats,
                    expires_at,
                    total_cents,
                    tiers: Vec::new(),
                })),
                _ => Err(EngineError::Internal("hold_batch answered an earlier hold without its id".into())),
            },
            ("conflict", ..) => Ok(HoldOutcome::Conflict { free: seats }),
            ("unknown", ..) => Ok(HoldOutcome::Unknown(seats)),
            ("too_many", ..) => Ok(HoldOutcome::TooMany),
            ("key_reused", ..) => Ok(HoldOutcome::KeyReused),
            ("hold_ended", ..) => Ok(HoldOutcome::HoldEnded),
            ("not_admitted", ..) => Ok(HoldOutcome::NotAdmitted),
            ("not_open", ..) => Ok(HoldOutcome::NotOpen),
            ("code_closed", ..) => Ok(HoldOutcome::CodeClosed),
            ("code_scope", ..) => Ok(HoldOutcome::CodeScope),
            ("code_used_up", ..) => Ok(HoldOutcome::CodeUsedUp),
            ("waitlist", ..) => Ok(HoldOutcome::ForWaitingList),
            ("closed", ..) => Ok(HoldOutcome::Closed),
            (other, ..) => Err(EngineError::Internal(format!("hold_batch answered {other:?}"))),
        };
        (row.request_index, outcome)
    });
    Ok(in_request_order(requests.len(), outcomes, "hold_batch"))
}
