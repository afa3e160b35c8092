//! A seating plan as staff describe it: checked (labels, rows, tiers,
//! placements, standing areas), listed seat by seat as it is stored, drawn
//! as a layout before any event exists, and its sections' shapes stored
//! with the event and read back.

use std::collections::{HashMap, HashSet};

use frontrow_model::{EventId, NewSection, Placement, SeatKind, SectionKind, Stage, TierPrice, STANDING_ROW};

use super::{MAX_LABEL_LEN, MAX_SEATS_PER_EVENT};
use crate::error::{EngineError, Result};
use crate::venue::seating::{EventLayout, LayoutSeat, SectionShape};

/// Section and row labels become part of seat ids (`SECTION-ROW-NUMBER`), so
/// they are restricted to letters and digits to keep ids unambiguous.
fn check_label(field: &str, value: &str) -> Result<()> {
    if value.is_empty() || value.len() > MAX_LABEL_LEN || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(EngineError::invalid(format!("{field} {value:?} must be 1 to {MAX_LABEL_LEN} letters or digits")));
    }
    Ok(())
}

/// Checks a seating plan against the tiers it may use; counts its seats
/// (a standing area's places among them).
pub fn validate_sections(sections: &[NewSection], tiers: &HashSet<&str>) -> Result<i64> {
    if sections.is_empty() || sections.len() > 200 {
        return Err(EngineError::invalid("sections must list 1 to 200 sections"));
    }
    let mut names = HashSet::new();
    let mut total: i64 = 0;
    for s in sections {
        check_label("section", &s.section)?;
        if !names.insert(s.section.as_str()) {
            return Err(EngineError::invalid(format!("section {:?} is listed twice", s.section)));
        }
        if let Some(problem) = s.placement.as_ref().and_then(Placement::problem) {
            return Err(EngineError::invalid(format!("section {:?}: {problem}", s.section)));
        }
        if let Some(area) = &s.standing {
            if !s.rows.is_empty() {
                return Err(EngineError::invalid(format!("section {:?} is a standing area: it has no rows", s.section)));
            }
            if let Some(problem) = area.problem() {
                return Err(EngineError::invalid(format!("section {:?}: {problem}", s.section)));
            }
            if !tiers.contains(area.tier.as_str()) {
                return Err(EngineError::invalid(format!("standing area {:?} uses unknown tier {:?}", s.section, area.tier)));
            }
            total += i64::from(area.capacity);
            continue;
        }
        if s.rows.is_empty() || s.rows.len() > 500 {
            return Err(EngineError::invalid(format!("section {:?} must have 1 to 500 rows (or be a standing area)", s.section)));
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
                // Each number once, so a list is never longer than its row.
                let mut seen = HashSet::new();
                if let Some(twice) = numbers.iter().find(|n| !seen.insert(**n)) {
                    return Err(EngineError::invalid(format!("{what} of row {:?} lists seat {twice} twice", r.row)));
                }
            }
            let companions: HashSet<i32> = r.companion.iter().copied().collect();
            if r.wheelchair.iter().any(|n| companions.contains(n)) {
                return Err(EngineError::invalid(format!("a seat of row {:?} cannot be both wheelchair and companion", r.row)));
            }
            total += i64::from(r.seats);
        }
    }
    if total > MAX_SEATS_PER_EVENT {
        return Err(EngineError::invalid(format!("an event may have at most {MAX_SEATS_PER_EVENT} seats and standing places")));
    }
    Ok(total)
}

/// Checks what the sections face, if given.
pub fn validate_stage(stage: Option<&Stage>) -> Result<()> {
    match stage.and_then(Stage::problem) {
        Some(problem) => Err(EngineError::invalid(problem)),
        None => Ok(()),
    }
}

/// One seat of a plan, as it is stored.
pub(crate) struct PlannedSeat {
    pub seat_id: String,
    pub section: String,
    pub row: String,
    pub number: i32,
    pub tier: String,
    pub kind: SeatKind,
    pub aisle_before: bool,
}

