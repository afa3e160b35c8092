//! The layout generator's form, and the plan it describes: per section, how
//! many rows of how many seats (growing row by row if asked), where the
//! aisles run, which rows are in which price tier, where the wheelchair
//! spaces and companion seats are, and where the section sits on the map;
//! or a standing area with its capacity. Plain Rust, so the browser builds
//! the plan as staff type. The templates it starts from are in
//! [`templates`].

pub mod templates;

use frontrow_model::{NewRow, NewSection, Placement, StandingArea};
use serde::{Deserialize, Serialize};

/// One section as the generator's form describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionSpec {
    pub name: String,
    pub rows: u32,
    pub seats: u32,
    /// Rows are labelled 1, 2, 3… or A, B, C….
    pub letters: bool,
    /// Seat numbers after which an aisle runs, e.g. `10 20`.
    pub aisles_after: String,
    /// Tiers by row, e.g. `1-5 Premium, 6-25 Standard` (rows not named take
    /// the last tier given).
    pub tiers: String,
    /// Wheelchair spaces by row, e.g. `25: 1 2 59 60; 24: 30`.
    pub wheelchair: String,
    /// Companion seats by row, in the same form.
    pub companion: String,
    /// Seats added to each row over the one in front (rows widen going back).
    #[serde(default)]
    pub growth: u32,
    /// Where it sits on the map; none: the default grid.
    #[serde(default)]
    pub placement: Option<Placement>,
    /// A standing area (capacity, tier, size) instead of rows.
    #[serde(default)]
    pub standing: Option<StandingArea>,
}

impl Default for SectionSpec {
    fn default() -> Self {
        Self {
            name: "A".into(),
            rows: 10,
            seats: 20,
            letters: false,
            aisles_after: String::new(),
            tiers: "1-3 Premium, 4-10 Standard".into(),
            wheelchair: String::new(),
            companion: String::new(),
            growth: 0,
            placement: None,
            standing: None,
        }
    }
}

fn row_label(n: u32, letters: bool) -> String {
    if !letters {
        return n.to_string();
    }
    // A…Z, then AA, AB… as seat maps letter them.
    let mut n = n;
    let mut label = Vec::new();
    while n > 0 {
        let d = ((n - 1) % 26) as u8;
        label.push(b'A' + d);
        n = (n - 1) / 26;
    }
    label.reverse();
    String::from_utf8(label).unwrap_or_default()
}

fn numbers(text: &str) -> Result<Vec<i32>, String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<i32>().map_err(|_| format!("{t:?} is not a seat number")))
        .collect()
}

/// `ROW: SEAT SEAT; ROW: SEAT` → the seats of `row`.
fn places_in_row(text: &str, row: u32) -> Result<Vec<i32>, String> {
    let mut seats = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (r, list) = entry.split_once(':').ok_or_else(|| format!("{entry:?}: write ROW: SEAT SEAT"))?;
        let r: u32 = r.trim().parse().map_err(|_| format!("{entry:?}: the row is a number (1 is the front row)"))?;
        if r == row {
            seats.extend(numbers(list)?);
        }
    }
    Ok(seats)
}

/// The tier of `row` from `1-5 Premium, 6 Standard`-style ranges.
fn tier_of(text: &str, row: u32) -> Result<String, String> {
    let mut last = None;
    for entry in text.split([',', '\n']).map(str::trim).filter(|e| !e.is_empty()) {
        let (range, tier) = entry.split_once(char::is_whitespace).ok_or_else(|| format!("{entry:?}: write ROWS TIER, e.g. 1-5 Premium"))?;
        let (from, to) = match range.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
            None => (range.trim().parse::<u32>(), range.trim().parse::<u32>()),
        };
        let (Ok(from), Ok(to)) = (from, to) else { return Err(format!("{entry:?}: the rows are numbers, e.g. 1-5")) };
        if (from..=to).contains(&row) {
            return Ok(tier.trim().to_owned());
        }
        last = Some(tier.trim().to_owned());
    }
    last.ok_or_else(|| "give each section at least one tier, e.g. 1-10 Standard".to_owned())
}

/// The plan the form describes (checked fully by the engine when saved).
pub fn sections(specs: &[SectionSpec]) -> Result<Vec<NewSection>, String> {
    specs
        .iter()
        .map(|spec| {
            let name = spec.name.trim().to_owned();
            if let Some(area) = &spec.standing {
                return Ok(NewSection { section: name, rows: Vec::new(), placement: spec.placement, standing: Some(area.clone()) });
            }
            let aisles = numbers(&spec.aisles_after)?;
            let rows = (1..=spec.rows)
                .map(|r| {
                    Ok(NewRow {
                        row: row_label(r, spec.letters),
                        seats: (spec.seats + (r - 1) * spec.growth) as i32,
                        tier: tier_of(&spec.tiers, r)?,
                        aisles_after: aisles.clone(),
                        wheelchair: places_in_row(&spec.wheelchair, r)?,
                        companion: places_in_row(&spec.companion, r)?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| format!("section {}: {e}", spec.name))?;
            Ok(NewSection { section: name, rows, placement: spec.placement, standing: None })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_describes_rows_tiers_aisles_and_accessible_places() {
        let spec = SectionSpec {
            name: "B".into(),
            rows: 3,
            seats: 10,
            letters: true,
            aisles_after: "5".into(),
            tiers: "1 Premium, 2-3 Standard".into(),
            wheelchair: "3: 1 2".into(),
            companion: "3: 3".into(),
            growth: 1,
            placement: None,
            standing: None,
        };
        let plan = sections(&[spec]).unwrap();
        let rows = &plan[0].rows;
        assert_eq!(rows.iter().map(|r| r.row.as_str()).collect::<Vec<_>>(), ["A", "B", "C"]);
        assert_eq!(rows[0].tier, "Premium");
        assert_eq!(rows[2].tier, "Standard");
        assert_eq!(rows[1].aisles_after, vec![5]);
        assert_eq!(rows.iter().map(|r| r.seats).collect::<Vec<_>>(), [10, 11, 12], "each row a seat wider");
        assert_eq!(rows[2].wheelchair, vec![1, 2]);
        assert_eq!(rows[2].companion, vec![3]);
        assert!(rows[0].wheelchair.is_empty());
    }

    #[test]
    fn row_letters_go_past_z_and_mistakes_are_named() {
        assert_eq!(row_label(27, true), "AA");
        let mut spec = SectionSpec::default();
        spec.tiers = "front Premium".into();
        assert!(sections(&[spec]).unwrap_err().contains("rows are numbers"));
    }
}
