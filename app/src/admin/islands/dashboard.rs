use frontrow_model::{EventId, EventStats};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::admin::actions::load_event_stats;
use crate::charts::bars;
use crate::client::browser::sleep;
use crate::format::money;

/// An event's figures, refreshed every two seconds while the page is open.
#[cfg_attr(any(feature = "ssr", feature = "staff"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "staff")), component)]
pub fn LiveDashboard(event_id: EventId, stats: EventStats) -> impl IntoView {
    let stats = RwSignal::new(stats);
    let refreshed = RwSignal::new(false);
    Effect::new(move |_| {
        spawn_local(async move {
            loop {
                sleep(2000).await;
                if let Ok(now) = load_event_stats(event_id).await {
                    stats.set(now);
                    refreshed.set(true);
                }
            }
        });
    });
    let series = move |pick: fn(&frontrow_model::MinutePoint) -> i64| stats.with(|s| s.last_hour.iter().map(pick).collect::<Vec<i64>>());
    view! {
        <div class="dashboard" data-refreshed=move || refreshed.get().to_string()>
            <ul class="figures" aria-label="Seats and money">
                <li><strong id="fig-sold">{move || stats.with(|s| s.seats_sold)}</strong>" sold"</li>
                <li><strong id="fig-held">{move || stats.with(|s| s.seats_held)}</strong>" held"</li>
                <li><strong id="fig-available">{move || stats.with(|s| s.seats_available)}</strong>" available"</li>
                <li><strong id="fig-blocked">{move || stats.with(|s| s.seats_blocked)}</strong>" blocked"</li>
                <li><strong id="fig-revenue">{move || stats.with(|s| money(s.revenue_cents))}</strong>" taken"</li>
                <li><strong id="fig-checked-in">{move || stats.with(|s| s.checked_in)}</strong>" checked in"</li>
            </ul>
            <table class="data">
                <caption>"By tier"</caption>
                <thead><tr><th scope="col">"Tier"</th><th scope="col">"Sold"</th><th scope="col">"Held"</th><th scope="col">"Available"</th>
                    <th scope="col">"Blocked"</th><th scope="col">"Revenue"</th></tr></thead>
                <tbody>
                    {move || stats.with(|s| s.tiers.iter().map(|t| view! {
                        <tr><th scope="row">{t.tier.clone()}</th><td class="num">{t.sold}</td><td class="num">{t.held}</td>
                            <td class="num">{t.available}</td><td class="num">{t.blocked}</td><td class="num">{money(t.revenue_cents)}</td></tr>
                    }).collect_view())}
                </tbody>
            </table>
            {move || stats.with(|s| (!s.types.is_empty()).then(|| view! {
                <table class="data" id="by-type">
                    <caption>"By ticket type"</caption>
                    <thead><tr><th scope="col">"Type"</th><th scope="col">"Sold"</th><th scope="col">"Revenue"</th></tr></thead>
                    <tbody>
                        {s.types.iter().map(|t| view! {
                            <tr><th scope="row">{t.ticket_type.clone()}</th><td class="num">{t.sold}</td><td class="num">{money(t.revenue_cents)}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }))}
            <h2>"Last minute"</h2>
            <ul class="figures small" aria-label="Last minute">
                <li><strong>{move || stats.with(|s| s.last_minute.holds)}</strong>" holds"</li>
                <li><strong>{move || stats.with(|s| s.last_minute.holds_expired)}</strong>" expired"</li>
                <li><strong>{move || stats.with(|s| s.last_minute.checkouts)}</strong>" checkouts"</li>
                <li><strong>{move || stats.with(|s| s.last_minute.payment_failures)}</strong>" payment failures"</li>
                <li><strong>{move || stats.with(|s| s.last_minute.refunds)}</strong>" refunds"</li>
                <li><strong>{move || stats.with(|s| s.queue.waiting)}</strong>" in the queue"</li>
                <li><strong>{move || stats.with(|s| s.queue.active)}</strong>" shopping"</li>
                <li><strong>{move || stats.with(|s| s.queue.admitted_per_minute)}</strong>" admitted"</li>
                <li><strong id="waitlist-waiting">{move || stats.with(|s| s.waitlist.waiting)}</strong>" on the waiting list"</li>
                <li><strong id="waitlist-offers">{move || stats.with(|s| s.waitlist.offers_outstanding)}</strong>" offers open"</li>
            </ul>
            <h2>"The last hour, per minute"</h2>
            <div class="charts">
                <figure><figcaption>"Holds"</figcaption><div inner_html=move || bars(&series(|p| p.holds), "Holds per minute")/></figure>
                <figure><figcaption>"Expired holds"</figcaption><div inner_html=move || bars(&series(|p| p.expired), "Expired holds per minute")/></figure>
                <figure><figcaption>"Seats sold"</figcaption><div inner_html=move || bars(&series(|p| p.sold), "Seats sold per minute")/></figure>
                <figure><figcaption>"Payment failures"</figcaption><div inner_html=move || bars(&series(|p| p.payment_failures), "Payment failures per minute")/></figure>
                <figure><figcaption>"Admitted from the queue"</figcaption><div inner_html=move || bars(&series(|p| p.admitted), "Fans admitted per minute")/></figure>
            </div>
        </div>
    }
}
