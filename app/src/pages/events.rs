//! The events fans can buy for.

use frontrow_model::{AppError, EventSummary};
use leptos::prelude::*;
use leptos_meta::Title;

use super::status_word;
use crate::format::{availability, money};

#[server(prefix = "/_app")]
pub async fn load_events() -> Result<Vec<EventSummary>, AppError> {
    Ok(crate::server::engine()?.events().await?)
}

/// The event page's data, all from this instance's live seat map except the
/// fan's own hold.
#[component]
pub fn EventsPage() -> impl IntoView {
    view! {
        <Title text="On sale"/>
        <section class="events">
            <h1>"On sale"</h1>
            <Suspense fallback=|| view! { <p>"Loading events…"</p> }>
                {move || Suspend::new(async move {
                    match load_events().await {
                        Ok(list) if list.is_empty() => view! { <p class="notice">"No events yet."</p> }.into_any(),
                        Ok(list) => view! {
                            <ul class="event-list">
                                {list.into_iter().map(|e| view! { <EventItem event=e/> }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(e) => view! { <p class="error" role="alert">"Could not load events: " {e.message}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn EventItem(event: EventSummary) -> impl IntoView {
    let (text, class) = availability(&status_word(event.status), event.seats_available, event.seats_total);
    let prices = if event.price_min_cents == event.price_max_cents {
        money(i64::from(event.price_min_cents))
    } else {
        format!("{} – {}", money(i64::from(event.price_min_cents)), money(i64::from(event.price_max_cents)))
    };
    let e = event.event;
    let href = format!("/events/{}", e.event_id);
    view! {
        <li class="event-card" data-event-id=e.event_id.to_string()>
            <h2><a href=href>{e.name}</a></h2>
            <p class="meta">{e.venue} " · " {e.starts_at.format("%a %e %b %Y, %H:%M UTC").to_string()}</p>
            <p class="prices">{prices}</p>
            <p class=format!("availability {class}")>{text}</p>
        </li>
    }
}
