//! An event's seating plan as the engine keeps it in memory: its sections
//! (seats in rows, or standing areas) in layout order, where each sits on
//! the map, and every seat with its price, kind and place in its row.
//! Fixed once the event exists; the seats' states live apart, in the board.

use std::collections::HashMap;
use std::ops::Range;

use frontrow_model::{Placement, SeatKind, SectionKind, Stage};

/// Where a seat is, what it costs: fixed once the event exists.
#[derive(Debug, Clone)]
pub struct LayoutSeat {
    pub seat_id: String,
    pub number: i32,
    /// Into the event's tiers.
    pub tier_index: usize,
    pub price_cents: i32,
    pub kind: SeatKind,
    /// An aisle runs between this seat and the one before it in the row.
    pub aisle_before: bool,
}

#[derive(Debug, Clone)]
pub struct LayoutRow {
    pub label: String,
    /// Indexes into [`EventLayout::seats`], in position order.
    pub seats: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct LayoutSection {
    pub name: String,
    pub kind: SectionKind,
    /// Where it sits; `None`: the default grid.
    pub placement: Option<Placement>,
    /// A standing area's outline (width, depth).
    pub area: Option<(f64, f64)>,
    pub rows: Vec<LayoutRow>,
    /// Its seats (a standing area: its places): a run of [`EventLayout::seats`].
    pub seats: Range<usize>,
}

impl LayoutSection {
    pub fn is_standing(&self) -> bool {
        self.kind == SectionKind::Standing
    }
}

/// How a section is drawn, given apart from its seats.
#[derive(Debug, Clone, Default)]
pub struct SectionShape {
    pub kind: SectionKind,
    pub placement: Option<Placement>,
    pub area: Option<(f64, f64)>,
}

/// An event's seating plan (its facts, which staff may change, live apart).
#[derive(Debug, Clone, Default)]
pub struct EventLayout {
    pub seats: Vec<LayoutSeat>,
    pub sections: Vec<LayoutSection>,
    /// What the sections face; `None`: a stage along the top.
    pub stage: Option<Stage>,
    index: HashMap<String, usize>,
    /// Each seat's section and row, as indexes.
    places: Vec<(u32, u32)>,
}

impl EventLayout {
    /// Builds a layout from seats listed in layout order with their section
    /// and row names; `shapes` says how each section is drawn.
    pub fn from_seats<'a>(
        listed: impl IntoIterator<Item = (&'a str, &'a str, LayoutSeat)>,
        shapes: &HashMap<String, SectionShape>,
        stage: Option<Stage>,
    ) -> Self {
        let mut layout = EventLayout { stage, ..Default::default() };
        for (section, row, seat) in listed {
            let i = layout.seats.len();
            // Seats come in layout order, so a section or row starts where
            // its name changes.
            if layout.sections.last().is_none_or(|s| s.name != section) {
                let shape = shapes.get(section).cloned().unwrap_or_default();
                layout.sections.push(LayoutSection {
                    name: section.to_owned(),
                    kind: shape.kind,
                    placement: shape.placement,
                    area: shape.area,
                    rows: Vec::new(),
                    seats: i..i,
                });
            }
            let s = layout.sections.len() - 1;
            let current = &mut layout.sections[s];
            if current.rows.last().is_none_or(|r| r.label != row) {
                current.rows.push(LayoutRow { label: row.to_owned(), seats: Vec::new() });
            }
            let r = current.rows.len() - 1;
            current.rows[r].seats.push(i);
            current.seats.end = i + 1;
            layout.index.insert(seat.seat_id.clone(), i);
            layout.places.push((s as u32, r as u32));
            layout.seats.push(seat);
        }
        layout
    }

    pub fn seat_index(&self, seat_id: &str) -> Option<usize> {
        self.index.get(seat_id).copied()
    }

    pub fn section_index(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name)
    }

    /// The section a seat is in, as an index.
    pub fn section_of(&self, index: usize) -> usize {
        self.places[index].0 as usize
    }

    /// "Section B, row 4, seat 12" (a standing place: "Standing area FLOOR,
    /// place 17"): how a person reads a seat out.
    pub fn seat_label(&self, index: usize) -> String {
        let (section, row) = self.position_of(index);
        let seat = &self.seats[index];
        if seat.kind == SeatKind::Standing {
            format!("Standing area {section}, place {}", seat.number)
        } else {
            format!("Section {section}, row {row}, seat {}", seat.number)
        }
    }

    /// The section and row a seat is in.
    pub fn position_of(&self, index: usize) -> (&str, &str) {
        let (s, r) = self.places[index];
        let section = &self.sections[s as usize];
        (&section.name, &section.rows[r as usize].label)
    }

    pub fn has_standing(&self) -> bool {
        self.sections.iter().any(LayoutSection::is_standing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(id: &str, number: i32, kind: SeatKind) -> LayoutSeat {
        LayoutSeat { seat_id: id.into(), number, tier_index: 0, price_cents: 100, kind, aisle_before: false }
    }

    #[test]
    fn sections_and_rows_follow_the_listing_and_know_their_seats() {
        let listed = vec![
            ("A", "1", seat("A-1-1", 1, SeatKind::Standard)),
            ("A", "1", seat("A-1-2", 2, SeatKind::Standard)),
            ("A", "2", seat("A-2-1", 1, SeatKind::Standard)),
            ("FLOOR", "GA", seat("FLOOR-GA-1", 1, SeatKind::Standing)),
        ];
        let shapes = HashMap::from([("FLOOR".to_owned(), SectionShape { kind: SectionKind::Standing, placement: None, area: Some((100.0, 50.0)) })]);
        let layout = EventLayout::from_seats(listed, &shapes, None);
        assert_eq!(layout.sections.len(), 2);
        assert_eq!(layout.sections[0].seats, 0..3);
        assert_eq!(layout.sections[0].rows[1].seats, vec![2]);
        assert_eq!(layout.sections[1].seats, 3..4);
        assert!(layout.sections[1].is_standing() && layout.has_standing());
        assert_eq!(layout.section_of(3), 1);
        assert_eq!(layout.seat_label(2), "Section A, row 2, seat 1");
        assert_eq!(layout.seat_label(3), "Standing area FLOOR, place 1");
        assert_eq!(layout.seat_index("A-1-2"), Some(1));
    }
}
