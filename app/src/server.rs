//! Server-only helpers for the server functions: the engine and the session
//! from the request's context, the response status, QR codes.

use frontrow_engine::Engine;
use frontrow_model::{AppError, EventId, User, UserId};
use leptos::prelude::*;
use tower_sessions::Session;

use crate::session;

/// Where fans reach this site (for links in email).
#[derive(Debug, Clone)]
pub struct SiteUrl(pub String);

pub fn engine() -> Result<Engine, AppError> {
    use_context::<Engine>().ok_or_else(|| {
        tracing::error!("the engine is not in the server function's context");
        AppError::internal()
    })
}

pub async fn request_session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>().await.map_err(|e| {
        tracing::error!(error = %e, "no session layer in front of the server function");
        AppError::internal()
    })
}

/// A published event's board from this instance's memory, with the engine
/// and the session: `None` for an id that is no event's or that fans may
/// not see (a page answers 404).
pub async fn published_board(event_id: &str) -> Result<Option<(Engine, Session, frontrow_engine::venue::live::BoardSnapshot)>, AppError> {
    let Ok(id) = event_id.parse::<EventId>() else { return Ok(None) };
    let (engine, session) = (engine()?, request_session().await?);
    match engine.board().snapshot(id).await {
        Ok(board) if board.event.published => Ok(Some((engine, session, board))),
        Ok(_) | Err(frontrow_engine::EngineError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The signed-in user, if any.
pub async fn viewer() -> Result<Option<User>, AppError> {
    session::current_user(&request_session().await?, &engine()?).await
}

/// The per-fan limit on the calls that cost the server real work, as the
/// server keeps it (the one the JSON API's hold and queue calls draw on):
/// `Err` is the 429 to answer.
#[derive(Clone)]
pub struct FanLimit(pub std::sync::Arc<dyn Fn(UserId) -> Result<(), AppError> + Send + Sync>);

/// The signed-in user (401 otherwise), with the engine and the session,
/// held to the per-fan limit (429 with the wait when they ask too often).
pub async fn limited_fan() -> Result<(Engine, Session, User), AppError> {
    let (engine, session, user) = fan().await?;
    if let Some(limit) = use_context::<FanLimit>() {
        (limit.0)(user.user_id)?;
    }
    Ok((engine, session, user))
}

/// The signed-in user (401 otherwise), with the engine and the session.
pub async fn fan() -> Result<(Engine, Session, User), AppError> {
    let (engine, session) = (engine()?, request_session().await?);
    let user = session::signed_in_user(&session, &engine).await?;
    Ok((engine, session, user))
}

/// The signed-in staff member (401 anonymous, 403 a fan), with the engine.
pub async fn staff() -> Result<(Engine, User), AppError> {
    let (engine, _, user) = fan().await?;
    if !user.role.is_staff() {
        return Err(AppError::forbidden());
    }
    Ok((engine, user))
}

/// After a plain form post succeeded, back to `to` (a path on this site).
pub fn back_to(to: &str) {
    if from_html_form() {
        leptos_axum::redirect(&crate::links::safe_next(Some(to.to_owned())));
    }
}

/// The Content-Security-Policy of an HTML page whose inline scripts and
/// styles carry `nonce`: everything else from this site only, WebAssembly
/// allowed to compile, no plugins, no framing, forms posting here only.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// What an event page's render says of itself, when the server asks (a
/// page kept for later viewers): the server clock it printed, if any (the
/// pickers' `server_now_ms`, each later viewer gets the clock of their own
/// request), and whether it is the page every viewer like this one gets
/// (no hold, no waiting-room admission of theirs in it). A page that says
/// nothing is not kept.
#[derive(Debug, Clone, Default)]
pub struct RenderedPage(std::sync::Arc<std::sync::Mutex<Option<PageFacts>>>);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageFacts {
    pub server_now_ms: Option<i64>,
    pub shared: bool,
}

impl RenderedPage {
    /// Notes, for the request being rendered, what its page is.
    pub fn record(facts: PageFacts) {
        if let Some(slot) = use_context::<http::request::Parts>().and_then(|parts| parts.extensions.get::<RenderedPage>().cloned()) {
            *slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(facts);
        }
    }

    /// What the page noted, if it did.
    pub fn facts(&self) -> Option<PageFacts> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Sets the HTTP status of the response being made.
pub fn set_status(status: u16) {
    if let (Some(options), Ok(code)) = (use_context::<leptos_axum::ResponseOptions>(), http::StatusCode::from_u16(status)) {
        options.set_status(code);
    }
}

/// Whether the request came from a plain HTML form (no JavaScript): such a
/// caller is answered with a redirect, not data.
pub fn from_html_form() -> bool {
    use_context::<http::request::Parts>()
        .is_some_and(|parts| parts.headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/html")))
}

/// A ticket code as an SVG QR code (medium error correction, quiet zone
/// included, so phone cameras and gate scanners read it from paper or glass).
pub fn qr_svg(code: &str, title: &str) -> String {
    use qrcode::render::svg;
    use qrcode::{EcLevel, QrCode};
    match QrCode::with_error_correction_level(code.as_bytes(), EcLevel::M) {
        Ok(qr) => {
            let image = qr.render::<svg::Color>().min_dimensions(160, 160).quiet_zone(true).build();
            // Give the picture a name for screen readers.
            image.replacen("<svg ", &format!("<svg role=\"img\" aria-label=\"{}\" ", html_escape(title)), 1)
        }
        Err(_) => String::new(),
    }
}

pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
