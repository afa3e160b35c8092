//! Seat management by staff: blocking seats off sale (production holds,
//! house seats) and back, and releasing a hold stuck on seats.

use frontrow_model::{seat_list, EventId, HoldId, SeatId, User};

use crate::accounts::require_staff;
use crate::changelog;
use crate::error::{EngineError, Result};
use crate::sale::seats;
use crate::venue::catalogue::check_text;
use crate::Engine;

/// Most seats one block names (a whole section of an arena).
pub const MAX_SEATS_PER_BLOCK: usize = 1000;

fn seat_strings(seat_ids: &[SeatId]) -> Result<Vec<String>> {
    if seat_ids.len() > MAX_SEATS_PER_BLOCK {
        return Err(EngineError::invalid(format!("seat_ids may list at most {MAX_SEATS_PER_BLOCK} seats")));
    }
    if seat_ids.len() <= frontrow_model::MAX_SEATS_PER_REQUEST {
        seat_list(seat_ids)?;
    } else if seat_ids.iter().collect::<std::collections::HashSet<_>>().len() != seat_ids.len() {
        return Err(EngineError::invalid("a seat is listed twice"));
    }
    if seat_ids.is_empty() {
        return Err(EngineError::invalid("seat_ids must not be empty"));
    }
    Ok(seat_ids.iter().map(|s| s.as_str().to_owned()).collect())
}

impl Engine {
    /// Blocks the seats, all or none: only available seats can be blocked
    /// (the others are the 409's `conflict_seats`).
    pub async fn block_seats(&self, staff: &User, event_id: EventId, seat_ids: &[SeatId], reason: &str) -> Result<Vec<String>> {
        require_staff(staff)?;
        check_text("reason", reason, 500)?;
        let ids = seat_strings(seat_ids)?;
        self.event(event_id).await?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let blocked = seats::block(&mut tx, event_id, &ids, reason.trim(), staff.user_id).await?;
        if blocked.len() != ids.len() {
            tx.rollback().await?;
            return Err(self.explain_shortfall(event_id, &ids, blocked.iter().map(String::as_str)).await);
        }
        changelog::record(&mut tx, Some(event_id), staff.user_id, "seats_blocked", &blocked, reason.trim()).await?;
        tx.commit().await?;
        self.board().seats_written();
        Ok(blocked)
    }

    /// Puts blocked seats back on sale, all or none.
    pub async fn unblock_seats(&self, staff: &User, event_id: EventId, seat_ids: &[SeatId]) -> Result<Vec<String>> {
        require_staff(staff)?;
        let ids = seat_strings(seat_ids)?;
        self.event(event_id).await?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let released = seats::unblock(&mut tx, event_id, &ids, staff.user_id).await?;
        if released.len() != ids.len() {
            tx.rollback().await?;
            return Err(self.explain_shortfall(event_id, &ids, released.iter().map(String::as_str)).await);
        }
        changelog::record(&mut tx, Some(event_id), staff.user_id, "seats_unblocked", &released, "").await?;
        tx.commit().await?;
        self.board().seats_written();
        Ok(released)
    }

    /// Releases a hold stuck on seats, whatever its token (recorded). A hold
    /// whose payment is in flight is reconciliation's to settle: 409.
    pub async fn release_hold_for_staff(&self, staff: &User, hold_id: HoldId, reason: &str) -> Result<Vec<String>> {
        require_staff(staff)?;
        check_text("reason", reason, 500)?;
        let event_id = sqlx::query_scalar!("SELECT event_id FROM holds WHERE hold_id = $1", hold_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .ok_or(EngineError::NotFound)?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let freed = seats::staff_release(&mut tx, hold_id, staff.user_id).await?;
        if freed.is_empty() {
            tx.rollback().await?;
            let (in_payment, _) = seats::in_payment_by_hold(&mut *self.pool().acquire().await?, hold_id).await?;
            return Err(if in_payment > 0 { EngineError::CheckoutInProgress } else { EngineError::HoldExpired });
        }
        sqlx::query!("UPDATE holds SET state = 'released', ended_at = now() WHERE hold_id = $1 AND state = 'active'", hold_id.as_uuid())
            .execute(&mut *tx)
            .await?;
        changelog::record(&mut tx, Some(event_id.into()), staff.user_id, "hold_released", &freed, reason.trim()).await?;
        tx.commit().await?;
        self.board().seats_written();
        Ok(freed)
    }

    /// The live hold on a seat, if any (staff see who holds what).
    pub async fn hold_on_seat(&self, staff: &User, event_id: EventId, seat_id: &SeatId) -> Result<Option<HoldId>> {
        require_staff(staff)?;
        Ok(sqlx::query_scalar!(
            "SELECT hold_id FROM seats WHERE event_id = $1 AND seat_id = $2 AND state IN ('held', 'payment_pending')",
            event_id.as_uuid(),
            seat_id.as_str()
        )
        .fetch_optional(self.pool())
        .await?
        .flatten()
        .map(HoldId::from))
    }
}
