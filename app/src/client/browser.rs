//! Small wrappers over the browser: the window and document, the clock,
//! timers, session storage, random keys, navigation.

use wasm_bindgen::JsCast;

pub use frontrow_seat_dom::{document, element, window};

/// The browser's clock, in Unix milliseconds.
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

pub fn navigate(url: &str) {
    let _ = window().location().assign(url);
}

/// Loads the page again from the server (what it shows has changed).
pub fn reload() {
    let _ = window().location().reload();
}

pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

pub fn session_storage() -> Option<web_sys::Storage> {
    window().session_storage().ok().flatten()
}

/// 128 random bits from the browser's CSPRNG, as hex.
pub fn random_key() -> String {
    let mut bytes = [0u8; 16];
    if let Ok(crypto) = window().crypto() {
        let _ = crypto.get_random_values_with_u8_array(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Moves keyboard focus to the element with this id, if it can take it.
pub fn focus(id: &str) {
    if let Some(el) = element(id).and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        let _ = el.focus();
    }
}
