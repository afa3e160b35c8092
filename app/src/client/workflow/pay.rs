//! Paying for the hold: with an idempotency key kept per hold and card, so
//! a double click or a reload gets the first answer.

use frontrow_model::{CheckoutAnswer, ErrorKind, HoldId, HoldToken, IdempotencyKey, PaymentToken, TicketChoices};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::Picker;
use crate::actions;
use crate::client::browser::{navigate, random_key, session_storage, sleep};

impl Picker {
    pub fn pay(self) {
        let Some(hold) = self.hold.get_untracked() else { return };
        if self.busy.get_untracked() {
            return;
        }
        let card = self.card.get_untracked();
        // The types as the fan sees them, every seat named (none: an event
        // without types); part of the request, so part of its key.
        let types: TicketChoices =
            hold.seat_ids.iter().zip(self.held_types(&hold)).filter_map(|(seat, kind)| kind.map(|(name, _)| (seat.clone(), name))).collect();
        let asked = match types.is_empty() {
            true => card.clone(),
            false => format!("{card}|{}", serde_json::to_string(&types).unwrap_or_default()),
        };
        let (Ok(token), Ok(payment), Ok(key)) = (
            HoldToken::parse(hold.hold_token.clone()),
            PaymentToken::parse(card.clone()),
            IdempotencyKey::parse(idempotency_key(hold.hold_id, &asked)),
        ) else {
            return self.say("error", "This payment cannot be sent.");
        };
        self.busy.set(true);
        self.say("info", "Paying…");
        spawn_local(async move {
            for _ in 0..30 {
                match actions::checkout(hold.hold_id, token.clone(), payment.clone(), key.clone(), Some(types.clone())).await {
                    Ok(CheckoutAnswer::Confirmed { booking }) => return navigate(&format!("/bookings/{}", booking.booking_id)),
                    Ok(CheckoutAnswer::PaymentPending { checkout_id }) => return navigate(&format!("/checkouts/{checkout_id}")),
                    Err(e) => {
                        match e.kind {
                            ErrorKind::PaymentDeclined { .. } | ErrorKind::PaymentFailed { .. } => {
                                if let Some(storage) = session_storage() {
                                    let _ = storage.remove_item(&checkout_key(hold.hold_id));
                                }
                                self.say("error", "Your card was declined and nothing was charged. Try another card: your seats stay held until the timer runs out.");
                                break;
                            }
                            ErrorKind::HoldExpired { .. } => {
                                self.let_go(&hold);
                                self.say("error", "Your hold expired before payment, so nothing was booked. Any amount taken is refunded.");
                                break;
                            }
                            ErrorKind::Unauthenticated => return self.sign_in_first(),
                            // The first attempt (another tab, a reload) is still running: wait for its answer.
                            ErrorKind::IdempotencyKeyInUse | ErrorKind::CheckoutInProgress => sleep(1000).await,
                            // Turned away (busy, nothing done; or the database
                            // briefly away): the same key again after the wait
                            // asked for and up to a second more, as the waiting
                            // room's page does; the key makes it safe.
                            ErrorKind::Overloaded { retry_after } => {
                                self.say("info", "Many fans are paying right now; trying again in a moment…");
                                sleep(spread(retry_after)).await
                            }
                            ErrorKind::Unavailable => {
                                self.say("info", "The service is briefly unavailable; trying again in a moment…");
                                sleep(spread(2)).await
                            }
                            _ => {
                                self.say("error", e.message);
                                break;
                            }
                        }
                    }
                }
            }
            self.busy.set(false);
        });
    }
}

/// `secs` and up to a second more, in milliseconds.
fn spread(secs: u64) -> i32 {
    ((secs.clamp(1, 30) as f64 + js_sys::Math::random()) * 1000.0) as i32
}

pub(super) fn checkout_key(hold_id: HoldId) -> String {
    format!("frontrow.checkout.{hold_id}")
}

/// The idempotency key for paying this hold as `asked` (the card and the
/// ticket types): reused on a double click or after a reload (the server
/// then answers the first request's outcome), fresh after a decline or a
/// change of card or types.
fn idempotency_key(hold_id: HoldId, asked: &str) -> String {
    let storage = session_storage();
    let stored = storage.as_ref().and_then(|s| s.get_item(&checkout_key(hold_id)).ok().flatten());
    // The key (hex) is after the last colon; what was asked, before it.
    if let Some((stored_ask, key)) = stored.as_deref().and_then(|s| s.rsplit_once(':')) {
        if stored_ask == asked {
            return key.to_owned();
        }
    }
    let key = random_key();
    if let Some(storage) = storage {
        let _ = storage.set_item(&checkout_key(hold_id), &format!("{asked}:{key}"));
    }
    key
}
