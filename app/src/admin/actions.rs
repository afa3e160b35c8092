//! The box office's server functions: every staff action the staff pages
//! take, over the same engine commands as the admin JSON API.
//!
//! Those the pages post as plain forms take their fields as text (a form
//! post works without JavaScript and is redirected back to `back`); those
//! the staff islands call take JSON.

#[cfg(feature = "ssr")]
use crate::server::{back_to, staff};
#[cfg(feature = "ssr")]
use frontrow_model::TierPrice;
use frontrow_model::{
    AccessCodeBatchId, AppError, Booking, BookingId, CheckinResult, CounterPayment, EventId, EventStats, IdempotencyKey, Layout, LayoutId,
    NewSection, PaymentId, PaymentToken, RefundResult, SeatId, Stage, TicketId, UserId, WaitlistEntryId,
};
#[cfg(feature = "ssr")]
use frontrow_model::{EventChanges, NewStaffUser, QueueSettings, Role, UserChanges};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

/// A `datetime-local` field (read as UTC, as the pages label times).
#[cfg(feature = "ssr")]
fn utc(field: &str, value: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, AppError> {
    if value.trim().is_empty() {
        return Ok(None);
    }
    chrono::NaiveDateTime::parse_from_str(value.trim(), "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(value.trim(), "%Y-%m-%dT%H:%M:%S"))
        .map(|t| Some(t.and_utc()))
        .map_err(|_| AppError::invalid(format!("{field} must be a date and time (YYYY-MM-DDTHH:MM, UTC)")))
}

#[cfg(feature = "ssr")]
fn number(field: &str, value: &str) -> Result<Option<i32>, AppError> {
    if value.trim().is_empty() {
        return Ok(None);
    }
    value.trim().parse().map(Some).map_err(|_| AppError::invalid(format!("{field} must be a whole number")))
}

/// An amount in euros as staff type it (`2.50`), in cents.
#[cfg(feature = "ssr")]
fn cents(field: &str, value: &str) -> Result<Option<i32>, AppError> {
    if value.trim().is_empty() {
        return Ok(None);
    }
    let euros: f64 = value.trim().parse().map_err(|_| AppError::invalid(format!("{field} must be an amount in euros, like 2.50")))?;
    if !euros.is_finite() || !(0.0..=100_000.0).contains(&euros) {
        return Err(AppError::invalid(format!("{field} must be 0 to 100000 euros")));
    }
    Ok(Some((euros * 100.0).round() as i32))
}

/// The cancellation terms from the event form (no hours: fans cannot
/// cancel).
#[cfg(feature = "ssr")]
fn refund_policy(cancel_until_hours: &str, cancel_keep_percent: &str, cancel_fee: &str) -> Result<frontrow_model::RefundPolicy, AppError> {
    Ok(frontrow_model::RefundPolicy {
        cancel_until_hours: number("cancel_until_hours", cancel_until_hours)?,
        keep_percent: number("cancel_keep_percent", cancel_keep_percent)?.unwrap_or(0),
        fee_cents: cents("cancel_fee", cancel_fee)?.unwrap_or(0),
    })
}

/// Ticket types as staff type them, one a line: `Child: Front=20.00,
/// Back=10.00` (a type is sold in the tiers it is priced in).
#[cfg(feature = "ssr")]
fn ticket_types(value: &str) -> Result<Vec<frontrow_model::TicketType>, AppError> {
    let mut types = Vec::new();
    for line in value.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, prices) =
            line.split_once(':').ok_or_else(|| AppError::invalid(format!("write each ticket type as Name: Tier=12.50, ... (not {line:?})")))?;
        let mut priced = Vec::new();
        for price in prices.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (tier, amount) =
                price.split_once('=').ok_or_else(|| AppError::invalid(format!("write {name}'s prices as Tier=12.50 (not {price:?})")))?;
            // A blank amount is a mistake, not a free ticket (write 0 for one).
            let field = format!("{}'s price in {}", name.trim(), tier.trim());
            let price_cents = cents(&field, amount)?.ok_or_else(|| AppError::invalid(format!("{field} is blank: write an amount (0 for free)")))?;
            priced.push(TierPrice { tier: tier.trim().to_owned(), price_cents });
        }
        types.push(frontrow_model::TicketType { name: name.trim().to_owned(), prices: priced });
    }
    Ok(types)
}

/// Performers as staff type them, one a line (a name may hold a comma).
#[cfg(feature = "ssr")]
fn performers(value: &str) -> Vec<String> {
    value.lines().map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect()
}

