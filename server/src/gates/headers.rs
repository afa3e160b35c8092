//! Headers every response carries: no MIME sniffing, no framing, a strict
//! referrer policy, HSTS behind an https public URL, and a
//! Content-Security-Policy (a page rendered by the app gets one naming the
//! nonce of its inline scripts, askama pages set their own, anything else
//! gets one that allows nothing).

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

use std::sync::{Arc, Mutex};

use crate::state::AppState;

/// A fresh nonce for one page's inline scripts and styles.
pub fn nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// Where the app's render of this request leaves the nonce Leptos gave its
/// inline scripts (see [`record_page_nonce`]): the policy is set here from
/// it, on the response itself.
#[derive(Clone, Default)]
pub struct PageNonce(Arc<Mutex<Option<String>>>);

impl PageNonce {
    /// The nonce the page was rendered with, if it was.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The page goes out with this nonce (a kept page's own, see
    /// `page_cache`).
    pub fn set(&self, nonce: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(nonce);
    }
}

/// Called in the app's context of every render: hands the page's nonce to
/// [`security_headers`] through the request.
pub fn record_page_nonce() {
    let (Some(parts), Some(nonce)) = (leptos::prelude::use_context::<axum::http::request::Parts>(), leptos::nonce::use_nonce()) else { return };
    if let Some(slot) = parts.extensions.get::<PageNonce>() {
        slot.set(nonce.to_string());
    }
}

pub async fn security_headers(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let page_nonce = PageNonce::default();
    request.extensions_mut().insert(page_nonce.clone());
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let rendered_with = page_nonce.0.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(nonce) = rendered_with {
        if let Ok(policy) = HeaderValue::from_str(&frontrow_app::server::content_security_policy(&nonce)) {
            headers.insert(header::CONTENT_SECURITY_POLICY, policy);
        }
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    if state.settings.secure_cookies() {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000; includeSubDomains"));
    }
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        let is_html = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/html"));
        // A page that set no policy may run no inline code at all.
        let policy = if is_html {
            "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        } else {
            "default-src 'none'; frame-ancestors 'none'"
        };
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
    }
    response
}
