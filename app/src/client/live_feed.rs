//! The live seat feed: a WebSocket to `/api/v1/events/{id}/live`, resumed
//! from the last frame seen, reconnecting with jittered back-off.

use std::cell::Cell;
use std::rc::Rc;

use frontrow_model::live::LiveFrame;
use leptos::prelude::set_timeout;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, WebSocket};

use super::browser::window;

/// What the feed reports to its owner.
pub trait FeedListener: 'static {
    /// `(epoch, seq)` to resume from on the next connection.
    fn resume_from(&self) -> (u32, u64);
    fn connected(&self, live: bool);
    fn frame(&self, frame: LiveFrame<'_>);
}

/// Opens the feed of `event_id` for what the page shows (`view`: `""`
/// every seat, `"overview"` the sections' counts, else one section's
/// name) and keeps it open for the page's life.
pub fn open(event_id: String, view: String, listener: Rc<dyn FeedListener>) {
    let what = match view.as_str() {
        "" => String::new(),
        "overview" => "view=overview&".to_owned(),
        section => format!("section={section}&"),
    };
    // (The path ends where the resume point's parameters go.)
    connect(Rc::new(format!("{event_id}/live?{what}")), listener, 0);
}

fn connect(path: Rc<String>, listener: Rc<dyn FeedListener>, attempt: u32) {
    let location = window().location();
    let scheme = if location.protocol().ok().as_deref() == Some("https:") { "wss" } else { "ws" };
    let host = location.host().unwrap_or_default();
    let (epoch, seq) = listener.resume_from();
    let url = format!("{scheme}://{host}/api/v1/events/{path}epoch={epoch}&since={seq}");
    let Ok(socket) = WebSocket::new(&url) else {
        return reconnect_later(path, listener, attempt);
    };
    let opened = Rc::new(Cell::new(false));

    let on_open = Closure::<dyn FnMut()>::new({
        let (opened, listener) = (opened.clone(), listener.clone());
        move || {
            opened.set(true);
            listener.connected(true);
        }
    });
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new({
        let listener = listener.clone();
        move |ev: MessageEvent| {
            if let Some(text) = ev.data().as_string() {
                if let Ok(frame) = serde_json::from_str::<LiveFrame>(&text) {
                    listener.frame(frame);
                }
            }
        }
    });
    let on_close = Closure::<dyn FnMut()>::new(move || {
        listener.connected(false);
        // A connection that worked starts the back-off afresh.
        let next = if opened.get() { 0 } else { attempt + 1 };
        reconnect_later(path.clone(), listener.clone(), next);
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
fn reconnect_later(path: Rc<String>, listener: Rc<dyn FeedListener>, attempt: u32) {
    let base = (500.0 * 2f64.powi(attempt.min(5) as i32)).min(10_000.0);
    let delay = base * (0.5 + js_sys::Math::random() * 0.5);
    set_timeout(move || connect(path, listener, attempt), std::time::Duration::from_millis(delay as u64));
}
