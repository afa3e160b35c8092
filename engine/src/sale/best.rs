//! Best available: N seats side by side in one row of a price tier, chosen
//! the way a box office would: never leave a single seat stranded between
//! the group and a taken seat or the row's end when another placement
//! avoids it, then front rows first, then as central as the row allows.
//! And, for a fan who just lost a race, the free block nearest to the seats
//! they wanted.
//!
//! Both look at this instance's seat map (memory, a few milliseconds behind
//! at most); the hold that follows is what decides.

use frontrow_model::{EventId, SeatId, SeatStatus, UserId};
use rand::Rng;

use crate::error::{EngineError, Result};
use crate::sale::presale::Access;
use crate::venue::live::BoardSnapshot;
use crate::Engine;

/// Looks and claims before giving up under contention.
const MAX_ATTEMPTS: usize = 8;

/// One seat of a row, in row order, as the picker sees it (its id borrowed
/// from the layout: a look copies no strings).
#[derive(Debug, Clone, Copy)]
pub struct RowSeat<'a> {
    pub seat_id: &'a str,
    pub number: i32,
    pub free: bool,
    /// An aisle runs between this seat and the one before it.
    pub aisle_before: bool,
}

impl RowSeat<'_> {
    /// Is this seat right beside `before` (consecutive numbers, no aisle)?
    fn follows(&self, before: &RowSeat) -> bool {
        self.number == before.number + 1 && !self.aisle_before
    }
}

/// How good a placement is; lower is better, compared field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    stranded: u8,
    row_rank: usize,
    off_centre: usize,
}

/// Runs of free, consecutively numbered seats in `row` at least `count`
/// long, as (start, end) index pairs.
fn free_runs(row: &[RowSeat<'_>], count: usize) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < row.len() {
        if !row[start].free {
            start += 1;
            continue;
        }
        let mut end = start + 1;
        while end < row.len() && row[end].free && row[end].follows(&row[end - 1]) {
            end += 1;
        }
        if end - start >= count {
            runs.push((start, end));
        }
        start = end;
    }
    runs
}

/// The `limit` best placements of `count` adjacent free seats in `rows`
/// (front row first), best first. Seats are adjacent when their numbers are
/// consecutive and no aisle runs between them. Every placement is scored;
/// only the ones asked for are spelled out.
pub fn placements<'a>(rows: &[Vec<RowSeat<'a>>], count: usize, limit: usize) -> Vec<Vec<&'a str>> {
    if count == 0 {
        return Vec::new();
    }
    let mut found: Vec<(Score, usize, usize)> = Vec::new();
    for (row_rank, row) in rows.iter().enumerate() {
        for (start, end) in free_runs(row, count) {
            for first in start..=end - count {
                let (left, right) = (first - start, end - (first + count));
                let score =
                    Score { stranded: u8::from(left == 1) + u8::from(right == 1), row_rank, off_centre: (first * 2 + count).abs_diff(row.len()) };
                found.push((score, row_rank, first));
            }
        }
    }
    found.sort_by_key(|(score, _, _)| *score);
    found.into_iter().take(limit).map(|(_, r, first)| rows[r][first..first + count].iter().map(|s| s.seat_id).collect()).collect()
}

/// The best placement, if any.
pub fn pick<'a>(rows: &[Vec<RowSeat<'a>>], count: usize) -> Option<Vec<&'a str>> {
    placements(rows, count, 1).into_iter().next()
}

