//! Presale codes, from the staff's side: making a batch (one shared code,
//! or many unique random ones), seeing each batch's uses, exporting the
//! unique codes, and withdrawing a batch. Fans enter codes in
//! [`crate::sale::presale`]; `hold_batch` counts their uses.

use chrono::{DateTime, Utc};
use frontrow_model::{AccessCodeBatch, AccessCodeBatchId, AccessCodeUses, CodeLimitUnit, CreatedAccessCodes, EventId, NewAccessCodes, User};
use rand::Rng;
use uuid::Uuid;

use crate::accounts::require_staff;
use crate::changelog::{self, csv_field};
use crate::error::{EngineError, Result};
use crate::sale::presale::{code_hash, normalised};
use crate::Engine;

/// Unique codes are 12 characters of this alphabet (no 0/O or 1/I to
/// misread): 60 random bits, far beyond guessing at the throttled rate.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LENGTH: usize = 12;
/// Most unique codes one batch makes.
pub const MAX_CODES_PER_BATCH: u32 = 10_000;

/// A fresh unique code, grouped by four for reading aloud: `ABCD-EFGH-JKLM`.
fn unique_code() -> String {
    let mut rng = rand::rngs::OsRng;
    let chars: Vec<char> = (0..CODE_LENGTH).map(|_| CODE_ALPHABET[rng.gen_range(0..CODE_ALPHABET.len())] as char).collect();
    chars.chunks(4).map(|group| group.iter().collect::<String>()).collect::<Vec<_>>().join("-")
}

/// Checks a batch asked for against its event: every rule that needs only
/// the request and the event's facts.
fn check_new_codes(new: &NewAccessCodes, tiers: &[String], sections: &[String], sale_opens_at: DateTime<Utc>, now: DateTime<Utc>) -> Result<()> {
    let label = new.label.trim();
    if label.is_empty() || label.chars().count() > 80 || label.chars().any(char::is_control) {
        return Err(EngineError::invalid("label must be 1 to 80 characters"));
    }
    match (&new.code, new.count) {
        (Some(code), None) => {
            let typed = normalised(code);
            if !(4..=40).contains(&code.len()) || !code.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || typed.len() < 4 {
                return Err(EngineError::invalid("code must be 4 to 40 letters, digits or dashes"));
            }
        }
        (None, Some(count)) if (1..=MAX_CODES_PER_BATCH).contains(&count) => {}
        (None, Some(_)) => return Err(EngineError::invalid(format!("count must be 1 to {MAX_CODES_PER_BATCH}"))),
        _ => return Err(EngineError::invalid("give either code (one shared code) or count (unique codes), not both")),
    }
    if !(1..=100_000).contains(&new.max_uses) {
        return Err(EngineError::invalid("max_uses must be 1 to 100000"));
    }
    for (field, asked, known) in [("tiers", &new.tiers, tiers), ("sections", &new.sections, sections)] {
        if let Some(asked) = asked {
            if asked.is_empty() {
                return Err(EngineError::invalid(format!("{field} must name at least one, or be left out for every one")));
            }
            if let Some(unknown) = asked.iter().find(|a| !known.contains(a)) {
                return Err(EngineError::invalid(format!("{field}: this event has no {unknown:?}")));
            }
            // Each once, so the list is never longer than the event's own.
            let mut seen = std::collections::HashSet::new();
            if let Some(twice) = asked.iter().find(|a| !seen.insert(a.as_str())) {
                return Err(EngineError::invalid(format!("{field} names {twice:?} twice")));
            }
        }
    }
    frontrow_model::check_date("starts_at", new.starts_at)?;
    frontrow_model::check_date("ends_at", new.ends_at)?;
    if new.starts_at >= new.ends_at {
        return Err(EngineError::invalid("ends_at must be after starts_at"));
    }
    if new.ends_at > sale_opens_at {
        return Err(EngineError::invalid(format!(
            "a presale must end by the public sale's opening ({})",
            sale_opens_at.format("%Y-%m-%d %H:%M UTC")
        )));
    }
    if new.ends_at <= now {
        return Err(EngineError::invalid("ends_at has passed"));
    }
    Ok(())
}

