//! The waiting list as staff run it: who waits and what was offered,
//! pausing it, the offer window, and offers made by hand.

use chrono::{DateTime, Utc};
use frontrow_model::{EventId, HandOffer, HoldId, User, Waitlist, WaitlistEntryId, WaitlistFigures, WaitlistLine, WaitlistSettings, WaitlistState};

use crate::accounts::require_staff;
use crate::changelog;
use crate::db::{HoldState, LOCK_WAITLIST};
use crate::error::{EngineError, Result};
use crate::sale::waitlist::{choose, entry_state, lock_free_seats, make_offer};
use crate::Engine;

impl Engine {
    /// The event's list: waiting fans in order, then the offers, newest
    /// first; the first `limit` lines of it (default
    /// [`Waitlist::LINES_SHOWN`]), with figures over all of it.
    pub async fn waitlist(&self, staff: &User, event_id: EventId, limit: Option<i64>) -> Result<Waitlist> {
        require_staff(staff)?;
        let limit = limit.unwrap_or(Waitlist::LINES_SHOWN);
        if !(1..=Waitlist::MAX_LINES).contains(&limit) {
            return Err(EngineError::invalid(format!("limit is from 1 to {}", Waitlist::MAX_LINES)));
        }
        let event = sqlx::query!("SELECT waitlist_paused, waitlist_offer_minutes FROM events WHERE event_id = $1", event_id.as_uuid())
            .fetch_optional(self.pool())
            .await?
            .ok_or(EngineError::NotFound)?;
        let rows = sqlx::query!(
            r#"SELECT w.entry_id, u.email, u.name, w.tier, w.quantity, w.joined_at AS "joined_at: DateTime<Utc>",
                      w.offered_at AS "offered_at: DateTime<Utc>", w.offered_by IS NOT NULL AS "by_hand!",
                      h.expires_at AS "expires_at?: DateTime<Utc>", h.seat_ids AS "seat_ids?", h.state AS "hold_state?: HoldState",
                      hold_live(h.state, h.expires_at) AS "live?"
                 FROM waitlist_entries w JOIN users u USING (user_id) LEFT JOIN holds h ON h.hold_id = w.hold_id
                WHERE w.event_id = $1
                ORDER BY w.hold_id IS NOT NULL, CASE WHEN w.hold_id IS NULL THEN w.seq END, w.offered_at DESC
                LIMIT $2"#,
            event_id.as_uuid(),
            limit
        )
        .fetch_all(self.pool())
        .await?;
        let mut places: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let lines: Vec<WaitlistLine> = rows
            .into_iter()
            .map(|r| {
                let state = entry_state(r.hold_state.map(|s| (s, r.live.unwrap_or(false))));
                let place = (state == WaitlistState::Waiting).then(|| {
                    let n = places.entry(r.tier.clone()).or_default();
                    *n += 1;
                    *n
                });
                WaitlistLine {
                    entry_id: WaitlistEntryId::from(r.entry_id),
                    email: r.email,
                    name: r.name,
                    tier: r.tier,
                    quantity: r.quantity,
                    joined_at: r.joined_at,
                    state,
                    place,
                    offered_at: r.offered_at,
                    offer_ends_at: r.expires_at.filter(|_| matches!(state, WaitlistState::Offered | WaitlistState::Paying)),
                    seat_ids: r.seat_ids.unwrap_or_default(),
                    offered_by_hand: r.by_hand,
                }
            })
            .collect();
        let (figures, lines_total) = self.waitlist_counts(event_id).await?;
        Ok(Waitlist { event_id, paused: event.waitlist_paused, offer_minutes: event.waitlist_offer_minutes, figures, lines, lines_total })
    }

    /// The list's length and open offers, for the dashboard.
    pub(crate) async fn waitlist_figures(&self, event_id: EventId) -> Result<WaitlistFigures> {
        Ok(self.waitlist_counts(event_id).await?.0)
    }

    /// The list's figures and its number of lines, counted in the database.
    async fn waitlist_counts(&self, event_id: EventId) -> Result<(WaitlistFigures, i64)> {
        let r = sqlx::query!(
            r#"SELECT count(*) FILTER (WHERE w.hold_id IS NULL) AS "waiting!",
                      count(*) FILTER (WHERE h.state = 'checking_out' OR hold_live(h.state, h.expires_at)) AS "offers!",
                      count(*) AS "lines!"
                 FROM waitlist_entries w LEFT JOIN holds h ON h.hold_id = w.hold_id
                WHERE w.event_id = $1"#,
            event_id.as_uuid()
        )
        .fetch_one(self.pool())
        .await?;
        Ok((WaitlistFigures { waiting: r.waiting, offers_outstanding: r.offers }, r.lines))
    }