/// Creates an event from a saved layout and its prices (`prices`: one line
/// per tier, `Tier=12.50`).
#[server(prefix = "/_app", endpoint = "admin/create_event")]
#[allow(clippy::too_many_arguments)]
pub async fn create_event(
    name: String,
    kind: String,
    venue: String,
    city: String,
    address: String,
    performers: String,
    notes: String,
    doors_at: String,
    starts_at: String,
    sale_opens_at: String,
    hold_ttl_seconds: String,
    max_seats_per_order: String,
    layout_id: LayoutId,
    prices: String,
    cancel_until_hours: String,
    cancel_keep_percent: String,
    cancel_fee: String,
    ticket_types: String,
    published: Option<String>,
) -> Result<EventId, AppError> {
    let (engine, user) = staff().await?;
    let layout = engine.layout(layout_id).await?;
    let mut tiers = Vec::new();
    for tier in &layout.tiers {
        let line = prices
            .lines()
            .find_map(|l| l.split_once('=').filter(|(t, _)| t.trim() == tier))
            .ok_or_else(|| AppError::invalid(format!("give a price for tier {tier} (a line {tier}=12.50)")))?;
        let price_cents = cents(&format!("the price of {tier}"), line.1)?
            .ok_or_else(|| AppError::invalid(format!("give a price for tier {tier} (a line {tier}=12.50)")))?;
        tiers.push(TierPrice { tier: tier.clone(), price_cents });
    }
    let new = frontrow_model::NewEvent {
        name,
        kind,
        venue,
        city,
        performers: self::performers(&performers),
        doors_at: utc("doors_at", &doors_at)?,
        address,
        notes,
        starts_at: utc("starts_at", &starts_at)?.ok_or_else(|| AppError::invalid("starts_at is required"))?,
        sale_opens_at: utc("sale_opens_at", &sale_opens_at)?.unwrap_or_else(chrono::Utc::now),
        refund_policy: refund_policy(&cancel_until_hours, &cancel_keep_percent, &cancel_fee)?,
        ticket_types: self::ticket_types(&ticket_types)?,
        hold_ttl_seconds: number("hold_ttl_seconds", &hold_ttl_seconds)?.unwrap_or(480),
        max_seats_per_order: number("max_seats_per_order", &max_seats_per_order)?.unwrap_or(8),
        waiting_room_enabled: false,
        published: published.is_some(),
        tiers,
        sections: Vec::new(),
        layout_id: Some(layout_id),
        stage: None,
    };
    let created = engine.create_event(&new, Some(user.user_id)).await?;
    back_to(&format!("/admin/events/{}", created.event_id));
    Ok(created.event_id)
}

#[server(prefix = "/_app", endpoint = "admin/update_event")]
#[allow(clippy::too_many_arguments)]
pub async fn update_event(
    event_id: EventId,
    name: String,
    kind: String,
    venue: String,
    city: String,
    address: String,
    performers: String,
    notes: String,
    doors_at: String,
    starts_at: String,
    sale_opens_at: String,
    hold_ttl_seconds: String,
    max_seats_per_order: String,
    cancel_until_hours: String,
    cancel_keep_percent: String,
    cancel_fee: String,
    ticket_types: String,
    published: Option<String>,
) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    let changes = EventChanges {
        name: Some(name),
        venue: Some(venue),
        kind: Some(kind),
        city: Some(city),
        performers: Some(self::performers(&performers)),
        doors_at: utc("doors_at", &doors_at)?,
        address: Some(address),
        notes: Some(notes),
        starts_at: utc("starts_at", &starts_at)?,
        sale_opens_at: utc("sale_opens_at", &sale_opens_at)?,
        hold_ttl_seconds: number("hold_ttl_seconds", &hold_ttl_seconds)?,
        max_seats_per_order: number("max_seats_per_order", &max_seats_per_order)?,
        published: Some(published.is_some()),
        refund_policy: Some(refund_policy(&cancel_until_hours, &cancel_keep_percent, &cancel_fee)?),
        ticket_types: Some(self::ticket_types(&ticket_types)?),
    };
    engine.update_event(user.user_id, event_id, &changes).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1"));
    Ok(())
}

#[server(prefix = "/_app", endpoint = "admin/configure_queue")]
pub async fn configure_queue(
    event_id: EventId,
    waiting_room_enabled: Option<String>,
    require_verified_email: Option<String>,
    paused: Option<String>,
    admission_factor: String,
    max_active: String,
) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    let factor = admission_factor.trim().parse::<f64>().map_err(|_| AppError::invalid("k must be a number"))?;
    let settings = QueueSettings {
        waiting_room_enabled: Some(waiting_room_enabled.is_some()),
        require_verified_email: Some(require_verified_email.is_some()),
        paused: Some(paused.is_some()),
        admission_factor: Some(factor),
        max_active: number("max_active", &max_active)?,
    };
    engine.configure_queue(&user, event_id, &settings).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1#waiting-room"));
    Ok(())
}

