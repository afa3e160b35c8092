//! The staff home (events with live figures, what needs attention), a new
//! event, and one event's settings, waiting room and cancellation.

use frontrow_model::{
    AccessCodeBatch, AppError, AttentionState, AuditReport, Event, EventId, Layout, PaymentAttention, QueueStats, RefundPolicy, StaffEventLine,
    TicketType, CATEGORIES,
};
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use serde::{Deserialize, Serialize};

use super::param;
use super::presale::PresaleCodes;
use super::waitlist::WaitlistSection;
use crate::admin::actions::{CancelEvent, ConfigureQueue, CreateEvent, UpdateEvent};
use crate::admin::{local_input, refused, when, word, Frame};
use crate::format::money;
use crate::pages::redirect;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaffHome {
    pub events: Vec<StaffEventLine>,
    pub attention: Vec<PaymentAttention>,
}

#[server(prefix = "/_app")]
pub async fn load_staff_home() -> Result<StaffHome, AppError> {
    let (engine, user) = crate::server::staff().await?;
    Ok(StaffHome { events: engine.staff_events().await?, attention: engine.payments_needing_attention(&user).await? })
}

#[component]
pub fn StaffHomePage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_staff_home().await {
                    Err(e) => refused(e, "/admin"),
                    Ok(home) => view! { <Frame title="Box office".to_owned() here="/admin".to_owned()><Home home/></Frame> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Home(home: StaffHome) -> impl IntoView {
    let count = |state: AttentionState| home.attention.iter().filter(|p| p.state == state).count();
    let to_reconcile = count(AttentionState::CapturedWithoutBooking)
        + count(AttentionState::PendingPastWait)
        + count(AttentionState::Watched)
        + count(AttentionState::GaveUp);
    let refunds_failing = count(AttentionState::RefundFailed);
    let refunds_pending = count(AttentionState::RefundPending);
    view! {
        <section class="attention" aria-labelledby="attention-title">
            <h2 id="attention-title">"Needs attention"</h2>
            {if to_reconcile + refunds_failing + refunds_pending == 0 {
                view! { <p class="ok">"Nothing: every payment is settled and every refund has gone through."</p> }.into_any()
            } else {
                view! {
                    <ul class="attention-list">
                        {(to_reconcile > 0).then(|| view! { <li><a href="/admin/payments">{to_reconcile} " payments to reconcile"</a></li> })}
                        {(refunds_failing > 0).then(|| view! { <li class="bad"><a href="/admin/payments">{refunds_failing} " refunds failing"</a></li> })}
                        {(refunds_pending > 0).then(|| view! { <li><a href="/admin/payments">{refunds_pending} " refunds pending"</a></li> })}
                    </ul>
                }.into_any()
            }}
        </section>
        <p><a class="button-link" href="/admin/events/new">"New event"</a></p>
        <table class="data">
            <caption>"Events"</caption>
            <thead><tr>
                <th scope="col">"Event"</th><th scope="col">"Starts"</th><th scope="col">"Status"</th>
                <th scope="col">"Sold"</th><th scope="col">"Held"</th><th scope="col">"Available"</th><th scope="col">"Blocked"</th>
                <th scope="col">"Desk"</th>
            </tr></thead>
            <tbody>
                {home.events.into_iter().map(|e| {
                    let id = e.event_id;
                    view! {
                        <tr data-event-id=id.to_string()>
                            <th scope="row"><a href=format!("/admin/events/{id}")>{e.name}</a>
                                {(!e.published).then(|| view! { " " <span class="tag">"unpublished"</span> })}</th>
                            <td>{when(e.starts_at)}</td>
                            <td>{word(e.status)}</td>
                            <td class="num">{e.seats_sold}</td>
                            <td class="num">{e.seats_held}</td>
                            <td class="num">{e.seats_available}</td>
                            <td class="num">{e.seats_blocked}</td>
                            <td><a href=format!("/admin/events/{id}/seats")>"Seats"</a> " · "
                                <a href=format!("/admin/events/{id}/dashboard")>"Live"</a> " · "
                                <a href=format!("/admin/events/{id}/audit")>"Audit"</a></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[server(prefix = "/_app")]
pub async fn load_layouts_for_event() -> Result<Vec<Layout>, AppError> {
    let (engine, _) = crate::server::staff().await?;
    Ok(engine.layouts().await?)
}

#[component]
pub fn NewEventPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_layouts_for_event().await {
                    Err(e) => refused(e, "/admin/events/new"),
                    Ok(layouts) => view! {
                        <Frame title="New event".to_owned() here="/admin/events/new".to_owned()>
                            <NewEventForm layouts/>
                        </Frame>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// What fans search an event by and read on its page, in the new-event
/// form (empty) and the settings form (`event`'s own).
#[component]
fn EventDetailFields(event: Option<Event>) -> impl IntoView {
    let (kind, venue, details) = match event {
        Some(e) => (e.kind, e.venue, e.details),
        None => ("concert".to_owned(), String::new(), Default::default()),
    };
    view! {
        <label>"Category"
            <input name="kind" value=kind required maxlength="50" list="event-categories"/>
            <datalist id="event-categories">{CATEGORIES.map(|c| view! { <option value=c/> }).collect_view()}</datalist>
        </label>
        <label>"Performers (one a line)" <textarea name="performers" rows="2" maxlength="2100">{details.performers.join("\n")}</textarea></label>
        <label>"Venue" <input name="venue" value=venue required maxlength="200"/></label>
        <label>"City" <input name="city" value=details.city maxlength="100"/></label>
        <label>"Address" <input name="address" value=details.address maxlength="200"/></label>
        <label>"Doors open (UTC)" <input type="datetime-local" name="doors_at" value=details.doors_at.map(local_input)/></label>
        <label>"Notes for fans (age limits, accessibility)" <textarea name="notes" maxlength="2000" rows="3">{details.notes}</textarea></label>
    }
}

/// Whether and until when fans may cancel, and what the seller keeps.
#[component]
fn RefundPolicyFields(policy: RefundPolicy) -> impl IntoView {
    let fee = (policy.fee_cents > 0).then(|| format!("{}.{:02}", policy.fee_cents / 100, policy.fee_cents % 100));
    view! {
        <fieldset class="refund-policy">
            <legend>"Cancelling by fans"</legend>
            <label>"Fans may cancel until (hours before the start; empty: they cannot cancel)"
                <input type="number" name="cancel_until_hours" min="0" max="8760" value=policy.cancel_until_hours.map(|h| h.to_string())/></label>
            <label>"The seller keeps (% of each ticket's price)"
                <input type="number" name="cancel_keep_percent" min="0" max="100" value=policy.keep_percent.to_string()/></label>
            <label>"and a fee per ticket (€)"
                <input name="cancel_fee" inputmode="decimal" value=fee placeholder="0.00"/></label>
        </fieldset>
    }
}

/// Kinds of ticket and their prices, one a line.
#[component]
fn TicketTypeFields(types: Vec<TicketType>) -> impl IntoView {
    let text = types
        .iter()
        .map(|t| {
            format!(
                "{}: {}",
                t.name,
                t.prices.iter().map(|p| format!("{}={}", p.tier, crate::format::amount(i64::from(p.price_cents)))).collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    view! {
        <label>"Ticket types, one a line (Child: Front=20.00, Back=10.00; empty: one price per tier)"
            <textarea name="ticket_types" rows="3" maxlength="2000" aria-describedby="ticket-types-hint">{text}</textarea>
        </label>
        <p class="hint" id="ticket-types-hint">"A type is sold in the tiers it has a price for. A seat is of the first type sold in its tier unless the buyer chooses, so that type's price there is the tier's. Types are fixed once the sale opens."</p>
    }
}

#[component]
fn NewEventForm(layouts: Vec<Layout>) -> impl IntoView {
    if layouts.is_empty() {
        return view! { <p>"No layouts yet. " <a href="/admin/layouts/new">"Build a layout"</a> " first: events are seated from one."</p> }
            .into_any();
    }
    let hint = layouts
        .iter()
        .map(|l| format!("{}: {}", l.name, l.tiers.iter().map(|t| format!("{t}=")).collect::<Vec<_>>().join(" ")))
        .collect::<Vec<_>>()
        .join("; ");
    view! {
        <form class="stacked" method="post" action=CreateEvent::PATH>
            <label>"Name" <input name="name" required maxlength="200"/></label>
            <EventDetailFields event=None/>
            <label>"Starts (UTC)" <input type="datetime-local" name="starts_at" required/></label>
            <label>"Sale opens (UTC; empty: at once)" <input type="datetime-local" name="sale_opens_at"/></label>
            <label>"Hold time (seconds)" <input type="number" name="hold_ttl_seconds" value="480" min="1" max="3600"/></label>
            <label>"Seats per order" <input type="number" name="max_seats_per_order" value="8" min="1" max="50"/></label>
            <label>"Layout"
                <select name="layout_id" required>
                    {layouts.into_iter().map(|l| view! { <option value=l.layout_id.to_string()>{format!("{} ({} seats; tiers {})", l.name, l.seats_total, l.tiers.join(", "))}</option> }).collect_view()}
                </select>
            </label>
            <label>"Prices, one tier per line (Tier=65.00)"
                <textarea name="prices" rows="4" required aria-describedby="prices-hint"></textarea>
            </label>
            <p class="hint" id="prices-hint">{hint}</p>
            <TicketTypeFields types=Vec::new()/>
            <RefundPolicyFields policy=RefundPolicy::default()/>
            <label class="check"><input type="checkbox" name="published" checked/> "Published (fans can see it)"</label>
            <button class="primary" type="submit">"Create event"</button>
        </form>
    }.into_any()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaffEvent {
    pub event: Event,
    pub line: StaffEventLine,
    pub queue: QueueStats,
    pub audit: AuditReport,
    pub presales: Vec<AccessCodeBatch>,
    pub waitlist: frontrow_model::Waitlist,
}

#[server(prefix = "/_app")]
pub async fn load_staff_event(event_id: String) -> Result<StaffEvent, AppError> {
    // A malformed id names nothing, whoever asks.
    let id: EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, user) = crate::server::staff().await?;
    let event = engine.event(id).await?;
    let line = engine.staff_events().await?.into_iter().find(|e| e.event_id == id).ok_or_else(AppError::not_found)?;
    let presales = engine.access_code_batches(&user, id).await?;
    let waitlist = engine.waitlist(&user, id, None).await?;
    Ok(StaffEvent { queue: engine.queue_stats(id).await?, audit: engine.audit(Some(id)).await?, event, line, presales, waitlist })
}

#[component]
pub fn StaffEventPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    let here = format!("/admin/events/{id}");
                    match load_staff_event(id).await {
                        Err(e) => refused(e, &here),
                        Ok(data) => view! {
                            <Frame title=data.event.name.clone() here=here><EventSettings data/></Frame>
                        }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn EventSettings(data: StaffEvent) -> impl IntoView {
    let StaffEvent { event, line, queue, audit, presales, waitlist } = data;
    let id = event.event_id;
    let cancelled = event.cancelled_at.is_some();
    view! {
        <p class="meta">{event.venue.clone()} " · " {when(event.starts_at)} " · " <strong>{word(line.status)}</strong>
            {(!event.published).then(|| view! { " · " <span class="tag">"unpublished"</span> })}</p>
        <ul class="figures" aria-label="Seats">
            <li><strong>{line.seats_sold}</strong>" sold"</li>
            <li><strong>{line.seats_held}</strong>" held"</li>
            <li><strong>{line.seats_available}</strong>" available"</li>
            <li><strong>{line.seats_blocked}</strong>" blocked"</li>
            <li class=if audit.oversold_seats == 0 { "good" } else { "bad" }><strong>{audit.oversold_seats}</strong>" oversold"</li>
        </ul>
        <p class="links">
            <a href=format!("/admin/events/{id}/seats")>"Seats and counter sales"</a> " · "
            <a href=format!("/admin/events/{id}/dashboard")>"Live dashboard"</a> " · "
            <a href=format!("/admin/events/{id}/audit")>"Audit and change log"</a> " · "
            <a href=format!("/admin/bookings?event_id={id}")>"Bookings"</a> " · "
            <a href=format!("/events/{id}")>"Fan page"</a>
        </p>
        {if cancelled {
            view! { <p class="msg error" role="status">"This event is cancelled: nothing more is sold, and every booking is refunded."</p> }.into_any()
        } else {
            view! {
                <h2>"Settings"</h2>
                <form class="stacked" method="post" action=UpdateEvent::PATH>
                    <input type="hidden" name="event_id" value=id.to_string()/>
                    <label>"Name" <input name="name" value=event.name.clone() required maxlength="200"/></label>
                    <EventDetailFields event=Some(event.clone())/>
                    <label>"Starts (UTC)" <input type="datetime-local" name="starts_at" value=local_input(event.starts_at) required/></label>
                    <label>"Sale opens (UTC)" <input type="datetime-local" name="sale_opens_at" value=local_input(event.sale_opens_at) required/></label>
                    <label>"Hold time (seconds)" <input type="number" name="hold_ttl_seconds" value=event.hold_ttl_seconds min="1" max="3600"/></label>
                    <label>"Seats per order" <input type="number" name="max_seats_per_order" value=event.max_seats_per_order min="1" max="50"/></label>
                    <TicketTypeFields types=event.ticket_types.clone()/>
                    <RefundPolicyFields policy=event.refund_policy/>
                    <label class="check"><input type="checkbox" name="published" checked=event.published/> "Published (fans can see it)"</label>
                    <button class="primary" type="submit">"Save"</button>
                </form>
                <p class="hint">"Prices: " {event.tiers.iter().map(|t| format!("{} {}", t.tier, money(i64::from(t.price_cents)))).collect::<Vec<_>>().join(", ")}</p>

                <PresaleCodes event=event.clone() batches=presales/>
                <WaitlistSection list=waitlist/>

                <h2 id="waiting-room">"Waiting room"</h2>
                <QueueCountsList counts=queue.counts.clone() class="queue-figures"/>
                {queue.presale.clone().map(|p| view! {
                    <h3>"The presale's queue"</h3>
                    <p class="hint">"Fans with a presale code queue apart, drawn at random when the presale opens ("
                        {p.opens_at.format("%e %b %Y %H:%M UTC").to_string()} "), and are let in to hold during the presale only."</p>
                    <QueueCountsList counts=p.counts class="queue-figures presale-queue-figures"/>
                })}
                <form class="stacked" method="post" action=ConfigureQueue::PATH>
                    <input type="hidden" name="event_id" value=id.to_string()/>
                    <label class="check"><input type="checkbox" name="waiting_room_enabled" checked=queue.waiting_room_enabled/> "Waiting room on"</label>
                    <label class="check"><input type="checkbox" name="require_verified_email" checked=queue.require_verified_email/>
                        " Only fans with a verified email may join (they are sent a code)"</label>
                    <label class="check"><input type="checkbox" name="paused" checked=queue.paused/> "Admission paused"</label>
                    <label>"k (shoppers per remaining seat)" <input type="number" name="admission_factor" value=queue.admission_factor step="0.1" min="0.1" max="20"/></label>
                    <label>"At most shopping at once" <input type="number" name="max_active" value=queue.max_active min="1" max="1000000"/></label>
                    <button type="submit">"Apply"</button>
                </form>

                <h2>"Cancel the event"</h2>
                <form class="stacked danger" method="post" action=CancelEvent::PATH>
                    <input type="hidden" name="event_id" value=id.to_string()/>
                    <label>"Reason (fans are refunded in full)" <input name="reason" required maxlength="500"/></label>
                    <button class="danger" type="submit">"Cancel event and refund every booking"</button>
                </form>
            }.into_any()
        }}
    }
}

/// How one of the event's queues stands.
#[component]
fn QueueCountsList(counts: frontrow_model::QueueCounts, class: &'static str) -> impl IntoView {
    let drawn = counts.drawn_at.map_or_else(|| "not yet".to_owned(), |at| at.format("%e %b %H:%M:%S UTC").to_string());
    view! {
        <dl class=class>
            <dt>"Waiting"</dt><dd>{counts.queue_length}</dd>
            <dt>"Shopping now"</dt><dd>{counts.active_shoppers}</dd>
            <dt>"Admitted so far"</dt><dd>{counts.admitted_total}</dd>
            <dt>"Admissions per second"</dt><dd>{format!("{:.1}", counts.admission_rate)}</dd>
            <dt>"Drawn"</dt><dd>{drawn}</dd>
        </dl>
    }
}

/// The waiting room's controls live on the event's page now.
#[component]
pub fn WaitingRoomRedirect() -> impl IntoView {
    let Ok(id) = param("id").parse::<EventId>() else { return view! { <crate::pages::NotFound/> }.into_any() };
    let to = format!("/admin/events/{id}#waiting-room");
    redirect(&to);
    view! { <p><a href=to>"The waiting room's controls"</a></p> }.into_any()
}
