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
}

#[server(prefix = "/_app")]
pub async fn load_seat_desk(event_id: String) -> Result<DeskData, AppError> {
    // A malformed id names nothing, whoever asks.
    let id: uuid::Uuid = event_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, _) = crate::server::staff().await?;
    let board = engine.board().snapshot(id).await?;
    Ok(DeskData { svg: crate::seatmap::render_for(&board, crate::seatmap::Audience::Staff), event: (*board.event).clone() })
}

#[component]
pub fn SeatDeskPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    let here = format!("/admin/events/{id}/seats");
                    match load_seat_desk(id).await {
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
    let DeskData { event, svg } = data;
    view! {
        <p class="hint">"Click seats to select them (any seat: blocked ones can be sold here). "
            <a href=format!("/admin/events/{}", event.event_id)>"Event settings"</a></p>
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
            <SeatDesk event_id=event.event_id tiers=event.tiers.clone()/>
        </div>
    }
}