/// The rows of `tier` (all tiers when `None`), in layout order, as free or
/// taken seats; each row tagged with its section's index.
fn rows_of(board: &BoardSnapshot, tier: Option<usize>) -> Vec<(usize, Vec<RowSeat<'_>>)> {
    let layout = &board.layout;
    let mut rows = Vec::new();
    // Standing places are not side by side in rows: they are held by count.
    for (s, section) in layout.sections.iter().enumerate().filter(|(_, s)| !s.is_standing()) {
        for row in &section.rows {
            let seats: Vec<RowSeat> = row
                .seats
                .iter()
                .filter(|&&i| tier.is_none_or(|t| layout.seats[i].tier_index == t))
                .map(|&i| RowSeat {
                    seat_id: &layout.seats[i].seat_id,
                    number: layout.seats[i].number,
                    free: board.statuses[i] == SeatStatus::Available,
                    aisle_before: layout.seats[i].aisle_before,
                })
                .collect();
            if !seats.is_empty() {
                rows.push((s, seats));
            }
        }
    }
    rows
}

/// The standing area of a tier with the most free places, if it has `count`.
fn roomiest_area(board: &BoardSnapshot, tier_index: usize, count: usize) -> Option<String> {
    let layout = &board.layout;
    (0..layout.sections.len())
        .filter(|&s| layout.sections[s].is_standing())
        .filter(|&s| layout.seats.get(layout.sections[s].seats.start).is_some_and(|seat| seat.tier_index == tier_index))
        .map(|s| (board.available_in(s), s))
        .filter(|&(free, _)| free >= count as i64)
        .max()
        .map(|(_, s)| layout.sections[s].name.clone())
}

/// The free block of `count` seats side by side nearest to the seats in
/// `near` (the ones a fan just lost): same section first, then the fewest
/// rows away, then the closest along the row, never stranding a single seat
/// when another block avoids it.
pub fn nearest(board: &BoardSnapshot, near: &[String], count: usize) -> Option<Vec<String>> {
    let rows = rows_of(board, None);
    // Where the lost seats were: section, row (in layout order) and place in the row.
    let mut targets = Vec::new();
    for (r, (section, seats)) in rows.iter().enumerate() {
        for (k, seat) in seats.iter().enumerate() {
            if near.iter().any(|n| n == seat.seat_id) {
                targets.push((*section, r, k));
            }
        }
    }
    let &(section, _, _) = targets.first()?;
    let row0 = targets.iter().map(|t| t.1).sum::<usize>() as f64 / targets.len() as f64;
    let col0 = targets.iter().map(|t| t.2).sum::<usize>() as f64 / targets.len() as f64;
    let mut best: Option<((u8, u8, u64), usize, usize)> = None;
    for (r, (s, seats)) in rows.iter().enumerate() {
        for (start, end) in free_runs(seats, count) {
            for first in start..=end - count {
                let stranded = u8::from(first - start == 1) + u8::from(end - (first + count) == 1);
                let centre = first as f64 + (count as f64 - 1.0) / 2.0;
                // A row away counts as much as three seats along one.
                let distance = ((r as f64 - row0).abs() * 3.0 + (centre - col0).abs()) * 10.0;
                let score = (u8::from(*s != section), stranded.min(1), distance as u64);
                if best.is_none_or(|(b, _, _)| score < b) {
                    best = Some((score, r, first));
                }
            }
        }
    }
    let (_, r, first) = best?;
    Some(rows[r].1[first..first + count].iter().map(|s| s.seat_id.to_owned()).collect())
}

