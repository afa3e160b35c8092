//! Check-in at the door: a ticket's code is admitted once, however many
//! scanners read it at the same moment.

use chrono::{DateTime, Utc};

use frontrow_model::{CheckinOutcome, CheckinResult, EventId, TicketState, User};

use crate::accounts::require_staff;
use crate::error::{EngineError, Result};
use crate::Engine;

impl Engine {
    /// Admits the ticket with `code` (at the door of `event_id`, if given).
    pub async fn check_in(&self, staff: &User, code: &str, event_id: Option<EventId>) -> Result<CheckinResult> {
        require_staff(staff)?;
        let code = code.trim().to_uppercase();
        if code.is_empty() || code.len() > 64 || !code.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(EngineError::UnknownTicket);
        }
        // The one conditional UPDATE that admits: of any number of scans
        // racing, exactly one finds the ticket still valid. A cancelled
        // event's tickets are refused even before its refunds have voided
        // them (they are refunded one booking at a time).
        let mut tx = crate::db::begin(self.pool()).await?;
        let admitted = sqlx::query!(
            r#"UPDATE tickets SET state = 'checked_in', checked_in_at = now()
                WHERE code = $1 AND state = 'valid' AND ($2::uuid IS NULL OR event_id = $2)
                  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.event_id = tickets.event_id AND e.cancelled_at IS NOT NULL)
            RETURNING ticket_id, seat_id, event_id, checked_in_at AS "at!: DateTime<Utc>""#,
            code,
            event_id.map(|id| id.as_uuid())
        )
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(t) = admitted {
            // Admitted and logged together, or neither.
            crate::changelog::record(&mut tx, Some(t.event_id.into()), staff.user_id, "check_in", std::slice::from_ref(&t.seat_id), &code).await?;
            tx.commit().await?;
            metrics::counter!("frontrow_checkins_total").increment(1);
            let board = self.board().snapshot(t.event_id.into()).await?;
            let seat_label = board.layout.seat_index(&t.seat_id).map_or_else(|| t.seat_id.clone(), |i| board.layout.seat_label(i));
            return Ok(CheckinResult {
                result: CheckinOutcome::Admitted,
                ticket_id: t.ticket_id.into(),
                seat_id: t.seat_id,
                seat_label,
                event_id: t.event_id.into(),
                checked_in_at: t.at,
            });
        }
        tx.rollback().await?;
        // Not admitted: say why.
        let t = sqlx::query!(
            r#"SELECT t.event_id, t.state AS "state: TicketState", t.checked_in_at AS "checked_in_at: DateTime<Utc>",
                      e.cancelled_at IS NOT NULL AS "cancelled!"
                 FROM tickets t JOIN events e USING (event_id) WHERE t.code = $1"#,
            code
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::UnknownTicket)?;
        Err(match t.state {
            _ if event_id.is_some_and(|e| e != t.event_id.into()) => EngineError::WrongEvent { event_id: t.event_id.into() },
            TicketState::CheckedIn => EngineError::AlreadyCheckedIn { checked_in_at: t.checked_in_at.unwrap_or_else(Utc::now) },
            TicketState::Refunded | TicketState::Void => EngineError::TicketRefunded,
            TicketState::Valid if t.cancelled => EngineError::EventCancelled,
            TicketState::Valid => EngineError::Internal(format!("ticket {code} is valid but was not admitted")),
        })
    }
}
