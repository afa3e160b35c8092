//! The seat list: every seat reachable without the map, as plain lists and
//! forms that work without JavaScript. An event's sections, a section's
//! rows (or a standing area's places by count), a row's seats to tick and
//! hold; the hold is then paid for beside the seat picker.

use frontrow_model::{AppError, SectionSummary};
use leptos::prelude::*;
use leptos_meta::Title;

use super::{form_error, param, redirect, set_status, NotFound};
use crate::format::{grouped, money, section_label};
use crate::props::*;

/// What the seat list shows: the sections (`section` none), a section's
/// rows, or a row's seats.
#[server(prefix = "/_app")]
pub async fn load_choice(event_id: String, section: Option<String>, row: Option<String>) -> Result<Option<ChoiceData>, AppError> {
    use frontrow_model::{EventStatus, SeatStatus};
    let Some((engine, session, board)) = crate::server::published_board(&event_id).await? else { return Ok(None) };
    let user = crate::session::current_user(&session, &engine).await?;
    let (gate, _) = crate::session::waiting_room_gate(&session, &engine, &board.event, user.as_ref()).await?;
    // The lists are the same for every viewer like this one (signed in or
    // not) who is let in.
    crate::server::RenderedPage::record(crate::server::PageFacts { server_now_ms: None, shared: gate.is_none() });
    let layout = &board.layout;
    let index = match section.as_deref() {
        None => None,
        Some(name) => match layout.section_index(name) {
            Some(index) => Some(index),
            None => return Ok(None),
        },
    };
    let mut data = ChoiceData {
        event: (*board.event).clone(),
        gate,
        signed_in: user.is_some(),
        on_sale: matches!(board.summary().status, EventStatus::OnSale | EventStatus::AllHeld),
        sections: Vec::new(),
        section: index.map(|s| board.section_summary(s)),
        rows: Vec::new(),
        row: None,
        seats: Vec::new(),
    };
    let free = |i: usize| board.statuses[i] == SeatStatus::Available;
    match (index, row.as_deref()) {
        (None, _) => data.sections = (0..layout.sections.len()).map(|s| board.section_summary(s)).collect(),
        (Some(s), None) => {
            data.rows = layout.sections[s]
                .rows
                .iter()
                .filter(|_| !layout.sections[s].is_standing())
                .map(|r| RowChoice {
                    label: r.label.clone(),
                    total: r.seats.len() as i64,
                    available: r.seats.iter().filter(|&&i| free(i)).count() as i64,
                    price_min_cents: r.seats.iter().map(|&i| i64::from(layout.seats[i].price_cents)).min().unwrap_or(0),
                })
                .collect()
        }
        (Some(s), Some(label)) => {
            let Some(r) = layout.sections[s].rows.iter().find(|r| r.label == label && !layout.sections[s].is_standing()) else { return Ok(None) };
            data.row = Some(r.label.clone());
            data.seats = r
                .seats
                .iter()
                .map(|&i| {
                    let status = board.statuses[i].for_fans();
                    SeatChoice {
                        seat_id: layout.seats[i].seat_id.clone(),
                        label: format!("{}, {}", layout.seat_label(i), money(i64::from(layout.seats[i].price_cents))),
                        available: status == SeatStatus::Available,
                        status: status.word().to_owned(),
                    }
                })
                .collect();
        }
    }
    Ok(Some(data))
}

/// Loads the list, or sends the fan where they must go instead.
fn choice_page(loaded: Result<Option<ChoiceData>, AppError>, body: fn(ChoiceData) -> AnyView) -> AnyView {
    match loaded {
        Ok(Some(data)) if data.gate.is_some() => {
            let to = data.gate.clone().unwrap_or_default();
            redirect(&to);
            view! { <p>"This sale has a waiting room: " <a href=to>"join the queue"</a> "."</p> }.into_any()
        }
        Ok(Some(data)) => body(data),
        Ok(None) => view! { <NotFound/> }.into_any(),
        Err(e) => {
            set_status(e.status());
            view! { <p class="error" role="alert">"Could not load the seats: " {e.message}</p> }.into_any()
        }
    }
}

fn section_words(s: &SectionSummary) -> String {
    section_label(&s.section, s.kind == frontrow_model::SectionKind::Standing, s.seats_available, s.seats, i64::from(s.price_min_cents))
}

/// The crumbs back up the list, and a hint for fans not yet signed in.
#[component]
fn ChoiceHead(data: ChoiceData, title: String) -> impl IntoView {
    let event_path = format!("/events/{}", data.event.event_id);
    let sections_path = format!("{event_path}/sections");
    let section = data.section.as_ref().map(|s| (s.section.clone(), format!("{sections_path}/{}/rows", s.section)));
    let next = format!("/signin?next={sections_path}");
    view! {
        <Title text=format!("{title} · {}", data.event.name)/>
        <nav class="crumbs" aria-label="Breadcrumb">
            <a href=event_path.clone()>{data.event.name.clone()}</a>
            " › " <a href=sections_path.clone()>"Sections"</a>
            {section.map(|(name, href)| view! { " › " <a href=href>{format!("Section {name}")}</a> })}
        </nav>
        <h1>{title}</h1>
        {form_error().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        {(!data.signed_in).then(|| view! { <p class="hint"><a href=next>"Sign in"</a> " to hold seats."</p> })}
        {(!data.on_sale).then(|| view! { <p class="hint">"Tickets for this event are not on sale right now."</p> })}
    }
}

#[component]
pub fn ChooseSectionsPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    choice_page(load_choice(id, None, None).await, |data| {
                        let base = format!("/events/{}/sections", data.event.event_id);
                        view! {
                            <section class="choose">
                                <ChoiceHead data=data.clone() title="Choose a section".to_owned()/>
                                <ul class="choice-list">
                                    {data.sections.into_iter().map(|s| {
                                        let href = format!("{base}/{}/rows", s.section);
                                        view! { <li><a href=href>{section_words(&s)}</a></li> }
                                    }).collect_view()}
                                </ul>
                            </section>
                        }
                        .into_any()
                    })
                })
            }}
        </Suspense>
    }
}

