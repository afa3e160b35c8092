//! Where every seat and section of a venue is on the map: each section's
//! rows straight or curved around a focal point in its own frame (front row
//! at the top, rows going back down the map), then turned and moved to its
//! placement. Sections without a placement are set out in a grid facing a
//! stage along the top, as maps were drawn before placements existed.

use frontrow_engine::venue::live::{EventLayout, LayoutSection};
use frontrow_model::{Placement, Stage};

/// Distance between seat centres along a row and between rows, in map units.
pub const PITCH: f64 = 12.0;
pub const RADIUS: f64 = 5.0;
/// The gap an aisle leaves between two seats.
const AISLE: f64 = PITCH / 2.0;
/// Room left of each row for its label (grid sections).
pub const ROW_LABEL: f64 = 22.0;
const SECTION_GAP: f64 = 36.0;
const SECTION_TITLE: f64 = 18.0;
const STAGE_HEIGHT: f64 = 28.0;
/// The margin around a drawing.
pub const MARGIN: f64 = 24.0;

pub type Point = (f64, f64);

/// A section in its own frame: the middle of its front row's front edge at
/// the origin, rows going back along +y.
#[derive(Debug, Clone)]
pub struct SectionFrame {
    /// Each seat's centre, aligned with the section's seat range.
    pub seats: Vec<Point>,
    /// Where each row's label goes (before its first seat).
    pub row_labels: Vec<Point>,
    /// The section's outline, for the overview and for zooming to it.
    pub outline: Vec<Point>,
}

/// How a section's frame sits on the venue map.
#[derive(Debug, Clone, Copy)]
pub struct Transform {
    pub x: f64,
    pub y: f64,
    /// Radians, clockwise on the map.
    pub angle: f64,
}

impl Transform {
    pub fn apply(&self, (x, y): Point) -> Point {
        let (sin, cos) = self.angle.sin_cos();
        (self.x + x * cos - y * sin, self.y + x * sin + y * cos)
    }

    fn of(placement: &Placement) -> Self {
        Self { x: placement.x, y: placement.y, angle: placement.rotation.to_radians() }
    }
}

/// The whole venue, drawn.
#[derive(Debug, Clone)]
pub struct VenueGeometry {
    pub frames: Vec<SectionFrame>,
    pub transforms: Vec<Transform>,
    pub stage: Stage,
    /// min x, min y, max x, max y of everything on the map.
    pub bounds: [f64; 4],
}

/// Where a row's seats sit along it, centred on 0 (aisles leave a gap).
fn along_row(layout: &EventLayout, seats: &[usize]) -> Vec<f64> {
    let mut x = 0.0;
    let mut offsets: Vec<f64> = seats
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            if k > 0 {
                x += PITCH + if layout.seats[i].aisle_before { AISLE } else { 0.0 };
            }
            x
        })
        .collect();
    let half = x / 2.0;
    for o in &mut offsets {
        *o -= half;
    }
    offsets
}

/// A point `along` a row line at `depth` behind the front edge: straight
/// rows, or arcs around a focal point `curve` in front of the front edge
/// (distance along the arc, so seats keep their spacing).
fn local(curve: Option<f64>, along: f64, depth: f64) -> Point {
    match curve {
        None => (along, depth),
        Some(r) => {
            let radius = r + depth;
            let angle = along / radius;
            (radius * angle.sin(), radius * angle.cos() - r)
        }
    }
}

/// Points of an edge at `depth` from `from` to `to` along it, enough to
/// draw an arc smoothly.
fn edge(curve: Option<f64>, depth: f64, from: f64, to: f64) -> Vec<Point> {
    let steps = if curve.is_some() { 12 } else { 1 };
    (0..=steps).map(|k| local(curve, from + (to - from) * k as f64 / steps as f64, depth)).collect()
}

