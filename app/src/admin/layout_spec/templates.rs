//! Venue templates the layout generator starts from, which staff then edit:
//! a theatre (stalls fanned around the stage, a circle behind), an arena (a
//! standing floor with seating on three or four sides) and a stadium bowl
//! (sections in an oval ring around a pitch, a lower and an upper tier,
//! and a standing floor on the pitch if wanted).
//!
//! Map units as everywhere: seats and rows 12 apart.

use std::f64::consts::PI;

use frontrow_model::{Placement, Stage, StandingArea};
use serde::{Deserialize, Serialize};

use super::SectionSpec;

const PITCH: f64 = 12.0;

/// A template's sections and what they face.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub sections: Vec<SectionSpec>,
    pub stage: Stage,
}

/// Which template, with the few numbers staff choose before editing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "template", rename_all = "snake_case")]
pub enum TemplateChoice {
    Theatre { stalls_rows: u32, circle_rows: u32 },
    Arena { sides: u32, floor: u32 },
    Bowl { sections: u32, lower_rows: u32, upper_rows: u32, floor: u32 },
}

impl TemplateChoice {
    pub fn build(self) -> Template {
        match self {
            TemplateChoice::Theatre { stalls_rows, circle_rows } => theatre(stalls_rows, circle_rows),
            TemplateChoice::Arena { sides, floor } => arena(sides, floor),
            TemplateChoice::Bowl { sections, lower_rows, upper_rows, floor } => bowl(sections, lower_rows, upper_rows, floor),
        }
    }
}

fn rows_section(name: &str, rows: u32, seats: u32, tiers: &str, placement: Placement) -> SectionSpec {
    SectionSpec { name: name.into(), rows, seats, tiers: tiers.into(), placement: Some(placement), ..SectionSpec::default() }
}

fn standing(name: &str, capacity: u32, tier: &str, x: f64, y: f64, width: f64, depth: f64) -> SectionSpec {
    SectionSpec {
        name: name.into(),
        standing: Some(StandingArea { capacity: capacity as i32, tier: tier.into(), width, depth }),
        placement: Some(Placement { x, y, rotation: 0.0, curve: None }),
        ..SectionSpec::default()
    }
}

/// A section on a circle around `focal`, `radius` away, at `angle` from
/// straight down the map (radians, clockwise positive), facing the focal
/// point with its rows curved around it.
fn around(focal: (f64, f64), radius: f64, angle: f64) -> Placement {
    Placement { x: focal.0 - radius * angle.sin(), y: focal.1 + radius * angle.cos(), rotation: angle.to_degrees(), curve: Some(radius) }
}

/// Stalls fanned around the stage (left, centre, right), a circle behind
/// them; rows widen going back.
pub fn theatre(stalls_rows: u32, circle_rows: u32) -> Template {
    let stalls_rows = stalls_rows.clamp(1, 60);
    let circle_rows = circle_rows.clamp(1, 40);
    let stage = Stage { label: "STAGE".into(), x: 0.0, y: 0.0, width: 420.0, height: 90.0, round: false };
    let focal = (0.0, -60.0);
    let stalls = 300.0;
    let circle = stalls + f64::from(stalls_rows) * PITCH + 96.0;
    let mut sections = Vec::new();
    // (name, seats in the front row, angle) per block; the sides are half
    // as wide as the centre and sit just beyond it.
    for (ring, radius, rows, centre_seats, tiers) in
        [("S", stalls, stalls_rows, 24u32, "1-4 Premium, 5-60 Standard"), ("C", circle, circle_rows, 40u32, "1-40 Value")]
    {
        let centre_half = f64::from(centre_seats) * PITCH / radius / 2.0;
        let side_half = centre_half / 2.0;
        let side_angle = centre_half + side_half + 24.0 / radius;
        for (side, seats, angle) in [("L", centre_seats / 2, side_angle), ("C", centre_seats, 0.0), ("R", centre_seats / 2, -side_angle)] {
            let mut section = rows_section(&format!("{ring}{side}"), rows, seats, tiers, around(focal, radius, angle));
            section.letters = true;
            section.growth = 1;
            sections.push(section);
        }
    }
    Template { sections, stage }
}

/// A stage at one end of a standing floor, seating on the other three
/// sides (four: behind the stage too), two sections a side.
pub fn arena(sides: u32, floor: u32) -> Template {
    let (floor_w, floor_d) = (720.0, 600.0);
    let stage = Stage { label: "STAGE".into(), x: 0.0, y: 0.0, width: 480.0, height: 100.0, round: false };
    let floor_top = 80.0;
    let mut sections = Vec::new();
    if floor > 0 {
        sections.push(standing("FLOOR", floor.min(50_000), "Floor", 0.0, floor_top + floor_d / 2.0, floor_w, floor_d));
    }
    let gap = 48.0;
    let (rows, seats) = (20, 24);
    let half_block = f64::from(seats) * PITCH / 2.0 + 24.0;
    let mid_y = floor_top + floor_d / 2.0;
    let tiers = "1-5 Premium, 6-20 Standard";
    // Left and right face across the floor; the back faces the stage.
    for (k, dy) in [(1, -half_block), (2, half_block)] {
        sections.push(rows_section(
            &format!("L{k}"),
            rows,
            seats,
            tiers,
            Placement { x: -floor_w / 2.0 - gap, y: mid_y + dy, rotation: 90.0, curve: None },
        ));
        sections.push(rows_section(
            &format!("R{k}"),
            rows,
            seats,
            tiers,
            Placement { x: floor_w / 2.0 + gap, y: mid_y + dy, rotation: -90.0, curve: None },
        ));
    }
    for (k, dx) in [(1, -half_block), (2, half_block)] {
        sections.push(rows_section(
            &format!("B{k}"),
            rows,
            seats,
            tiers,
            Placement { x: dx, y: floor_top + floor_d + gap, rotation: 0.0, curve: None },
        ));
        if sides >= 4 {
            sections.push(rows_section(
                &format!("T{k}"),
                rows,
                seats,
                tiers,
                Placement { x: dx, y: -stage.height / 2.0 - gap, rotation: 180.0, curve: None },
            ));
        }
    }
    Template { sections, stage }
}