/// Every seat a plan describes, in layout order: sections, rows and
/// numbers as staff listed them; a standing area's places numbered
/// 1..=capacity in its one row.
pub(crate) fn plan_seats(sections: &[NewSection]) -> Vec<PlannedSeat> {
    let mut seats = Vec::new();
    for s in sections {
        if let Some(area) = &s.standing {
            seats.extend((1..=area.capacity).map(|n| PlannedSeat {
                seat_id: format!("{}-{STANDING_ROW}-{n}", s.section),
                section: s.section.clone(),
                row: STANDING_ROW.to_owned(),
                number: n,
                tier: area.tier.clone(),
                kind: SeatKind::Standing,
                aisle_before: false,
            }));
            continue;
        }
        for r in &s.rows {
            let (wheelchair, companion, aisles_after): (HashSet<i32>, HashSet<i32>, HashSet<i32>) =
                (r.wheelchair.iter().copied().collect(), r.companion.iter().copied().collect(), r.aisles_after.iter().copied().collect());
            for n in 1..=r.seats {
                let kind = if wheelchair.contains(&n) {
                    SeatKind::Wheelchair
                } else if companion.contains(&n) {
                    SeatKind::Companion
                } else {
                    SeatKind::Standard
                };
                seats.push(PlannedSeat {
                    seat_id: format!("{}-{}-{}", s.section, r.row, n),
                    section: s.section.clone(),
                    row: r.row.clone(),
                    number: n,
                    tier: r.tier.clone(),
                    kind,
                    aisle_before: aisles_after.contains(&(n - 1)),
                });
            }
        }
    }
    seats
}

/// How each section of a plan is drawn.
fn plan_shapes(sections: &[NewSection]) -> HashMap<String, SectionShape> {
    sections
        .iter()
        .map(|s| {
            let shape = SectionShape { kind: s.kind(), placement: s.placement, area: s.standing.as_ref().map(|a| (a.width, a.depth)) };
            (s.section.clone(), shape)
        })
        .collect()
}

/// A plan as the seat map draws it, before any event exists (the layout
/// generator's preview): tiers in the order given, prices from `tiers`.
pub fn plan_layout(sections: &[NewSection], tiers: &[TierPrice], stage: Option<&Stage>) -> EventLayout {
    let planned = plan_seats(sections);
    let listed = planned.iter().map(|p| {
        let tier_index = tiers.iter().position(|t| t.tier == p.tier).unwrap_or(0);
        let seat = LayoutSeat {
            seat_id: p.seat_id.clone(),
            number: p.number,
            tier_index,
            price_cents: tiers.get(tier_index).map_or(0, |t| t.price_cents),
            kind: p.kind,
            aisle_before: p.aisle_before,
        };
        (p.section.as_str(), p.row.as_str(), seat)
    });
    EventLayout::from_seats(listed, &plan_shapes(sections), stage.cloned())
}

/// The stage as stored (JSON), if there is one.
pub(crate) fn stage_json(stage: Option<&Stage>) -> Result<Option<serde_json::Value>> {
    stage.map(serde_json::to_value).transpose().map_err(|e| EngineError::Internal(format!("encoding a stage: {e}")))
}

