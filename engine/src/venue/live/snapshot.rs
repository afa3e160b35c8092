//! A consistent copy of an event's seat map at one moment, and what every
//! view of it reads: the summary, the detail with its sections, the seat
//! list.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use frontrow_model::{Event, EventDetail, EventSummary, SeatMap, SeatStatus, SeatView, SectionSummary};

use crate::venue::seating::EventLayout;

/// A consistent copy of an event's seat map at one moment.
#[derive(Debug, Clone)]
pub struct BoardSnapshot {
    pub event: Arc<Event>,
    pub layout: Arc<EventLayout>,
    /// Aligned with `layout.seats`; as staff see them (fans see blocked
    /// seats as sold). Shared by the snapshots taken between two changes.
    pub statuses: Arc<[SeatStatus]>,
    pub version: i64,
    /// Where a viewer of this snapshot resumes the live feed from.
    pub epoch: u32,
    pub seq: u64,
    /// Names what fans see in this snapshot: equal revisions, equal maps.
    pub revision: String,
    pub taken_at: DateTime<Utc>,
}

impl BoardSnapshot {
    pub fn seats_available(&self) -> i64 {
        self.count(SeatStatus::Available)
    }

    /// How many seats are in this state, as staff count them.
    pub fn count(&self, status: SeatStatus) -> i64 {
        self.statuses.iter().filter(|s| **s == status).count() as i64
    }

    pub fn summary(&self) -> EventSummary {
        let (total, available, held) = (self.layout.seats.len() as i64, self.seats_available(), self.count(SeatStatus::Held));
        crate::venue::catalogue::summary((*self.event).clone(), total, available, held, self.taken_at)
    }

    pub fn detail(&self) -> EventDetail {
        EventDetail { summary: self.summary(), sections: (0..self.layout.sections.len()).map(|s| self.section_summary(s)).collect() }
    }

    /// A section and how much of it is left, as fans see it.
    pub fn section_summary(&self, section: usize) -> SectionSummary {
        let s = &self.layout.sections[section];
        let seats = &self.layout.seats[s.seats.clone()];
        SectionSummary {
            section: s.name.clone(),
            kind: s.kind,
            rows: s.rows.len() as i64,
            seats: seats.len() as i64,
            seats_available: self.available_in(section),
            price_min_cents: seats.iter().map(|seat| seat.price_cents).min().unwrap_or(0),
        }
    }

    /// How many seats (or places) of a section fans can take now.
    pub fn available_in(&self, section: usize) -> i64 {
        let range = self.layout.sections[section].seats.clone();
        self.statuses[range].iter().filter(|s| **s == SeatStatus::Available).count() as i64
    }

    /// The tiers with no seat fans can take now: those a fan may join the
    /// waiting list for.
    pub fn tiers_sold_out(&self) -> Vec<String> {
        let mut free = vec![false; self.event.tiers.len()];
        for (seat, status) in self.layout.seats.iter().zip(self.statuses.iter()) {
            if *status == SeatStatus::Available {
                if let Some(f) = free.get_mut(seat.tier_index) {
                    *f = true;
                }
            }
        }
        self.event.tiers.iter().zip(free).filter(|(_, f)| !f).map(|(t, _)| t.tier.clone()).collect()
    }

    /// The contract's seat list, optionally one section only, as fans see
    /// it (`for_staff`: blocked seats as blocked).
    pub fn seat_map(&self, section: Option<&str>, for_staff: bool) -> SeatMap {
        let l = &self.layout;
        let mut seats = Vec::new();
        for s in l.sections.iter().filter(|s| section.is_none_or(|name| name == s.name)) {
            for row in &s.rows {
                for &i in &row.seats {
                    let seat = &l.seats[i];
                    let tier = &self.event.tiers[seat.tier_index];
                    seats.push(SeatView {
                        seat_id: seat.seat_id.clone(),
                        section: s.name.clone(),
                        row: row.label.clone(),
                        number: seat.number,
                        tier: tier.tier.clone(),
                        price_cents: seat.price_cents,
                        status: if for_staff { self.statuses[i] } else { self.statuses[i].for_fans() },
                        kind: seat.kind,
                    });
                }
            }
        }
        SeatMap { event_id: self.event.event_id, version: self.version, seats }
    }
}
