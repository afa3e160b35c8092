//! Asking for a hold (the fan's picks, a suggestion, best available, a
//! standing area's places) and reading the answer: the countdown starts,
//! or the refusal is shown on the map and in words.

use super::*;

impl Picker {
    /// Holds exactly these seats (the fan's picks, or a suggestion).
    fn hold_these(self, seat_ids: Vec<String>) {
        if !self.signed_in {
            return self.sign_in_first();
        }
        if seat_ids.is_empty() || self.busy.get_untracked() {
            return;
        }
        let Ok(ids) = seat_ids.iter().map(|s| SeatId::parse(s.as_str())).collect::<Result<Vec<_>, _>>() else {
            return self.say("error", "Those seats cannot be held.");
        };
        let key = match self.hold_key.get_value() {
            Some((seats, key)) if seats == seat_ids => key,
            _ => random_key(),
        };
        self.hold_key.set_value(Some((seat_ids, key.clone())));
        let Ok(key) = IdempotencyKey::parse(key) else { return };
        self.busy.set(true);
        spawn_local(async move {
            match actions::hold_seats(self.event_id.get_value(), ids, self.admission.get_value(), Some(key)).await {
                Ok(hold) => {
                    self.hold_key.set_value(None);
                    self.took_hold(hold)
                }
                Err(e) => {
                    // Only an answer that ends the key's hold frees the key;
                    // anything else (a timeout) may be retried under it.
                    if matches!(e.kind, ErrorKind::HoldExpired { .. }) {
                        self.hold_key.set_value(None);
                    }
                    self.hold_refused(e)
                }
            }
            self.busy.set(false);
        });
    }

    pub fn hold_selected(self) {
        self.hold_these(self.selected.get_untracked().into_iter().map(|s| s.seat_id).collect());
    }

    /// One click after a lost race: hold the nearest free block instead.
    pub fn take_suggestion(self) {
        if let Some(s) = self.suggestion.get_untracked() {
            self.hold_these(s.seat_ids);
        }
    }

    pub fn hold_best(self, count: String, tier: String) {
        if !self.signed_in {
            return self.sign_in_first();
        }
        if self.busy.get_untracked() {
            return;
        }
        let count: usize = count.parse().unwrap_or(1);
        self.busy.set(true);
        spawn_local(async move {
            // Seats picked by hand are let go: best available replaces them.
            self.clear_selection();
            match actions::hold_best(self.event_id.get_value(), count, tier, self.admission.get_value()).await {
                Ok(hold) => self.took_hold(hold),
                Err(e) => self.hold_refused(e),
            }
            self.busy.set(false);
        });
    }

    /// Holds `count` places of the standing area this page shows.
    pub fn hold_places(self, count: String) {
        if !self.signed_in {
            return self.sign_in_first();
        }
        let Some(offer) = self.standing.get_untracked() else { return };
        if self.busy.get_untracked() {
            return;
        }
        let places = StandingPlaces { section: offer.section, count: count.parse().unwrap_or(1) };
        // A fresh key per press: a retry of this very request (a lost
        // answer) gets the same hold back, never a second one.
        let key = IdempotencyKey::parse(random_key()).ok();
        self.busy.set(true);
        spawn_local(async move {
            match actions::hold_places(self.event_id.get_value(), places, self.admission.get_value(), key).await {
                Ok(hold) => self.took_hold(hold),
                Err(e) => self.hold_refused(e),
            }
            self.busy.set(false);
        });
    }

    fn took_hold(self, hold: Hold) {
        let hold = HoldInfo {
            hold_id: hold.hold_id,
            labels: hold.seat_ids.iter().map(|s| label_of(s)).collect(),
            tiers: hold.tiers,
            hold_token: hold.hold_token,
            total_cents: hold.total_cents,
            expires_at_ms: hold.expires_at.timestamp_millis(),
            seat_ids: hold.seat_ids,
        };
        self.clear_selection();
        self.clear_suggestion();
        self.chosen_types.set(TicketChoices::new());
        self.mark_mine(&hold.seat_ids);
        self.heard_on_mine.update_value(HashMap::clear);
        // The server stamped the expiry "now + TTL" a moment ago, which pins
        // its clock to within one network hop.
        self.clock_offset.set_value((hold.expires_at_ms - self.hold_ttl_ms) as f64 - now_ms());
        self.remaining_ms.set(self.remaining(&hold));
        self.say("success", format!("Held: {}. Pay before the timer runs out.", joined(&hold.labels)));
        self.hold.set(Some(hold));
        // The button that was pressed is gone; continue in the hold panel.
        set_timeout(|| focus("held-title"), std::time::Duration::ZERO);
    }

    fn hold_refused(self, e: AppError) {
        match e.kind {
            ErrorKind::Unauthenticated => self.sign_in_first(),
            ErrorKind::NotAdmitted => navigate(&format!("{}/queue", self.event_path())),
            ErrorKind::SeatsUnavailable { conflict_seats, suggestion } => {
                let labels: Vec<String> = conflict_seats.iter().map(|s| label_of(s)).collect();
                for seat in &conflict_seats {
                    self.apply_status(seat, SeatStatus::Held);
                    flash_conflict(seat);
                }
                let verb = if labels.len() == 1 { "was" } else { "were" };
                self.say("error", format!("Sorry, {} {verb} just taken by someone else. Nothing was held; pick other seats.", joined(&labels)));
                self.clear_suggestion();
                if let Some(seat_ids) = suggestion.filter(|s| !s.is_empty()) {
                    set_suggested(&seat_ids, true);
                    let labels = seat_ids.iter().map(|s| label_of(s)).collect();
                    self.suggestion.set(Some(Suggestion { seat_ids, labels }));
                }
            }
            _ => self.say("error", e.message),
        }
    }
}
