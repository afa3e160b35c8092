//! The rules an event's own fields follow, each checked before anything is
//! written: texts, details, doors, the refund policy, ticket types, and the
//! hold rules; and a new event's whole check.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use frontrow_model::{NewEvent, RefundPolicy, TicketType, TierPrice};

use super::plan::{validate_sections, validate_stage};
use super::MAX_TEXT_LEN;
use crate::error::{EngineError, Result};

/// A price tier's name, wherever one is given (as the API's schema says,
/// `frontrow_model::event::tier_name`).
pub(crate) fn check_tier(value: &str) -> Result<()> {
    check_text("tier", value, 32)
}

pub(crate) fn check_text(field: &str, value: &str, max: usize) -> Result<()> {
    let len = value.trim().chars().count();
    if len == 0 || len > max || value.chars().any(char::is_control) {
        return Err(EngineError::invalid(format!("{field} must be 1 to {max} characters, none of them control characters")));
    }
    Ok(())
}

/// Optional text: empty, or up to `max` characters with no control
/// characters (line breaks allowed where `lines`).
fn check_optional_text(field: &str, value: &str, max: usize, lines: bool) -> Result<()> {
    let control = |c: char| c.is_control() && !(lines && (c == '\n' || c == '\r'));
    if value.chars().count() > max || value.chars().any(control) {
        return Err(EngineError::invalid(format!("{field} must be at most {max} characters, none of them control characters")));
    }
    Ok(())
}

/// Checks what a fan searches by and reads (all of it optional).
pub(super) fn check_details(city: Option<&str>, performers: Option<&[String]>, address: Option<&str>, notes: Option<&str>) -> Result<()> {
    check_optional_text("city", city.unwrap_or_default(), 100, false)?;
    check_optional_text("address", address.unwrap_or_default(), MAX_TEXT_LEN, false)?;
    check_optional_text("notes", notes.unwrap_or_default(), 2000, true)?;
    if let Some(performers) = performers {
        if performers.len() > 20 {
            return Err(EngineError::invalid("performers must list at most 20 names"));
        }
        for performer in performers {
            check_text("performer", performer, 100)?;
        }
    }
    Ok(())
}

/// An event's dates, those given, each one the API's `date-time` can write
/// (`frontrow_model::check_date`).
pub(super) fn check_dates(starts_at: Option<DateTime<Utc>>, sale_opens_at: Option<DateTime<Utc>>, doors_at: Option<DateTime<Utc>>) -> Result<()> {
    for (field, when) in [("starts_at", starts_at), ("sale_opens_at", sale_opens_at), ("doors_at", doors_at)] {
        if let Some(when) = when {
            frontrow_model::check_date(field, when)?;
        }
    }
    Ok(())
}

/// Doors open before the show starts, not after.
pub(super) fn check_doors(doors_at: Option<DateTime<Utc>>, starts_at: DateTime<Utc>) -> Result<()> {
    if doors_at.is_some_and(|doors| doors > starts_at) {
        return Err(EngineError::invalid("doors_at must not be after starts_at"));
    }
    Ok(())
}

/// Names as staff typed them, trimmed (each was checked not blank).
pub(super) fn trimmed(names: &[String]) -> Vec<String> {
    names.iter().map(|n| n.trim().to_owned()).collect()
}

/// The terms fans cancel on, within the bounds the API states.
pub(super) fn check_refund_policy(policy: &RefundPolicy) -> Result<()> {
    if policy.cancel_until_hours.is_some_and(|hours| !(0..=8760).contains(&hours)) {
        return Err(EngineError::invalid("refund_policy.cancel_until_hours must be 0 to 8760 (a year), or null"));
    }
    if !(0..=100).contains(&policy.keep_percent) {
        return Err(EngineError::invalid("refund_policy.keep_percent must be 0 to 100"));
    }
    if !(0..=10_000_000).contains(&policy.fee_cents) {
        return Err(EngineError::invalid("refund_policy.fee_cents must be 0 to 10000000"));
    }
    Ok(())
}

