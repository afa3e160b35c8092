//! An event's page: the whole seat map of a small venue, the overview of a
//! big one, or one of its sections (a standing area's places by count),
//! each with the seat picker.

use frontrow_model::{AppError, EventStatus, TierPrice};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{long_date, param, redirect, set_status, short_date, status_word, NotFound};
use crate::format::{availability, grouped, money, refund_terms, section_label};
use crate::islands::{MapTools, PresaleCodeForm, SeatPicker, WaitlistBox};
use crate::props::*;

/// The event page's data, all from this instance's live seat map except the
/// fan's own hold: the venue whole or as an overview (`section` none; a fan
/// may ask for the whole map of a venue up to [`MapSettings::whole_at_most`]
/// seats), or one section (`block`: which block of rows of a very big one,
/// from 1).
#[server(prefix = "/_app")]
pub async fn load_event_page(
    event_id: String,
    section: Option<String>,
    block: Option<usize>,
    whole: bool,
) -> Result<Option<EventPageData>, AppError> {
    use crate::seatmap::{fans_map, MapSettings, MapView};
    use frontrow_engine::EngineError;
    let Some((engine, session, board)) = crate::server::published_board(&event_id).await? else { return Ok(None) };
    let id = board.event.event_id;
    let layout = board.layout.clone();
    let settings = use_context::<MapSettings>().unwrap_or_default();
    // What this page shows: a section (it must exist), or the venue.
    let (view, shown, feed) = match section.as_deref() {
        Some(name) => {
            let Some(index) = layout.section_index(name) else { return Ok(None) };
            let blocks = settings.blocks(&layout, index);
            let Some(rows) = blocks.get(block.unwrap_or(1).saturating_sub(1)).cloned() else { return Ok(None) };
            let s = &layout.sections[index];
            let summary = board.section_summary(index);
            let tier_index = layout.seats.get(s.seats.start).map_or(0, |seat| seat.tier_index);
            let place = SectionPlace {
                name: s.name.clone(),
                standing: s.is_standing(),
                total: summary.seats,
                available: summary.seats_available,
                price_min_cents: i64::from(summary.price_min_cents),
                tier: board.event.tiers.get(tier_index).map(|t| t.tier.clone()).unwrap_or_default(),
                blocks: blocks.iter().map(|b| format!("Rows {} to {}", s.rows[b.start].label, s.rows[b.end - 1].label)).collect(),
                block: block.unwrap_or(1).max(1),
                previous: index.checked_sub(1).map(|p| layout.sections[p].name.clone()),
                next: layout.sections.get(index + 1).map(|n| n.name.clone()),
            };
            (MapView::Section { index, rows }, Shown::Section(place), s.name.clone())
        }
        None if settings.overview(&layout) && !(whole && layout.seats.len() <= settings.whole_at_most) => {
            (MapView::Overview, Shown::Overview, "overview".to_owned())
        }
        None => (MapView::Whole, Shown::Whole, String::new()),
    };
    let user = crate::session::current_user(&session, &engine).await?;
    // Before and during a presale, what the code this fan entered lets them hold.
    let presale = match &user {
        Some(_) if presale_ahead(&board.event, chrono::Utc::now()) => match crate::session::presale_pass(&session, &engine, id).await {
            Ok(pass) => pass,
            // As for the hold below: without the database the page is drawn without it.
            Err(e) if e.kind == frontrow_model::ErrorKind::Unavailable => None,
            Err(e) => return Err(e),
        },
        _ => None,
    };
    let hold = match &user {
        // The map itself is from memory; without the database the fan's own
        // hold cannot be read, so the page is drawn without it.
        Some(u) => match engine.active_hold(u.user_id, id).await {
            Ok(hold) => hold,
            Err(EngineError::Unavailable(_)) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    // With the waiting room on, only admitted fans see the map: admitted by
    // the presale's queue while they have a code for a presale ahead, else
    // by the public sale's. A fan holding seats (an offer from the waiting
    // list) comes in by their hold, and once it is sold out (nothing free
    // nor held) there is nothing to queue for: the page offers the waiting
    // list.
    let sold_out = board.summary().status == EventStatus::SoldOut;
    let (gate, admission) = if hold.is_some() || sold_out {
        (None, None)
    } else {
        crate::session::waiting_room_gate(&session, &engine, &board.event, user.as_ref()).await?
    };
    let standing = matches!(&shown, Shown::Section(place) if place.standing);
    // A fan sent to the waiting room is not shown the map.
    let map = if standing || gate.is_some() { None } else { Some(fans_map(&board, &view, settings.refresh)) };
    let mut summary = board.summary();
    if let Shown::Section(place) = &shown {
        // The availability line speaks of this section.
        (summary.seats_total, summary.seats_available) = (place.total, place.available);
    }
    let whole_map = matches!(shown, Shown::Overview) && layout.seats.len() <= settings.whole_at_most;
    let server_now_ms = board.taken_at.timestamp_millis();
    let shared = hold.is_none() && gate.is_none() && admission.is_none() && presale.is_none();
    crate::server::RenderedPage::record(crate::server::PageFacts { server_now_ms: Some(server_now_ms), shared });
    Ok(Some(EventPageData {
        whole_map,
        summary,
        sections: match &shown {
            Shown::Whole => layout.sections.iter().filter(|s| !s.is_standing()).map(|s| s.name.clone()).collect(),
            _ => Vec::new(),
        },
        svg: map.as_ref().map(map_or_marker).unwrap_or_default(),
        epoch: map.as_ref().map_or(board.epoch, |m| m.epoch),
        seq: map.as_ref().map_or(board.seq, |m| m.seq),
        feed,
        signed_in: user.is_some(),
        hold: hold.map(|h| HoldInfo {
            hold_id: h.hold_id,
            labels: h.seat_ids.iter().map(|s| layout.seat_index(s).map_or_else(|| s.clone(), |i| layout.seat_label(i))).collect(),
            tiers: h
                .seat_ids
                .iter()
                .map(|s| {
                    layout.seat_index(s).and_then(|i| board.event.tiers.get(layout.seats[i].tier_index)).map(|t| t.tier.clone()).unwrap_or_default()
                })
                .collect(),
            hold_token: h.hold_token,
            seat_ids: h.seat_ids,
            total_cents: h.total_cents,
            expires_at_ms: h.expires_at.timestamp_millis(),
        }),
        server_now_ms,
        gate,
        admission_token: admission.as_ref().map(|a| a.admission_token.clone()),
        queue_token: admission.and_then(|a| a.queue_token),
        presale,
        tiers_sold_out: board.tiers_sold_out(),
        shown,
    }))
}

#[cfg(feature = "ssr")]
/// Is one of the event's presales open now or still to come (before its
/// public sale)? A fan may enter its code from then on.
fn presale_ahead(event: &frontrow_model::Event, now: chrono::DateTime<chrono::Utc>) -> bool {
    event.sale_opens_at > now && event.presales.iter().any(|p| p.ends_at > now)
}

/// The signed-in fan, when their page of this event is the one every
/// signed-in fan gets (no hold of theirs, no waiting room): a page kept for
/// fans then serves them with their own header links put in. `None`: their
/// page is rendered for them. The database is asked only when the board
/// says the fan may hold seats (a hold asked of another instance in the
/// last moment may not be on this board yet: its page then misses the
/// hold until the next one).
#[cfg(feature = "ssr")]
pub async fn fan_sharing_the_page(
    engine: &frontrow_engine::Engine,
    session: &tower_sessions::Session,
    event_id: frontrow_model::EventId,
) -> Result<Option<frontrow_model::User>, AppError> {
    use frontrow_engine::EngineError;
    let Some(user) = crate::session::current_user(session, engine).await? else { return Ok(None) };
    let live = match engine.board().event(event_id).await {
        Ok(live) => live,
        Err(EngineError::NotFound) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // Before or during a presale the fan may have entered a code: their page is their own.
    if !live.facts().is_some_and(|event| event.published && !event.waiting_room_enabled && !presale_ahead(&event, chrono::Utc::now())) {
        return Ok(None);
    }
    // The board knows whose tags are on its seats: most fans hold nothing
    // and cost no query.
    if !live.may_be_holding(user.user_id) {
        return Ok(Some(user));
    }
    // As the page itself does: without the database no hold is shown.
    match engine.active_hold(user.user_id, event_id).await {
        Ok(None) | Err(EngineError::Unavailable(_)) => Ok(Some(user)),
        Ok(Some(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The map for the page's markup: the marker when the server puts the map
/// in after rendering (a page request), else the map itself.
#[cfg(feature = "ssr")]
fn map_or_marker(map: &crate::seatmap::DrawnMap) -> String {
    use crate::seatmap::MapSlot;
    match use_context::<http::request::Parts>().and_then(|parts| parts.extensions.get::<MapSlot>().cloned()) {
        Some(slot) => {
            slot.put(map.clone());
            MapSlot::MARKER.to_owned()
        }
        None => map.svg.to_string(),
    }
}

/// Renders an event page's data, or where the fan must go instead.
fn event_page(loaded: Result<Option<EventPageData>, AppError>) -> AnyView {
    match loaded {
        Ok(Some(data)) if data.gate.is_some() => {
            let to = data.gate.clone().unwrap_or_default();
            redirect(&to);
            view! { <p>"This sale has a waiting room: " <a href=to>"join the queue"</a> "."</p> }.into_any()
        }
        Ok(Some(data)) => view! { <EventView data/> }.into_any(),
        Ok(None) => view! { <NotFound/> }.into_any(),
        Err(e) => {
            set_status(e.status());
            view! { <p class="error" role="alert">"Could not load the event: " {e.message}</p> }.into_any()
        }
    }
}

#[component]
pub fn EventPage() -> impl IntoView {
    let id = param("id");
    let whole = use_query_map().read_untracked().get("view").as_deref() == Some("whole");
    view! {
        <Suspense fallback=|| view! { <p>"Loading the seat map…"</p> }>
            {move || {
                let id = id.clone();
                Suspend::new(async move { event_page(load_event_page(id, None, None, whole).await) })
            }}
        </Suspense>
    }
}

#[component]
pub fn SectionPage() -> impl IntoView {
    let (id, section) = (param("id"), param("section"));
    let block = use_query_map().read_untracked().get("block").and_then(|b| b.parse().ok());
    view! {
        <Suspense fallback=|| view! { <p>"Loading the section…"</p> }>
            {move || {
                let (id, section) = (id.clone(), section.clone());
                Suspend::new(async move { event_page(load_event_page(id, Some(section), block, false).await) })
            }}
        </Suspense>
    }
}

#[component]
fn EventView(data: EventPageData) -> impl IntoView {
    let summary = data.summary;
    let event = summary.event.clone();
    let status = status_word(summary.status);
    let (text, class) = availability(&status, summary.seats_available, summary.seats_total);
    let event_path = format!("/events/{}", event.event_id);
    let standing = match &data.shown {
        Shown::Section(place) if place.standing => {
            Some(StandingOffer { section: place.name.clone(), available: place.available, price_cents: place.price_min_cents })
        }
        _ => None,
    };
    // The first-pick module lets this fan pick seats before the app has
    // arrived, up to the per-order limit, when picking can lead anywhere.
    // With every seat held, some may come back on the map while it is open.
    let on_sale = matches!(summary.status, EventStatus::OnSale | EventStatus::AllHeld)
        || data.presale.as_ref().is_some_and(|pass| pass.is_open(chrono::Utc::now()));
    let pick_limit = (on_sale && data.hold.is_none()).then_some(event.max_seats_per_order);
    let picker = PickerProps {
        event_id: event.event_id,
        hold_ttl_seconds: event.hold_ttl_seconds,
        on_sale,
        signed_in: data.signed_in,
        max_seats: event.max_seats_per_order,
        tiers: event.tiers.clone(),
        epoch: data.epoch,
        seq: data.seq,
        feed: data.feed.clone(),
        standing,
        hold: data.hold,
        server_now_ms: data.server_now_ms,
        admission_token: data.admission_token,
        queue_token: data.queue_token,
        refund_terms: refund_terms(&event.refund_policy, event.starts_at, chrono::Utc::now()),
        ticket_types: event.ticket_types.clone(),
    };
    // Once the sale is open, the tiers with nothing free have a waiting list.
    let waitlist = (matches!(summary.status, EventStatus::OnSale | EventStatus::AllHeld | EventStatus::SoldOut) && !data.tiers_sold_out.is_empty())
        .then(|| match data.signed_in {
            true => view! { <WaitlistBox event_id=event.event_id tiers=data.tiers_sold_out.clone() max_seats=event.max_seats_per_order/> }.into_any(),
            false => {
                let sign_in = format!("/signin?next=/events/{}", event.event_id);
                view! { <p class="waitlist-sign-in" id="waitlist">"Sold out in " {data.tiers_sold_out.join(", ")} ". " <a href=sign_in>"Sign in"</a> " to join the waiting list."</p> }.into_any()
            }
        });
    let title = match &data.shown {
        Shown::Section(place) if place.standing => format!("Standing area {} · {}", place.name, event.name),
        Shown::Section(place) => format!("Section {} · {}", place.name, event.name),
        _ => event.name.clone(),
    };
    let map_area = match data.shown.clone() {
        Shown::Whole => view! {
            <Legend tiers=event.tiers.clone()/>
            <MapTools sections=data.sections/>
            <div class="map-viewport" id="map-viewport" inner_html=data.svg/>
        }
        .into_any(),
        Shown::Overview => view! {
            <p class="hint" id="overview-hint">"Choose a section to see its seats. Shading shows how much is left: the darker, the more."</p>
            <div class="map-viewport overview-viewport" id="map-viewport" inner_html=data.svg/>
            {data.whole_map.then(|| view! { <p class="list-path"><a href=format!("{event_path}?view=whole")>"Show every seat on one map"</a></p> })}
        }
        .into_any(),
        Shown::Section(place) if place.standing => view! { <StandingArea place/> }.into_any(),
        Shown::Section(place) => view! {
            <SectionNav event_path=event_path.clone() place/>
            <Legend tiers=event.tiers.clone()/>
            <MapTools sections=Vec::new()/>
            <div class="map-viewport" id="map-viewport" inner_html=data.svg/>
        }
        .into_any(),
    };
    let list_link = match &data.shown {
        Shown::Section(place) => format!("{event_path}/sections/{}/rows", place.name),
        _ => format!("{event_path}/sections"),
    };
    view! {
        <Title text=title/>
        <article class="event-page" data-event-id=event.event_id.to_string() data-pick-limit=pick_limit>
            <header class="event-head">
                <h1>{event.name.clone()}</h1>
                <p class="meta">{event.venue.clone()} " · " {long_date(event.starts_at)}</p>
                <p class=format!("availability {class}") id="availability" data-total=summary.seats_total data-available=summary.seats_available data-status=status>{text}</p>
                {(summary.status == EventStatus::Scheduled).then(|| view! { <p class="notice">"Sale opens " {short_date(event.sale_opens_at)} "."</p> })}
                {(summary.status == EventStatus::Scheduled).then(|| view! { <Presales event=event.clone() pass=data.presale.clone() signed_in=data.signed_in/> })}
                <EventFacts event=event.clone()/>
                {waitlist}
            </header>
            <div class="event-body">
                <section class="map-area" aria-label="Seats">
                    {map_area}
                    <p class="list-path"><a href=list_link>"Choose from a list instead"</a></p>
                </section>
                <SeatPicker props=picker/>
            </div>
        </article>
    }
}

/// The event's presales: the one open now and those to come, with the code
/// form (a code may be entered before its presale opens, to queue for its
/// draw) or what the fan's code opens and when.
#[component]
fn Presales(event: frontrow_model::Event, pass: Option<frontrow_model::PresalePass>, signed_in: bool) -> impl IntoView {
    let now = chrono::Utc::now();
    let (open, coming): (Vec<_>, Vec<_>) = event.presales.iter().filter(|p| p.ends_at > now).partition(|p| p.is_open(now));
    if open.is_empty() && coming.is_empty() {
        return None;
    }
    let window = |p: &&frontrow_model::Presale| format!("{} from {} to {}", p.label, short_date(p.starts_at), short_date(p.ends_at));
    let coming = (!coming.is_empty())
        .then(|| view! { <p class="presales-coming">"Presale: " {coming.iter().map(window).collect::<Vec<_>>().join("; ")} "."</p> });
    let now_open = match (open.first(), pass) {
        (_, Some(pass)) if pass.is_open(now) => Some(view! {
            <p class="presale-pass" id="presale-pass">"Presale for " {pass.label.clone()} ": your code opens " {pass.describe()} ", until " {short_date(pass.ends_at)} "."</p>
        }.into_any()),
        (_, Some(pass)) => Some(view! {
            <p class="presale-pass" id="presale-pass">"Presale for " {pass.label.clone()} ": your code opens " {pass.describe()} ", from "
                {short_date(pass.starts_at)} " until " {short_date(pass.ends_at)} "."</p>
        }.into_any()),
        (open_now, None) => {
            let invite = match open_now {
                Some(p) => {
                    let labels = open.iter().map(|p| p.label.clone()).collect::<Vec<_>>().join(", ");
                    format!("Presale for {labels} until {}. Have a code? Enter it to choose seats now.", short_date(p.ends_at))
                }
                None => "Have a presale code? Enter it now to be ready when the presale opens.".to_owned(),
            };
            let sign_in = format!("/signin?next=/events/{}", event.event_id);
            Some(view! {
                <p class="presale-open">{invite}</p>
                {if signed_in {
                    view! { <PresaleCodeForm event_id=event.event_id/> }.into_any()
                } else {
                    view! { <p><a href=sign_in>"Sign in"</a> " to enter your code."</p> }.into_any()
                }}
            }.into_any())
        }
    };
    Some(view! { <section class="presale" id="presale" aria-label="Presale">{now_open}{coming}</section> })
}

/// What a fan looks for before choosing: when, where, who, the prices,
/// what to know, and the page's own address to pass on.
#[component]
fn EventFacts(event: frontrow_model::Event) -> impl IntoView {
    let details = event.details;
    let place = [event.venue, details.address, details.city].into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join(", ");
    let prices = event.tiers.iter().map(|t| format!("{} {}", t.tier, money(i64::from(t.price_cents)))).collect::<Vec<_>>().join(" · ");
    let link = format!("/events/{}", event.event_id);
    let href = link.clone();
    view! {
        <dl class="event-facts" id="event-facts">
            <dt>"When"</dt>
            <dd>{long_date(event.starts_at)} {details.doors_at.map(|doors| format!(" (doors {})", doors.format("%H:%M UTC")))}</dd>
            <dt>"Where"</dt>
            <dd>{place}</dd>
            {(!details.performers.is_empty()).then(|| view! { <dt>"With"</dt> <dd>{details.performers.join(", ")}</dd> })}
            <dt>"Category"</dt>
            <dd>{event.kind}</dd>
            <dt>"Prices"</dt>
            <dd>{prices}</dd>
            {(!event.ticket_types.is_empty()).then(|| {
                let types = event.ticket_types.iter().map(|t| {
                    let prices = t.prices.iter().map(|p| format!("{} {}", p.tier, money(i64::from(p.price_cents)))).collect::<Vec<_>>().join(", ");
                    format!("{}: {prices}", t.name)
                }).collect::<Vec<_>>().join(" · ");
                view! { <dt>"Ticket types"</dt> <dd class="ticket-types">{types}</dd> }
            })}
            {event.cancelled_at.is_none().then(|| view! {
                <dt>"Cancelling"</dt>
                <dd class="refund-terms">{refund_terms(&event.refund_policy, event.starts_at, chrono::Utc::now())}</dd>
            })}
            {(!details.notes.is_empty()).then(|| view! { <dt>"Good to know"</dt> <dd class="notes">{details.notes}</dd> })}
            <dt>"Share"</dt>
            <dd><a class="share-link" rel="bookmark" href=href>{link}</a></dd>
        </dl>
    }
}

/// The way from a section to the overview, its neighbours and (for a very
/// big section) its other blocks of rows.
#[component]
fn SectionNav(event_path: String, place: SectionPlace) -> impl IntoView {
    let section_path = format!("{event_path}/sections/{}", place.name);
    let neighbour = |name: Option<String>, rel: &'static str, arrow: &'static str| {
        name.map(|n| {
            let href = format!("{event_path}/sections/{n}");
            let text = if rel == "prev" { format!("{arrow} Section {n}") } else { format!("Section {n} {arrow}") };
            view! { <a href=href rel=rel>{text}</a> }
        })
    };
    view! {
        <nav class="section-nav" aria-label="Sections">
            <a href=event_path.clone()>"Whole venue"</a>
            {neighbour(place.previous.clone(), "prev", "←")}
            {neighbour(place.next.clone(), "next", "→")}
        </nav>
        {(place.blocks.len() > 1).then(|| view! {
            <nav class="block-nav" aria-label="Rows of this section">
                {place.blocks.iter().enumerate().map(|(k, label)| {
                    let href = format!("{section_path}?block={}", k + 1);
                    let current = (k + 1 == place.block).then_some("page");
                    view! { <a href=href aria-current=current>{label.clone()}</a> }
                }).collect_view()}
            </nav>
        })}
    }
}

/// A standing area: what it is and how many places are left (the picker
/// beside it holds them by count).
#[component]
fn StandingArea(place: SectionPlace) -> impl IntoView {
    let label = section_label(&place.name, true, place.available, place.total, place.price_min_cents);
    view! {
        <div class="standing-area" id="standing-area" data-section=place.name.clone() data-total=place.total aria-live="polite">
            <h2>{format!("Standing area {}", place.name)}</h2>
            <p>"General admission: stand anywhere in the area. Each place is one ticket, held by count."</p>
            <p class="places-left" id="places-left" aria-label=label>
                <strong id="places-available">{grouped(place.available)}</strong> " of " {grouped(place.total)} " places left · "
                {money(place.price_min_cents)} " each (" {place.tier.clone()} ")"
            </p>
        </div>
    }
}

#[component]
fn Legend(tiers: Vec<TierPrice>) -> impl IntoView {
    view! {
        <ul class="legend" aria-label="Legend">
            {tiers.into_iter().enumerate().map(|(i, t)| view! {
                <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class=format!("seat t{i} av") cx="6" cy="6" r="5"/></svg>
                    {t.tier} " " {money(i64::from(t.price_cents))}</li>
            }).collect_view()}
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 av sel" cx="6" cy="6" r="5"/></svg>"Your selection"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 hd" cx="6" cy="6" r="5"/></svg>"Held (ring)"</li>
            <li><svg class="key" viewBox="0 0 12 12" aria-hidden="true"><circle class="seat t0 sd" cx="6" cy="6" r="5"/></svg>"Sold (small dot)"</li>
        </ul>
    }
}
