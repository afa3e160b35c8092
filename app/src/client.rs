//! Browser-only behaviour of the islands: the JSON API over fetch, the live
//! seat feed over WebSocket, the seat map's DOM, timers.
//!
//! The seat map is server-rendered SVG; rather than re-render it, the picker
//! updates individual seats by id (`s-<seat id>`), so a diff costs a few
//! attribute writes however large the venue is.
//!
//! On the server these functions are never called (islands' effects and
//! handlers run only in the browser); the `ssr` build gets inert stand-ins
//! with the same signatures at the bottom of this file.

#[cfg(feature = "hydrate")]
pub use browser::*;
#[cfg(not(feature = "hydrate"))]
pub use inert::*;

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::{Cell, RefCell};

    use gloo_net::http::Request;
    use leptos::prelude::*;
    use leptos::task::spawn_local;
    use serde::Deserialize;
    use serde_json::{json, Value};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{Element, KeyboardEvent, MessageEvent, MouseEvent, PointerEvent, WebSocket, WheelEvent};

    use crate::format::money;
    use crate::islands::{Pick, Picker};
    use crate::props::HoldInfo;

    // ---------------------------------------------------------------- helpers

    fn window() -> web_sys::Window {
        web_sys::window().expect("a browser window")
    }

    fn document() -> web_sys::Document {
        window().document().expect("a document")
    }

    fn now_ms() -> f64 {
        js_sys::Date::now()
    }

    pub fn navigate(url: &str) {
        let _ = window().location().assign(url);
    }

    async fn sleep(ms: i32) {
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }

    fn session_storage() -> Option<web_sys::Storage> {
        window().session_storage().ok().flatten()
    }

    /// 128 random bits from the browser's CSPRNG, as hex.
    fn random_key() -> String {
        let mut bytes = [0u8; 16];
        if let Ok(crypto) = window().crypto() {
            let _ = crypto.get_random_values_with_u8_array(&mut bytes);
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A hold call: carries the waiting room's admission token, if any.
    async fn hold_call(p: Picker, url: &str, body: Value) -> Result<(u16, Value), String> {
        match p.admission.get_value() {
            Some(token) => call("POST", url, Some(body), &[("X-Admission-Token", &token)]).await,
            None => call("POST", url, Some(body), &[]).await,
        }
    }

    /// Keeps the admission alive while the page is open; sends the fan back
    /// to the queue if it lapsed.
    fn renew_admission(p: Picker) {
        let Some(queue_token) = p.queue_token.get_value() else { return };
        spawn_local(async move {
            let url = format!("/api/v1/events/{}/queue/{queue_token}", p.event_id.get_value());
            match call("GET", &url, None, &[]).await {
                Ok((200, body)) if body.get("state").and_then(Value::as_str) == Some("admitted") => {
                    let token = body.get("admission_token").and_then(Value::as_str).map(str::to_owned);
                    p.admission.set_value(token);
                }
                Ok((200, _)) if p.hold.with_untracked(Option::is_none) => {
                    navigate(&format!("/events/{}/queue", p.event_id.get_value()));
                }
                _ => {}
            }
        });
    }

    /// One JSON API call; `Err` only when no answer came back at all.
    async fn call(method: &str, url: &str, body: Option<Value>, headers: &[(&str, &str)]) -> Result<(u16, Value), String> {
        let mut builder = match method {
            "POST" => Request::post(url),
            "DELETE" => Request::delete(url),
            _ => Request::get(url),
        };
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let sent = match body {
            Some(body) => builder.json(&body).map_err(|e| e.to_string())?.send().await,
            None => builder.send().await,
        };
        let response = sent.map_err(|_| "The connection failed. Check your network and try again.".to_owned())?;
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    fn error_text(body: &Value) -> String {
        body.get("message").and_then(Value::as_str).unwrap_or("Something went wrong. Please try again.").to_owned()
    }

    // ------------------------------------------------------------- seat DOM

    fn seat_el(seat_id: &str) -> Option<Element> {
        document().get_element_by_id(&format!("s-{seat_id}"))
    }

    fn seat_map() -> Option<Element> {
        document().get_element_by_id("seat-map")
    }

    /// "Section A, row 1, seat 3" from the seat's accessible name.
    fn seat_label(el: &Element) -> String {
        let name = el.get_attribute("aria-label").unwrap_or_default();
        name.split(", ").take(3).collect::<Vec<_>>().join(", ")
    }

    fn label_of(seat_id: &str) -> String {
        seat_el(seat_id).map_or_else(|| seat_id.to_owned(), |el| seat_label(&el))
    }

    fn seat_price(p: &Picker, el: &Element) -> i64 {
        let classes = el.get_attribute("class").unwrap_or_default();
        let tier = classes
            .split(' ')
            .find_map(|c| c.strip_prefix('t').and_then(|n| n.parse::<usize>().ok()))
            .unwrap_or(0);
        p.tiers.with_value(|t| t.get(tier).map_or(0, |t| i64::from(t.price_cents)))
    }

    fn is_available(el: &Element) -> bool {
        el.class_list().contains("av")
    }

    thread_local! {
        /// Seats shown available, for the availability line.
        static AVAILABLE: Cell<i64> = const { Cell::new(0) };
    }

    /// Rewrites the availability line under the event's title with the same
    /// words the server uses (`pages::availability`).
    fn show_availability() {
        let Some(line) = document().get_element_by_id("availability") else { return };
        let total: i64 = line.get_attribute("data-total").and_then(|t| t.parse().ok()).unwrap_or(0);
        let status = line.get_attribute("data-status").unwrap_or_default();
        let status = if status == "sold_out" || status == "on_sale" { "on_sale" } else { status.as_str() };
        let available = AVAILABLE.get();
        let status = if status == "on_sale" && available == 0 { "sold_out" } else { status };
        let (text, class) = crate::pages::availability(status, available, total);
        line.set_text_content(Some(&text));
        let _ = line.set_attribute("class", &format!("availability {class}"));
    }

    /// Shows `status` on the seat.
    fn show_status(el: &Element, status: &str) {
        let (class, word) = match status {
            "available" => ("av", None),
            "sold" => ("sd", Some("sold")),
            _ => ("hd", Some("held")),
        };
        if el.class_list().contains(class) {
            return;
        }
        let was_available = el.class_list().contains("av");
        if was_available != (class == "av") {
            AVAILABLE.set(AVAILABLE.get() + if was_available { -1 } else { 1 });
            show_availability();
        }
        let list = el.class_list();
        let _ = list.remove_3("av", "hd", "sd");
        let _ = list.add_1(class);
        let base = el.get_attribute("aria-label").unwrap_or_default().split(", ").take(4).collect::<Vec<_>>().join(", ");
        match word {
            Some(word) => {
                let _ = el.set_attribute("aria-label", &format!("{base}, {word}"));
                let _ = el.set_attribute("aria-disabled", "true");
            }
            None => {
                let _ = el.set_attribute("aria-label", &base);
                let _ = el.remove_attribute("aria-disabled");
            }
        }
    }

    fn set_selected(el: &Element, on: bool) {
        let _ = el.class_list().toggle_with_force("sel", on);
        if on {
            let _ = el.set_attribute("aria-pressed", "true");
        } else {
            let _ = el.remove_attribute("aria-pressed");
        }
    }

    fn set_mine(seat_ids: &[String], on: bool) {
        for id in seat_ids {
            if let Some(el) = seat_el(id) {
                let _ = el.class_list().toggle_with_force("mine", on);
                if on {
                    show_status(&el, "held");
                }
            }
        }
    }

    /// Applies a status from the live feed (or a conflict); drops the seat
    /// from the fan's selection if it is no longer available and returns its
    /// label if so.
    fn apply_status(p: Picker, seat_id: &str, status: &str) -> Option<String> {
        let el = seat_el(seat_id)?;
        show_status(&el, status);
        if status == "available" {
            return None;
        }
        let was_selected = p.selected.with_untracked(|s| s.iter().any(|x| x.seat_id == seat_id));
        if was_selected {
            p.selected.update(|s| s.retain(|x| x.seat_id != seat_id));
            set_selected(&el, false);
            return Some(seat_label(&el));
        }
        None
    }

    fn flash_conflict(seat_id: &str) {
        if let Some(el) = seat_el(seat_id) {
            let _ = el.class_list().add_1("conflict");
        }
    }

    fn joined(labels: &[String]) -> String {
        match labels {
            [] => String::new(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join("; ")),
        }
    }

    // ---------------------------------------------------------- the picker

    pub fn toggle_seat(p: Picker, seat_id: &str) {
        let Some(el) = seat_el(seat_id) else { return };
        if p.hold.with_untracked(Option::is_some) {
            p.say("info", "You are holding seats: pay for them or release them to choose again.");
            return;
        }
        if p.selected.with_untracked(|s| s.iter().any(|x| x.seat_id == seat_id)) {
            p.selected.update(|s| s.retain(|x| x.seat_id != seat_id));
            set_selected(&el, false);
            p.message.set(None);
            return;
        }
        if !p.on_sale {
            p.say("info", "Tickets for this event are not on sale right now.");
            return;
        }
        if !is_available(&el) {
            p.say("error", format!("{} is not available.", seat_label(&el)));
            return;
        }
        if p.selected.with_untracked(Vec::len) >= p.max_seats as usize {
            p.say("error", format!("You can choose up to {} seats per order.", p.max_seats));
            return;
        }
        let pick = Pick { seat_id: seat_id.to_owned(), label: seat_label(&el), price_cents: seat_price(&p, &el) };
        p.say("info", format!("Selected {}, {}.", pick.label, money(pick.price_cents)));
        p.selected.update(|s| s.push(pick));
        set_selected(&el, true);
    }

    fn sign_in_first(p: Picker) {
        navigate(&format!("/signin?next=/events/{}", p.event_id.get_value()));
    }

    fn took_hold(p: Picker, body: &Value) {
        let seat_ids: Vec<String> = body
            .get("seat_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        let expires_at = body.get("expires_at").and_then(Value::as_str).unwrap_or_default();
        let hold = HoldInfo {
            hold_id: body.get("hold_id").and_then(Value::as_str).unwrap_or_default().to_owned(),
            hold_token: body.get("hold_token").and_then(Value::as_str).unwrap_or_default().to_owned(),
            labels: seat_ids.iter().map(|s| label_of(s)).collect(),
            total_cents: body.get("total_cents").and_then(Value::as_i64).unwrap_or(0),
            expires_at_ms: js_sys::Date::parse(expires_at) as i64,
            seat_ids,
        };
        for pick in p.selected.get_untracked() {
            if let Some(el) = seat_el(&pick.seat_id) {
                set_selected(&el, false);
            }
        }
        p.selected.set(Vec::new());
        set_mine(&hold.seat_ids, true);
        FEED_ON_MINE.with_borrow_mut(|heard| heard.clear());
        // The server stamped the expiry "now + TTL" a moment ago, which pins
        // its clock to within one network hop.
        p.clock_offset.set_value((hold.expires_at_ms - p.hold_ttl_ms) as f64 - now_ms());
        p.remaining_ms.set(remaining(p, &hold));
        p.say("success", format!("Held: {}. Pay before the timer runs out.", joined(&hold.labels)));
        p.hold.set(Some(hold));
        // The button that was pressed is gone; continue in the hold panel.
        set_timeout(
            || {
                if let Some(title) = document().get_element_by_id("held-title").and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()) {
                    let _ = title.focus();
                }
            },
            std::time::Duration::ZERO,
        );
    }

    fn remaining(p: Picker, hold: &HoldInfo) -> i64 {
        hold.expires_at_ms - (now_ms() + p.clock_offset.get_value()) as i64
    }

    fn hold_refused(p: Picker, status: u16, body: &Value) {
        match status {
            401 => sign_in_first(p),
            403 if body.get("error").and_then(Value::as_str) == Some("not_admitted") => {
                navigate(&format!("/events/{}/queue", p.event_id.get_value()));
            }
            409 if body.get("error").and_then(Value::as_str) == Some("seats_unavailable") => {
                let conflicts: Vec<String> = body
                    .get("conflict_seats")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                let labels: Vec<String> = conflicts.iter().map(|s| label_of(s)).collect();
                for seat in &conflicts {
                    apply_status(p, seat, "held");
                    flash_conflict(seat);
                }
                let verb = if labels.len() == 1 { "was" } else { "were" };
                p.say("error", format!("Sorry, {} {verb} just taken by someone else. Nothing was held; pick other seats.", joined(&labels)));
            }
            _ => p.say("error", error_text(body)),
        }
    }

    pub fn hold_selected(p: Picker) {
        if !p.signed_in {
            return sign_in_first(p);
        }
        let seat_ids: Vec<String> = p.selected.get_untracked().into_iter().map(|s| s.seat_id).collect();
        if seat_ids.is_empty() || p.busy.get_untracked() {
            return;
        }
        p.busy.set(true);
        spawn_local(async move {
            let url = format!("/api/v1/events/{}/holds", p.event_id.get_value());
            match hold_call(p, &url, json!({ "seat_ids": seat_ids })).await {
                Ok((201, body)) => took_hold(p, &body),
                Ok((status, body)) => hold_refused(p, status, &body),
                Err(e) => p.say("error", e),
            }
            p.busy.set(false);
        });
    }

    pub fn hold_best(p: Picker, count: String, tier: String) {
        if !p.signed_in {
            return sign_in_first(p);
        }
        if p.busy.get_untracked() {
            return;
        }
        let count: u32 = count.parse().unwrap_or(1);
        p.busy.set(true);
        spawn_local(async move {
            // Seats picked by hand are let go: best available replaces them.
            for pick in p.selected.get_untracked() {
                if let Some(el) = seat_el(&pick.seat_id) {
                    set_selected(&el, false);
                }
            }
            p.selected.set(Vec::new());
            let url = format!("/api/v1/events/{}/holds/best", p.event_id.get_value());
            match hold_call(p, &url, json!({ "count": count, "tier": tier })).await {
                Ok((201, body)) => took_hold(p, &body),
                Ok((status, body)) => hold_refused(p, status, &body),
                Err(e) => p.say("error", e),
            }
            p.busy.set(false);
        });
    }

    thread_local! {
        /// What the live feed last said about the fan's own held seats
        /// (which the map keeps showing as theirs meanwhile).
        static FEED_ON_MINE: RefCell<std::collections::HashMap<String, String>> = RefCell::default();
    }

    /// The hold is over (released, expired). Its seats show what the live
    /// feed said about them since, if anything; otherwise its next word.
    fn let_go(p: Picker, hold: &HoldInfo) {
        set_mine(&hold.seat_ids, false);
        FEED_ON_MINE.with_borrow_mut(|heard| {
            for id in &hold.seat_ids {
                if let (Some(status), Some(el)) = (heard.remove(id), seat_el(id)) {
                    show_status(&el, &status);
                }
            }
        });
        if let Some(storage) = session_storage() {
            let _ = storage.remove_item(&checkout_key(&hold.hold_id));
        }
        p.hold.set(None);
    }

    pub fn release(p: Picker) {
        let Some(hold) = p.hold.get_untracked() else { return };
        p.busy.set(true);
        spawn_local(async move {
            let url = format!("/api/v1/holds/{}", hold.hold_id);
            match call("DELETE", &url, None, &[("X-Hold-Token", &hold.hold_token)]).await {
                Ok((204, _)) => {
                    let_go(p, &hold);
                    p.say("info", "Seats released.");
                }
                Ok((410, _)) => {
                    let_go(p, &hold);
                    p.say("info", "Your hold had already ended; the seats are released.");
                }
                Ok((_, body)) => p.say("error", error_text(&body)),
                Err(e) => p.say("error", e),
            }
            p.busy.set(false);
        });
    }

    fn expire(p: Picker) {
        let Some(hold) = p.hold.get_untracked() else { return };
        let_go(p, &hold);
        p.say("error", "Your hold expired and the seats were released. You can pick seats again.");
        // Tell the server at once rather than wait for the reaper; a 410 is fine.
        spawn_local(async move {
            let url = format!("/api/v1/holds/{}", hold.hold_id);
            let _ = call("DELETE", &url, None, &[("X-Hold-Token", &hold.hold_token)]).await;
        });
    }

    fn checkout_key(hold_id: &str) -> String {
        format!("frontrow.checkout.{hold_id}")
    }

    /// The idempotency key for paying this hold with this card: reused on a
    /// double click or after a reload (the server then answers the first
    /// request's outcome), fresh after a decline or a change of card.
    fn idempotency_key(hold_id: &str, card: &str) -> String {
        let storage = session_storage();
        let stored = storage.as_ref().and_then(|s| s.get_item(&checkout_key(hold_id)).ok().flatten());
        if let Some((stored_card, key)) = stored.as_deref().and_then(|s| s.split_once(':')) {
            if stored_card == card {
                return key.to_owned();
            }
        }
        let key = random_key();
        if let Some(storage) = storage {
            let _ = storage.set_item(&checkout_key(hold_id), &format!("{card}:{key}"));
        }
        key
    }

    pub fn pay(p: Picker) {
        let Some(hold) = p.hold.get_untracked() else { return };
        if p.busy.get_untracked() {
            return;
        }
        let card = p.card.get_untracked();
        let key = idempotency_key(&hold.hold_id, &card);
        p.busy.set(true);
        p.say("info", "Paying…");
        spawn_local(async move {
            let url = format!("/api/v1/holds/{}/checkout", hold.hold_id);
            let body = json!({ "hold_token": hold.hold_token, "payment_token": card });
            for _ in 0..30 {
                match call("POST", &url, Some(body.clone()), &[("Idempotency-Key", &key)]).await {
                    Ok((201, body)) => {
                        let booking = body.get("booking_id").and_then(Value::as_str).unwrap_or_default();
                        return navigate(&format!("/bookings/{booking}"));
                    }
                    Ok((202, body)) => {
                        let checkout = body.get("checkout_id").and_then(Value::as_str).unwrap_or_default();
                        return navigate(&format!("/checkouts/{checkout}"));
                    }
                    Ok((402, _)) => {
                        if let Some(storage) = session_storage() {
                            let _ = storage.remove_item(&checkout_key(&hold.hold_id));
                        }
                        p.say("error", "Your card was declined and nothing was charged. Try another card: your seats stay held until the timer runs out.");
                        break;
                    }
                    Ok((410, _)) => {
                        let_go(p, &hold);
                        p.say("error", "Your hold expired before payment, so nothing was booked. Any amount taken is refunded.");
                        break;
                    }
                    Ok((401, _)) => return sign_in_first(p),
                    // The first attempt (another tab, a reload) is still running: wait for its answer.
                    Ok((409, body))
                        if matches!(body.get("error").and_then(Value::as_str), Some("idempotency_key_in_use" | "checkout_in_progress")) =>
                    {
                        sleep(1000).await;
                    }
                    Ok((_, body)) => {
                        p.say("error", error_text(&body));
                        break;
                    }
                    Err(e) => {
                        p.say("error", e);
                        break;
                    }
                }
            }
            p.busy.set(false);
        });
    }

    // ------------------------------------------------------ the live feed

    #[derive(Deserialize)]
    struct Entry {
        seat_id: String,
        status: String,
    }

    #[derive(Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Frame {
        Snapshot { epoch: u32, seq: u64, seats: Vec<Entry> },
        Diff { epoch: u32, seq: u64, changes: Vec<Entry> },
    }

    fn on_frame(p: Picker, text: &str) {
        let Ok(frame) = serde_json::from_str::<Frame>(text) else { return };
        let (epoch, seq, entries) = match frame {
            Frame::Snapshot { epoch, seq, seats } => (epoch, seq, seats),
            Frame::Diff { epoch, seq, changes } => (epoch, seq, changes),
        };
        let mine: Vec<String> = p.hold.with_untracked(|h| h.as_ref().map(|h| h.seat_ids.clone()).unwrap_or_default());
        let mut dropped = Vec::new();
        for e in &entries {
            // The fan's own held seats stay theirs until sold (a stale
            // "available" from before the hold must not undo it).
            if mine.contains(&e.seat_id) && e.status != "sold" {
                FEED_ON_MINE.with_borrow_mut(|heard| heard.insert(e.seat_id.clone(), e.status.clone()));
                continue;
            }
            if let Some(label) = apply_status(p, &e.seat_id, &e.status) {
                dropped.push(label);
            }
        }
        p.epoch.set_value(epoch);
        p.seq.set_value(seq);
        if !dropped.is_empty() {
            let verb = if dropped.len() == 1 { "was" } else { "were" };
            p.say("error", format!("{} {verb} just taken by someone else and left your selection.", joined(&dropped)));
        }
    }

    fn connect(p: Picker, attempt: u32) {
        let location = window().location();
        let scheme = if location.protocol().ok().as_deref() == Some("https:") { "wss" } else { "ws" };
        let host = location.host().unwrap_or_default();
        let url = format!(
            "{scheme}://{host}/api/v1/events/{}/live?epoch={}&since={}",
            p.event_id.get_value(),
            p.epoch.get_value(),
            p.seq.get_value()
        );
        let Ok(socket) = WebSocket::new(&url) else {
            return reconnect_later(p, attempt);
        };
        let opened = std::rc::Rc::new(Cell::new(false));

        let on_open = Closure::<dyn FnMut()>::new({
            let opened = opened.clone();
            move || {
                opened.set(true);
                p.live.set("live");
            }
        });
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            if let Some(text) = ev.data().as_string() {
                on_frame(p, &text);
            }
        });
        let on_close = Closure::<dyn FnMut()>::new(move || {
            p.live.set("reconnecting");
            // A connection that worked starts the back-off afresh.
            reconnect_later(p, if opened.get() { 0 } else { attempt + 1 });
        });
        socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        // The socket lives as long as the page; so do its handlers.
        on_open.forget();
        on_message.forget();
        on_close.forget();
    }

    /// Exponential back-off with jitter, 0.5 s doubling to 10 s, so a
    /// restarted server is not stampeded by every viewer at once.
    fn reconnect_later(p: Picker, attempt: u32) {
        let base = (500.0 * 2f64.powi(attempt.min(5) as i32)).min(10_000.0);
        let delay = base * (0.5 + js_sys::Math::random() * 0.5);
        set_timeout(move || connect(p, attempt), std::time::Duration::from_millis(delay as u64));
    }

    // --------------------------------------------------------- map input

    fn seat_from_event(target: Option<web_sys::EventTarget>) -> Option<Element> {
        let el: Element = target?.dyn_into().ok()?;
        el.closest("circle.seat").ok().flatten()
    }

    fn seat_id_of(el: &Element) -> Option<String> {
        el.id().strip_prefix("s-").map(str::to_owned)
    }

    fn move_focus(from: &Element, to: Option<Element>) {
        let Some(to) = to else { return };
        let _ = from.set_attribute("tabindex", "-1");
        let _ = to.set_attribute("tabindex", "0");
        if let Some(svg_el) = to.dyn_ref::<web_sys::SvgElement>() {
            let _ = svg_el.focus();
        }
    }

    fn cx(el: &Element) -> f64 {
        el.get_attribute("cx").and_then(|v| v.parse().ok()).unwrap_or(0.0)
    }

    /// The seat nearest to `el` horizontally in the row `step` rows away.
    fn seat_in_other_row(el: &Element, step: i32) -> Option<Element> {
        let row = el.parent_element()?;
        let rows = seat_map()?.query_selector_all("g.row").ok()?;
        let index = (0..rows.length()).find(|&i| rows.item(i).is_some_and(|n| n.is_same_node(Some(&row))))?;
        let target = index as i64 + i64::from(step);
        if target < 0 || target >= i64::from(rows.length()) {
            return None;
        }
        let other: Element = rows.item(target as u32)?.dyn_into().ok()?;
        let seats = other.query_selector_all("circle.seat").ok()?;
        let x = cx(el);
        (0..seats.length())
            .filter_map(|i| seats.item(i).and_then(|n| n.dyn_into::<Element>().ok()))
            .min_by(|a, b| (cx(a) - x).abs().total_cmp(&(cx(b) - x).abs()))
    }

    fn sibling_seat(el: &Element, forward: bool) -> Option<Element> {
        let mut next = if forward { el.next_element_sibling() } else { el.previous_element_sibling() };
        while let Some(n) = next {
            if n.class_list().contains("seat") {
                return Some(n);
            }
            next = if forward { n.next_element_sibling() } else { n.previous_element_sibling() };
        }
        None
    }

    fn on_key(p: Picker, ev: KeyboardEvent) {
        let Some(el) = seat_from_event(ev.target()) else { return };
        let target = match ev.key().as_str() {
            "ArrowRight" => sibling_seat(&el, true),
            "ArrowLeft" => sibling_seat(&el, false),
            "ArrowDown" => seat_in_other_row(&el, 1),
            "ArrowUp" => seat_in_other_row(&el, -1),
            "Home" => el.parent_element().and_then(|r| r.query_selector("circle.seat").ok().flatten()),
            "End" => el.parent_element().and_then(|r| r.query_selector_all("circle.seat").ok()).and_then(|l| {
                l.item(l.length().saturating_sub(1)).and_then(|n| n.dyn_into().ok())
            }),
            "Enter" | " " => {
                ev.prevent_default();
                if let Some(id) = seat_id_of(&el) {
                    toggle_seat(p, &id);
                }
                return;
            }
            _ => return,
        };
        ev.prevent_default();
        move_focus(&el, target);
    }

    pub fn start_picker(p: Picker, server_now_ms: i64) {
        if let Ok(seats) = document().query_selector_all("#seat-map circle.seat.av") {
            AVAILABLE.set(i64::from(seats.length()));
        }
        // The page was rendered at `server_now_ms`, just before its first
        // byte arrived here: the offset is right to within that latency.
        let first_byte = window().performance().map(|perf| perf.timing().response_start() as f64).filter(|t| *t > 0.0);
        p.clock_offset.set_value(server_now_ms as f64 - first_byte.unwrap_or_else(now_ms));
        if let Some(hold) = p.hold.get_untracked() {
            set_mine(&hold.seat_ids, true);
        }
        if let Some(map) = seat_map() {
            let on_click = Closure::<dyn FnMut(MouseEvent)>::new(move |ev: MouseEvent| {
                // A drag to pan the map is not a click on a seat.
                if seat_map().and_then(|m| m.get_attribute("data-panned")).as_deref() == Some("1") {
                    return;
                }
                if let Some(id) = seat_from_event(ev.target()).as_ref().and_then(seat_id_of) {
                    toggle_seat(p, &id);
                }
            });
            let on_keydown = Closure::<dyn FnMut(KeyboardEvent)>::new(move |ev: KeyboardEvent| on_key(p, ev));
            let _ = map.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
            let _ = map.add_event_listener_with_callback("keydown", on_keydown.as_ref().unchecked_ref());
            on_click.forget();
            on_keydown.forget();
        }
        connect(p, 0);
        let _ = set_interval_with_handle(
            move || {
                if let Some(hold) = p.hold.get_untracked() {
                    let left = remaining(p, &hold);
                    p.remaining_ms.set(left);
                    // While a payment is in flight its answer decides, not the clock.
                    if left <= 0 && !p.busy.get_untracked() {
                        expire(p);
                    }
                }
            },
            std::time::Duration::from_millis(250),
        );
        if p.queue_token.with_value(Option::is_some) {
            let _ = set_interval_with_handle(move || renew_admission(p), std::time::Duration::from_secs(60));
        }
        p.ready.set(true);
    }

    // ----------------------------------------------------------- map tools

    thread_local! {
        static FULL_VIEW: RefCell<Option<[f64; 4]>> = const { RefCell::new(None) };
    }

    fn view_box(map: &Element) -> Option<[f64; 4]> {
        let parts: Vec<f64> = map.get_attribute("viewBox")?.split_whitespace().filter_map(|v| v.parse().ok()).collect();
        parts.try_into().ok()
    }

    fn set_view_box(map: &Element, vb: [f64; 4]) {
        let _ = map.set_attribute("viewBox", &format!("{:.1} {:.1} {:.1} {:.1}", vb[0], vb[1], vb[2], vb[3]));
        let zoomed = FULL_VIEW.with_borrow(|f| f.is_some_and(|f| vb[2] < f[2] * 0.99));
        let _ = map.class_list().toggle_with_force("zoomed", zoomed);
    }

    pub fn zoom(factor: f64) {
        let Some(map) = seat_map() else { return };
        let (Some(vb), Some(full)) = (view_box(&map), FULL_VIEW.with_borrow(|f| *f)) else { return };
        let w = (vb[2] * factor).clamp(full[2] / 12.0, full[2]);
        let h = w * vb[3] / vb[2];
        let (cx, cy) = (vb[0] + vb[2] / 2.0, vb[1] + vb[3] / 2.0);
        set_view_box(&map, [cx - w / 2.0, cy - h / 2.0, w, h]);
    }

    pub fn show_section(name: &str) {
        let Some(map) = seat_map() else { return };
        let target = if name.is_empty() {
            FULL_VIEW.with_borrow(|f| *f)
        } else {
            map.query_selector(&format!("g.section[data-section=\"{}\"]", name.replace('"', "")))
                .ok()
                .flatten()
                .and_then(|g| g.get_attribute("data-box"))
                .and_then(|b| b.split_whitespace().filter_map(|v| v.parse().ok()).collect::<Vec<f64>>().try_into().ok())
        };
        if let Some(vb) = target {
            set_view_box(&map, vb);
        }
        if let Ok(Some(select)) = document().query_selector("#section-filter") {
            if let Some(select) = select.dyn_ref::<web_sys::HtmlSelectElement>() {
                select.set_value(name);
            }
        }
    }

    pub fn start_map_tools() {
        let Some(map) = seat_map() else { return };
        FULL_VIEW.with_borrow_mut(|f| *f = view_box(&map));
        // Ctrl + wheel (and trackpad pinch, which browsers report as such) zooms.
        let on_wheel = Closure::<dyn FnMut(WheelEvent)>::new(move |ev: WheelEvent| {
            if ev.ctrl_key() || ev.meta_key() {
                ev.prevent_default();
                zoom(if ev.delta_y() < 0.0 { 0.85 } else { 1.0 / 0.85 });
            }
        });
        // Dragging pans once zoomed in.
        let drag: std::rc::Rc<Cell<Option<(f64, f64, [f64; 4], f64)>>> = Default::default();
        let on_down = Closure::<dyn FnMut(PointerEvent)>::new({
            let drag = drag.clone();
            move |ev: PointerEvent| {
                let Some(map) = seat_map() else { return };
                let _ = map.remove_attribute("data-panned");
                if let Some(vb) = view_box(&map) {
                    let scale = vb[2] / map.get_bounding_client_rect().width().max(1.0);
                    drag.set(Some((f64::from(ev.client_x()), f64::from(ev.client_y()), vb, scale)));
                }
            }
        });
        let on_move = Closure::<dyn FnMut(PointerEvent)>::new({
            let drag = drag.clone();
            move |ev: PointerEvent| {
                let (Some((x0, y0, vb, scale)), Some(map)) = (drag.get(), seat_map()) else { return };
                let (dx, dy) = (f64::from(ev.client_x()) - x0, f64::from(ev.client_y()) - y0);
                if dx.abs() + dy.abs() > 4.0 && map.class_list().contains("zoomed") {
                    let _ = map.set_attribute("data-panned", "1");
                    set_view_box(&map, [vb[0] - dx * scale, vb[1] - dy * scale, vb[2], vb[3]]);
                }
            }
        });
        let on_up = Closure::<dyn FnMut(PointerEvent)>::new(move |_| drag.set(None));
        let _ = map.add_event_listener_with_callback("wheel", on_wheel.as_ref().unchecked_ref());
        let _ = map.add_event_listener_with_callback("pointerdown", on_down.as_ref().unchecked_ref());
        let _ = map.add_event_listener_with_callback("pointermove", on_move.as_ref().unchecked_ref());
        let _ = window().add_event_listener_with_callback("pointerup", on_up.as_ref().unchecked_ref());
        on_wheel.forget();
        on_down.forget();
        on_move.forget();
        on_up.forget();
    }

    // ------------------------------------------------- checkout and account

    pub fn watch_checkout(checkout_id: String, status: RwSignal<String>, reason: RwSignal<Option<String>>) {
        spawn_local(async move {
            let url = format!("/api/v1/checkouts/{checkout_id}");
            while status.get_untracked() == "payment_pending" {
                sleep(1000).await;
                let Ok((200, body)) = call("GET", &url, None, &[]).await else { continue };
                let Ok(state) = serde_json::from_value::<CheckoutView>(body) else { continue };
                if let Some(booking) = state.booking.filter(|_| state.status == "confirmed") {
                    status.set(state.status);
                    return navigate(&format!("/bookings/{}", booking.booking_id));
                }
                reason.set(state.reason);
                status.set(state.status);
            }
        });
    }

    #[derive(Deserialize)]
    struct CheckoutView {
        status: String,
        booking: Option<BookingRef>,
        reason: Option<String>,
    }

    #[derive(Deserialize)]
    struct BookingRef {
        booking_id: String,
    }

    #[allow(clippy::too_many_arguments)]
    pub fn authenticate(
        signup: bool,
        name: String,
        email: String,
        password: String,
        next: String,
        error: RwSignal<Option<String>>,
        busy: RwSignal<bool>,
    ) {
        busy.set(true);
        error.set(None);
        spawn_local(async move {
            let (url, body) = if signup {
                ("/api/v1/auth/signup", json!({ "name": name, "email": email, "password": password }))
            } else {
                ("/api/v1/auth/login", json!({ "email": email, "password": password }))
            };
            match call("POST", url, Some(body), &[]).await {
                Ok((200 | 201, _)) => return navigate(&next),
                Ok((_, body)) => error.set(Some(error_text(&body))),
                Err(e) => error.set(Some(e)),
            }
            busy.set(false);
        });
    }

    pub fn sign_out() {
        spawn_local(async move {
            let _ = call("POST", "/api/v1/auth/logout", None, &[]).await;
            navigate("/");
        });
    }
}

#[cfg(not(feature = "hydrate"))]
mod inert {
    use leptos::prelude::RwSignal;

    use crate::islands::Picker;

    pub fn toggle_seat(_: Picker, _: &str) {}
    pub fn hold_selected(_: Picker) {}
    pub fn hold_best(_: Picker, _: String, _: String) {}
    pub fn release(_: Picker) {}
    pub fn pay(_: Picker) {}
    pub fn start_picker(_: Picker, _: i64) {}
    pub fn zoom(_: f64) {}
    pub fn show_section(_: &str) {}
    pub fn start_map_tools() {}
    pub fn watch_checkout(_: String, _: RwSignal<String>, _: RwSignal<Option<String>>) {}
    pub fn authenticate(_: bool, _: String, _: String, _: String, _: String, _: RwSignal<Option<String>>, _: RwSignal<bool>) {}
    pub fn sign_out() {}
}