impl Engine {
    /// Finds the best `count` seats together in `tier` and holds them. A race
    /// lost to another fan between the look and the claim is retried with a
    /// fresh look; at an on-sale many fans look at once and all see the same
    /// best seats, so each retry chooses at random among a widening set of the
    /// next-best placements instead of stampeding the same ones again.
    pub async fn hold_best(
        &self,
        fan: UserId,
        event_id: EventId,
        count: usize,
        tier: &str,
        access: impl Into<Access<'_>>,
    ) -> Result<frontrow_model::Hold> {
        let access = access.into();
        if count == 0 || count > frontrow_model::MAX_SEATS_PER_REQUEST {
            return Err(EngineError::invalid(format!("count must be 1 to {}", frontrow_model::MAX_SEATS_PER_REQUEST)));
        }
        if tier.is_empty() || tier.len() > 32 {
            return Err(EngineError::invalid("tier must be 1 to 32 characters"));
        }
        // Refused callers cost no look at the seats.
        self.hold_rules(event_id, fan, access).await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let board = self.board().snapshot(event_id).await?;
            let tier_index = board
                .event
                .tiers
                .iter()
                .position(|t| t.tier == tier)
                .ok_or_else(|| EngineError::invalid(format!("this event has no tier {tier}")))?;
            let rows: Vec<Vec<RowSeat>> = rows_of(&board, Some(tier_index)).into_iter().map(|(_, row)| row).collect();
            if rows.is_empty() {
                // A tier sold as standing: any places of its roomiest area.
                if let Some(section) = roomiest_area(&board, tier_index, count) {
                    let places = frontrow_model::StandingPlaces { section, count: count as i32 };
                    return self.hold_places(fan, event_id, &places, access, None).await.map(|held| held.hold);
                }
            }
            // The first look takes the best; a retry draws among more.
            let mut options = placements(&rows, count, attempt * 3);
            if options.is_empty() {
                return Err(EngineError::NoSeatsTogether { count, tier: tier.to_owned() });
            }
            let choice = if attempt == 1 { 0 } else { rand::thread_rng().gen_range(0..options.len().min(attempt * 3)) };
            let seat_ids: Vec<SeatId> =
                options.swap_remove(choice).into_iter().map(|id| SeatId::parse(id.to_owned())).collect::<std::result::Result<_, _>>()?;
            match self.hold_seats(fan, event_id, &seat_ids, access, None).await {
                Err(EngineError::SeatsUnavailable { .. }) if attempt < MAX_ATTEMPTS => continue,
                other => return other.map(|held| held.hold),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, free: &str) -> Vec<RowSeat<'static>> {
        free.chars()
            .enumerate()
            .map(|(i, c)| {
                let seat_id: &'static str = format!("{label}-{}", i + 1).leak();
                RowSeat { seat_id, number: i as i32 + 1, free: c == '.', aisle_before: false }
            })
            .collect()
    }

    #[test]
    fn takes_the_front_row_centre_when_everything_is_free() {
        let rows = vec![row("1", "........"), row("2", "........")];
        assert_eq!(pick(&rows, 2), Some(vec!["1-4", "1-5"]));
    }

    #[test]
    fn never_strands_a_single_seat_when_another_placement_avoids_it() {
        // Free run of 3 next to a taken seat: taking 2 from the centre would
        // strand one; a later row has a clean fit.
        let rows = vec![row("1", "x...x"), row("2", "x..x")];
        assert_eq!(pick(&rows, 2), Some(vec!["2-2", "2-3"]));
        // Only one row: a group of two in a run of four goes to an end of
        // the run or the centre, never leaving exactly one seat alone.
        let rows = vec![row("1", "x....x")];
        let picked = pick(&rows, 2).expect("room for two");
        assert!(picked == vec!["1-2", "1-3"] || picked == vec!["1-4", "1-5"], "{picked:?}");
    }

    #[test]
    fn strands_a_seat_only_when_nothing_else_fits() {
        let rows = vec![row("1", "x...x")];
        assert_eq!(pick(&rows, 2).map(|p| p.len()), Some(2));
    }

    #[test]
    fn seats_must_be_consecutive_and_free() {
        let rows = vec![row("1", ".x.x.")];
        assert_eq!(pick(&rows, 2), None);
        let gap = vec![vec![
            RowSeat { seat_id: "1-1", number: 1, free: true, aisle_before: false },
            RowSeat { seat_id: "1-3", number: 3, free: true, aisle_before: false },
        ]];
        assert_eq!(pick(&gap, 2), None, "a gap between numbers 1 and 3 is not side by side");
        let mut aisle = row("1", "....");
        aisle[2].aisle_before = true;
        assert_eq!(pick(&[aisle], 3), None, "an aisle between seats 2 and 3 splits the row");
        assert_eq!(pick(&[row("1", "..")], 0), None);
    }
}