/// A section in its own frame.
pub fn frame(layout: &EventLayout, section: &LayoutSection) -> SectionFrame {
    let curve = section.placement.and_then(|p| p.curve);
    if let Some((width, depth)) = section.area {
        let (w, d) = (width / 2.0, depth / 2.0);
        // A standing area's placement is its centre.
        return SectionFrame { seats: Vec::new(), row_labels: Vec::new(), outline: vec![(-w, -d), (w, -d), (w, d), (-w, d)] };
    }
    let mut seats = Vec::with_capacity(section.seats.len());
    let mut row_labels = Vec::with_capacity(section.rows.len());
    // Each row's half width (to its outer seats' edges) and depth.
    let mut ends = Vec::with_capacity(section.rows.len());
    for (r, row) in section.rows.iter().enumerate() {
        let depth = r as f64 * PITCH + PITCH / 2.0;
        let offsets = along_row(layout, &row.seats);
        seats.extend(offsets.iter().map(|&a| local(curve, a, depth)));
        let half = offsets.last().copied().unwrap_or(0.0) + PITCH / 2.0;
        row_labels.push(local(curve, -half - ROW_LABEL / 2.0, depth));
        ends.push((half, depth));
    }
    // The outline: the front edge, down the right ends of the rows, the back
    // edge, and up the left ends.
    let front = ends.first().map_or(PITCH / 2.0, |e| e.0);
    let back = ends.last().copied().unwrap_or((PITCH / 2.0, PITCH / 2.0));
    let mut outline = edge(curve, 0.0, -front, front);
    outline.extend(ends.iter().map(|&(half, depth)| local(curve, half, depth)));
    outline.extend(edge(curve, back.1 + PITCH / 2.0, back.0, -back.0));
    outline.extend(ends.iter().rev().map(|&(half, depth)| local(curve, -half, depth)));
    SectionFrame { seats, row_labels, outline }
}

/// min x, min y, max x, max y of some points.
pub fn bounds_of(points: impl IntoIterator<Item = Point>) -> [f64; 4] {
    points.into_iter().fold([f64::MAX, f64::MAX, f64::MIN, f64::MIN], |b, (x, y)| [b[0].min(x), b[1].min(y), b[2].max(x), b[3].max(y)])
}

