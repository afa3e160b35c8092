//! Who may hold seats of an event, as far as this instance's board knows:
//! the holders' tags on its held and paying seats, and the fans who asked
//! this instance for a hold a moment ago (their change may still be on its
//! way back from the database).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many seats each holder's tag is on (held or paying, lapsed or not).
#[derive(Debug, Default, Clone)]
pub(super) struct HolderCounts(HashMap<i32, u32>);

impl HolderCounts {
    /// Counts a seat held by `old` (a tag, or nobody) becoming held by `new`.
    pub(super) fn replace(&mut self, old: Option<i32>, new: Option<i32>) {
        if let Some(tag) = old {
            if let Some(n) = self.0.get_mut(&tag) {
                *n -= 1;
                if *n == 0 {
                    self.0.remove(&tag);
                }
            }
        }
        if let Some(tag) = new {
            *self.0.entry(tag).or_default() += 1;
        }
    }

    pub(super) fn contains(&self, tag: i32) -> bool {
        self.0.contains_key(&tag)
    }

    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

/// How long a hold asked for here counts as perhaps not yet on the board
/// (the change comes back from the database in milliseconds).
const NOT_YET_HEARD: Duration = Duration::from_secs(10);

/// Tags that asked this instance for a hold lately, and when.
#[derive(Debug, Default)]
pub(super) struct RecentHolders(Mutex<Recent>);

#[derive(Debug, Default)]
struct Recent {
    at: HashMap<i32, Instant>,
    /// The size at which old entries are next dropped: twice what was
    /// left the last time, so dropping costs little per note.
    prune_at: usize,
}

impl RecentHolders {
    pub(super) fn note(&self, tag: i32) {
        let mut recent = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if recent.at.len() >= recent.prune_at.max(4096) {
            recent.at.retain(|_, at| at.elapsed() < NOT_YET_HEARD);
            recent.prune_at = recent.at.len() * 2;
        }
        recent.at.insert(tag, Instant::now());
    }

    pub(super) fn contains(&self, tag: i32) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).at.get(&tag).is_some_and(|at| at.elapsed() < NOT_YET_HEARD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_counts_while_it_is_on_a_held_or_paying_seat() {
        let mut counts = HolderCounts::default();
        counts.replace(None, Some(7));
        counts.replace(None, Some(7));
        counts.replace(Some(7), Some(7));
        assert_eq!(counts.0.get(&7), Some(&2));
        counts.replace(Some(7), None);
        assert!(counts.contains(7), "one seat still held");
        counts.replace(Some(7), Some(8));
        assert!(!counts.contains(7) && counts.contains(8) && counts.0.len() == 1, "no tag left behind");
    }

    #[test]
    fn a_hold_asked_here_counts_until_the_board_has_surely_heard() {
        let recent = RecentHolders::default();
        assert!(!recent.contains(7));
        recent.note(7);
        assert!(recent.contains(7) && !recent.contains(8));
    }
}
