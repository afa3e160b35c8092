//! What the live feed changes for the picker: seats on the map (the fan's
//! selection loses any taken meanwhile; their own held seats stay theirs),
//! the overview's sections, a standing area's places left, and the
//! availability line.

use frontrow_model::live::LiveFrame;
use frontrow_model::SeatStatus;
use leptos::prelude::*;

use super::Picker;
use crate::client::counts;
use crate::client::live_feed::FeedListener;
use crate::client::seat_dom::{joined, seat_el, seat_label, set_selected, show_availability};

impl Picker {
    /// Applies a status from the live feed (or a conflict); drops the seat
    /// from the fan's selection if it is no longer available and returns its
    /// label if so.
    pub(super) fn apply_status(self, seat_id: &str, status: SeatStatus) -> Option<String> {
        let el = seat_el(seat_id)?;
        self.show(&el, status);
        if status == SeatStatus::Available {
            return None;
        }
        if self.suggestion.with_untracked(|s| s.as_ref().is_some_and(|s| s.seat_ids.iter().any(|x| x == seat_id))) {
            self.clear_suggestion();
        }
        if self.selected.with_untracked(|s| s.iter().any(|x| x.seat_id == seat_id)) {
            self.selected.update(|s| s.retain(|x| x.seat_id != seat_id));
            set_selected(&el, false);
            return Some(seat_label(&el));
        }
        None
    }

    /// New counts of sections: the overview's shapes, a standing area's
    /// places, and the availability line follow them.
    fn apply_counts(self, sections: &[frontrow_model::live::SectionCount<'_>]) {
        if let Some(available) = counts::apply(sections) {
            self.available.set_value(available);
            show_availability(available);
            self.standing.update(|offer| {
                if let Some(offer) = offer {
                    offer.available = available;
                }
            });
        }
    }
}

impl FeedListener for Picker {
    fn resume_from(&self) -> (u32, u64) {
        (self.epoch.get_value(), self.seq.get_value())
    }

    fn connected(&self, live: bool) {
        self.live.set(if live { "live" } else { "reconnecting" });
    }

    fn frame(&self, frame: LiveFrame<'_>) {
        let (epoch, seq) = frame.position();
        self.epoch.set_value(epoch);
        self.seq.set_value(seq);
        let changes = match frame {
            LiveFrame::Snapshot { seats, .. } => seats,
            LiveFrame::Diff { changes, .. } => changes,
            LiveFrame::Counts { sections, .. } => return self.apply_counts(&sections),
        };
        let mine: Vec<String> = self.hold.with_untracked(|h| h.as_ref().map(|h| h.seat_ids.clone()).unwrap_or_default());
        let mut dropped = Vec::new();
        for change in changes {
            // The fan's own held seats stay theirs until sold (a stale
            // "available" from before the hold must not undo it).
            if mine.iter().any(|m| *m == change.seat_id) && change.status != SeatStatus::Sold {
                self.heard_on_mine.update_value(|heard| {
                    heard.insert(change.seat_id.to_string(), change.status);
                });
                continue;
            }
            if let Some(label) = self.apply_status(&change.seat_id, change.status) {
                dropped.push(label);
            }
        }
        if !dropped.is_empty() {
            let verb = if dropped.len() == 1 { "was" } else { "were" };
            self.say("error", format!("{} {verb} just taken by someone else and left your selection.", joined(&dropped)));
        }
    }
}
