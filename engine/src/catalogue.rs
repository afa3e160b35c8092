//! Events: creating them from a layout, the catalogue, and the booking
//! rules every hold checks.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_model::{CreatedEvent, Event, EventStatus, EventSummary, NewEvent, TierPrice};
use uuid::Uuid;

use crate::admission::Admission;
use crate::error::{EngineError, Result};
use crate::Engine;

pub const MAX_SEATS_PER_EVENT: i64 = 100_000;
pub const MAX_LABEL_LEN: usize = 16;
pub const MAX_TEXT_LEN: usize = 200;

fn check_text(field: &str, value: &str, max: usize) -> Result<()> {
    let len = value.trim().chars().count();
    if len == 0 || len > max || value.chars().any(char::is_control) {
        return Err(EngineError::invalid(format!("{field} must be 1 to {max} characters, none of them control characters")));
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

/// Checks a new event and counts its seats.
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
            for (what, numbers) in [("aisles_after", &r.aisles_after), ("wheelchair", &r.wheelchair), ("companion", &r.companion)] {
                if numbers.iter().any(|n| !(1..=r.seats).contains(n)) {
                    return Err(EngineError::invalid(format!("{what} of row {:?} must be seat numbers 1 to {}", r.row, r.seats)));
                }
            }
            if r.wheelchair.iter().any(|n| r.companion.contains(n)) {
                return Err(EngineError::invalid(format!("a seat of row {:?} cannot be both wheelchair and companion", r.row)));
            }
            total += i64::from(r.seats);
        }
    }
    if total > MAX_SEATS_PER_EVENT {
        return Err(EngineError::invalid(format!("an event may have at most {MAX_SEATS_PER_EVENT} seats")));
    }
    Ok(total)
}

/// The event's booking rules, read on every hold.
pub(crate) struct EventRules {
    pub event_id: Uuid,
    pub sale_opens_at: DateTime<Utc>,
    pub hold_ttl_seconds: i32,
    pub max_seats_per_order: i32,
    pub waiting_room_enabled: bool,
    pub published: bool,
    pub cancelled: bool,
}

impl EventRules {
    /// May `fan` hold seats of this event now?
    pub fn check_can_hold(&self, fan: Uuid, admission: Option<&Admission>) -> Result<()> {
        if !self.published {
            return Err(EngineError::NotFound);
        }
        if self.cancelled {
            return Err(EngineError::EventCancelled);
        }
        if self.waiting_room_enabled && !admission.is_some_and(|a| a.admits(self.event_id, fan)) {
            return Err(EngineError::NotAdmitted);
        }
        if self.sale_opens_at > Utc::now() {
            return Err(EngineError::SaleNotOpen);
        }
        Ok(())
    }
}