/// The whole venue: placed sections where staff put them, the rest in a
/// grid below the stage (or below the placed ones).
pub fn venue(layout: &EventLayout) -> VenueGeometry {
    let frames: Vec<SectionFrame> = layout.sections.iter().map(|s| frame(layout, s)).collect();
    let mut transforms: Vec<Option<Transform>> = layout.sections.iter().map(|s| s.placement.as_ref().map(Transform::of)).collect();
    let placed: Vec<Point> =
        frames.iter().zip(&transforms).filter_map(|(f, t)| t.map(|t| f.outline.iter().map(move |&p| t.apply(p)))).flatten().collect();

    // Unplaced sections: a grid of equal cells, as wide as the widest of
    // them and as deep as the deepest, three (or fewer) to a line.
    let unplaced: Vec<usize> = (0..frames.len()).filter(|&i| transforms[i].is_none()).collect();
    let mut grid_width = 0.0;
    let mut grid_top = STAGE_HEIGHT + SECTION_GAP + SECTION_TITLE;
    if !placed.is_empty() {
        grid_top = bounds_of(placed.iter().copied())[3] + SECTION_GAP + SECTION_TITLE;
    }
    if !unplaced.is_empty() {
        let columns = match unplaced.len() {
            0..=3 => unplaced.len(),
            4 => 2,
            _ => 3,
        };
        let size = |i: usize| {
            let b = bounds_of(frames[i].outline.iter().copied());
            (b[2] - b[0], b[3] - b[1])
        };
        let widest = unplaced.iter().map(|&i| size(i).0).fold(0.0, f64::max);
        let deepest = unplaced.iter().map(|&i| size(i).1).fold(0.0, f64::max);
        let cell_w = ROW_LABEL + widest + SECTION_GAP;
        let cell_h = SECTION_TITLE + deepest + SECTION_GAP;
        grid_width = columns as f64 * cell_w + SECTION_GAP;
        for (n, &i) in unplaced.iter().enumerate() {
            let (col, line) = ((n % columns) as f64, (n / columns) as f64);
            let x = SECTION_GAP + col * cell_w + ROW_LABEL + widest / 2.0;
            // A standing area's frame is centred on its placement.
            let top = grid_top + line * cell_h;
            let y = if layout.sections[i].area.is_some() { top + size(i).1 / 2.0 } else { top };
            transforms[i] = Some(Transform { x, y, angle: 0.0 });
        }
    }
    let transforms: Vec<Transform> = transforms.into_iter().map(|t| t.unwrap_or(Transform { x: 0.0, y: 0.0, angle: 0.0 })).collect();
    let mut bounds = bounds_of(frames.iter().zip(&transforms).flat_map(|(f, t)| f.outline.iter().map(move |&p| t.apply(p))));
    if frames.is_empty() {
        bounds = [0.0, 0.0, 100.0, 100.0];
    }
    let stage = layout.stage.clone().unwrap_or_else(|| {
        // Along the top, as wide as what faces it.
        let (left, right) = if unplaced.is_empty() { (bounds[0], bounds[2]) } else { (SECTION_GAP, grid_width.max(bounds[2]) - SECTION_GAP) };
        let top = bounds[1].min(STAGE_HEIGHT + SECTION_GAP) - SECTION_GAP - STAGE_HEIGHT;
        Stage {
            label: "STAGE".into(),
            x: (left + right) / 2.0,
            y: top + STAGE_HEIGHT / 2.0,
            width: (right - left).max(PITCH),
            height: STAGE_HEIGHT,
            round: false,
        }
    });
    let stage_box = [stage.x - stage.width / 2.0, stage.y - stage.height / 2.0, stage.x + stage.width / 2.0, stage.y + stage.height / 2.0];
    let bounds = [bounds[0].min(stage_box[0]), bounds[1].min(stage_box[1]), bounds[2].max(stage_box[2]), bounds[3].max(stage_box[3])];
    VenueGeometry { frames, transforms, stage, bounds }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontrow_engine::venue::catalogue::plan_layout;
    use frontrow_model::{NewRow, NewSection, TierPrice};

    fn section(name: &str, rows: i32, seats: i32, placement: Option<Placement>) -> NewSection {
        let rows = (1..=rows)
            .map(|r| NewRow { row: r.to_string(), seats, tier: "T".into(), aisles_after: vec![], wheelchair: vec![], companion: vec![] })
            .collect();
        NewSection { section: name.into(), rows, placement, standing: None }
    }

    fn tiers() -> Vec<TierPrice> {
        vec![TierPrice { tier: "T".into(), price_cents: 100 }]
    }

    #[test]
    fn straight_rows_are_centred_a_pitch_apart() {
        let layout = plan_layout(&[section("A", 2, 3, None)], &tiers(), None);
        let f = frame(&layout, &layout.sections[0]);
        assert_eq!(f.seats[0], (-PITCH, PITCH / 2.0));
        assert_eq!(f.seats[2], (PITCH, PITCH / 2.0));
        assert_eq!(f.seats[3].1, PITCH * 1.5);
    }

    #[test]
    fn curved_rows_keep_their_spacing_and_bend_toward_the_focal_point() {
        let curve = Placement { x: 0.0, y: 0.0, rotation: 0.0, curve: Some(120.0) };
        let layout = plan_layout(&[section("A", 2, 5, Some(curve))], &tiers(), None);
        let f = frame(&layout, &layout.sections[0]);
        // The middle seat is straight back; the ends curl forward (toward the focal point).
        assert!(f.seats[2].0.abs() < 1e-9);
        assert!(f.seats[0].1 < f.seats[2].1 && f.seats[4].1 < f.seats[2].1);
        let gap = ((f.seats[1].0 - f.seats[0].0).powi(2) + (f.seats[1].1 - f.seats[0].1).powi(2)).sqrt();
        assert!((gap - PITCH).abs() < 0.1, "seats stay about a pitch apart: {gap}");
        // Every seat is the same distance from the focal point as its row.
        let focal = (0.0, -120.0);
        let distance = |p: Point| ((p.0 - focal.0).powi(2) + (p.1 - focal.1).powi(2)).sqrt();
        assert!((distance(f.seats[0]) - distance(f.seats[2])).abs() < 1e-9);
    }

    #[test]
    fn a_placement_turns_and_moves_a_section() {
        let half_turn = Placement { x: 500.0, y: 400.0, rotation: 180.0, curve: None };
        let layout = plan_layout(&[section("A", 1, 1, Some(half_turn))], &tiers(), None);
        let venue = venue(&layout);
        let (x, y) = venue.transforms[0].apply(venue.frames[0].seats[0]);
        assert!((x - 500.0).abs() < 1e-9 && (y - (400.0 - PITCH / 2.0)).abs() < 1e-9, "faces down the map: {x},{y}");
    }

    #[test]
    fn sections_without_placements_sit_in_a_grid_under_a_stage() {
        let layout = plan_layout(&[section("A", 2, 4, None), section("B", 2, 4, None)], &tiers(), None);
        let venue = venue(&layout);
        assert!(venue.transforms[1].x > venue.transforms[0].x, "side by side");
        assert_eq!(venue.transforms[0].y, venue.transforms[1].y);
        assert!(venue.stage.y < venue.transforms[0].y, "the stage is above them");
        assert!(venue.bounds[0] <= venue.stage.x - venue.stage.width / 2.0);
    }
}
