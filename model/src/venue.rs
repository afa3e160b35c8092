//! How a venue is drawn: where each section sits, how its rows run, the
//! stage or pitch they face, and standing areas sold by count.
//!
//! Map units: seats in a row are 12 apart and rows are 12 apart, so a
//! placement reads in seat widths times twelve. The y axis points down the
//! map, as in SVG: a section at rotation 0 faces up, its front row nearest
//! the top.

use serde::{Deserialize, Serialize};

/// The bounds every coordinate of a venue keeps to (the whole venue fits in
/// a square this many map units from the origin each way).
pub const MAP_EXTENT: f64 = 20_000.0;

/// Where a section sits and how its rows run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Placement {
    /// The middle of the section's front row (of a standing area: its centre).
    #[cfg_attr(feature = "openapi", schema(minimum = -20000, maximum = 20000))]
    pub x: f64,
    #[cfg_attr(feature = "openapi", schema(minimum = -20000, maximum = 20000))]
    pub y: f64,
    /// Degrees clockwise: at 0 the section faces up the map, at 180 down.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = -360, maximum = 360))]
    pub rotation: f64,
    /// Rows are arcs around a focal point (a stage, a pitch's centre) this
    /// many map units in front of the front row; without it rows are straight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 24, maximum = 20000))]
    pub curve: Option<f64>,
}

/// A standing area (general admission): places sold by count, not by seat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StandingArea {
    /// How many people it holds: each is a place of its own, sold once.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 50000))]
    pub capacity: i32,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 32,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub tier: String,
    /// Its outline on the map, in map units (across, and front to back).
    #[cfg_attr(feature = "openapi", schema(minimum = 12, maximum = 20000))]
    pub width: f64,
    #[cfg_attr(feature = "openapi", schema(minimum = 12, maximum = 20000))]
    pub depth: f64,
}

/// What the sections face: a stage, a pitch, a ring.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// Its name on the map (STAGE, PITCH…).
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 32,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub label: String,
    /// Its centre.
    #[cfg_attr(feature = "openapi", schema(minimum = -20000, maximum = 20000))]
    pub x: f64,
    #[cfg_attr(feature = "openapi", schema(minimum = -20000, maximum = 20000))]
    pub y: f64,
    #[cfg_attr(feature = "openapi", schema(minimum = 12, maximum = 20000))]
    pub width: f64,
    #[cfg_attr(feature = "openapi", schema(minimum = 12, maximum = 20000))]
    pub height: f64,
    /// Drawn as an ellipse (a pitch, a ring) rather than a rectangle.
    #[serde(default)]
    pub round: bool,
}

/// Seats in rows, or a standing area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(type_name = "section_kind", rename_all = "snake_case"))]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    #[default]
    Seated,
    Standing,
}

/// The row every place of a standing area is in (places are numbered
/// 1..=capacity in it, so each has a seat id like any seat).
pub const STANDING_ROW: &str = "GA";

fn finite_within(value: f64, low: f64, high: f64) -> bool {
    value.is_finite() && (low..=high).contains(&value)
}

impl Placement {
    /// Why this placement cannot be drawn, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if !finite_within(self.x, -MAP_EXTENT, MAP_EXTENT) || !finite_within(self.y, -MAP_EXTENT, MAP_EXTENT) {
            return Some(format!("a placement's x and y must be within ±{MAP_EXTENT}"));
        }
        if !finite_within(self.rotation, -360.0, 360.0) {
            return Some("a placement's rotation must be -360 to 360 degrees".into());
        }
        if self.curve.is_some_and(|c| !finite_within(c, 24.0, MAP_EXTENT)) {
            return Some(format!("a placement's curve must be 24 to {MAP_EXTENT} map units"));
        }
        None
    }
}

impl StandingArea {
    pub const MAX_CAPACITY: i32 = 50_000;

    pub fn problem(&self) -> Option<String> {
        if !(1..=Self::MAX_CAPACITY).contains(&self.capacity) {
            return Some(format!("a standing area's capacity must be 1 to {}", Self::MAX_CAPACITY));
        }
        if !finite_within(self.width, 12.0, MAP_EXTENT) || !finite_within(self.depth, 12.0, MAP_EXTENT) {
            return Some(format!("a standing area's width and depth must be 12 to {MAP_EXTENT} map units"));
        }
        None
    }
}

impl Stage {
    pub fn problem(&self) -> Option<String> {
        let label = self.label.trim().chars().count();
        if label == 0 || label > 32 || self.label.chars().any(char::is_control) {
            return Some("the stage's label must be 1 to 32 characters".into());
        }
        if !finite_within(self.x, -MAP_EXTENT, MAP_EXTENT) || !finite_within(self.y, -MAP_EXTENT, MAP_EXTENT) {
            return Some(format!("the stage's x and y must be within ±{MAP_EXTENT}"));
        }
        if !finite_within(self.width, 12.0, MAP_EXTENT) || !finite_within(self.height, 12.0, MAP_EXTENT) {
            return Some(format!("the stage's width and height must be 12 to {MAP_EXTENT} map units"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_out_of_bounds_or_not_numbers_are_named() {
        let ok = Placement { x: 10.0, y: -40.0, rotation: 90.0, curve: Some(300.0) };
        assert_eq!(ok.problem(), None);
        assert!(Placement { x: f64::NAN, ..ok }.problem().is_some());
        assert!(Placement { rotation: 400.0, ..ok }.problem().is_some());
        assert!(Placement { curve: Some(1.0), ..ok }.problem().is_some());
        let area = StandingArea { capacity: 10, tier: "Floor".into(), width: 100.0, depth: 50.0 };
        assert_eq!(area.problem(), None);
        assert!(StandingArea { capacity: 0, ..area.clone() }.problem().is_some());
        assert!(StandingArea { width: f64::INFINITY, ..area }.problem().is_some());
    }

    #[test]
    fn a_placement_reads_and_writes_as_json_without_empty_fields() {
        let p = Placement { x: 1.5, y: 2.0, rotation: 0.0, curve: None };
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(text, r#"{"x":1.5,"y":2.0,"rotation":0.0}"#);
        assert_eq!(serde_json::from_str::<Placement>(r#"{"x":1.5,"y":2}"#).unwrap(), p);
    }
}