impl Engine {
    pub async fn create_event(&self, new: &NewEvent, created_by: Option<Uuid>) -> Result<CreatedEvent> {
        let seats_total = validate_new_event(new)?;
        let event_id = Uuid::new_v4();
        let mut tx = self.pool().begin().await?;
        sqlx::query!(
            r#"INSERT INTO events (event_id, name, kind, venue, starts_at, sale_opens_at, hold_ttl_seconds,
                                   max_seats_per_order, waiting_room_enabled, published, created_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"#,
            event_id,
            new.name.trim(),
            new.kind.trim(),
            new.venue.trim(),
            new.starts_at as DateTime<Utc>,
            new.sale_opens_at as DateTime<Utc>,
            new.hold_ttl_seconds,
            new.max_seats_per_order,
            new.waiting_room_enabled,
            new.published,
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

    /// The catalogue fans see: published events, soonest first, with their
    /// seat counts from this instance's seat maps.
    pub async fn events(&self) -> Result<Vec<EventSummary>> {
        let ids = sqlx::query_scalar!("SELECT event_id FROM events WHERE published ORDER BY starts_at, name")
            .fetch_all(self.pool())
            .await?;
        let mut list = Vec::with_capacity(ids.len());
        for id in ids {
            list.push(self.board().snapshot(id).await?.summary());
        }
        Ok(list)
    }

    /// The event itself (facts, rules and tiers), read from the database.
    pub async fn event(&self, event_id: Uuid) -> Result<Event> {
        load_event(self.pool(), event_id).await
    }

    pub(crate) async fn rules(&self, event_id: Uuid) -> Result<EventRules> {
        let r = sqlx::query!(
            r#"SELECT sale_opens_at AS "sale_opens_at: DateTime<Utc>", hold_ttl_seconds, max_seats_per_order,
                      waiting_room_enabled, published, cancelled_at IS NOT NULL AS "cancelled!"
               FROM events WHERE event_id = $1"#,
            event_id
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        Ok(EventRules {
            event_id,
            sale_opens_at: r.sale_opens_at,
            hold_ttl_seconds: r.hold_ttl_seconds,
            max_seats_per_order: r.max_seats_per_order,
            waiting_room_enabled: r.waiting_room_enabled,
            published: r.published,
            cancelled: r.cancelled,
        })
    }

    pub async fn find_event_by_name(&self, name: &str) -> Result<Option<Uuid>> {
        Ok(sqlx::query_scalar!("SELECT event_id FROM events WHERE name = $1 ORDER BY created_at LIMIT 1", name)
            .fetch_optional(self.pool())
            .await?)
    }
}

/// Reads an event (the one query every view of an event starts from).
pub(crate) async fn load_event(pool: &sqlx::PgPool, event_id: Uuid) -> Result<Event> {
    let e = sqlx::query!(
        r#"SELECT event_id, name, kind, venue, starts_at AS "starts_at: DateTime<Utc>", sale_opens_at AS "sale_opens_at: DateTime<Utc>",
                  hold_ttl_seconds, max_seats_per_order, waiting_room_enabled, published,
                  cancelled_at AS "cancelled_at: DateTime<Utc>"
           FROM events WHERE event_id = $1"#,
        event_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let tiers = sqlx::query_as!(
        TierPrice,
        "SELECT tier, price_cents FROM price_tiers WHERE event_id = $1 ORDER BY price_cents DESC, tier",
        event_id
    )
    .fetch_all(pool)
    .await?;
    Ok(Event {
        event_id: e.event_id,
        name: e.name,
        kind: e.kind,
        venue: e.venue,
        starts_at: e.starts_at,
        sale_opens_at: e.sale_opens_at,
        hold_ttl_seconds: e.hold_ttl_seconds,
        max_seats_per_order: e.max_seats_per_order,
        waiting_room_enabled: e.waiting_room_enabled,
        published: e.published,
        cancelled_at: e.cancelled_at,
        tiers,
    })
}

/// An event's catalogue entry, given how many seats it has and how many are free.
pub fn summary(event: Event, seats_total: i64, seats_available: i64, now: DateTime<Utc>) -> EventSummary {
    EventSummary {
        status: EventStatus::of(&event, seats_available, now),
        price_min_cents: event.tiers.iter().map(|t| t.price_cents).min().unwrap_or(0),
        price_max_cents: event.tiers.iter().map(|t| t.price_cents).max().unwrap_or(0),
        event,
        seats_total,
        seats_available,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontrow_model::{NewRow, NewSection};

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
            published: true,
            tiers: vec![TierPrice { tier: "T".into(), price_cents: 100 }],
            sections: vec![NewSection { section: "A".into(), rows: vec![row("1", 10)] }],
            layout_id: None,
        }
    }

    fn row(label: &str, seats: i32) -> NewRow {
        NewRow { row: label.into(), seats, tier: "T".into(), aisles_after: vec![], wheelchair: vec![], companion: vec![] }
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
        let mut e = event();
        e.sections[0].rows[0].aisles_after = vec![11];
        assert!(validate_new_event(&e).is_err(), "an aisle after a seat the row does not have");
        let mut e = event();
        e.sections[0].rows[0].wheelchair = vec![2];
        e.sections[0].rows[0].companion = vec![2];
        assert!(validate_new_event(&e).is_err(), "one seat, two kinds");
    }
}
