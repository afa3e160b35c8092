//! Holds: claiming seats all-or-nothing, releasing them by fencing token,
//! and the hold's status.
//!
//! A hold is one call of the database's `hold_batch` function, shared with
//! the holds that arrive at the same moment (see [`crate::sale::hold_batch`]):
//! the seats are checked free and taken in one transaction, all or none,
//! and the conflicts named. Nothing is locked between requests.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use frontrow_model::{seat_list, EventId, Hold, HoldId, HoldState, HoldStatus, HoldToken, IdempotencyKey, SeatId, StandingPlaces, UserId};
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::sale::hold_batch::{HoldBatcher, HoldOutcome, HoldRequest};
use crate::sale::presale::Access;
use crate::sale::release_batch::ReleaseBatcher;
use crate::sale::seats;
use crate::sale::seats::ReleaseRequest;
use crate::tokens::{hold_token, sha256_hex, token_tag};
use crate::venue::catalogue::EventRules;
use crate::Engine;

/// A hold asked for, and whether it is a new one or one the fan already had.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub hold: Hold,
    /// The same request came again (its key, or exactly the seats of a live
    /// hold of this fan): this is that hold, not a new one.
    pub existing: bool,
}

/// What a fan asks to hold.
enum Wanted<'a> {
    /// These seats, all of them.
    Seats(&'a [SeatId]),
    /// Any places of a standing area, as many as asked.
    Places(&'a StandingPlaces),
}

/// What makes two hold requests the same: the event and the set of seats.
fn hold_request_hash(event_id: EventId, seat_ids: &[String]) -> String {
    let mut sorted: Vec<&str> = seat_ids.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sha256_hex(format!("{event_id}\n{}", sorted.join("\n")).as_bytes())
}

impl Engine {
    /// Claims every seat in `seat_ids` for `fan`, or none of them. An event
    /// whose waiting room is on needs the fan's admission, and before the
    /// public sale a presale code must open the seats ([`Access`]).
    ///
    /// A retry is safe: with the `key` of an earlier request for the same
    /// seats, that hold comes back while it lives (another request under the
    /// key is refused); without one, asking again for exactly the seats of a
    /// live hold of this fan answers that hold rather than naming the fan's
    /// own seats as taken.
    pub async fn hold(
        &self,
        fan: UserId,
        event_id: EventId,
        seat_ids: &[SeatId],
        access: impl Into<Access<'_>>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let outcome = match self.hold_seats(fan, event_id, seat_ids, access, key).await {
            // A lost race: offer the nearest seats that are free together.
            Err(EngineError::SeatsUnavailable { conflict_seats, .. }) => {
                let suggestion = self.nearest_free(event_id, &conflict_seats, seat_ids.len()).await;
                Err(EngineError::SeatsUnavailable { conflict_seats, suggestion })
            }
            other => other,
        };
        record_hold_metric(&outcome);
        outcome
    }

    /// Holds `count` places of a standing area: any free ones, all or none.
    /// A retry with the same `key` answers the hold the first request made.
    pub async fn hold_places(
        &self,
        fan: UserId,
        event_id: EventId,
        places: &StandingPlaces,
        access: impl Into<Access<'_>>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let outcome = self.hold_wanted(fan, event_id, Wanted::Places(places), access.into(), key).await;
        record_hold_metric(&outcome);
        outcome
    }

    /// [`Engine::hold`] without the suggestion after a lost race.
    pub(crate) async fn hold_seats(
        &self,
        fan: UserId,
        event_id: EventId,
        seat_ids: &[SeatId],
        access: impl Into<Access<'_>>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        seat_list(seat_ids)?;
        self.hold_wanted(fan, event_id, Wanted::Seats(seat_ids), access.into(), key).await
    }

    async fn hold_wanted(
        &self,
        fan: UserId,
        event_id: EventId,
        wanted: Wanted<'_>,
        access: Access<'_>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let rules = self.hold_rules(event_id, fan, access).await?;
        let live = self.board().event(event_id).await?;
        // Until the board hears of this hold, it must not say the fan has none.
        live.note_hold_asked(fan);
        let (ids, area, count) = match wanted {
            Wanted::Seats(seat_ids) => (seat_ids.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>(), None, seat_ids.len()),
            Wanted::Places(places) => {
                let layout = live.layout().ok_or(EngineError::NotFound)?;
                if !layout.section_index(&places.section).is_some_and(|s| layout.sections[s].is_standing()) {
                    return Err(EngineError::NoSuch(format!("{:?} is not a standing area of this event", places.section)));
                }
                if places.count < 1 {
                    return Err(EngineError::invalid("count must be 1 or more"));
                }
                (Vec::new(), Some(places.section.clone()), places.count as usize)
            }
        };
        if count > rules.max_seats_per_order as usize {
            return Err(EngineError::TooManySeats { max: rules.max_seats_per_order });
        }
        let request_hash = match &area {
            None => hold_request_hash(event_id, &ids),
            Some(section) => sha256_hex(format!("{event_id}\nstanding {section}\n{count}").as_bytes()),
        };
        let token = hold_token();
        let request = HoldRequest {
            fan,
            seats: ids.clone(),
            area: area.clone(),
            count: area.as_ref().map(|_| count as i32),
            hold: HoldId::from(Uuid::new_v4()),
            tag: token_tag(&token),
            token,
            key: key.map(|k| k.as_str().to_owned()),
            hash: request_hash,
            admitted: access.admits(event_id, fan),
            code: access.presale_code(event_id),
        };
        // Under load, seats this instance's board shows taken by someone
        // else (or an area with too few places free) would be refused by
        // the database too: say so now rather than queue behind the batch in
        // flight (the hot seat's losers are most of an on-sale's refusals).
        // The board trails the database by a notification's delay, so a seat
        // freed within it reads as taken, as if the request had come that
        // moment earlier. A seat that may be this fan's own (a retry), or an
        // area asked for under a key, goes to the database, which knows; when
        // nothing is waiting the database answers everything, exactly. No
        // seat is ever given out on the board's word.
        let batcher = self.hold_batcher();
        let board_says_no = match &area {
            _ if !batcher.is_busy() => None,
            None => live.free_if_taken_by_others(&ids, fan).map(|free| HoldOutcome::Conflict { free }),
            Some(_) if key.is_some() => None,
            Some(section) => live.free_places(section).filter(|&n| (n as usize) < count).map(|_| HoldOutcome::Conflict { free: Vec::new() }),
        };
        let outcome = match board_says_no {
            Some(refusal) => {
                self.inner.hold_batch_counts.refused_from_board.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                refusal
            }
            None => batcher.submit(event_id, request.clone()).await?,
        };
        if matches!(outcome, HoldOutcome::Held { .. } | HoldOutcome::Earlier(_)) {
            // Counted from now: the call may have waited on the database.
            live.note_hold_asked(fan);
        }
        match outcome {
            HoldOutcome::Held { seats, expires_at, total_cents } => {
                self.board().seats_written();
                let tiers = live.tiers_of(&seats);
                let hold = Hold { hold_id: request.hold, hold_token: request.token, event_id, seat_ids: seats, expires_at, total_cents, tiers };
                Ok(Held { hold, existing: false })
            }
            HoldOutcome::Earlier(hold) => Ok(Held { hold: Hold { tiers: live.tiers_of(&hold.seat_ids), ..hold }, existing: true }),
            HoldOutcome::TooMany => Err(EngineError::TooManySeats { max: rules.max_seats_per_order }),
            HoldOutcome::KeyReused => Err(EngineError::IdempotencyKeyReused),
            HoldOutcome::HoldEnded => Err(EngineError::HoldExpired),
            HoldOutcome::NotAdmitted => Err(EngineError::NotAdmitted),
            HoldOutcome::NotOpen => Err(EngineError::SaleNotOpen),
            HoldOutcome::CodeClosed => Err(EngineError::AccessCodeInvalid),
            HoldOutcome::CodeScope => Err(EngineError::AccessCodeScope),
            HoldOutcome::CodeUsedUp => Err(EngineError::AccessCodeUsedUp),
            HoldOutcome::ForWaitingList => Err(EngineError::SeatsForWaitingList),
            // Unpublished or cancelled since the board heard: say which.
            HoldOutcome::Closed => Err(self.rules(event_id).await?.check_can_hold(fan, access).err().unwrap_or(EngineError::NotFound)),
            // The contract answers a fan's unknown seat ids 422.
            HoldOutcome::Unknown(unknown) => Err(EngineError::InvalidInput(format!("unknown seat ids: {}", unknown.join(", ")))),
            HoldOutcome::Conflict { free } => Err(match &area {
                None => {
                    EngineError::SeatsUnavailable { conflict_seats: ids.iter().filter(|id| !free.contains(id)).cloned().collect(), suggestion: None }
                }
                Some(section) => EngineError::NotEnoughPlaces { section: section.clone(), available: live.free_places(section).unwrap_or(0) },
            }),
        }
    }

    /// The event's rules for a hold, from this instance's board (no query):
    /// a quick first answer. A refusal is checked against the database before
    /// it is given, so a change the board has not heard of yet never turns a
    /// fan away; and `hold_batch` reads the rules again from the event's
    /// row, so it never lets one in either.
    pub(crate) async fn hold_rules(&self, event_id: EventId, fan: UserId, access: Access<'_>) -> Result<EventRules> {
        let live = self.board().event(event_id).await?;
        if let Some(rules) = live.facts().map(|event| EventRules::from(&*event)) {
            if rules.check_can_hold(fan, access).is_ok() {
                return Ok(rules);
            }
        }
        let rules = self.rules(event_id).await?;
        rules.check_can_hold(fan, access)?;
        Ok(rules)
    }

    fn hold_batcher(&self) -> Arc<HoldBatcher> {
        HoldBatcher::running_in(&self.inner.hold_batcher, self.pool(), &self.inner.hold_batch_counts)
    }

    fn release_batcher(&self) -> Arc<ReleaseBatcher> {
        ReleaseBatcher::running_in(&self.inner.release_batcher, self.pool(), &Arc::default())
    }

    /// Fans' holds sent to the database, the calls that decided them, and
    /// the holds refused from the board instead.
    pub fn hold_batching(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let counts = &self.inner.hold_batch_counts;
        (counts.requests.load(Relaxed), counts.calls.load(Relaxed), counts.refused_from_board.load(Relaxed))
    }

    /// After a failed claim: seat ids this event does not have are named;
    /// otherwise the seats not claimed are the conflicts (409).
    pub(crate) async fn explain_shortfall<'a>(&self, event_id: EventId, seat_ids: &[String], claimed: impl Iterator<Item = &'a str>) -> EngineError {
        // The layout never changes once seated: this instance's copy says
        // which ids exist without asking the database.
        let layout = self.board().event(event_id).await.ok().and_then(|live| live.layout().cloned());
        let known: HashSet<&str> = match &layout {
            Some(layout) => seat_ids.iter().filter(|id| layout.seat_index(id).is_some()).map(String::as_str).collect(),
            None => match self.pool().acquire().await {
                Ok(mut conn) => match seats::known(&mut conn, event_id, seat_ids).await {
                    Ok(known) => seat_ids.iter().filter(|id| known.contains(*id)).map(String::as_str).collect(),
                    Err(e) => return e,
                },
                Err(e) => return e.into(),
            },
        };
        let unknown: Vec<&str> = seat_ids.iter().map(String::as_str).filter(|id| !known.contains(id)).collect();
        if !unknown.is_empty() {
            return EngineError::NoSuch(format!("unknown seat ids: {}", unknown.join(", ")));
        }
        let claimed: HashSet<&str> = claimed.collect();
        let conflict_seats = seat_ids.iter().filter(|id| !claimed.contains(id.as_str())).cloned().collect();
        EngineError::SeatsUnavailable { conflict_seats, suggestion: None }
    }

    /// The best block of `count` free seats side by side nearest to `near`,
    /// from this instance's seat map (a suggestion: the hold decides).
    async fn nearest_free(&self, event_id: EventId, near: &[String], count: usize) -> Option<Vec<String>> {
        let board = self.board().snapshot(event_id).await.ok()?;
        crate::sale::best::nearest(&board, near, count)
    }

    /// Gives the seats back at once. Only the current, unexpired token can.
    pub async fn release(&self, fan: UserId, hold_id: HoldId, token: &HoldToken) -> Result<()> {
        let request = ReleaseRequest { hold: hold_id, token: token.as_str().to_owned(), tag: token_tag(token.as_str()), fan };
        let (state, released) = self.release_batcher().submit((), request).await?;
        if released > 0 {
            self.board().seats_written();
        }
        match (state, released) {
            (None, _) => Err(EngineError::NotFound),
            (Some(_), n) if n > 0 => Ok(()),
            (Some(HoldState::CheckingOut), _) => Err(EngineError::CheckoutInProgress),
            (Some(_), _) => Err(EngineError::HoldExpired),
        }
    }

    pub async fn hold_status(&self, fan: UserId, hold_id: HoldId) -> Result<HoldStatus> {
        let h = sqlx::query!(
            r#"SELECT hold_id, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", state AS "state: HoldState",
                      lease_lapsed(expires_at) AS "lapsed!"
               FROM holds WHERE hold_id = $1 AND user_id = $2"#,
            hold_id.as_uuid(),
            fan.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let state = if h.state == HoldState::Active && h.lapsed { HoldState::Expired } else { h.state };
        Ok(HoldStatus { hold_id: h.hold_id.into(), event_id: h.event_id.into(), seat_ids: h.seat_ids, expires_at: h.expires_at, state })
    }

    /// The fan's live hold on the event, if any (the newest), so a reloaded page
    /// can pick up where the fan was, including in the middle of paying (the
    /// page then re-sends the same idempotency key and gets the first answer).
    pub async fn active_hold(&self, fan: UserId, event_id: EventId) -> Result<Option<Hold>> {
        // Without its seats' tiers: the page reads them off its map.
        Ok(sqlx::query_as!(
            Hold,
            r#"SELECT hold_id, hold_token, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", total_cents,
                      '{}'::text[] AS "tiers!"
               FROM holds
               WHERE user_id = $1 AND event_id = $2 AND state IN ('active', 'checking_out') AND NOT lease_lapsed(expires_at)
               ORDER BY created_at DESC LIMIT 1"#,
            fan.as_uuid(),
            event_id.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?)
    }
}

fn record_hold_metric(outcome: &Result<Held>) {
    let label = match outcome {
        Ok(Held { existing: true, .. }) => "existing",
        Ok(_) => "held",
        Err(EngineError::SeatsUnavailable { .. }) => "conflict",
        Err(EngineError::TooManySeats { .. }) => "too_many",
        Err(_) => "error",
    };
    metrics::counter!("frontrow_hold_attempts_total", "outcome" => label).increment(1);
}