/// The form that holds places of a standing area by count.
#[component]
fn PlacesForm(data: ChoiceData, section: SectionSummary) -> impl IntoView {
    let most = i64::from(data.event.max_seats_per_order).min(section.seats_available).max(1);
    view! {
        <form class="places-form" method="post" action="/_app/hold_from_list">
            <input type="hidden" name="event_id" value=data.event.event_id.to_string()/>
            <input type="hidden" name="section" value=section.section.clone()/>
            <p>{format!("{} of {} places left, {} each.", grouped(section.seats_available), grouped(section.seats), money(i64::from(section.price_min_cents)))}</p>
            <label>"Standing places "
                <select name="count" id="places-count">
                    {(1..=most).map(|n| view! { <option value=n.to_string()>{n}</option> }).collect_view()}
                </select>
            </label>
            <button type="submit" class="primary" disabled=section.seats_available == 0>"Hold places"</button>
        </form>
    }
}

#[component]
pub fn ChooseSectionPage() -> impl IntoView {
    let (id, section) = (param("id"), param("section"));
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let (id, section) = (id.clone(), section.clone());
                Suspend::new(async move {
                    choice_page(load_choice(id, Some(section), None).await, |data| {
                        let Some(section) = data.section.clone() else { return view! { <NotFound/> }.into_any() };
                        let standing = section.kind == frontrow_model::SectionKind::Standing;
                        let base = format!("/events/{}/sections/{}/rows", data.event.event_id, section.section);
                        let title = if standing { format!("Standing area {}", section.section) } else { format!("Section {}: choose a row", section.section) };
                        view! {
                            <section class="choose">
                                <ChoiceHead data=data.clone() title/>
                                <p>{section_words(&section)}</p>
                                {if standing {
                                    view! { <PlacesForm data=data.clone() section/> }.into_any()
                                } else {
                                    view! {
                                        <ul class="choice-list">
                                            {data.rows.into_iter().map(|r| {
                                                let href = format!("{base}/{}", r.label);
                                                let words = if r.available == 0 {
                                                    format!("Row {}: sold out", r.label)
                                                } else {
                                                    format!("Row {}: {} of {} available, from {}", r.label, r.available, r.total, money(r.price_min_cents))
                                                };
                                                view! { <li><a href=href>{words}</a></li> }
                                            }).collect_view()}
                                        </ul>
                                    }.into_any()
                                }}
                            </section>
                        }
                        .into_any()
                    })
                })
            }}
        </Suspense>
    }
}

#[component]
pub fn ChooseRowPage() -> impl IntoView {
    let (id, section, row) = (param("id"), param("section"), param("row"));
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let (id, section, row) = (id.clone(), section.clone(), row.clone());
                Suspend::new(async move {
                    choice_page(load_choice(id, Some(section), Some(row)).await, |data| {
                        let (Some(section), Some(row)) = (data.section.clone(), data.row.clone()) else { return view! { <NotFound/> }.into_any() };
                        let free = data.seats.iter().filter(|s| s.available).count();
                        view! {
                            <section class="choose">
                                <ChoiceHead data=data.clone() title=format!("Section {}, row {row}", section.section)/>
                                <form class="seats-form" method="post" action="/_app/hold_from_list">
                                    <input type="hidden" name="event_id" value=data.event.event_id.to_string()/>
                                    <input type="hidden" name="section" value=section.section.clone()/>
                                    <fieldset>
                                        <legend>{format!("Seats of row {row}: {free} of {} available (up to {} per order)", data.seats.len(), data.event.max_seats_per_order)}</legend>
                                        <ul class="seat-choices">
                                            {data.seats.into_iter().map(|s| {
                                                let id = format!("pick-{}", s.seat_id);
                                                let label = if s.available { s.label.clone() } else { format!("{}, {}", s.label, s.status) };
                                                view! {
                                                    <li>
                                                        <input type="checkbox" name="seat_ids[]" value=s.seat_id.clone() id=id.clone() disabled=!s.available/>
                                                        <label for=id>{label}</label>
                                                    </li>
                                                }
                                            }).collect_view()}
                                        </ul>
                                    </fieldset>
                                    <button type="submit" class="primary" disabled=free == 0>"Hold selected seats"</button>
                                </form>
                            </section>
                        }
                        .into_any()
                    })
                })
            }}
        </Suspense>
    }
}
