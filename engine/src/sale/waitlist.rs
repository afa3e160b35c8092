//! The waiting list: fans join it for seats of a sold-out tier, and as
//! seats of that tier come back the list's leader offers them in order.
//!
//! An offer is a hold of the fan's (its own fencing token, a lease as long
//! as the event's offer window), so nobody else can take its seats, the fan
//! buys it through the usual checkout, and an offer declined or let lapse
//! frees its seats, which the next round offers to the next fan. Until a
//! round offers them, `hold_batch` keeps the tier's returning seats from
//! everyone else (see the migration that made the list). An entry's state
//! is read off its hold, so it is never written twice.
//!
//! Rounds run on every instance; a per-event advisory lock lets one act at
//! a time, and a round is one transaction, so a leader that dies mid-round
//! leaves nothing offered.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_model::{pick_together, EventId, HoldId, JoinWaitlist, User, UserId, WaitlistEntry, WaitlistEntryId, WaitlistOffer, WaitlistState};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::db::{HoldState, LOCK_WAITLIST};
use crate::error::{EngineError, Result};
use crate::sale::seats::{self, ClaimPurpose};
use crate::tokens::hold_token;
use crate::Engine;

/// An entry's state from its offer's hold (none: still waiting).
pub(crate) fn entry_state(hold: Option<(HoldState, bool)>) -> WaitlistState {
    match hold {
        None => WaitlistState::Waiting,
        Some((HoldState::Converted, _)) => WaitlistState::Bought,
        Some((HoldState::CheckingOut, _)) => WaitlistState::Paying,
        Some((HoldState::Active, true)) => WaitlistState::Offered,
        Some(_) => WaitlistState::Passed,
    }
}

/// A fan waiting, as a round reads them.
struct Waiting {
    entry_id: Uuid,
    user_id: Uuid,
    tier: String,
    quantity: i32,
}

/// A free seat of a tier someone waits for.
pub(crate) struct FreeSeat {
    pub seat_id: String,
    row_key: String,
    number: i32,
    tier: String,
    position: i32,
}

/// The free seats of `tiers` (only those `named`, if given), locked in seat
/// order as `hold_batch` locks them, so the two never deadlock, and
/// returned in layout order, to find seats together.
pub(crate) async fn lock_free_seats(conn: &mut PgConnection, event_id: EventId, tiers: &[String], named: Option<&[String]>) -> Result<Vec<FreeSeat>> {
    let mut free = sqlx::query_as!(
        FreeSeat,
        r#"SELECT seat_id, section || ' ' || row_label AS "row_key!", number, tier, position FROM seats
            WHERE event_id = $1 AND tier = ANY ($2) AND seat_free(state, hold_expires_at, blocked_reason)
              AND ($3::text[] IS NULL OR seat_id = ANY ($3))
            ORDER BY seat_id FOR UPDATE"#,
        event_id.as_uuid(),
        tiers,
        named
    )
    .fetch_all(conn)
    .await?;
    free.sort_by_key(|s| s.position);
    Ok(free)
}

/// `quantity` seats of `tier` among `free` (layout order), side by side
/// where they can be (see [`pick_together`]); none: too few.
pub(crate) fn choose(free: &[FreeSeat], tier: &str, quantity: i32) -> Option<Vec<String>> {
    let of_tier: Vec<(String, String, i32)> =
        free.iter().filter(|s| s.tier == tier).map(|s| (s.seat_id.clone(), s.row_key.clone(), s.number)).collect();
    Some(pick_together(&of_tier, usize::try_from(quantity).ok()?)?.into_iter().map(str::to_owned).collect())
}

