//! Reconciliation: payments that need a person, each with the action that
//! settles it now.

use frontrow_model::{AppError, AttentionState, PaymentAttention};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::admin::actions::SettlePayment;
use crate::admin::{refused, when, Frame};
use crate::format::money;

#[server(prefix = "/_app")]
pub async fn load_payments() -> Result<Vec<PaymentAttention>, AppError> {
    let (engine, user) = crate::server::staff().await?;
    Ok(engine.payments_needing_attention(&user).await?)
}

fn what(state: AttentionState) -> (&'static str, &'static str) {
    match state {
        AttentionState::CapturedWithoutBooking => ("Captured, no booking", "Ask the provider again: book the seats if they still wait, else refund"),
        AttentionState::PendingPastWait => ("Outcome unknown", "Ask the provider again"),
        AttentionState::Watched => ("Unproved, seats released", "Ask the provider again now (it is asked with back-off; a charge found is refunded)"),
        AttentionState::GaveUp => ("Unproved for a day", "Check it in the provider's dashboard, then ask again"),
        AttentionState::RefundPending => ("Refund pending", "Send the refund again"),
        AttentionState::RefundFailed => ("Refund failed", "Send the refund again"),
    }
}

#[component]
pub fn PaymentsPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_payments().await {
                    Err(e) => refused(e, "/admin/payments"),
                    Ok(payments) => view! {
                        <Frame title="Payments to reconcile".to_owned() here="/admin/payments".to_owned()>
                            {if payments.is_empty() {
                                view! { <p class="ok">"Nothing to reconcile: every payment is settled and every refund has gone through."</p> }.into_any()
                            } else {
                                view! {
                                    <table class="data">
                                        <caption>{format!("{} payments", payments.len())}</caption>
                                        <thead><tr><th scope="col">"Payment"</th><th scope="col">"State"</th><th scope="col">"Amount"</th>
                                            <th scope="col">"Why"</th><th scope="col">"Since"</th><th scope="col">"Action"</th></tr></thead>
                                        <tbody>
                                            {payments.into_iter().map(|p| {
                                                let (state, action) = what(p.state);
                                                view! {
                                                    <tr data-payment-id=p.payment_id.to_string()>
                                                        <th scope="row">{p.payment_id.to_string()[..8].to_owned()}</th>
                                                        <td>{state}</td>
                                                        <td class="num">{money(p.amount_cents)}</td>
                                                        <td>{p.reason}</td>
                                                        <td>{when(p.since)}</td>
                                                        <td>
                                                            <form method="post" action=SettlePayment::PATH class="inline">
                                                                <input type="hidden" name="payment_id" value=p.payment_id.to_string()/>
                                                                <button type="submit" title=action>"Settle now"</button>
                                                            </form>
                                                        </td>
                                                    </tr>
                                                }
                                            }).collect_view()}
                                        </tbody>
                                    </table>
                                }.into_any()
                            }}
                        </Frame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
