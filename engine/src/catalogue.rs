//! Events, their layouts and the seat map as viewers see it.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{EngineError, Result};
use crate::model::*;

pub const MAX_SEATS_PER_EVENT: i64 = 100_000;
pub const MAX_LABEL_LEN: usize = 16;
pub const MAX_TEXT_LEN: usize = 200;

fn check_text(field: &str, value: &str, max: usize) -> Result<()> {
    let len = value.trim().chars().count();
    if len == 0 || len > max {
        return Err(EngineError::invalid(format!("{field} must be 1 to {max} characters")));
    }
    Ok(())
}

/// Section and row labels become part of seat ids (`SECTION-ROW-NUMBER`), so
/// they are restricted to letters and digits to keep ids unambiguous.
fn check_label(field: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > MAX_LABEL_LEN || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(EngineError::invalid(format!("{field} {value:?} must be 1 to {MAX_LABEL_LEN} letters or digits")));
    }
    Ok(())
}

pub fn validate_new_event(new: &NewEvent) -> Result<i64> {
    check_text("name", &new.name, MAX_TEXT_LEN)?;
    check_text("kind", &new.kind, 50)?;
    check_text("venue", &new.venue, MAX_TEXT_LEN)?;
    if !(1..=3600).contains(&new.hold_ttl_seconds) {
        return Err(EngineError::invalid("hold_ttl_seconds must be 1 to 3600"));
    }
    if !(1..=50).contains(&new.max_seats_per_order) {
        return Err(EngineError::invalid("max_seats_per_order must be 1 to 50"));
    }
    if new.tiers.is_empty() || new.tiers.len() > 20 {
        return Err(EngineError::invalid("tiers must list 1 to 20 price tiers"));
    }
    let mut tiers = HashSet::new();
    for t in &new.tiers {
        check_text("tier", &t.tier, 32)?;
        if !(0..=10_000_000).contains(&t.price_cents) {
            return Err(EngineError::invalid("price_cents must be 0 to 10000000"));
        }
        if !tiers.insert(t.tier.as_str()) {
            return Err(EngineError::invalid(format!("tier {:?} is listed twice", t.tier)));
        }
    }
    if new.sections.is_empty() || new.sections.len() > 200 {
        return Err(EngineError::invalid("sections must list 1 to 200 sections"));
    }
    let mut sections = HashSet::new();
    let mut total: i64 = 0;
    for s in &new.sections {
        check_label("section", &s.section)?;
        if !sections.insert(s.section.as_str()) {
            return Err(EngineError::invalid(format!("section {:?} is listed twice", s.section)));
        }
        if s.rows.is_empty() || s.rows.len() > 500 {
            return Err(EngineError::invalid(format!("section {:?} must have 1 to 500 rows", s.section)));
        }
        let mut rows = HashSet::new();
        for r in &s.rows {
            check_label("row", &r.row)?;
            if !rows.insert(r.row.as_str()) {
                return Err(EngineError::invalid(format!("row {:?} appears twice in section {:?}", r.row, s.section)));
            }
            if !(1..=1000).contains(&r.seats) {
                return Err(EngineError::invalid("a row must have 1 to 1000 seats"));
            }
            if !tiers.contains(r.tier.as_str()) {
                return Err(EngineError::invalid(format!("row {:?} uses unknown tier {:?}", r.row, r.tier)));
            }
            total += i64::from(r.seats);
        }
    }
    if total > MAX_SEATS_PER_EVENT {
        return Err(EngineError::invalid(format!("an event may have at most {MAX_SEATS_PER_EVENT} seats")));
    }
    Ok(total)
}