/// One ring of the bowl: `count` sections on an oval with half axes `a`
/// (across) and `b` (down), each as wide as its share of the oval, facing
/// in, its rows curved as the oval is there.
fn ring(first: u32, count: u32, a: f64, b: f64, rows: u32, tiers: &str) -> Vec<SectionSpec> {
    let step = 2.0 * PI / f64::from(count);
    (0..count)
        .map(|k| {
            let t = step * f64::from(k);
            let (sin, cos) = t.sin_cos();
            // The point on the oval (t = 0 straight down the map), its
            // inward facing, and how sharply the oval bends there.
            let (x, y) = (-a * sin, b * cos);
            let facing = (sin / a).atan2(cos / b);
            let bend = (a * a * cos * cos + b * b * sin * sin).powf(1.5) / (a * b);
            let arc = (a * a * cos * cos + b * b * sin * sin).sqrt() * step;
            // Seats as fit the share of the oval, less one for the gangway.
            let seats = ((arc / PITCH).floor() as u32).saturating_sub(1).clamp(4, 1000);
            let placement = Placement { x, y, rotation: facing.to_degrees(), curve: Some(bend.clamp(24.0, 20_000.0)) };
            rows_section(&(first + k).to_string(), rows, seats, tiers, placement)
        })
        .collect()
}

/// Sections in an oval ring around a pitch, a lower and an upper tier; a
/// standing floor on the pitch (before a stage at its north end) if `floor`.
pub fn bowl(sections: u32, lower_rows: u32, upper_rows: u32, floor: u32) -> Template {
    let sections = sections.clamp(4, 99);
    let (lower_rows, upper_rows) = (lower_rows.clamp(1, 80), upper_rows.clamp(0, 80));
    // A football pitch at a seat's half metre to 12 map units.
    let (pitch_w, pitch_h) = (2520.0, 1632.0);
    let (a, b) = (pitch_w / 2.0 + 120.0, pitch_h / 2.0 + 120.0);
    let mut specs = ring(101, sections, a, b, lower_rows, "1-10 Premium, 11-80 Standard");
    if upper_rows > 0 {
        let step_back = f64::from(lower_rows) * PITCH + 72.0;
        specs.extend(ring(201, sections, a + step_back, b + step_back, upper_rows, "1-80 Value"));
    }
    let stage = if floor > 0 {
        let stage = Stage { label: "STAGE".into(), x: 0.0, y: -pitch_h / 2.0 + 120.0, width: pitch_w * 0.4, height: 200.0, round: false };
        let depth = pitch_h - 360.0;
        specs.push(standing("FLOOR", floor.min(50_000), "Floor", 0.0, stage.y + stage.height / 2.0 + 40.0 + depth / 2.0, pitch_w - 240.0, depth));
        stage
    } else {
        Stage { label: "PITCH".into(), x: 0.0, y: 0.0, width: pitch_w, height: pitch_h, round: false }
    };
    Template { sections: specs, stage }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::layout_spec::sections;

    fn places(t: &Template) -> i64 {
        sections(&t.sections).unwrap().iter().map(frontrow_model::NewSection::places).sum()
    }

    #[test]
    fn every_template_makes_a_plan_the_engine_accepts() {
        for choice in [
            TemplateChoice::Theatre { stalls_rows: 20, circle_rows: 10 },
            TemplateChoice::Arena { sides: 3, floor: 3000 },
            TemplateChoice::Arena { sides: 4, floor: 0 },
            TemplateChoice::Bowl { sections: 24, lower_rows: 20, upper_rows: 20, floor: 5000 },
        ] {
            let t = choice.build();
            let plan = sections(&t.sections).unwrap();
            frontrow_engine::venue::layouts::validate_layout(&plan).unwrap_or_else(|e| panic!("{choice:?}: {e}"));
            frontrow_engine::venue::catalogue::validate_stage(Some(&t.stage)).unwrap();
        }
    }

    #[test]
    fn a_bowl_faces_its_pitch_from_every_side() {
        let t = bowl(4, 10, 0, 0);
        let rotations: Vec<i64> = t.sections.iter().map(|s| s.placement.unwrap().rotation.round() as i64).collect();
        // Below the pitch facing up, then left facing right, above facing down, right facing left.
        assert_eq!(rotations, [0, 90, 180, -90]);
        let below = t.sections[0].placement.unwrap();
        assert!(below.y > 0.0 && below.x.abs() < 1e-6);
    }

    #[test]
    fn the_stadium_sizes_make_the_stadiums_of_the_benchmark() {
        // 50,000 seats; and 70,000 seats with a 10,000-place standing floor.
        let fifty = places(&bowl(40, 33, 40, 0));
        assert!((48_000..=52_000).contains(&fifty), "{fifty}");
        let eighty = places(&bowl(40, 46, 51, 10_000));
        assert!((78_000..=82_000).contains(&eighty), "{eighty}");
    }
}