/// Lists the event's sections with how each is drawn.
pub(crate) async fn insert_sections(conn: &mut sqlx::PgConnection, event_id: EventId, sections: &[NewSection]) -> Result<()> {
    let names: Vec<&str> = sections.iter().map(|s| s.section.as_str()).collect();
    let kinds: Vec<SectionKind> = sections.iter().map(NewSection::kind).collect();
    let placed = |f: fn(&Placement) -> f64| sections.iter().map(|s| s.placement.as_ref().map(f)).collect::<Vec<Option<f64>>>();
    let (xs, ys, rotations) = (placed(|p| p.x), placed(|p| p.y), placed(|p| p.rotation));
    let curves: Vec<Option<f64>> = sections.iter().map(|s| s.placement.and_then(|p| p.curve)).collect();
    let widths: Vec<Option<f64>> = sections.iter().map(|s| s.standing.as_ref().map(|a| a.width)).collect();
    let depths: Vec<Option<f64>> = sections.iter().map(|s| s.standing.as_ref().map(|a| a.depth)).collect();
    sqlx::query!(
        r#"INSERT INTO event_sections (event_id, section, position, kind, x, y, rotation, curve, width, depth)
           SELECT $1, s.name, s.ord, s.kind, s.x, s.y, coalesce(s.rotation, 0), s.curve, s.width, s.depth
             FROM UNNEST($2::text[], $3::section_kind[], $4::float8[], $5::float8[], $6::float8[], $7::float8[], $8::float8[], $9::float8[])
                  WITH ORDINALITY AS s(name, kind, x, y, rotation, curve, width, depth, ord)"#,
        event_id.as_uuid(),
        &names as &[&str],
        &kinds as &[SectionKind],
        &xs as &[Option<f64>],
        &ys as &[Option<f64>],
        &rotations as &[Option<f64>],
        &curves as &[Option<f64>],
        &widths as &[Option<f64>],
        &depths as &[Option<f64>],
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// How each section of an event is drawn, and what they face.
pub(crate) async fn load_shapes(pool: &sqlx::PgPool, event_id: EventId) -> Result<(HashMap<String, SectionShape>, Option<Stage>)> {
    let rows = sqlx::query!(
        r#"SELECT section, kind AS "kind: SectionKind", x, y, rotation, curve, width, depth
             FROM event_sections WHERE event_id = $1"#,
        event_id.as_uuid()
    )
    .fetch_all(pool)
    .await?;
    let shapes = rows
        .into_iter()
        .map(|r| {
            let placement = r.x.zip(r.y).map(|(x, y)| Placement { x, y, rotation: r.rotation, curve: r.curve });
            (r.section, SectionShape { kind: r.kind, placement, area: r.width.zip(r.depth) })
        })
        .collect();
    let stage = sqlx::query_scalar!("SELECT stage FROM events WHERE event_id = $1", event_id.as_uuid()).fetch_optional(pool).await?.flatten();
    let stage = stage.and_then(|s| serde_json::from_value(s).ok());
    Ok((shapes, stage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::venue::catalogue::validate_new_event;
    use chrono::Utc;
    use frontrow_model::NewEvent;
    use frontrow_model::NewRow;

    fn event() -> NewEvent {
        NewEvent {
            name: "N".into(),
            kind: "concert".into(),
            venue: "V".into(),
            city: String::new(),
            performers: Vec::new(),
            doors_at: None,
            address: String::new(),
            notes: String::new(),
            starts_at: Utc::now(),
            sale_opens_at: Utc::now(),
            refund_policy: Default::default(),
            ticket_types: Vec::new(),
            hold_ttl_seconds: 480,
            max_seats_per_order: 8,
            waiting_room_enabled: false,
            published: true,
            tiers: vec![TierPrice { tier: "T".into(), price_cents: 100 }],
            sections: vec![section("A", vec![row("1", 10)])],
            layout_id: None,
            stage: None,
        }
    }

    fn section(name: &str, rows: Vec<NewRow>) -> NewSection {
        NewSection { section: name.into(), rows, placement: None, standing: None }
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
        let mut e = event();
        e.name = "tab\u{0}".into();
        assert!(validate_new_event(&e).is_err(), "control characters");
    }

    #[test]
    fn a_plan_lists_every_seat_with_its_kind_and_the_aisles() {
        let mut r = row("1", 6);
        r.aisles_after = vec![3];
        r.wheelchair = vec![1];
        r.companion = vec![2];
        let seats = plan_seats(&[section("B", vec![r])]);
        assert_eq!(seats.len(), 6);
        assert_eq!(seats[0].seat_id, "B-1-1");
        assert_eq!(seats[0].kind, SeatKind::Wheelchair);
        assert_eq!(seats[1].kind, SeatKind::Companion);
        assert!(seats[3].aisle_before && !seats[2].aisle_before, "the aisle runs between seats 3 and 4");
        let layout = plan_layout(&[section("B", vec![row("1", 2)])], &[TierPrice { tier: "T".into(), price_cents: 7 }], None);
        assert_eq!(layout.seats[1].price_cents, 7);
        assert_eq!(layout.seat_label(1), "Section B, row 1, seat 2");
    }

    #[test]
    fn a_standing_area_is_places_numbered_in_one_row_and_its_mistakes_are_named() {
        let mut e = event();
        e.sections.push(NewSection {
            section: "FLOOR".into(),
            rows: vec![],
            placement: Some(Placement { x: 0.0, y: 200.0, rotation: 0.0, curve: None }),
            standing: Some(frontrow_model::StandingArea { capacity: 3, tier: "T".into(), width: 200.0, depth: 100.0 }),
        });
        assert_eq!(validate_new_event(&e).unwrap(), 13);
        let places = plan_seats(&e.sections[1..]);
        assert_eq!(places.iter().map(|p| p.seat_id.as_str()).collect::<Vec<_>>(), ["FLOOR-GA-1", "FLOOR-GA-2", "FLOOR-GA-3"]);
        assert!(places.iter().all(|p| p.kind == SeatKind::Standing));
        let layout = plan_layout(&e.sections, &e.tiers, None);
        assert!(layout.sections[1].is_standing());
        assert_eq!(layout.sections[1].area, Some((200.0, 100.0)));

        let mut wrong = e.clone();
        wrong.sections[1].rows = vec![row("1", 2)];
        assert!(validate_new_event(&wrong).is_err(), "a standing area with rows");
        let mut wrong = e.clone();
        if let Some(area) = wrong.sections[1].standing.as_mut() {
            area.tier = "missing".into();
        }
        assert!(validate_new_event(&wrong).is_err(), "an unknown tier");
        let mut wrong = e.clone();
        wrong.sections[1].placement = Some(Placement { x: f64::NAN, y: 0.0, rotation: 0.0, curve: None });
        assert!(validate_new_event(&wrong).is_err(), "a placement that is not a number");
        let mut wrong = e;
        wrong.sections[0].rows.clear();
        assert!(validate_new_event(&wrong).is_err(), "a seated section without rows");
    }
}