    /// Pauses or resumes the list, or changes how long an offer lasts (from
    /// the next offer on).
    pub async fn set_waitlist(&self, staff: &User, event_id: EventId, settings: &WaitlistSettings) -> Result<Waitlist> {
        require_staff(staff)?;
        if let Some(minutes) = settings.offer_minutes {
            if !(5..=10080).contains(&minutes) {
                return Err(EngineError::invalid("offer_minutes must be 5 to 10080 (a week)"));
            }
        }
        let mut tx = crate::db::begin(self.pool()).await?;
        let changed = sqlx::query!(
            r#"UPDATE events SET waitlist_paused = coalesce($2, waitlist_paused), waitlist_offer_minutes = coalesce($3, waitlist_offer_minutes)
                WHERE event_id = $1 RETURNING waitlist_paused, waitlist_offer_minutes"#,
            event_id.as_uuid(),
            settings.paused,
            settings.offer_minutes
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(EngineError::NotFound)?;
        let detail = format!(
            "waiting list {}, offers last {} minutes",
            if changed.waitlist_paused { "paused" } else { "running" },
            changed.waitlist_offer_minutes
        );
        changelog::record(&mut tx, Some(event_id), staff.user_id, "waitlist_settings", &[], &detail).await?;
        tx.commit().await?;
        self.waitlist(staff, event_id, None).await
    }

    /// Offers seats to one fan on the list now, out of turn (paused or not):
    /// the seats named, which must be free and of the fan's tier, or the
    /// first free ones of that tier, together where they can be.
    pub async fn offer_by_hand(&self, staff: &User, event_id: EventId, offer: &HandOffer) -> Result<HoldId> {
        require_staff(staff)?;
        let mut tx = crate::db::begin(self.pool()).await?;
        // Not while a round of the list runs: wait for it.
        sqlx::query!("SELECT pg_advisory_xact_lock($1, hashtext($2::uuid::text))", LOCK_WAITLIST, event_id.as_uuid()).execute(&mut *tx).await?;
        let entry = sqlx::query!(
            r#"SELECT w.entry_id, w.user_id, w.tier, w.quantity, w.hold_id, e.waitlist_offer_minutes
                 FROM waitlist_entries w JOIN events e USING (event_id)
                WHERE w.entry_id = $1 AND w.event_id = $2 FOR UPDATE OF w"#,
            offer.entry_id.as_uuid(),
            event_id.as_uuid()
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| EngineError::NoSuch("no such fan on this event's waiting list".into()))?;
        if entry.hold_id.is_some() {
            return Err(EngineError::invalid("this fan has had an offer already"));
        }
        let named: Option<Vec<String>> = offer.seat_ids.as_ref().map(|ids| ids.iter().map(|s| s.as_str().to_owned()).collect());
        if let Some(ids) = &offer.seat_ids {
            frontrow_model::seat_list(ids)?;
        }
        let free = lock_free_seats(&mut tx, event_id, std::slice::from_ref(&entry.tier), named.as_deref()).await?;
        let seats: Vec<String> = match &named {
            Some(ids) => {
                let found: Vec<&str> = free.iter().map(|s| s.seat_id.as_str()).collect();
                let missing: Vec<String> = ids.iter().filter(|id| !found.contains(&id.as_str())).cloned().collect();
                if !missing.is_empty() {
                    return Err(EngineError::SeatsUnavailable { conflict_seats: missing, suggestion: None });
                }
                ids.clone()
            }
            None => choose(&free, &entry.tier, entry.quantity)
                .ok_or_else(|| EngineError::NoSeatsTogether { count: entry.quantity as usize, tier: entry.tier.clone() })?,
        };
        let hold_id =
            make_offer(&mut tx, event_id, entry.entry_id, entry.user_id.into(), &seats, entry.waitlist_offer_minutes, Some(staff.user_id)).await?;
        changelog::record(&mut tx, Some(event_id), staff.user_id, "waitlist_offer_by_hand", &seats, &format!("offered to entry {}", entry.entry_id))
            .await?;
        tx.commit().await?;
        self.board().seats_written();
        Ok(hold_id)
    }
}
