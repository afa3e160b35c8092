//! The seat desk: the event's map as staff see it (blocked seats as
//! blocked), to block and unblock seats, release a stuck hold, and sell at
//! the counter.

use frontrow_model::{AppError, Event};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::param;
use crate::admin::islands::SeatDesk;
use crate::admin::{refused, Frame};
use crate::format::money;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeskData {
    pub event: Event,
    pub svg: String,
    /// The section shown (a big venue's desk works a section at a time).
    pub section: Option<String>,
    /// The standing area shown, whose places are sold by count.
    pub standing: Option<String>,
    /// The sections, for a big venue's desk to move between.
    pub sections: Vec<String>,
}

/// The staff map: a small venue whole; a big one as its overview, then a
/// section at a time (`section`).
#[server(prefix = "/_app")]
pub async fn load_seat_desk(event_id: String, section: Option<String>) -> Result<DeskData, AppError> {
    use crate::seatmap::{draw_with, Audience, MapSettings, MapView};
    // A malformed id names nothing, whoever asks.
    let id: frontrow_model::EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, _) = crate::server::staff().await?;
    let board = engine.board().snapshot(id).await?;
    let layout = &board.layout;
    let settings = use_context::<MapSettings>().unwrap_or_default();
    let view = match section.as_deref() {
        Some(name) => {
            let index = layout.section_index(name).ok_or_else(AppError::not_found)?;
            MapView::Section { index, rows: 0..layout.sections[index].rows.len() }
        }
        None if settings.overview(layout) => MapView::Overview,
        None => MapView::Whole,
    };
    let standing = section.clone().filter(|name| layout.section_index(name).is_some_and(|s| layout.sections[s].is_standing()));
    let svg = match standing {
        Some(_) => String::new(),
        None => draw_with(&board, &view, Audience::Staff, &|name| format!("/admin/events/{id}/seats?section={name}")),
    };
    Ok(DeskData {
        svg,
        event: (*board.event).clone(),
        sections: if view == MapView::Whole { Vec::new() } else { layout.sections.iter().map(|s| s.name.clone()).collect() },
        section,
        standing,
    })
}

#[component]
pub fn SeatDeskPage() -> impl IntoView {
    let id = param("id");
    let section = leptos_router::hooks::use_query_map().read_untracked().get("section");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let (id, section) = (id.clone(), section.clone());
                Suspend::new(async move {
                    let here = format!("/admin/events/{id}/seats");
                    match load_seat_desk(id, section).await {
                        Err(e) => refused(e, &here),
                        Ok(data) => {
                            let title = format!("Seats: {}", data.event.name);
                            view! { <Frame title here><Desk data/></Frame> }.into_any()
                        }
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Desk(data: DeskData) -> impl IntoView {
    let DeskData { event, svg, section, standing, sections } = data;
    let desk = format!("/admin/events/{}/seats", event.event_id);
    view! {
        <p class="hint">"Click seats to select them (any seat: blocked ones can be sold here). "
            <a href=format!("/admin/events/{}", event.event_id)>"Event settings"</a></p>
        {(!sections.is_empty()).then(|| view! {
            <nav class="block-nav" aria-label="Sections">
                <a href=desk.clone() aria-current=section.is_none().then_some("page")>"Overview"</a>
                {sections.into_iter().map(|s| {
                    let current = (section.as_deref() == Some(s.as_str())).then_some("page");
                    let href = format!("{desk}?section={s}");
                    view! { <a href=href aria-current=current>{s}</a> }
                }).collect_view()}
            </nav>
        })}
        <ul class="legend" aria-label="Legend">
            {event.tiers.iter().enumerate().map(|(i, t)| view! {
                <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class=format!("seat t{i} av") cx="6" cy="6" r="5"/></svg>
                    {t.tier.clone()} " " {money(i64::from(t.price_cents))}</li>
            }).collect_view()}
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 hd" cx="6" cy="6" r="5"/></svg>"Held"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 sd" cx="6" cy="6" r="5"/></svg>"Sold"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 bk" cx="6" cy="6" r="5"/></svg>"Blocked (cross)"</li>
        </ul>
        <div class="event-body">
            <section class="map-area" aria-label="Seats">
                <div class="map-viewport staff-map" id="map-viewport" inner_html=svg/>
            </section>
            <SeatDesk event_id=event.event_id tiers=event.tiers.clone() ticket_types=event.ticket_types.clone() standing/>
        </div>
    }
}
