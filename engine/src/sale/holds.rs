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
use frontrow_model::{seat_list, Hold, HoldState, HoldStatus, HoldToken, IdempotencyKey, SeatId, StandingPlaces};
use uuid::Uuid;

use crate::queue::admission::Admission;
use crate::venue::catalogue::EventRules;
use crate::error::{EngineError, Result};
use crate::sale::hold_batch::{HoldBatcher, HoldOutcome, HoldRequest};
use crate::sale::seats;
use crate::tokens::{hold_token, sha256_hex, token_tag};
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
fn hold_request_hash(event_id: Uuid, seat_ids: &[String]) -> String {
    let mut sorted: Vec<&str> = seat_ids.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sha256_hex(format!("{event_id}\n{}", sorted.join("\n")).as_bytes())
}

impl Engine {
    /// Claims every seat in `seat_ids` for `fan`, or none of them. An event
    /// whose waiting room is on needs the fan's [`Admission`].
    ///
    /// A retry is safe: with the `key` of an earlier request for the same
    /// seats, that hold comes back while it lives (another request under the
    /// key is refused); without one, asking again for exactly the seats of a
    /// live hold of this fan answers that hold rather than naming the fan's
    /// own seats as taken.
    pub async fn hold(
        &self,
        fan: Uuid,
        event_id: Uuid,
        seat_ids: &[SeatId],
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let outcome = match self.hold_seats(fan, event_id, seat_ids, admission, key).await {
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
        fan: Uuid,
        event_id: Uuid,
        places: &StandingPlaces,
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let outcome = self.hold_wanted(fan, event_id, Wanted::Places(places), admission, key).await;
        record_hold_metric(&outcome);
        outcome
    }

    /// [`Engine::hold`] without the suggestion after a lost race.
    pub(crate) async fn hold_seats(
        &self,
        fan: Uuid,
        event_id: Uuid,
        seat_ids: &[SeatId],
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        seat_list(seat_ids)?;
        self.hold_wanted(fan, event_id, Wanted::Seats(seat_ids), admission, key).await
    }

    async fn hold_wanted(
        &self,
        fan: Uuid,
        event_id: Uuid,
        wanted: Wanted<'_>,
        admission: Option<&Admission>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Held> {
        let rules = self.hold_rules(event_id, fan, admission).await?;
        let live = self.board().event(event_id).await?;
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
            hold: Uuid::new_v4(),
            tag: token_tag(&token),
            token,
            key: key.map(|k| k.as_str().to_owned()),
            hash: request_hash.clone(),
            admitted: admission.is_some_and(|a| a.admits(event_id, fan)),
        };
        let key = key.map(IdempotencyKey::as_str);
        // Under load, seats this instance's board shows taken (or an area
        // with too few places free) would be refused by the database too:
        // say so now rather than queue behind the batch in flight (the hot
        // seat's losers are most of an on-sale's refusals). The board trails
        // the database by a notification's delay, so a seat freed within it
        // reads as taken, as if the request had come that moment earlier;
        // when nothing is waiting the database answers, exactly. No seat is
        // ever given out on the board's word.
        let batcher = self.hold_batcher();
        let board_says_no = match &area {
            _ if !batcher.is_busy() => None,
            None => live.free_if_any_taken(&ids).map(|free| HoldOutcome::Conflict { free }),
            Some(section) => live.free_places(section).filter(|&n| (n as usize) < count).map(|_| HoldOutcome::Conflict { free: Vec::new() }),
        };
        let outcome = match board_says_no {
            Some(refusal) => {
                self.inner.hold_batch_counts.refused_from_board.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                refusal
            }
            None => batcher.hold(event_id, request.clone()).await?,
        };
        let refused = match outcome {
            HoldOutcome::Held { seats, expires_at, total_cents } => {
                let hold = Hold { hold_id: request.hold, hold_token: request.token, event_id, seat_ids: seats, expires_at, total_cents };
                return Ok(Held { hold, existing: false });
            }
            // Over the per-fan limit counting the fan's own holds: perhaps
            // because this very request holds them already (a retry of
            // exactly these seats; a retry with its key is answered by the
            // database as `KeyInUse`, before the limit).
            HoldOutcome::TooMany => EngineError::TooManySeats { max: rules.max_seats_per_order },
            HoldOutcome::NotAdmitted => return Err(EngineError::NotAdmitted),
            HoldOutcome::NotOpen => return Err(EngineError::SaleNotOpen),
            // Unpublished or cancelled since the board heard: say which.
            HoldOutcome::Closed => return Err(self.rules(event_id).await?.check_can_hold(fan, admission).err().unwrap_or(EngineError::NotFound)),
            HoldOutcome::KeyInUse => EngineError::IdempotencyKeyInUse,
            HoldOutcome::Conflict { free } => match &area {
                // The contract answers a fan's unknown seat ids 422.
                None => match self.explain_shortfall(event_id, &ids, free.iter().map(String::as_str)).await {
                    EngineError::NoSuch(unknown) => EngineError::InvalidInput(unknown),
                    other => other,
                },
                Some(section) => EngineError::NotEnoughPlaces { section: section.clone(), available: live.free_places(section).unwrap_or(0) },
            },
        };
        match refused {
            // Seats taken, or the key already used: perhaps by this very
            // request, sent before.
            e @ (EngineError::SeatsUnavailable { .. }
            | EngineError::NotEnoughPlaces { .. }
            | EngineError::IdempotencyKeyInUse
            | EngineError::TooManySeats { .. }) => {
                let by_seats = area.is_none().then_some(ids.as_slice());
                match self.earlier_hold(fan, event_id, by_seats, key, &request_hash).await? {
                    Some(hold) => Ok(Held { hold, existing: true }),
                    None => Err(e),
                }
            }
            e => Err(e),
        }
    }

    /// The event's rules for a hold, from this instance's board (no query):
    /// a quick first answer. A refusal is checked against the database before
    /// it is given, so a change the board has not heard of yet never turns a
    /// fan away; and `hold_batch` reads the rules again from the event's
    /// row, so it never lets one in either.
    pub(crate) async fn hold_rules(&self, event_id: Uuid, fan: Uuid, admission: Option<&Admission>) -> Result<EventRules> {
        let live = self.board().event(event_id).await?;
        if let Some(rules) = live.facts().map(|event| EventRules::from(&*event)) {
            if rules.check_can_hold(fan, admission).is_ok() {
                return Ok(rules);
            }
        }
        let rules = self.rules(event_id).await?;
        rules.check_can_hold(fan, admission)?;
        Ok(rules)
    }

    fn hold_batcher(&self) -> Arc<HoldBatcher> {
        let mut slot = self.inner.hold_batcher.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(batcher) if batcher.is_running() => batcher.clone(),
            _ => slot.insert(Arc::new(HoldBatcher::start(self.pool().clone(), self.inner.hold_batch_counts.clone()))).clone(),
        }
    }