impl Engine {
    /// Puts the fan on the event's list for `quantity` seats of `tier`,
    /// which must have no seat free (or fans waiting for it already).
    pub async fn join_waitlist(&self, fan: &User, event_id: EventId, join: &JoinWaitlist) -> Result<WaitlistEntry> {
        // Checked before it reaches the database, which refuses some
        // characters (NUL) with an error of its own.
        crate::venue::catalogue::check_tier(&join.tier)?;
        let rules = self.rules(event_id).await?;
        if rules.cancelled {
            return Err(EngineError::EventCancelled);
        }
        if !(1..=rules.max_seats_per_order).contains(&join.quantity) {
            return Err(EngineError::invalid(format!("quantity must be 1 to {}", rules.max_seats_per_order)));
        }
        let tier = sqlx::query!(
            r#"SELECT e.sale_opens_at <= now() AS "on_sale!", e.published,
                      EXISTS (SELECT FROM seats s WHERE s.event_id = e.event_id AND s.tier = t.tier
                                 AND seat_free(s.state, s.hold_expires_at, s.blocked_reason)) AS "seats_free!",
                      EXISTS (SELECT FROM waitlist_entries w WHERE w.event_id = e.event_id AND w.tier = t.tier AND w.hold_id IS NULL) AS "waited_for!"
                 FROM events e JOIN price_tiers t USING (event_id)
                WHERE e.event_id = $1 AND t.tier = $2"#,
            event_id.as_uuid(),
            join.tier
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or_else(|| EngineError::NoSuch(format!("this event has no tier {:?}", join.tier)))?;
        if !tier.published {
            return Err(EngineError::NotFound);
        }
        if !tier.on_sale {
            return Err(EngineError::SaleNotOpen);
        }
        if tier.seats_free && !tier.waited_for {
            return Err(EngineError::WaitlistNotNeeded { tier: join.tier.clone() });
        }
        let joined = sqlx::query!(
            r#"INSERT INTO waitlist_entries (entry_id, event_id, user_id, tier, quantity) VALUES ($1, $2, $3, $4, $5)
               ON CONFLICT (event_id, user_id) DO NOTHING"#,
            Uuid::new_v4(),
            event_id.as_uuid(),
            fan.user_id.as_uuid(),
            join.tier,
            join.quantity
        )
        .execute(self.pool())
        .await?;
        if joined.rows_affected() == 0 {
            return Err(EngineError::AlreadyOnWaitlist);
        }
        self.waitlist_entry(fan.user_id, event_id).await?.ok_or(EngineError::NotFound)
    }

    /// The fan's entry on the event's list, with their place or offer.
    pub async fn waitlist_entry(&self, fan: UserId, event_id: EventId) -> Result<Option<WaitlistEntry>> {
        Ok(self.waitlist_entries(fan, Some(event_id)).await?.pop())
    }

    /// Every list the fan is on, newest first (their account page).
    pub async fn waitlist_entries(&self, fan: UserId, event_id: Option<EventId>) -> Result<Vec<WaitlistEntry>> {
        let rows = sqlx::query!(
            r#"SELECT w.entry_id, w.event_id, e.name AS event_name, w.tier, w.quantity, w.joined_at AS "joined_at: DateTime<Utc>",
                      (SELECT count(*) FROM waitlist_entries o
                        WHERE o.event_id = w.event_id AND o.tier = w.tier AND o.hold_id IS NULL AND o.seq <= w.seq) AS "place!",
                      h.hold_id AS "hold_id?", h.hold_token AS "hold_token?", h.seat_ids AS "seat_ids?", h.total_cents AS "total_cents?",
                      h.expires_at AS "expires_at?: DateTime<Utc>", h.state AS "hold_state?: HoldState",
                      hold_live(h.state, h.expires_at) AS "live?"
                 FROM waitlist_entries w JOIN events e USING (event_id) LEFT JOIN holds h ON h.hold_id = w.hold_id
                WHERE w.user_id = $1 AND ($2::uuid IS NULL OR w.event_id = $2)
                ORDER BY w.joined_at DESC"#,
            fan.as_uuid(),
            event_id.map(|e| e.as_uuid())
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let state = entry_state(r.hold_state.map(|s| (s, r.live.unwrap_or(false))));
                let offer = match (state, r.hold_id, r.hold_token, r.seat_ids, r.total_cents, r.expires_at) {
                    (WaitlistState::Offered, Some(hold_id), Some(hold_token), Some(seat_ids), Some(total_cents), Some(expires_at)) => {
                        Some(WaitlistOffer { hold_id: HoldId::from(hold_id), hold_token, seat_ids, total_cents, expires_at })
                    }
                    _ => None,
                };
                WaitlistEntry {
                    entry_id: WaitlistEntryId::from(r.entry_id),
                    event_id: EventId::from(r.event_id),
                    event_name: r.event_name,
                    tier: r.tier,
                    quantity: r.quantity,
                    joined_at: r.joined_at,
                    state,
                    place: (state == WaitlistState::Waiting).then_some(r.place),
                    offer,
                }
            })
            .collect())
    }

    /// Takes the fan off the list while they wait; an offer open to them is
    /// declined instead (its seats go on to the next fan).
    pub async fn leave_waitlist(&self, fan: UserId, event_id: EventId) -> Result<WaitlistState> {
        let entry = self.waitlist_entry(fan, event_id).await?.ok_or(EngineError::NotFound)?;
        match (entry.state, &entry.offer) {
            (WaitlistState::Waiting, _) => {
                sqlx::query!("DELETE FROM waitlist_entries WHERE entry_id = $1 AND hold_id IS NULL", entry.entry_id.as_uuid())
                    .execute(self.pool())
                    .await?;
                Ok(WaitlistState::Waiting)
            }
            (WaitlistState::Offered, Some(offer)) => {
                let token = frontrow_model::HoldToken::parse(&offer.hold_token).map_err(|e| EngineError::Internal(e.0))?;
                self.release(fan, offer.hold_id, &token).await?;
                Ok(WaitlistState::Passed)
            }
            (state, _) => Ok(state),
        }
    }

    /// One round of every event's list: offers the seats that came back to
    /// the fans waiting for them, in order. Returns the offers made.
    pub async fn offer_waitlist_seats(&self) -> Result<u32> {
        let events = sqlx::query_scalar!(
            r#"SELECT DISTINCT w.event_id FROM waitlist_entries w JOIN events e USING (event_id)
                WHERE w.hold_id IS NULL AND NOT e.waitlist_paused AND e.cancelled_at IS NULL"#
        )
        .fetch_all(self.pool())
        .await?;
        let mut offers = 0;
        for event_id in events {
            offers += self.waitlist_round(EventId::from(event_id)).await?;
        }
        Ok(offers)
    }

    async fn waitlist_round(&self, event_id: EventId) -> Result<u32> {
        let mut tx = crate::db::begin(self.pool()).await?;
        if !crate::db::try_lock_event(&mut tx, LOCK_WAITLIST, event_id).await? {
            return Ok(0);
        }
        let Some(minutes) = sqlx::query_scalar!(
            "SELECT waitlist_offer_minutes FROM events WHERE event_id = $1 AND NOT waitlist_paused AND cancelled_at IS NULL",
            event_id.as_uuid()
        )
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(0);
        };
        let waiting = sqlx::query_as!(
            Waiting,
            "SELECT entry_id, user_id, tier, quantity FROM waitlist_entries WHERE event_id = $1 AND hold_id IS NULL ORDER BY seq FOR UPDATE",
            event_id.as_uuid()
        )
        .fetch_all(&mut *tx)
        .await?;
        let tiers: Vec<String> = waiting.iter().map(|w| w.tier.clone()).collect::<HashSet<_>>().into_iter().collect();
        let mut free = lock_free_seats(&mut tx, event_id, &tiers, None).await?;
        // First come, first offered, per tier: a fan that cannot be served
        // yet keeps the seats that came back for when enough have.
        let mut stuck: HashSet<String> = HashSet::new();
        let mut offers = 0;
        for fan in waiting {
            if stuck.contains(&fan.tier) {
                continue;
            }
            let Some(picked) = choose(&free, &fan.tier, fan.quantity) else {
                stuck.insert(fan.tier);
                continue;
            };
            free.retain(|s| !picked.contains(&s.seat_id));
            make_offer(&mut tx, event_id, fan.entry_id, UserId::from(fan.user_id), &picked, minutes, None).await?;
            offers += 1;
            #[cfg(debug_assertions)]
            self.fail_point(crate::FailPoint::AbortMidWaitlistRound);
        }
        tx.commit().await?;
        if offers > 0 {
            self.board().seats_written();
            metrics::counter!("frontrow_waitlist_offers_total").increment(u64::from(offers));
        }
        Ok(offers)
    }
}

