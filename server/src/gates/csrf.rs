//! Cross-site request forgery: a state-changing request from another
//! site's page is refused.

use axum::extract::Request;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::error::{AppError, ErrorKind};

/// A state-changing request from a page of another site is refused, with
/// or without a session: a cross-site form must not sign a visitor into
/// someone else's account either (login CSRF). Requests without Origin
/// (non-browser clients) pass, as the contract says.
pub async fn csrf_guard(request: Request, next: Next) -> Response {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe {
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
            let origin_host = origin.to_str().ok().and_then(|o| o.split_once("://")).map(|(_, rest)| rest.trim_end_matches('/'));
            if host.is_none() || origin_host != host {
                return AppError::new(ErrorKind::Csrf, "cross-site request refused").into_response();
            }
        }
    }
    next.run(request).await
}