/// The change log's line for a new batch.
fn describe(new: &NewAccessCodes, codes: usize) -> String {
    let what = match &new.code {
        Some(_) => "one shared code".to_owned(),
        None => format!("{codes} unique codes"),
    };
    let opens = [new.tiers.as_ref().map(|t| format!("tiers {}", t.join(", "))), new.sections.as_ref().map(|s| format!("sections {}", s.join(", ")))]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    format!(
        "{}: {what}, {} {} each, {}, {} to {}",
        new.label.trim(),
        new.max_uses,
        new.limit_unit.as_str(),
        if opens.is_empty() { "every seat".to_owned() } else { opens.join("; ") },
        new.starts_at.format("%Y-%m-%d %H:%M UTC"),
        new.ends_at.format("%Y-%m-%d %H:%M UTC"),
    )
}

impl Engine {
    /// Makes a batch of presale codes for the event (see [`NewAccessCodes`]).
    pub async fn create_access_codes(&self, staff: &User, event_id: EventId, new: &NewAccessCodes) -> Result<CreatedAccessCodes> {
        require_staff(staff)?;
        let event = self.event(event_id).await?;
        if event.cancelled_at.is_some() {
            return Err(EngineError::EventCancelled);
        }
        let sections = sqlx::query_scalar!(r#"SELECT DISTINCT section AS "section!" FROM seats WHERE event_id = $1"#, event_id.as_uuid())
            .fetch_all(self.pool())
            .await?;
        let tiers: Vec<String> = event.tiers.iter().map(|t| t.tier.clone()).collect();
        check_new_codes(new, &tiers, &sections, event.sale_opens_at, Utc::now())?;
        let codes: Vec<String> = match (&new.code, new.count) {
            (Some(code), _) => vec![code.trim().to_owned()],
            (None, count) => {
                let mut made = std::collections::BTreeSet::new();
                while made.len() < count.unwrap_or(1) as usize {
                    made.insert(unique_code());
                }
                made.into_iter().collect()
            }
        };
        let shared = new.code.is_some();
        let hint = new.code.as_ref().map(|c| format!("{}…", normalised(c).chars().take(2).collect::<String>()));
        let batch_id = AccessCodeBatchId::from(Uuid::new_v4());
        let mut tx = crate::db::begin(self.pool()).await?;
        sqlx::query!(
            "INSERT INTO access_code_batches (batch_id, event_id, label, shared, hint, max_uses, limit_unit, tiers, sections, starts_at, ends_at, created_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            batch_id.as_uuid(),
            event_id.as_uuid(),
            new.label.trim(),
            shared,
            hint,
            new.max_uses,
            new.limit_unit as CodeLimitUnit,
            new.tiers.as_deref(),
            new.sections.as_deref(),
            new.starts_at as DateTime<Utc>,
            new.ends_at as DateTime<Utc>,
            staff.user_id.as_uuid(),
        )
        .execute(&mut *tx)
        .await?;
        let ids: Vec<Uuid> = codes.iter().map(|_| Uuid::new_v4()).collect();
        let hashes: Vec<String> = codes.iter().map(|c| code_hash(event_id, c)).collect();
        // Only unique codes are kept as they are: they are random; a shared
        // code staff chose is kept only as its hash.
        let stored: Vec<Option<String>> = codes.iter().map(|c| (!shared).then(|| c.clone())).collect();
        let inserted = sqlx::query!(
            "INSERT INTO access_codes (code_id, batch_id, event_id, code_hash, code)
             SELECT c.id, $2, $3, c.hash, c.code FROM unnest($1::uuid[], $4::text[], $5::text[]) AS c(id, hash, code)
             ON CONFLICT (event_id, code_hash) DO NOTHING",
            &ids,
            batch_id.as_uuid(),
            event_id.as_uuid(),
            &hashes,
            &stored as &[Option<String>],
        )
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() != codes.len() as u64 {
            tx.rollback().await?;
            return Err(EngineError::invalid("this code is already in use for this event: choose another"));
        }
        changelog::record(&mut tx, Some(event_id), staff.user_id, "access_codes_created", &[], &describe(new, codes.len())).await?;
        crate::notices::announce_event_change(&mut tx, event_id).await?;
        tx.commit().await?;
        let batch = self.access_code_batch(event_id, batch_id).await?;
        Ok(CreatedAccessCodes { batch, codes })
    }

    /// The event's batches of presale codes, earliest window first, each
    /// with its uses now.
    pub async fn access_code_batches(&self, staff: &User, event_id: EventId) -> Result<Vec<AccessCodeBatch>> {
        require_staff(staff)?;
        self.event(event_id).await?;
        self.batches(event_id, None).await
    }

    async fn access_code_batch(&self, event_id: EventId, batch_id: AccessCodeBatchId) -> Result<AccessCodeBatch> {
        self.batches(event_id, Some(batch_id)).await?.into_iter().next().ok_or(EngineError::NotFound)
    }

    async fn batches(&self, event_id: EventId, only: Option<AccessCodeBatchId>) -> Result<Vec<AccessCodeBatch>> {
        let rows = sqlx::query!(
            r#"SELECT b.batch_id, b.label, b.shared, b.hint, b.max_uses, b.limit_unit AS "limit_unit: CodeLimitUnit", b.tiers, b.sections,
                      b.starts_at AS "starts_at: DateTime<Utc>", b.ends_at AS "ends_at: DateTime<Utc>",
                      b.created_at AS "created_at: DateTime<Utc>", b.revoked_at AS "revoked_at: DateTime<Utc>",
                      (SELECT count(*) FROM access_codes c WHERE c.batch_id = b.batch_id) AS "codes!",
                      coalesce(u.uses, 0)::bigint AS "uses!", coalesce(u.codes_used, 0)::bigint AS "codes_used!"
                 FROM access_code_batches b
                 LEFT JOIN LATERAL (
                      SELECT sum(CASE WHEN b.limit_unit = 'orders' THEN 1 ELSE cardinality(h.seat_ids) END) AS uses,
                             count(DISTINCT h.access_code_id) AS codes_used
                        FROM access_codes c JOIN holds h ON h.access_code_id = c.code_id
                       WHERE c.batch_id = b.batch_id
                         AND (h.state IN ('checking_out', 'converted') OR hold_live(h.state, h.expires_at))) u ON true
                WHERE b.event_id = $1 AND ($2::uuid IS NULL OR b.batch_id = $2)
                ORDER BY b.starts_at, b.created_at"#,
            event_id.as_uuid(),
            only.map(|id| id.as_uuid()),
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| AccessCodeBatch {
                batch_id: r.batch_id.into(),
                event_id,
                label: r.label,
                shared: r.shared,
                hint: r.hint,
                codes: r.codes,
                max_uses: r.max_uses,
                limit_unit: r.limit_unit,
                tiers: r.tiers,
                sections: r.sections,
                starts_at: r.starts_at,
                ends_at: r.ends_at,
                created_at: r.created_at,
                revoked_at: r.revoked_at,
                uses: r.uses,
                codes_used: r.codes_used,
            })
            .collect())
    }