/// Ticket types: up to 10, named once each, each priced in some of the
/// event's tiers (each tier once), every tier sold by at least one, and the
/// first sold in a tier (a seat's type unless the buyer chooses) at the
/// tier's own price, so a hold's total is what its seats cost by default.
pub(super) fn check_ticket_types(types: &[TicketType], tiers: &[TierPrice]) -> Result<()> {
    if types.is_empty() {
        return Ok(());
    }
    if types.len() > 10 {
        return Err(EngineError::invalid("ticket_types must list at most 10 types"));
    }
    let mut names = HashSet::new();
    for kind in types {
        check_text("ticket type name", &kind.name, 32)?;
        if kind.name.contains(':') {
            return Err(EngineError::invalid("a ticket type's name may not contain ':'"));
        }
        if !names.insert(kind.name.trim().to_lowercase()) {
            return Err(EngineError::invalid(format!("ticket type {:?} is listed twice", kind.name)));
        }
        if kind.prices.is_empty() || kind.prices.len() > 20 {
            return Err(EngineError::invalid(format!("ticket type {:?} needs a price in 1 to 20 tiers", kind.name)));
        }
        let mut priced = HashSet::new();
        for price in &kind.prices {
            if !tiers.iter().any(|t| t.tier == price.tier) {
                return Err(EngineError::invalid(format!(
                    "ticket type {:?} is priced in tier {:?}, which the event does not have",
                    kind.name, price.tier
                )));
            }
            if !priced.insert(price.tier.as_str()) {
                return Err(EngineError::invalid(format!("ticket type {:?} prices tier {:?} twice", kind.name, price.tier)));
            }
            if !(0..=10_000_000).contains(&price.price_cents) {
                return Err(EngineError::invalid("price_cents must be 0 to 10000000"));
            }
        }
    }
    for tier in tiers {
        match types.iter().find_map(|t| t.price_in(&tier.tier).map(|cents| (t, cents))) {
            None => {
                return Err(EngineError::invalid(format!("no ticket type is sold in tier {:?}: give at least one type a price there", tier.tier)))
            }
            Some((first, cents)) if cents != tier.price_cents => {
                return Err(EngineError::invalid(format!(
                    "{} is the first type sold in tier {:?}, so a seat's type unless the buyer chooses: its price there must be the tier's, {} cents",
                    first.name, tier.tier, tier.price_cents
                )));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

pub(super) fn check_rules(hold_ttl_seconds: i32, max_seats_per_order: i32) -> Result<()> {
    if !(1..=3600).contains(&hold_ttl_seconds) {
        return Err(EngineError::invalid("hold_ttl_seconds must be 1 to 3600"));
    }
    if !(1..=50).contains(&max_seats_per_order) {
        return Err(EngineError::invalid("max_seats_per_order must be 1 to 50"));
    }
    Ok(())
}

/// Checks a new event and counts its seats.
pub fn validate_new_event(new: &NewEvent) -> Result<i64> {
    check_text("name", &new.name, MAX_TEXT_LEN)?;
    check_text("kind", &new.kind, 50)?;
    check_text("venue", &new.venue, MAX_TEXT_LEN)?;
    check_details(Some(&new.city), Some(&new.performers), Some(&new.address), Some(&new.notes))?;
    check_dates(Some(new.starts_at), Some(new.sale_opens_at), new.doors_at)?;
    check_doors(new.doors_at, new.starts_at)?;
    check_refund_policy(&new.refund_policy)?;
    check_rules(new.hold_ttl_seconds, new.max_seats_per_order)?;
    if new.tiers.is_empty() || new.tiers.len() > 20 {
        return Err(EngineError::invalid("tiers must list 1 to 20 price tiers"));
    }
    let mut tiers = HashSet::new();
    for t in &new.tiers {
        check_tier(&t.tier)?;
        if !(0..=10_000_000).contains(&t.price_cents) {
            return Err(EngineError::invalid("price_cents must be 0 to 10000000"));
        }
        if !tiers.insert(t.tier.as_str()) {
            return Err(EngineError::invalid(format!("tier {:?} is listed twice", t.tier)));
        }
    }
    check_ticket_types(&new.ticket_types, &new.tiers)?;
    validate_stage(new.stage.as_ref())?;
    validate_sections(&new.sections, &tiers)
}