pub async fn create_event(pool: &sqlx::PgPool, new: &NewEvent, created_by: Option<Uuid>) -> Result<CreatedEvent> {
    let seats_total = validate_new_event(new)?;
    let event_id = Uuid::new_v4();
    let mut tx = pool.begin().await?;
    sqlx::query!(
        r#"INSERT INTO events (event_id, name, kind, venue, starts_at, sale_opens_at, hold_ttl_seconds,
                               max_seats_per_order, waiting_room_enabled, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"#,
        event_id,
        new.name.trim(),
        new.kind.trim(),
        new.venue.trim(),
        new.starts_at as DateTime<Utc>,
        new.sale_opens_at as DateTime<Utc>,
        new.hold_ttl_seconds,
        new.max_seats_per_order,
        new.waiting_room_enabled,
        created_by,
    )
    .execute(&mut *tx)
    .await?;
    let tier_names: Vec<String> = new.tiers.iter().map(|t| t.tier.clone()).collect();
    let tier_prices: Vec<i32> = new.tiers.iter().map(|t| t.price_cents).collect();
    sqlx::query!(
        "INSERT INTO price_tiers (event_id, tier, price_cents) SELECT $1, * FROM UNNEST($2::text[], $3::int[])",
        event_id,
        &tier_names,
        &tier_prices,
    )
    .execute(&mut *tx)
    .await?;

    let capacity = seats_total as usize;
    let (mut ids, mut sections, mut rows, mut numbers, mut tiers, mut prices) = (
        Vec::with_capacity(capacity),
        Vec::with_capacity(capacity),
        Vec::with_capacity(capacity),
        Vec::with_capacity(capacity),
        Vec::with_capacity(capacity),
        Vec::with_capacity(capacity),
    );
    for s in &new.sections {
        for r in &s.rows {
            let price = new.tiers.iter().find(|t| t.tier == r.tier).map_or(0, |t| t.price_cents);
            for n in 1..=r.seats {
                ids.push(format!("{}-{}-{}", s.section, r.row, n));
                sections.push(s.section.clone());
                rows.push(r.row.clone());
                numbers.push(n);
                tiers.push(r.tier.clone());
                prices.push(price);
            }
        }
    }
    sqlx::query!(
        r#"INSERT INTO seats (event_id, seat_id, section, row_label, number, position, tier, price_cents)
           SELECT $1, s.id, s.section, s.row_label, s.number, s.ord, s.tier, s.price
           FROM UNNEST($2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::int[]) WITH ORDINALITY
                AS s(id, section, row_label, number, tier, price, ord)"#,
        event_id,
        &ids,
        &sections,
        &rows,
        &numbers,
        &tiers,
        &prices,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(CreatedEvent { event_id, seats_total })
}

pub(crate) fn event_status(now: DateTime<Utc>, starts_at: DateTime<Utc>, sale_opens_at: DateTime<Utc>, available: i64) -> String {
    if starts_at <= now {
        "past"
    } else if sale_opens_at > now {
        "upcoming"
    } else if available == 0 {
        "sold_out"
    } else {
        "on_sale"
    }
    .to_owned()
}

pub async fn list_events(pool: &sqlx::PgPool) -> Result<Vec<EventSummary>> {
    let now = Utc::now();
    let rows = sqlx::query!(
        r#"SELECT e.event_id, e.name, e.kind, e.venue, e.starts_at AS "starts_at: DateTime<Utc>",
                  e.sale_opens_at AS "sale_opens_at: DateTime<Utc>",
                  (SELECT count(*) FROM seats s WHERE s.event_id = e.event_id) AS "seats_total!",
                  (SELECT count(*) FROM seats s WHERE s.event_id = e.event_id
                     AND (s.state = 'available' OR (s.state = 'held' AND s.hold_expires_at <= now()))) AS "seats_available!",
                  (SELECT min(price_cents) FROM price_tiers t WHERE t.event_id = e.event_id) AS "price_min_cents!",
                  (SELECT max(price_cents) FROM price_tiers t WHERE t.event_id = e.event_id) AS "price_max_cents!"
           FROM events e
           ORDER BY e.starts_at, e.name"#
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| EventSummary {
            status: event_status(now, r.starts_at, r.sale_opens_at, r.seats_available),
            event_id: r.event_id,
            name: r.name,
            kind: r.kind,
            venue: r.venue,
            starts_at: r.starts_at,
            sale_opens_at: r.sale_opens_at,
            seats_total: r.seats_total,
            seats_available: r.seats_available,
            price_min_cents: r.price_min_cents,
            price_max_cents: r.price_max_cents,
        })
        .collect())
}

/// The event's booking rules, read on every hold.
pub(crate) struct EventRules {
    pub sale_opens_at: DateTime<Utc>,
    pub hold_ttl_seconds: i32,
    pub max_seats_per_order: i32,
    pub waiting_room_enabled: bool,
}

pub(crate) async fn event_rules(pool: &sqlx::PgPool, event_id: Uuid) -> Result<EventRules> {
    sqlx::query_as!(
        EventRules,
        r#"SELECT sale_opens_at AS "sale_opens_at: DateTime<Utc>", hold_ttl_seconds, max_seats_per_order,
                  waiting_room_enabled FROM events WHERE event_id = $1"#,
        event_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)
}

pub async fn find_event_by_name(pool: &sqlx::PgPool, name: &str) -> Result<Option<Uuid>> {
    Ok(sqlx::query_scalar!("SELECT event_id FROM events WHERE name = $1 ORDER BY created_at LIMIT 1", name)
        .fetch_optional(pool)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> NewEvent {
        NewEvent {
            name: "N".into(),
            kind: "concert".into(),
            venue: "V".into(),
            starts_at: Utc::now(),
            sale_opens_at: Utc::now(),
            hold_ttl_seconds: 480,
            max_seats_per_order: 8,
            waiting_room_enabled: false,
            tiers: vec![TierPrice { tier: "T".into(), price_cents: 100 }],
            sections: vec![NewSection { section: "A".into(), rows: vec![NewRow { row: "1".into(), seats: 10, tier: "T".into() }] }],
        }
    }

    #[test]
    fn a_valid_layout_counts_its_seats() {
        assert_eq!(validate_new_event(&event()).unwrap(), 10);
    }

    #[test]
    fn layouts_that_would_make_ambiguous_or_dangling_seats_are_refused() {
        let mut e = event();
        e.sections[0].section = "A-B".into();
        assert!(validate_new_event(&e).is_err(), "a dash would make seat ids ambiguous");
        let mut e = event();
        e.sections[0].rows[0].tier = "missing".into();
        assert!(validate_new_event(&e).is_err());
        let mut e = event();
        let row = e.sections[0].rows[0].clone();
        e.sections[0].rows.push(row);
        assert!(validate_new_event(&e).is_err(), "duplicate row");
        let mut e = event();
        e.hold_ttl_seconds = 0;
        assert!(validate_new_event(&e).is_err());
        let mut e = event();
        e.sections[0].rows[0].seats = 1001;
        assert!(validate_new_event(&e).is_err());
    }
}
