//! Events: creating them from a layout, changing and cancelling them, the
//! catalogue, and the booking rules every hold checks.

use chrono::{DateTime, Utc};
use frontrow_model::{
    CreatedEvent, Event, EventChanges, EventDetails, EventId, EventPage, EventSearch, EventStatus, EventSummary, NewEvent, RefundPolicy, SeatKind,
    SeatStatus, StaffEventLine, TicketType, TierPrice, UserId,
};
use uuid::Uuid;

use crate::changelog;
use crate::error::{EngineError, Result};
use crate::sale::presale::Access;
use crate::Engine;

mod plan;
mod rules;
mod search;

pub(crate) use plan::{insert_sections, load_shapes, plan_seats, stage_json};
pub use plan::{plan_layout, validate_sections, validate_stage};
pub use rules::validate_new_event;
use rules::{check_dates, check_details, check_doors, check_refund_policy, check_rules, check_ticket_types, trimmed};
pub(crate) use rules::{check_text, check_tier};
pub use search::{search, EVENTS_PER_PAGE};

pub const MAX_SEATS_PER_EVENT: i64 = 100_000;
pub const MAX_LABEL_LEN: usize = 16;
pub const MAX_TEXT_LEN: usize = 200;

/// Writes the event's ticket types (replacing any it had).
async fn store_ticket_types(conn: &mut sqlx::PgConnection, event_id: EventId, types: &[TicketType]) -> Result<()> {
    sqlx::query!("DELETE FROM ticket_prices WHERE event_id = $1", event_id.as_uuid()).execute(&mut *conn).await?;
    let mut names = Vec::new();
    let mut tiers = Vec::new();
    let mut prices = Vec::new();
    let mut positions = Vec::new();
    for (position, kind) in (0i32..).zip(types) {
        for price in &kind.prices {
            names.push(kind.name.trim().to_owned());
            tiers.push(price.tier.clone());
            prices.push(price.price_cents);
            positions.push(position);
        }
    }
    sqlx::query!(
        "INSERT INTO ticket_prices (event_id, ticket_type, tier, price_cents, position) SELECT $1, * FROM UNNEST($2::text[], $3::text[], $4::int[], $5::int[])",
        event_id.as_uuid(),
        &names,
        &tiers,
        &prices,
        &positions,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The event's booking rules, checked on every hold.
pub(crate) struct EventRules {
    pub event_id: EventId,
    pub sale_opens_at: DateTime<Utc>,
    pub max_seats_per_order: i32,
    pub waiting_room_enabled: bool,
    pub published: bool,
    pub cancelled: bool,
}

impl From<&Event> for EventRules {
    fn from(e: &Event) -> Self {
        Self {
            event_id: e.event_id,
            sale_opens_at: e.sale_opens_at,
            max_seats_per_order: e.max_seats_per_order,
            waiting_room_enabled: e.waiting_room_enabled,
            published: e.published,
            cancelled: e.cancelled_at.is_some(),
        }
    }
}

impl EventRules {
    /// May `fan` hold seats of this event now?
    /// Before the public sale, a fan presenting a presale code may try (the
    /// hold checks the code); the waiting room admits to the sale running
    /// now, the presale's queue before the public sale's opening.
    pub fn check_can_hold(&self, fan: UserId, access: Access<'_>) -> Result<()> {
        if !self.published {
            return Err(EngineError::NotFound);
        }
        if self.cancelled {
            return Err(EngineError::EventCancelled);
        }
        let before_sale = self.sale_opens_at > Utc::now();
        let presale = before_sale && access.presale_code(self.event_id).is_some();
        let phase_now = if before_sale { frontrow_model::SalePhase::Presale } else { frontrow_model::SalePhase::Public };
        if self.waiting_room_enabled && access.admits(self.event_id, fan) != Some(phase_now) {
            return Err(EngineError::NotAdmitted);
        }
        if before_sale && !presale {
            return Err(EngineError::SaleNotOpen);
        }
        Ok(())
    }
}

impl Engine {
    /// Creates an event, seated from its own `sections` or from a saved
    /// layout (`layout_id`).
    pub async fn create_event(&self, new: &NewEvent, created_by: Option<UserId>) -> Result<CreatedEvent> {
        let mut new = new.clone();
        match (new.layout_id, new.sections.is_empty()) {
            (Some(_), false) => return Err(EngineError::invalid("give either sections or layout_id, not both")),
            (Some(layout_id), true) => {
                let layout = self.layout(layout_id).await.map_err(|e| match e {
                    EngineError::NotFound => EngineError::NoSuch("no such layout_id".into()),
                    other => other,
                })?;
                new.sections = layout.sections;
                new.stage = new.stage.or(layout.stage);
            }
            (None, _) => {}
        }
        let seats_total = validate_new_event(&new)?;
        let event_id = EventId::from(Uuid::new_v4());
        let mut tx = crate::db::begin(self.pool()).await?;
        sqlx::query!(
            r#"INSERT INTO events (event_id, name, kind, venue, starts_at, sale_opens_at, hold_ttl_seconds,
                                   max_seats_per_order, waiting_room_enabled, published, created_by, stage,
                                   city, performers, doors_at, address, notes,
                                   cancel_until_hours, cancel_keep_percent, cancel_fee_cents)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"#,
            event_id.as_uuid(),
            new.name.trim(),
            new.kind.trim(),
            new.venue.trim(),
            new.starts_at as DateTime<Utc>,
            new.sale_opens_at as DateTime<Utc>,
            new.hold_ttl_seconds,
            new.max_seats_per_order,
            new.waiting_room_enabled,
            new.published,
            created_by.map(|id| id.as_uuid()),
            stage_json(new.stage.as_ref())?,
            new.city.trim(),
            &trimmed(&new.performers),
            new.doors_at as Option<DateTime<Utc>>,
            new.address.trim(),
            new.notes.trim(),
            new.refund_policy.cancel_until_hours,
            new.refund_policy.keep_percent,
            new.refund_policy.fee_cents,
        )
        .execute(&mut *tx)
        .await?;
        insert_sections(&mut tx, event_id, &new.sections).await?;
        let tier_names: Vec<String> = new.tiers.iter().map(|t| t.tier.clone()).collect();
        let tier_prices: Vec<i32> = new.tiers.iter().map(|t| t.price_cents).collect();
        sqlx::query!(
            "INSERT INTO price_tiers (event_id, tier, price_cents) SELECT $1, * FROM UNNEST($2::text[], $3::int[])",
            event_id.as_uuid(),
            &tier_names,
            &tier_prices,
        )
        .execute(&mut *tx)
        .await?;
        store_ticket_types(&mut tx, event_id, &new.ticket_types).await?;

        let plan = plan_seats(&new.sections);
        let price_of = |tier: &str| new.tiers.iter().find(|t| t.tier == tier).map_or(0, |t| t.price_cents);
        let ids: Vec<&str> = plan.iter().map(|s| s.seat_id.as_str()).collect();
        let sections: Vec<&str> = plan.iter().map(|s| s.section.as_str()).collect();
        let rows: Vec<&str> = plan.iter().map(|s| s.row.as_str()).collect();
        let numbers: Vec<i32> = plan.iter().map(|s| s.number).collect();
        let tiers: Vec<&str> = plan.iter().map(|s| s.tier.as_str()).collect();
        let prices: Vec<i32> = plan.iter().map(|s| price_of(&s.tier)).collect();
        let kinds: Vec<SeatKind> = plan.iter().map(|s| s.kind).collect();
        let aisles: Vec<bool> = plan.iter().map(|s| s.aisle_before).collect();
        sqlx::query!(
            r#"INSERT INTO seats (event_id, seat_id, section, row_label, number, position, tier, price_cents, kind, aisle_before)
               SELECT $1, s.id, s.section, s.row_label, s.number, s.ord, s.tier, s.price, s.kind, s.aisle
               FROM UNNEST($2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::int[], $8::seat_kind[], $9::bool[])
                    WITH ORDINALITY AS s(id, section, row_label, number, tier, price, kind, aisle, ord)"#,
            event_id.as_uuid(),
            &ids as &[&str],
            &sections as &[&str],
            &rows as &[&str],
            &numbers,
            &tiers as &[&str],
            &prices,
            &kinds as &[SeatKind],
            &aisles,
        )
        .execute(&mut *tx)
        .await?;
        if let Some(actor) = created_by {
            changelog::record(&mut tx, Some(event_id), actor, "event_created", &[], &format!("{} seats", seats_total)).await?;
        }
        tx.commit().await?;
        // The planner's statistics learn of the new seats now, not at
        // autovacuum's next pass: until then it takes a new event for a few
        // rows and scans all its seats for each batch of holds (an on-sale
        // soon after the event is made ran at a fifth of its speed). The
        // event is made either way.
        if let Err(e) = sqlx::query!("ANALYZE seats").execute(self.pool()).await {
            tracing::warn!(error = %e, "could not refresh the seats table's statistics");
        }
        // Other instances hear of it through the events trigger.
        self.board().forget_published_events();
        Ok(CreatedEvent { event_id: event_id, seats_total })
    }

    /// Changes an event's facts or rules (not a cancelled one); every
    /// instance re-reads it.
    pub async fn update_event(&self, actor: UserId, event_id: EventId, changes: &EventChanges) -> Result<Event> {
        if let Some(name) = &changes.name {
            check_text("name", name, MAX_TEXT_LEN)?;
        }
        if let Some(venue) = &changes.venue {
            check_text("venue", venue, MAX_TEXT_LEN)?;
        }
        if let Some(kind) = &changes.kind {
            check_text("kind", kind, 50)?;
        }
        check_details(changes.city.as_deref(), changes.performers.as_deref(), changes.address.as_deref(), changes.notes.as_deref())?;
        check_dates(changes.starts_at, changes.sale_opens_at, changes.doors_at)?;
        if let Some(policy) = &changes.refund_policy {
            check_refund_policy(policy)?;
        }
        let performers = changes.performers.as_deref().map(trimmed);
        let current = self.event(event_id).await?;
        if current.cancelled_at.is_some() {
            return Err(EngineError::EventCancelled);
        }
        check_doors(changes.doors_at.or(current.details.doors_at), changes.starts_at.unwrap_or(current.starts_at))?;
        // The same types again (a form saved as it was) change nothing.
        let new_types = changes.ticket_types.as_ref().filter(|types| **types != current.ticket_types);
        if let Some(types) = new_types {
            // Fans holding seats were shown the prices: they stay as they
            // are once the sale has opened.
            if current.sale_opens_at <= Utc::now() {
                return Err(EngineError::invalid("ticket types and their prices cannot change once the sale has opened"));
            }
            check_ticket_types(types, &current.tiers)?;
        }
        check_rules(
            changes.hold_ttl_seconds.unwrap_or(current.hold_ttl_seconds),
            changes.max_seats_per_order.unwrap_or(current.max_seats_per_order),
        )?;
        let mut what = Vec::new();
        if changes.name.is_some() {
            what.push("name")
        }
        if changes.venue.is_some() {
            what.push("venue")
        }
        if changes.kind.is_some() {
            what.push("kind")
        }
        if changes.city.is_some() {
            what.push("city")
        }
        if changes.performers.is_some() {
            what.push("performers")
        }
        if changes.doors_at.is_some() {
            what.push("doors_at")
        }
        if changes.address.is_some() {
            what.push("address")
        }
        if changes.notes.is_some() {
            what.push("notes")
        }
        if changes.starts_at.is_some() {
            what.push("starts_at")
        }
        if changes.sale_opens_at.is_some() {
            what.push("sale_opens_at")
        }
        if changes.hold_ttl_seconds.is_some() {
            what.push("hold_ttl_seconds")
        }
        if changes.max_seats_per_order.is_some() {
            what.push("max_seats_per_order")
        }
        if changes.refund_policy.is_some() {
            what.push("refund_policy")
        }
        if new_types.is_some() {
            what.push("ticket_types")
        }
        let kind = match changes.published {
            Some(true) if !current.published => "event_published",
            Some(false) if current.published => "event_unpublished",
            _ => "event_changed",
        };
        let mut tx = crate::db::begin(self.pool()).await?;
        let updated = sqlx::query!(
            r#"UPDATE events SET name = coalesce($2, name), venue = coalesce($3, venue), starts_at = coalesce($4, starts_at),
                      sale_opens_at = coalesce($5, sale_opens_at), hold_ttl_seconds = coalesce($6, hold_ttl_seconds),
                      max_seats_per_order = coalesce($7, max_seats_per_order), published = coalesce($8, published),
                      kind = coalesce($9, kind), city = coalesce($10, city), performers = coalesce($11, performers),
                      doors_at = coalesce($12, doors_at), address = coalesce($13, address), notes = coalesce($14, notes),
                      cancel_until_hours = CASE WHEN $15 THEN $16 ELSE cancel_until_hours END,
                      cancel_keep_percent = coalesce($17, cancel_keep_percent), cancel_fee_cents = coalesce($18, cancel_fee_cents)
                WHERE event_id = $1 AND cancelled_at IS NULL"#,
            event_id.as_uuid(),
            changes.name.as_deref().map(str::trim),
            changes.venue.as_deref().map(str::trim),
            changes.starts_at as Option<DateTime<Utc>>,
            changes.sale_opens_at as Option<DateTime<Utc>>,
            changes.hold_ttl_seconds,
            changes.max_seats_per_order,
            changes.published,
            changes.kind.as_deref().map(str::trim),
            changes.city.as_deref().map(str::trim),
            performers.as_deref(),
            changes.doors_at as Option<DateTime<Utc>>,
            changes.address.as_deref().map(str::trim),
            changes.notes.as_deref().map(str::trim),
            changes.refund_policy.is_some(),
            changes.refund_policy.and_then(|p| p.cancel_until_hours),
            changes.refund_policy.map(|p| p.keep_percent),
            changes.refund_policy.map(|p| p.fee_cents),
        )
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            return Err(EngineError::EventCancelled);
        }
        if let Some(types) = new_types {
            store_ticket_types(&mut tx, event_id, types).await?;
        }
        changelog::record(&mut tx, Some(event_id), actor, kind, &[], &what.join(", ")).await?;
        crate::notices::announce_event_change(&mut tx, event_id).await?;
        tx.commit().await?;
        self.board().refresh_facts(event_id).await?;
        self.event(event_id).await
    }

    /// The catalogue fans see: published events, soonest first, with their
    /// seat counts from this instance's seat maps.
    pub async fn events(&self) -> Result<Vec<EventSummary>> {
        let ids = self.board().published_events().await?;
        let mut list = Vec::with_capacity(ids.len());
        for &id in ids.iter() {
            list.push(self.board().snapshot(id).await?.summary());
        }
        Ok(list)
    }

    /// A page of the catalogue that matches `query`, from memory.
    pub async fn search_events(&self, query: &EventSearch) -> Result<EventPage> {
        search(self.events().await?, query)
    }

    /// Every event, as the box office lists them, with live seat counts.
    pub async fn staff_events(&self) -> Result<Vec<StaffEventLine>> {
        let ids = sqlx::query_scalar!("SELECT event_id FROM events ORDER BY starts_at, name").fetch_all(self.pool()).await?;
        let mut list = Vec::with_capacity(ids.len());
        for id in ids {
            let board = self.board().snapshot(id.into()).await?;
            let summary = board.summary();
            list.push(StaffEventLine {
                event_id: id.into(),
                name: board.event.name.clone(),
                venue: board.event.venue.clone(),
                starts_at: board.event.starts_at,
                status: summary.status,
                published: board.event.published,
                seats_total: summary.seats_total,
                seats_available: board.count(SeatStatus::Available),
                seats_held: board.count(SeatStatus::Held),
                seats_sold: board.count(SeatStatus::Sold),
                seats_blocked: board.count(SeatStatus::Blocked),
            });
        }
        Ok(list)
    }

    /// The event itself (facts, rules and tiers), read from the database.
    pub async fn event(&self, event_id: EventId) -> Result<Event> {
        load_event(self.pool(), event_id).await
    }

    pub(crate) async fn rules(&self, event_id: EventId) -> Result<EventRules> {
        let r = sqlx::query!(
            r#"SELECT sale_opens_at AS "sale_opens_at: DateTime<Utc>", max_seats_per_order,
                      waiting_room_enabled, published, cancelled_at IS NOT NULL AS "cancelled!"
               FROM events WHERE event_id = $1"#,
            event_id.as_uuid()
        )
        .fetch_optional(self.pool())
        .await?
        .ok_or(EngineError::NotFound)?;
        Ok(EventRules {
            event_id,
            sale_opens_at: r.sale_opens_at,
            max_seats_per_order: r.max_seats_per_order,
            waiting_room_enabled: r.waiting_room_enabled,
            published: r.published,
            cancelled: r.cancelled,
        })
    }

    pub async fn find_event_by_name(&self, name: &str) -> Result<Option<EventId>> {
        Ok(sqlx::query_scalar!("SELECT event_id FROM events WHERE name = $1 ORDER BY created_at LIMIT 1", name)
            .fetch_optional(self.pool())
            .await?
            .map(EventId::from))
    }
}