/// A list of names as staff type them, separated by commas; empty: none
/// named (every one).
#[cfg(feature = "ssr")]
fn names(value: &str) -> Option<Vec<String>> {
    let names: Vec<String> = value.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect();
    (!names.is_empty()).then_some(names)
}

/// Makes a batch of presale codes from the event page's form: a shared
/// `code`, or (`code` empty) `count` unique ones.
#[server(prefix = "/_app", endpoint = "admin/access_codes")]
#[allow(clippy::too_many_arguments)]
pub async fn create_access_codes(
    event_id: EventId,
    label: String,
    code: String,
    count: String,
    max_uses: String,
    limit_unit: String,
    tiers: String,
    sections: String,
    starts_at: String,
    ends_at: String,
) -> Result<AccessCodeBatchId, AppError> {
    let (engine, user) = staff().await?;
    let code = Some(code.trim().to_owned()).filter(|c| !c.is_empty());
    let count = match &code {
        Some(_) => None,
        None => Some(number("count", &count)?.ok_or_else(|| AppError::invalid("give a shared code, or how many unique codes to make"))?),
    };
    let new = frontrow_model::NewAccessCodes {
        label,
        code,
        count: count.map(|n| u32::try_from(n).map_err(|_| AppError::invalid("count must be 1 or more"))).transpose()?,
        max_uses: number("max_uses", &max_uses)?.unwrap_or(1),
        limit_unit: if limit_unit == "orders" { frontrow_model::CodeLimitUnit::Orders } else { frontrow_model::CodeLimitUnit::Tickets },
        tiers: names(&tiers),
        sections: names(&sections),
        starts_at: utc("starts_at", &starts_at)?.unwrap_or_else(chrono::Utc::now),
        ends_at: utc("ends_at", &ends_at)?.ok_or_else(|| AppError::invalid("give the presale's end"))?,
    };
    let created = engine.create_access_codes(&user, event_id, &new).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1#presale"));
    Ok(created.batch.batch_id)
}

/// Pauses or resumes the event's waiting list and sets how long offers last.
#[server(prefix = "/_app", endpoint = "admin/waitlist")]
pub async fn configure_waitlist(event_id: EventId, paused: Option<String>, offer_minutes: String) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    let offer_minutes = offer_minutes.trim().parse().map_err(|_| AppError::invalid("offer minutes must be a whole number"))?;
    let settings = frontrow_model::WaitlistSettings { paused: Some(paused.is_some()), offer_minutes: Some(offer_minutes) };
    engine.set_waitlist(&user, event_id, &settings).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1#waitlist"));
    Ok(())
}

/// Offers free seats of their tier to one fan on the waiting list now.
#[server(prefix = "/_app", endpoint = "admin/waitlist_offer")]
pub async fn offer_to_waiting_fan(event_id: EventId, entry_id: WaitlistEntryId) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    engine.offer_by_hand(&user, event_id, &frontrow_model::HandOffer { entry_id, seat_ids: None }).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1#waitlist"));
    Ok(())
}

/// Withdraws a batch of presale codes.
#[server(prefix = "/_app", endpoint = "admin/revoke_access_codes")]
pub async fn revoke_access_codes(event_id: EventId, batch_id: AccessCodeBatchId) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    engine.revoke_access_codes(&user, event_id, batch_id).await?;
    back_to(&format!("/admin/events/{event_id}?saved=1#presale"));
    Ok(())
}

#[server(prefix = "/_app", endpoint = "admin/cancel_event")]
pub async fn cancel_event(event_id: EventId, reason: String) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    engine.cancel_event(&user, event_id, &reason).await?;
    back_to(&format!("/admin/events/{event_id}"));
    Ok(())
}

#[server(prefix = "/_app", endpoint = "admin/block", input = Json)]
pub async fn block_seats(event_id: EventId, seat_ids: Vec<SeatId>, reason: String) -> Result<Vec<String>, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.block_seats(&user, event_id, &seat_ids, &reason).await?)
}

#[server(prefix = "/_app", endpoint = "admin/unblock", input = Json)]
pub async fn unblock_seats(event_id: EventId, seat_ids: Vec<SeatId>) -> Result<Vec<String>, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.unblock_seats(&user, event_id, &seat_ids).await?)
}

/// Releases whatever hold is on the seat (recorded with the reason).
#[server(prefix = "/_app", endpoint = "admin/release_seat_hold", input = Json)]
pub async fn release_seat_hold(event_id: EventId, seat_id: SeatId, reason: String) -> Result<Vec<String>, AppError> {
    let (engine, user) = staff().await?;
    let hold_id = engine.hold_on_seat(&user, event_id, &seat_id).await?.ok_or_else(|| AppError::invalid(format!("{seat_id} is not held")))?;
    Ok(engine.release_hold_for_staff(&user, hold_id, &reason).await?)
}

