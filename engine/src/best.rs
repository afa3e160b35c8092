//! Best available: N seats side by side in one row of a price tier, chosen
//! the way a box office would: never leave a single seat stranded between
//! the group and a taken seat or the row's end when another placement
//! avoids it, then front rows first, then as central as the row allows.

use rand::Rng;
use uuid::Uuid;

/// Looks and claims before giving up under contention.
const MAX_ATTEMPTS: usize = 8;

use crate::error::{EngineError, Result};
use crate::holds::{hold_seats_admitted, is_retryable};
use crate::model::Hold;

/// One seat of a row, in row order, as the picker sees it.
#[derive(Debug, Clone)]
pub struct RowSeat {
    pub seat_id: String,
    pub number: i32,
    pub free: bool,
}

/// How good a placement is; lower is better, compared field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    stranded: u8,
    row_rank: usize,
    off_centre: usize,
}

/// Every placement of `count` adjacent free seats in `rows` (front row
/// first), best first. Seats are adjacent when their numbers are consecutive.
pub fn placements(rows: &[Vec<RowSeat>], count: usize) -> Vec<Vec<String>> {
    let mut found: Vec<(Score, usize, usize)> = Vec::new();
    if count == 0 {
        return Vec::new();
    }
    for (row_rank, row) in rows.iter().enumerate() {
        // Walk runs of free, consecutively numbered seats.
        let mut start = 0;
        while start < row.len() {
            if !row[start].free {
                start += 1;
                continue;
            }
            let mut end = start + 1;
            while end < row.len() && row[end].free && row[end].number == row[end - 1].number + 1 {
                end += 1;
            }
            if end - start >= count {
                for first in start..=end - count {
                    let (left, right) = (first - start, end - (first + count));
                    let score = Score {
                        stranded: u8::from(left == 1) + u8::from(right == 1),
                        row_rank,
                        off_centre: (first * 2 + count).abs_diff(row.len()),
                    };
                    found.push((score, row_rank, first));
                }
            }
            start = end;
        }
    }
    found.sort_by_key(|(score, _, _)| *score);
    found.into_iter().map(|(_, r, first)| rows[r][first..first + count].iter().map(|s| s.seat_id.clone()).collect()).collect()
}

/// The best placement, if any.
pub fn pick(rows: &[Vec<RowSeat>], count: usize) -> Option<Vec<String>> {
    placements(rows, count).into_iter().next()
}

/// Finds the best `count` seats together in `tier` and holds them. A race
/// lost to another fan between the look and the claim is retried with a
/// fresh look; at an on-sale many fans look at once and all see the same
/// best seats, so each retry chooses at random among a widening set of the
/// next-best placements instead of stampeding the same ones again.
pub async fn hold_best(pool: &sqlx::PgPool, event_id: Uuid, user_id: Uuid, count: usize, tier: &str, admitted: bool) -> Result<Hold> {
    if count == 0 || count > crate::holds::MAX_SEAT_IDS_PER_REQUEST {
        return Err(EngineError::invalid(format!("count must be 1 to {}", crate::holds::MAX_SEAT_IDS_PER_REQUEST)));
    }
    if tier.is_empty() || tier.len() > crate::catalogue::MAX_LABEL_LEN {
        return Err(EngineError::invalid("tier must be 1 to 16 characters"));
    }
    // Refused callers cost no scan of the seats.
    let rules = crate::catalogue::event_rules(pool, event_id).await?;
    if rules.waiting_room_enabled && !admitted {
        return Err(EngineError::NotAdmitted);
    }
    if rules.sale_opens_at > chrono::Utc::now() {
        return Err(EngineError::SaleNotOpen);
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let rows = free_rows(pool, event_id, tier).await?;
        let mut options = placements(&rows, count);
        if options.is_empty() {
            return Err(EngineError::NoSeatsTogether { count, tier: tier.to_owned() });
        }
        let choice = if attempt == 1 { 0 } else { rand::thread_rng().gen_range(0..options.len().min(attempt * 3)) };
        let seat_ids = options.swap_remove(choice);
        match hold_seats_admitted(pool, event_id, user_id, &seat_ids, admitted).await {
            Err(EngineError::SeatsUnavailable { .. }) if attempt < MAX_ATTEMPTS => continue,
            Err(e) if attempt < MAX_ATTEMPTS && is_retryable(&e) => continue,
            other => return other,
        }
    }
}

async fn free_rows(pool: &sqlx::PgPool, event_id: Uuid, tier: &str) -> Result<Vec<Vec<RowSeat>>> {
    let row = sqlx::query!(
        r#"SELECT EXISTS (SELECT 1 FROM events WHERE event_id = $1) AS "event!",
                  EXISTS (SELECT 1 FROM price_tiers WHERE event_id = $1 AND tier = $2) AS "tier!""#,
        event_id,
        tier
    )
    .fetch_one(pool)
    .await?;
    if !row.event {
        return Err(EngineError::NotFound);
    }
    if !row.tier {
        return Err(EngineError::invalid(format!("this event has no tier {tier}")));
    }
    let seats = sqlx::query!(
        r#"SELECT seat_id, section, row_label, number,
                  (state = 'available' OR (state = 'held' AND hold_expires_at <= now())) AS "free!"
           FROM seats WHERE event_id = $1 AND tier = $2
           ORDER BY position"#,
        event_id,
        tier
    )
    .fetch_all(pool)
    .await?;
    let mut rows: Vec<Vec<RowSeat>> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for s in seats {
        let key = (s.section, s.row_label);
        if current.as_ref() != Some(&key) {
            rows.push(Vec::new());
            current = Some(key);
        }
        if let Some(row) = rows.last_mut() {
            row.push(RowSeat { seat_id: s.seat_id, number: s.number, free: s.free });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, free: &str) -> Vec<RowSeat> {
        free.chars()
            .enumerate()
            .map(|(i, c)| RowSeat { seat_id: format!("{label}-{}", i + 1), number: i as i32 + 1, free: c == '.' })
            .collect()
    }

    #[test]
    fn takes_the_front_row_centre_when_everything_is_free() {
        let rows = vec![row("1", "........"), row("2", "........")];
        assert_eq!(pick(&rows, 2), Some(vec!["1-4".into(), "1-5".into()]));
    }

    #[test]
    fn never_strands_a_single_seat_when_another_placement_avoids_it() {
        // Free run of 3 next to a taken seat: taking 2 from the centre would
        // strand one; a later row has a clean fit.
        let rows = vec![row("1", "x...x"), row("2", "x..x")];
        assert_eq!(pick(&rows, 2), Some(vec!["2-2".into(), "2-3".into()]));
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
            RowSeat { seat_id: "1-1".into(), number: 1, free: true },
            RowSeat { seat_id: "1-3".into(), number: 3, free: true },
        ]];
        assert_eq!(pick(&gap, 2), None, "an aisle between numbers 1 and 3 is not side by side");
        assert_eq!(pick(&[row("1", "..")], 0), None);
    }
}
