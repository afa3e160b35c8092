//! Headers every response carries: no MIME sniffing, no framing, a strict
//! referrer policy, HSTS behind an https public URL, and a
//! Content-Security-Policy (pages set their own, with their nonce; anything
//! else gets one that allows nothing).

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

/// A fresh nonce for one page's inline scripts and styles.
pub fn nonce() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

pub async fn security_headers(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
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