/// Reads an event (the one query every view of an event starts from).
pub(crate) async fn load_event(pool: &sqlx::PgPool, event_id: EventId) -> Result<Event> {
    let e = sqlx::query!(
        r#"SELECT event_id, name, kind, venue, starts_at AS "starts_at: DateTime<Utc>", sale_opens_at AS "sale_opens_at: DateTime<Utc>",
                  hold_ttl_seconds, max_seats_per_order, waiting_room_enabled, published, queue_requires_verified_email,
                  cancelled_at AS "cancelled_at: DateTime<Utc>", city, performers, doors_at AS "doors_at: DateTime<Utc>", address, notes,
                  cancel_until_hours, cancel_keep_percent, cancel_fee_cents
           FROM events WHERE event_id = $1"#,
        event_id.as_uuid()
    )
    .fetch_optional(pool)
    .await?
    .ok_or(EngineError::NotFound)?;
    let tiers = sqlx::query_as!(
        TierPrice,
        "SELECT tier, price_cents FROM price_tiers WHERE event_id = $1 ORDER BY price_cents DESC, tier",
        event_id.as_uuid()
    )
    .fetch_all(pool)
    .await?;
    let priced = sqlx::query!(
        "SELECT ticket_type, tier, price_cents FROM ticket_prices WHERE event_id = $1 ORDER BY position, price_cents DESC, tier",
        event_id.as_uuid()
    )
    .fetch_all(pool)
    .await?;
    // Presales fans may still meet (withdrawn or ended ones are not shown).
    let presales = sqlx::query_as!(
        frontrow_model::Presale,
        r#"SELECT DISTINCT label AS "label!", starts_at AS "starts_at!: DateTime<Utc>", ends_at AS "ends_at!: DateTime<Utc>"
             FROM access_code_batches
            WHERE event_id = $1 AND revoked_at IS NULL AND ends_at > now()
            ORDER BY 2, 3, 1"#,
        event_id.as_uuid()
    )
    .fetch_all(pool)
    .await?;
    let mut ticket_types: Vec<TicketType> = Vec::new();
    for p in priced {
        let price = TierPrice { tier: p.tier, price_cents: p.price_cents };
        match ticket_types.last_mut() {
            Some(kind) if kind.name == p.ticket_type => kind.prices.push(price),
            _ => ticket_types.push(TicketType { name: p.ticket_type, prices: vec![price] }),
        }
    }
    Ok(Event {
        event_id: e.event_id.into(),
        name: e.name,
        kind: e.kind,
        venue: e.venue,
        details: EventDetails { city: e.city, performers: e.performers, doors_at: e.doors_at, address: e.address, notes: e.notes },
        starts_at: e.starts_at,
        sale_opens_at: e.sale_opens_at,
        hold_ttl_seconds: e.hold_ttl_seconds,
        max_seats_per_order: e.max_seats_per_order,
        waiting_room_enabled: e.waiting_room_enabled,
        queue_requires_verified_email: e.queue_requires_verified_email,
        published: e.published,
        cancelled_at: e.cancelled_at,
        refund_policy: RefundPolicy { cancel_until_hours: e.cancel_until_hours, keep_percent: e.cancel_keep_percent, fee_cents: e.cancel_fee_cents },
        tiers,
        ticket_types,
        presales,
    })
}

/// An event's catalogue entry, given how many seats it has and how many are free.
pub fn summary(event: Event, seats_total: i64, seats_available: i64, seats_held: i64, now: DateTime<Utc>) -> EventSummary {
    EventSummary {
        status: EventStatus::of(&event, seats_available, seats_held, now),
        price_min_cents: event.tiers.iter().map(|t| t.price_cents).min().unwrap_or(0),
        price_max_cents: event.tiers.iter().map(|t| t.price_cents).max().unwrap_or(0),
        event,
        seats_total,
        seats_available,
        seats_held,
    }
}