/// Holds `seats` (locked and free) for the entry's fan for `minutes`, points
/// the entry at the hold and queues the mail telling them. `staff`: who
/// offered by hand.
pub(crate) async fn make_offer(
    tx: &mut PgConnection,
    event_id: EventId,
    entry_id: Uuid,
    fan: UserId,
    seats: &[String],
    minutes: i32,
    staff: Option<UserId>,
) -> Result<HoldId> {
    let hold_id = HoldId::from(Uuid::new_v4());
    let token = hold_token();
    let claimed = seats::claim(&mut *tx, event_id, seats, hold_id, &token, fan, minutes * 60, ClaimPurpose::WaitlistOffer).await?;
    if claimed.len() != seats.len() || claimed.is_empty() {
        let got: HashSet<&str> = claimed.iter().map(|c| c.seat_id.as_str()).collect();
        return Err(EngineError::SeatsUnavailable {
            conflict_seats: seats.iter().filter(|s| !got.contains(s.as_str())).cloned().collect(),
            suggestion: None,
        });
    }
    let total_cents: i64 = claimed.iter().map(|c| i64::from(c.price_cents)).sum();
    sqlx::query!(
        r#"INSERT INTO holds (hold_id, event_id, user_id, hold_token, seat_ids, total_cents, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)"#,
        hold_id.as_uuid(),
        event_id.as_uuid(),
        fan.as_uuid(),
        token,
        seats,
        total_cents,
        claimed[0].expires_at as DateTime<Utc>,
    )
    .execute(&mut *tx)
    .await?;
    let offered = sqlx::query!(
        "UPDATE waitlist_entries SET hold_id = $2, offered_at = now(), offered_by = $3 WHERE entry_id = $1 AND hold_id IS NULL",
        entry_id,
        hold_id.as_uuid(),
        staff.map(|s| s.as_uuid())
    )
    .execute(&mut *tx)
    .await?;
    if offered.rows_affected() != 1 {
        return Err(EngineError::invalid("this fan has had an offer already"));
    }
    sqlx::query!("INSERT INTO mail_outbox (entry_id, kind) VALUES ($1, 'waitlist_offer')", entry_id).execute(&mut *tx).await?;
    Ok(hold_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_its_state_off_its_offer() {
        assert_eq!(entry_state(None), WaitlistState::Waiting);
        assert_eq!(entry_state(Some((HoldState::Active, true))), WaitlistState::Offered);
        assert_eq!(entry_state(Some((HoldState::Active, false))), WaitlistState::Passed);
        assert_eq!(entry_state(Some((HoldState::Released, false))), WaitlistState::Passed);
        assert_eq!(entry_state(Some((HoldState::CheckingOut, false))), WaitlistState::Paying);
        assert_eq!(entry_state(Some((HoldState::Converted, false))), WaitlistState::Bought);
    }
}