    /// Fans' holds sent to the database, the calls that decided them, and
    /// the holds refused from the board instead.
    pub fn hold_batching(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let counts = &self.inner.hold_batch_counts;
        (counts.holds.load(Relaxed), counts.calls.load(Relaxed), counts.refused_from_board.load(Relaxed))
    }

    /// The live hold an earlier, identical request made: by its key, or
    /// (without a key) by exactly these seats. A key used for another
    /// request, or whose hold has ended, is refused.
    async fn earlier_hold(&self, fan: Uuid, event_id: Uuid, seat_ids: Option<&[String]>, key: Option<&str>, request_hash: &str) -> Result<Option<Hold>> {
        // Places of a standing area are found by key only: any places do.
        let Some(seat_ids) = seat_ids.or(key.map(|_| &[][..])) else { return Ok(None) };
        let row = sqlx::query!(
            r#"SELECT hold_id, hold_token, event_id, seat_ids, total_cents, expires_at AS "expires_at: DateTime<Utc>",
                      request_hash, state = 'active' AND expires_at > now() AS "live!"
                 FROM holds
                WHERE user_id = $1
                  AND CASE WHEN $2::text IS NOT NULL THEN idempotency_key = $2
                           ELSE event_id = $3 AND state = 'active' AND expires_at > now()
                                AND (SELECT array_agg(s ORDER BY s) FROM unnest(seat_ids) s) = (SELECT array_agg(s ORDER BY s) FROM unnest($4::text[]) s)
                      END
                LIMIT 1"#,
            fan,
            key,
            event_id,
            seat_ids,
        )
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else { return Ok(None) };
        if key.is_some() && r.request_hash.as_deref() != Some(request_hash) {
            return Err(EngineError::IdempotencyKeyReused);
        }
        if !r.live {
            return Err(EngineError::HoldExpired);
        }
        Ok(Some(Hold { hold_id: r.hold_id, hold_token: r.hold_token, event_id: r.event_id, seat_ids: r.seat_ids, expires_at: r.expires_at, total_cents: r.total_cents }))
    }

