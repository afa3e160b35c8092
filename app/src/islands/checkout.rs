use frontrow_model::{CheckoutStatus, CheckoutView};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::actions::checkout_status;
use crate::client::browser::{navigate, sleep};

/// Follows a checkout whose payment outcome is not known yet.
#[island]
pub fn CheckoutWatcher(state: CheckoutView) -> impl IntoView {
    let status = RwSignal::new(state.status);
    let reason = RwSignal::new(state.reason.clone());
    let checkout_id = state.checkout_id;
    Effect::new(move |_| {
        spawn_local(async move {
            while status.get_untracked() == CheckoutStatus::PaymentPending {
                sleep(1000).await;
                let Ok(now) = checkout_status(checkout_id).await else { continue };
                if let Some(booking) = now.booking.filter(|_| now.status == CheckoutStatus::Confirmed) {
                    status.set(now.status);
                    return navigate(&format!("/bookings/{}", booking.booking_id));
                }
                reason.set(now.reason);
                status.set(now.status);
            }
        });
    });
    let status_word = move || serde_json::to_value(status.get()).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
    view! {
        <div class="checkout-status" role="status" aria-live="polite" data-status=status_word>
            {move || match status.get() {
                CheckoutStatus::PaymentPending => view! {
                    <p class="pending">"Your payment is being processed. Your seats stay reserved meanwhile; this page updates by itself."</p>
                }.into_any(),
                CheckoutStatus::Confirmed => view! { <p>"Confirmed! Taking you to your tickets…"</p> }.into_any(),
                CheckoutStatus::Refunded => view! {
                    <p class="msg error">"The seats could not be kept for this payment, so it was refunded in full. "
                        <a href="/">"Back to events"</a></p>
                }.into_any(),
                CheckoutStatus::Failed => view! {
                    <p class="msg error">"The payment did not go through: " {move || reason.get().unwrap_or_default()} ". Nothing was charged. "
                        <a href="/">"Back to events"</a></p>
                }.into_any(),
            }}
        </div>
    }
}
