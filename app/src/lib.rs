//! The Leptos app: rendered on the server, then hydrated in the browser.

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;
use serde::{Deserialize, Serialize};

/// The HTML document around the app (server side only renders it).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="frontrow" href="/pkg/frontrow.css"/>
        <Title text="frontrow"/>
        <header class="site-header">
            <a class="brand" href="/">"frontrow"</a>
        </header>
        <Router>
            <main>
                <Routes fallback=|| view! { <p class="notice">"Page not found."</p> }>
                    <Route path=path!("") view=HomePage/>
                </Routes>
            </main>
        </Router>
    }
}

/// One event as the listing shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventCard {
    pub event_id: String,
    pub name: String,
    pub venue: String,
    pub starts_at: String,
    pub status: String,
    pub seats_available: i64,
    pub seats_total: i64,
}

#[server(prefix = "/_app")]
pub async fn list_events() -> Result<Vec<EventCard>, ServerFnError> {
    let pool = use_context::<sqlx::PgPool>().ok_or_else(|| ServerFnError::new("no database in context"))?;
    let events = frontrow_engine::catalogue::list_events(&pool)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))?;
    Ok(events
        .into_iter()
        .map(|e| EventCard {
            event_id: e.event_id.to_string(),
            name: e.name,
            venue: e.venue,
            starts_at: e.starts_at.format("%a %e %b %Y, %H:%M UTC").to_string(),
            status: e.status,
            seats_available: e.seats_available,
            seats_total: e.seats_total,
        })
        .collect())
}

#[component]
fn HomePage() -> impl IntoView {
    let events = Resource::new(|| (), |_| list_events());
    // Flips only in the browser, once the WebAssembly has taken over the page.
    let (interactive, set_interactive) = signal(false);
    Effect::new(move |_| set_interactive.set(true));
    let refresh = move |_| events.refetch();

    view! {
        <section class="events">
            <div class="events-head">
                <h1>"On sale"</h1>
                <button class="refresh" on:click=refresh disabled=move || !interactive.get()>"Refresh"</button>
                <span id="app-state" data-interactive=move || interactive.get().to_string()>
                    {move || if interactive.get() { "live" } else { "loading…" }}
                </span>
            </div>
            <Suspense fallback=|| view! { <p>"Loading events…"</p> }>
                {move || events.get().map(|result| match result {
                    Ok(list) if list.is_empty() => view! { <p class="notice">"No events yet."</p> }.into_any(),
                    Ok(list) => view! {
                        <ul class="event-list">
                            {list.into_iter().map(|e| view! { <EventItem event=e/> }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(e) => view! { <p class="error">"Could not load events: " {e.to_string()}</p> }.into_any(),
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn EventItem(event: EventCard) -> impl IntoView {
    let availability = match event.status.as_str() {
        "sold_out" => "Sold out".to_owned(),
        "upcoming" => "On sale soon".to_owned(),
        _ if event.seats_available * 10 < event.seats_total => format!("Selling fast: {} left", event.seats_available),
        _ => format!("{} of {} seats available", event.seats_available, event.seats_total),
    };
    view! {
        <li class="event-card" data-event-id=event.event_id.clone()>
            <h2>{event.name}</h2>
            <p class="meta">{event.venue} " · " {event.starts_at}</p>
            <p class="availability">{availability}</p>
        </li>
    }
}