    /// After a failed claim: seat ids this event does not have are named;
    /// otherwise the seats not claimed are the conflicts (409).
    pub(crate) async fn explain_shortfall<'a>(&self, event_id: Uuid, seat_ids: &[String], claimed: impl Iterator<Item = &'a str>) -> EngineError {
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
    async fn nearest_free(&self, event_id: Uuid, near: &[String], count: usize) -> Option<Vec<String>> {
        let board = self.board().snapshot(event_id).await.ok()?;
        crate::sale::best::nearest(&board, near, count)
    }

    /// Gives the seats back at once. Only the current, unexpired token can.
    pub async fn release(&self, fan: Uuid, hold_id: Uuid, token: &HoldToken) -> Result<()> {
        let state = sqlx::query_scalar!(
            r#"SELECT state AS "state: HoldState" FROM holds WHERE hold_id = $1 AND user_id = $2"#,
            hold_id,
            fan
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let released = seats::release(&mut tx, hold_id, token.as_str(), fan).await?;
        if released == 0 {
            tx.rollback().await?;
            return Err(if state == HoldState::CheckingOut { EngineError::CheckoutInProgress } else { EngineError::HoldExpired });
        }
        sqlx::query!("UPDATE holds SET state = 'released', ended_at = now() WHERE hold_id = $1", hold_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn hold_status(&self, fan: Uuid, hold_id: Uuid) -> Result<HoldStatus> {
        let h = sqlx::query!(
            r#"SELECT hold_id, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", state AS "state: HoldState",
                      expires_at <= now() AS "lapsed!"
               FROM holds WHERE hold_id = $1 AND user_id = $2"#,
            hold_id,
            fan
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        let state = if h.state == HoldState::Active && h.lapsed { HoldState::Expired } else { h.state };
        Ok(HoldStatus { hold_id: h.hold_id, event_id: h.event_id, seat_ids: h.seat_ids, expires_at: h.expires_at, state })
    }

    /// The fan's live hold on the event, if any (the newest), so a reloaded page
    /// can pick up where the fan was, including in the middle of paying (the
    /// page then re-sends the same idempotency key and gets the first answer).
    pub async fn active_hold(&self, fan: Uuid, event_id: Uuid) -> Result<Option<Hold>> {
        Ok(sqlx::query_as!(
            Hold,
            r#"SELECT hold_id, hold_token, event_id, seat_ids, expires_at AS "expires_at: DateTime<Utc>", total_cents
               FROM holds
               WHERE user_id = $1 AND event_id = $2 AND state IN ('active', 'checking_out') AND expires_at > now()
               ORDER BY created_at DESC LIMIT 1"#,
            fan,
            event_id
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