#[server(prefix = "/_app", endpoint = "admin/counter_sale", input = Json)]
#[allow(clippy::too_many_arguments)]
pub async fn counter_sale(
    event_id: EventId,
    seat_ids: Vec<SeatId>,
    standing: Option<frontrow_model::StandingPlaces>,
    payment: CounterPayment,
    payment_token: Option<PaymentToken>,
    customer_name: String,
    customer_email: Option<String>,
    idempotency_key: IdempotencyKey,
    ticket_types: Option<frontrow_model::TicketChoices>,
) -> Result<Booking, AppError> {
    let (engine, user) = staff().await?;
    let sale = frontrow_model::CounterSaleRequest {
        seat_ids,
        standing,
        payment,
        payment_token,
        customer_name,
        customer_email: customer_email.filter(|e| !e.trim().is_empty()),
        ticket_types: ticket_types.unwrap_or_default(),
    };
    match engine.counter_sale(&user, event_id, &sale, &idempotency_key).await?.into_answer()? {
        frontrow_model::CheckoutAnswer::Confirmed { booking } => Ok(booking),
        frontrow_model::CheckoutAnswer::PaymentPending { checkout_id } => Err(AppError::new(
            frontrow_model::ErrorKind::PaymentFailed { checkout_id: Some(checkout_id) },
            "the card's answer is not in yet; the seats stay reserved while the payments page follows it",
        )),
    }
}

#[server(prefix = "/_app", endpoint = "admin/refund", input = Json)]
pub async fn refund(
    booking_id: BookingId,
    ticket_ids: Option<Vec<TicketId>>,
    reason: String,
    idempotency_key: IdempotencyKey,
) -> Result<RefundResult, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.refund_booking(&user, booking_id, &frontrow_model::RefundRequest { ticket_ids, reason }, &idempotency_key).await?)
}

#[server(prefix = "/_app", endpoint = "admin/resend")]
pub async fn resend_tickets(booking_id: BookingId) -> Result<String, AppError> {
    let (engine, user) = staff().await?;
    let site = use_context::<crate::server::SiteUrl>().map(|s| s.0).unwrap_or_default();
    let to = engine.resend_tickets(&user, booking_id, &site).await?;
    back_to(&format!("/admin/bookings/{booking_id}?sent=1"));
    Ok(to)
}

#[server(prefix = "/_app", endpoint = "admin/check_in", input = Json)]
pub async fn check_in(code: String, event_id: Option<EventId>) -> Result<CheckinResult, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.check_in(&user, &code, event_id).await?)
}

#[server(prefix = "/_app", endpoint = "admin/stats", input = Json)]
pub async fn load_event_stats(event_id: EventId) -> Result<EventStats, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.event_stats(&user, event_id).await?)
}

#[server(prefix = "/_app", endpoint = "admin/settle_payment")]
pub async fn settle_payment(payment_id: PaymentId) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    engine.settle_payment(&user, payment_id).await?;
    back_to("/admin/payments?settled=1");
    Ok(())
}

/// The seat map a layout would draw, before saving it.
#[server(prefix = "/_app", endpoint = "admin/preview_layout", input = Json)]
pub async fn preview_layout(sections: Vec<NewSection>, stage: Option<Stage>) -> Result<String, AppError> {
    let (_, _) = staff().await?;
    frontrow_engine::venue::layouts::validate_layout(&sections)?;
    frontrow_engine::venue::catalogue::validate_stage(stage.as_ref())?;
    Ok(crate::seatmap::preview(&sections, stage.as_ref()))
}

#[server(prefix = "/_app", endpoint = "admin/save_layout", input = Json)]
pub async fn save_layout(name: String, sections: Vec<NewSection>, stage: Option<Stage>) -> Result<Layout, AppError> {
    let (engine, user) = staff().await?;
    Ok(engine.save_layout(&user, &frontrow_model::NewLayout { name, sections, stage }).await?)
}

#[server(prefix = "/_app", endpoint = "admin/create_account")]
pub async fn create_account(email: String, password: String, name: String, role: String) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    let role: Role = role.parse().map_err(AppError::invalid)?;
    engine.create_account(&user, &NewStaffUser { email, password, name, role }).await?;
    back_to("/admin/staff?saved=1");
    Ok(())
}

#[server(prefix = "/_app", endpoint = "admin/change_account")]
pub async fn change_account(user_id: UserId, disabled: Option<String>, password: Option<String>) -> Result<(), AppError> {
    let (engine, user) = staff().await?;
    let changes = UserChanges { disabled: disabled.map(|d| d == "true"), password: password.filter(|p| !p.is_empty()) };
    engine.change_account(&user, user_id, &changes).await?;
    back_to("/admin/staff?saved=1");
    Ok(())
}