    /// A batch's codes with each one's uses now (a shared code shows as
    /// its hint: it is not kept).
    pub async fn access_code_uses(
        &self,
        staff: &User,
        event_id: EventId,
        batch_id: AccessCodeBatchId,
    ) -> Result<(AccessCodeBatch, Vec<AccessCodeUses>)> {
        require_staff(staff)?;
        let batch = self.access_code_batch(event_id, batch_id).await?;
        let rows = sqlx::query!(
            r#"SELECT coalesce(c.code, b.hint, '') AS "code!", access_code_uses(c.code_id, b.limit_unit) AS "uses!"
                 FROM access_codes c JOIN access_code_batches b USING (batch_id)
                WHERE c.batch_id = $1
                ORDER BY c.code"#,
            batch_id.as_uuid(),
        )
        .fetch_all(self.pool())
        .await?;
        Ok((batch, rows.into_iter().map(|r| AccessCodeUses { code: r.code, uses: r.uses }).collect()))
    }

    /// A batch's codes as CSV, one row each with its uses now, to hand out
    /// (by mail merge, on cards) and to follow.
    pub async fn access_codes_csv(&self, staff: &User, event_id: EventId, batch_id: AccessCodeBatchId) -> Result<String> {
        use std::fmt::Write;
        let (batch, codes) = self.access_code_uses(staff, event_id, batch_id).await?;
        let mut out = String::from("code,uses,max_uses,limit_unit,label,starts_at,ends_at,revoked_at\n");
        let time = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        for code in codes {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                csv_field(&code.code),
                code.uses,
                batch.max_uses,
                batch.limit_unit.as_str(),
                csv_field(&batch.label),
                time(batch.starts_at),
                time(batch.ends_at),
                batch.revoked_at.map(time).unwrap_or_default(),
            );
        }
        Ok(out)
    }

    /// Withdraws a batch: its codes open nothing from now on. Holds already
    /// made with them stand.
    pub async fn revoke_access_codes(&self, staff: &User, event_id: EventId, batch_id: AccessCodeBatchId) -> Result<AccessCodeBatch> {
        require_staff(staff)?;
        let mut tx = crate::db::begin(self.pool()).await?;
        let label = sqlx::query_scalar!(
            "UPDATE access_code_batches SET revoked_at = coalesce(revoked_at, now()) WHERE batch_id = $1 AND event_id = $2 RETURNING label",
            batch_id.as_uuid(),
            event_id.as_uuid(),
        )
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(EngineError::NotFound)?;
        changelog::record(&mut tx, Some(event_id), staff.user_id, "access_codes_revoked", &[], &label).await?;
        crate::notices::announce_event_change(&mut tx, event_id).await?;
        tx.commit().await?;
        self.access_code_batch(event_id, batch_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_codes() -> NewAccessCodes {
        let now = Utc::now();
        NewAccessCodes {
            label: "Fan club".into(),
            code: Some("FANCLUB".into()),
            count: None,
            max_uses: 2,
            limit_unit: CodeLimitUnit::Tickets,
            tiers: Some(vec!["Front".into()]),
            sections: None,
            starts_at: now,
            ends_at: now + chrono::Duration::hours(1),
        }
    }

    #[test]
    fn unique_codes_are_twelve_unambiguous_characters_in_groups_of_four() {
        let code = unique_code();
        assert_eq!(code.len(), 14);
        assert!(code.split('-').all(|g| g.len() == 4 && g.bytes().all(|b| CODE_ALPHABET.contains(&b))));
        assert_ne!(unique_code(), unique_code());
    }

    #[test]
    fn a_batch_must_name_known_tiers_and_end_by_the_public_sale() {
        let tiers = vec!["Front".to_owned(), "Back".to_owned()];
        let sections = vec!["A".to_owned()];
        let now = Utc::now();
        let opens = now + chrono::Duration::hours(2);
        assert!(check_new_codes(&new_codes(), &tiers, &sections, opens, now).is_ok());
        let too_late = NewAccessCodes { ends_at: opens + chrono::Duration::minutes(1), ..new_codes() };
        assert!(check_new_codes(&too_late, &tiers, &sections, opens, now).is_err());
        let unknown = NewAccessCodes { tiers: Some(vec!["Balcony".into()]), ..new_codes() };
        assert!(check_new_codes(&unknown, &tiers, &sections, opens, now).is_err());
        let both = NewAccessCodes { count: Some(5), ..new_codes() };
        assert!(check_new_codes(&both, &tiers, &sections, opens, now).is_err());
        let short = NewAccessCodes { code: Some("a-b".into()), ..new_codes() };
        assert!(check_new_codes(&short, &tiers, &sections, opens, now).is_err());
        let none = NewAccessCodes { tiers: Some(Vec::new()), ..new_codes() };
        assert!(check_new_codes(&none, &tiers, &sections, opens, now).is_err());
    }
}
