//! An event's live dashboard, and its audit with the change log.

use frontrow_model::{AppError, AuditReport, Event, EventStats, LogEntry};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

use super::param;
use crate::admin::islands::LiveDashboard;
use crate::admin::{refused, when, Frame};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DashboardData {
    pub event: Event,
    pub stats: EventStats,
}

#[server(prefix = "/_app")]
pub async fn load_dashboard(event_id: String) -> Result<DashboardData, AppError> {
    // A malformed id names nothing, whoever asks.
    let id: frontrow_model::EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, user) = crate::server::staff().await?;
    Ok(DashboardData { event: engine.event(id).await?, stats: engine.event_stats(&user, id).await? })
}

#[component]
pub fn DashboardPage() -> impl IntoView {
    let id = param("id");
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let id = id.clone();
                Suspend::new(async move {
                    let here = format!("/admin/events/{id}/dashboard");
                    match load_dashboard(id).await {
                        Err(e) => refused(e, &here),
                        Ok(data) => {
                            let title = format!("Live: {}", data.event.name);
                            view! {
                                <Frame title here>
                                    <p class="hint"><a href=format!("/admin/events/{}", data.event.event_id)>"Event settings"</a>
                                        " · figures refresh every two seconds"</p>
                                    <LiveDashboard event_id=data.event.event_id stats=data.stats/>
                                </Frame>
                            }.into_any()
                        }
                    }
                })
            }}
        </Suspense>
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditData {
    pub event: Event,
    pub audit: AuditReport,
    pub log: Vec<LogEntry>,
}

#[server(prefix = "/_app")]
pub async fn load_audit(event_id: String, seat_id: Option<String>, kind: Option<String>, since: Option<String>) -> Result<AuditData, AppError> {
    // A malformed id names nothing, whoever asks.
    let id: frontrow_model::EventId = event_id.parse().map_err(|_| AppError::not_found())?;
    let (engine, _) = crate::server::staff().await?;
    let since = match since.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M")
                .map_err(|_| AppError::invalid("since must be YYYY-MM-DDTHH:MM (UTC)"))?
                .and_utc(),
        ),
        None => None,
    };
    let filter = frontrow_engine::changelog::LogFilter {
        seat_id: seat_id.filter(|s| !s.is_empty()),
        kind: kind.filter(|k| !k.is_empty()),
        since,
        until: None,
        limit: Some(500),
    };
    Ok(AuditData { event: engine.event(id).await?, audit: engine.audit(Some(id)).await?, log: engine.change_log(id, &filter).await? })
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let id = param("id");
    let query = use_query_map().read_untracked().clone();
    let (seat, kind, since) = (query.get("seat_id"), query.get("kind"), query.get("since"));
    view! {
        <Suspense fallback=|| ()>
            {move || {
                let (id, seat, kind, since) = (id.clone(), seat.clone(), kind.clone(), since.clone());
                Suspend::new(async move {
                    let here = format!("/admin/events/{id}/audit");
                    match load_audit(id, seat.clone(), kind.clone(), since.clone()).await {
                        Err(e) => refused(e, &here),
                        Ok(data) => {
                            let title = format!("Audit: {}", data.event.name);
                            view! { <Frame title here><Audit data seat kind since/></Frame> }.into_any()
                        }
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Audit(data: AuditData, seat: Option<String>, kind: Option<String>, since: Option<String>) -> impl IntoView {
    let AuditData { event, audit, log } = data;
    let id = event.event_id;
    let clean = audit.violations().is_empty();
    let csv = format!(
        "/api/v1/admin/events/{id}/log.csv?{}",
        [("seat_id", &seat), ("kind", &kind)].iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}"))).collect::<Vec<_>>().join("&")
    );
    view! {
        <section class=if clean { "audit clean" } else { "audit broken" } aria-labelledby="audit-title">
            <h2 id="audit-title">"Invariant audit"</h2>
            <p class="oversold"><strong id="oversold">{audit.oversold_seats}</strong>" seats oversold "
                <span>{if audit.oversold_seats == 0 { "(must be 0: it is)" } else { "(must be 0!)" }}</span></p>
            <dl class="audit-figures">
                <dt>"Sold"</dt><dd>{audit.seats_sold}</dd>
                <dt>"Held"</dt><dd>{audit.seats_held}</dd>
                <dt>"Available"</dt><dd>{audit.seats_available}</dd>
                <dt>"Blocked"</dt><dd>{audit.seats_blocked}</dd>
                <dt>"Bookings"</dt><dd>{audit.bookings}</dd>
                <dt>"Captured, neither booked nor refunded"</dt><dd>{audit.payments_captured_without_booking}</dd>
                <dt>"Held without a live hold"</dt><dd>{audit.held_without_live_hold}</dd>
                <dt>"Sold with booking and tickets out of step"</dt><dd>{audit.sold_mismatched}</dd>
                <dt>"Refunds pending"</dt><dd>{audit.refunds_pending}</dd>
            </dl>
            {(!clean).then(|| view! { <p class="msg error" role="alert">{audit.violations().join("; ")}</p> })}
        </section>
        <h2>"Exports"</h2>
        <ul>
            <li><a href=format!("/api/v1/admin/events/{id}/sales.csv")>"Sales, one line per ticket (CSV)"</a></li>
            <li><a href=format!("/api/v1/admin/events/{id}/sales-summary.csv?by=tier")>"Sales per tier (CSV)"</a></li>
            <li><a href=format!("/api/v1/admin/events/{id}/sales-summary.csv?by=section")>"Sales per section (CSV)"</a></li>
            <li><a href=format!("/api/v1/admin/events/{id}/sales-summary.csv?by=day")>"Sales per day (CSV)"</a></li>
            <li><a href=format!("/api/v1/admin/events/{id}/sales-summary.csv?by=type")>"Sales per ticket type (CSV)"</a></li>
            <li><a href=csv>"This change log (CSV)"</a></li>
        </ul>
        <h2>"Change log"</h2>
        <form class="filters" method="get">
            <label>"Seat" <input name="seat_id" value=seat.clone().unwrap_or_default() maxlength="64"/></label>
            <label>"Kind" <input name="kind" value=kind.clone().unwrap_or_default() maxlength="64" list="log-kinds"/></label>
            <datalist id="log-kinds">
                {["hold", "release", "checkout", "sale", "expired", "payment_not_taken", "payment_deadline", "counter_hold", "block",
                  "unblock", "staff_release", "refund", "cancel", "event_created", "event_changed", "event_published",
                  "event_unpublished", "event_cancelled", "seats_blocked", "seats_unblocked", "hold_released", "counter_sale",
                  "check_in", "tickets_resent", "payment_settled", "waiting_room_changed"]
                    .into_iter().map(|k| view! { <option value=k/> }).collect_view()}
            </datalist>
            <label>"Since (UTC)" <input type="datetime-local" name="since" value=since.clone().unwrap_or_default()/></label>
            <button type="submit">"Filter"</button>
        </form>
        <table class="data log">
            <caption>{format!("{} entries, newest first", log.len())}</caption>
            <thead><tr><th scope="col">"When"</th><th scope="col">"What"</th><th scope="col">"Seats"</th><th scope="col">"Who"</th><th scope="col">"Detail"</th></tr></thead>
            <tbody>
                {log.into_iter().map(|e| view! {
                    <tr>
                        <td>{when(e.at)}</td>
                        <td>{e.kind}</td>
                        <td>{e.seat_ids.join(" ")}</td>
                        <td>{e.actor.unwrap_or_else(|| "system".to_owned())}</td>
                        <td>{e.detail}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
