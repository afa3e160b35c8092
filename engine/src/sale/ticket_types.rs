//! Ticket types at checkout: the buyer names a type for each seat (adult,
//! child, ...); the engine checks each is sold in its seat's tier and gives
//! the others the first type sold there. Prices are never the buyer's: the
//! checkout prices the choice from the event's list in the database.

use frontrow_model::{EventId, TicketChoices, TicketType};

use crate::error::{EngineError, Result};
use crate::Engine;

impl Engine {
    /// The ticket type of each of `seat_ids` (seats of one hold), as
    /// `asked` or by default; none for an event without types.
    pub(crate) async fn choose_ticket_types(&self, event_id: EventId, seat_ids: &[String], asked: &TicketChoices) -> Result<Option<TicketChoices>> {
        // From this instance's board (no query, no copy of the seats' states).
        let live = self.board().event(event_id).await?;
        let event = match live.facts() {
            Some(event) => event,
            None => std::sync::Arc::new(self.event(event_id).await?),
        };
        if event.ticket_types.is_empty() {
            if asked.is_empty() {
                return Ok(None);
            }
            return Err(EngineError::invalid("this event has no ticket types: leave ticket_types out"));
        }
        let tiers = live.tiers_of(seat_ids);
        let tier_of = |seat: &str| seat_ids.iter().position(|s| s == seat).and_then(|i| tiers.get(i)).filter(|t| !t.is_empty()).cloned();
        choose(&event.ticket_types, tier_of, seat_ids, asked).map(Some)
    }
}

/// Each seat's type: the one asked for, if it is sold in the seat's tier,
/// else the first type sold there.
pub fn choose(types: &[TicketType], tier_of: impl Fn(&str) -> Option<String>, seat_ids: &[String], asked: &TicketChoices) -> Result<TicketChoices> {
    if let Some(stranger) = asked.keys().find(|seat| !seat_ids.contains(seat)) {
        return Err(EngineError::invalid(format!("ticket_types names seat {stranger}, which is not part of this hold")));
    }
    let mut chosen = TicketChoices::new();
    for seat in seat_ids {
        let tier = tier_of(seat).ok_or_else(|| EngineError::Internal(format!("seat {seat} of a hold is not on the event's map")))?;
        let name = match asked.get(seat) {
            Some(name) => {
                let kind =
                    types.iter().find(|t| t.name == *name).ok_or_else(|| EngineError::invalid(format!("this event has no ticket type {name:?}")))?;
                if kind.price_in(&tier).is_none() {
                    return Err(EngineError::invalid(format!("{name} tickets are not sold in tier {tier} (seat {seat})")));
                }
                name.clone()
            }
            None => types
                .iter()
                .find(|t| t.price_in(&tier).is_some())
                .map(|t| t.name.clone())
                .ok_or_else(|| EngineError::invalid(format!("no ticket type is sold in tier {tier} (seat {seat})")))?,
        };
        chosen.insert(seat.clone(), name);
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontrow_model::TierPrice;

    fn kind(name: &str, prices: &[(&str, i32)]) -> TicketType {
        TicketType { name: name.into(), prices: prices.iter().map(|(tier, cents)| TierPrice { tier: (*tier).into(), price_cents: *cents }).collect() }
    }

    #[test]
    fn seats_get_the_type_asked_for_where_it_is_sold_and_the_first_sold_otherwise() {
        let types = [kind("Adult", &[("Front", 5000), ("Back", 2500)]), kind("Child", &[("Back", 1200)])];
        let tier_of = |seat: &str| Some(if seat.starts_with("A-1") { "Front" } else { "Back" }.to_owned());
        let seats = vec!["A-1-1".to_owned(), "A-2-1".to_owned(), "A-2-2".to_owned()];
        let asked = TicketChoices::from([("A-2-2".to_owned(), "Child".to_owned())]);
        let chosen = choose(&types, tier_of, &seats, &asked).expect("chosen");
        assert_eq!(chosen.get("A-1-1").map(String::as_str), Some("Adult"));
        assert_eq!(chosen.get("A-2-1").map(String::as_str), Some("Adult"));
        assert_eq!(chosen.get("A-2-2").map(String::as_str), Some("Child"));

        let front_child = TicketChoices::from([("A-1-1".to_owned(), "Child".to_owned())]);
        let refused = choose(&types, tier_of, &seats, &front_child).unwrap_err().to_string();
        assert!(refused.contains("Child tickets are not sold in tier Front"), "{refused}");
        let unknown = TicketChoices::from([("A-1-1".to_owned(), "Pensioner".to_owned())]);
        assert!(choose(&types, tier_of, &seats, &unknown).is_err());
        let stranger = TicketChoices::from([("B-1-1".to_owned(), "Adult".to_owned())]);
        assert!(choose(&types, tier_of, &seats, &stranger).is_err());
    }
}
