//! Presales, from the fan's side: entering a code, and what lets a fan
//! hold seats of an event ([`Access`]: the waiting room's admission and,
//! before the public sale, a presale code).
//!
//! A code is checked here once (guesses are throttled per fan and per
//! address, shared by every instance through the database) and the fan's
//! session keeps which code it was. Every hold then presents it, and
//! `hold_batch` decides it again under the code's row lock: its window,
//! the seats it opens and its uses left (see the migration). Staff make
//! and withdraw codes in [`crate::box_office::access_codes`].

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use frontrow_model::{CodeLimitUnit, EventId, PresalePass, UserId};
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::queue::admission::Admission;
use crate::tokens::sha256_hex;
use crate::Engine;

/// Wrong codes a fan may enter before each further try waits (doubling).
const FAN_TRIES_FREE: i32 = 10;

/// A presale code a fan entered and the engine found, as their session
/// keeps it. It proves nothing by itself: every hold checks the code again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresaleAccess {
    event_id: EventId,
    code_id: Uuid,
}

impl PresaleAccess {
    /// The code a session remembers for `event_id`.
    pub fn remembered(event_id: EventId, code_id: Uuid) -> Self {
        Self { event_id, code_id }
    }

    pub fn event_id(&self) -> EventId {
        self.event_id
    }

    pub fn code_id(&self) -> Uuid {
        self.code_id
    }
}

/// What lets a fan hold seats of an event beyond the sale being open.
#[derive(Debug, Clone, Copy, Default)]
pub struct Access<'a> {
    /// The waiting room's admission (needed once the public sale is open,
    /// where the event has a waiting room).
    pub admission: Option<&'a Admission>,
    /// A presale code (needed before the public sale opens).
    pub presale: Option<&'a PresaleAccess>,
}

impl<'a> From<Option<&'a Admission>> for Access<'a> {
    fn from(admission: Option<&'a Admission>) -> Self {
        Access { admission, presale: None }
    }
}

impl Access<'_> {
    /// The sale the fan's admission lets them into `event_id` for, if any.
    pub(crate) fn admits(&self, event_id: EventId, fan: UserId) -> Option<frontrow_model::SalePhase> {
        self.admission.and_then(|a| a.admits(event_id, fan))
    }

    /// The presale code presented for `event_id`, if any.
    pub(crate) fn presale_code(&self, event_id: EventId) -> Option<Uuid> {
        self.presale.filter(|p| p.event_id == event_id).map(|p| p.code_id)
    }
}

/// A code as fans may type it: any case, spaces and dashes ignored.
pub(crate) fn normalised(code: &str) -> String {
    code.chars().filter(|c| !c.is_whitespace() && *c != '-').flat_map(char::to_uppercase).collect()
}

/// How a code is found: its hash, bound to the event, so one code text in
/// two events is two codes and the table holds no usable shared code.
pub(crate) fn code_hash(event_id: EventId, code: &str) -> String {
    sha256_hex(format!("frontrow presale v1\n{event_id}\n{}", normalised(code)).as_bytes())
}

impl Engine {
    /// Checks a presale code a fan entered for `event_id`. A wrong one is
    /// counted against the fan and their address; while either's back-off
    /// runs, tries are refused (429) unread.
    pub async fn enter_presale_code(
        &self,
        event_id: EventId,
        fan: UserId,
        code: &str,
        address: Option<IpAddr>,
    ) -> Result<(PresaleAccess, PresalePass)> {
        let fan_key = format!("presale-fan:{fan}");
        let address_key = address.map(|a| format!("presale-address:{a}"));
        if let Some(key) = &address_key {
            self.check_address(key).await?;
        }
        self.count_attempt(&fan_key, FAN_TRIES_FREE).await?;
        let typed = normalised(code);
        let found = if typed.is_empty() || typed.len() > 64 { None } else { self.find_code(event_id, code).await? };
        match found {
            Some((access, pass, true)) => {
                self.clear_attempts(&fan_key).await?;
                metrics::counter!("frontrow_presale_codes_entered_total", "outcome" => "accepted").increment(1);
                Ok((access, pass))
            }
            Some((_, _, false)) | None => {
                if let Some(key) = &address_key {
                    self.count_address_failure(key).await?;
                }
                metrics::counter!("frontrow_presale_codes_entered_total", "outcome" => "refused").increment(1);
                Err(EngineError::AccessCodeInvalid)
            }
        }
    }

    /// The code, what it opens, and whether it opens them now or later (its
    /// batch not withdrawn, its window not over, before the public sale). A
    /// code is taken before its window so that its fan can wait in the
    /// presale's queue for the draw at its opening.
    async fn find_code(&self, event_id: EventId, code: &str) -> Result<Option<(PresaleAccess, PresalePass, bool)>> {
        let row = sqlx::query!(
            r#"SELECT c.code_id, b.label, b.starts_at AS "starts_at: DateTime<Utc>", b.ends_at AS "ends_at: DateTime<Utc>",
                      b.tiers, b.sections, b.max_uses, b.limit_unit AS "limit_unit: CodeLimitUnit",
                      (b.revoked_at IS NULL AND now() < b.ends_at AND now() < e.sale_opens_at
                       AND e.published AND e.cancelled_at IS NULL) AS "open!"
                 FROM access_codes c
                 JOIN access_code_batches b USING (batch_id)
                 JOIN events e ON e.event_id = c.event_id
                WHERE c.event_id = $1 AND c.code_hash = $2"#,
            event_id.as_uuid(),
            code_hash(event_id, code),
        )
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| {
            let pass = PresalePass {
                event_id,
                label: r.label,
                starts_at: r.starts_at,
                ends_at: r.ends_at,
                tiers: r.tiers,
                sections: r.sections,
                max_uses: r.max_uses,
                limit_unit: r.limit_unit,
            };
            (PresaleAccess::remembered(event_id, r.code_id), pass, r.open)
        }))
    }

    /// What the code a session remembers lets its fan do, from when it is
    /// entered until its window ends (`None` once it opens nothing more).
    pub async fn presale_pass(&self, access: &PresaleAccess) -> Result<Option<PresalePass>> {
        let row = sqlx::query!(
            r#"SELECT b.label, b.starts_at AS "starts_at: DateTime<Utc>", b.ends_at AS "ends_at: DateTime<Utc>",
                      b.tiers, b.sections, b.max_uses, b.limit_unit AS "limit_unit: CodeLimitUnit"
                 FROM access_codes c
                 JOIN access_code_batches b USING (batch_id)
                 JOIN events e ON e.event_id = c.event_id
                WHERE c.code_id = $1 AND c.event_id = $2
                  AND b.revoked_at IS NULL AND now() < b.ends_at AND now() < e.sale_opens_at"#,
            access.code_id,
            access.event_id.as_uuid(),
        )
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(|r| PresalePass {
            event_id: access.event_id,
            label: r.label,
            starts_at: r.starts_at,
            ends_at: r.ends_at,
            tiers: r.tiers,
            sections: r.sections,
            max_uses: r.max_uses,
            limit_unit: r.limit_unit,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_whatever_their_case_spaces_and_dashes_and_only_in_their_event() {
        let event = EventId::from_uuid(Uuid::from_u128(1));
        assert_eq!(code_hash(event, "abcd-EFGH-2345"), code_hash(event, " ABCD EFGH 2345 "));
        assert_ne!(code_hash(event, "ABCDEFGH2345"), code_hash(EventId::from_uuid(Uuid::from_u128(2)), "ABCDEFGH2345"));
        assert_ne!(code_hash(event, "ABCDEFGH2345"), code_hash(event, "ABCDEFGH2346"));
    }
}
