//! Server-only helpers for server functions: the engine from context, the
//! signed-in user from the session, QR codes.

use frontrow_engine::model::User;
use frontrow_engine::Engine;
use leptos::prelude::*;
use uuid::Uuid;

use crate::SESSION_USER_KEY;

pub fn engine() -> Result<Engine, ServerFnError> {
    use_context::<Engine>().ok_or_else(|| ServerFnError::new("the engine is not in context"))
}

pub fn internal(e: impl std::fmt::Display) -> ServerFnError {
    tracing_error(&e);
    ServerFnError::new("something went wrong on our side")
}

fn tracing_error(e: &dyn std::fmt::Display) {
    leptos::logging::error!("server function failed: {e}");
}

/// The signed-in user, if any.
pub async fn current_user() -> Result<Option<User>, ServerFnError> {
    let session: tower_sessions::Session = leptos_axum::extract().await?;
    let Some(user_id) = session.get::<Uuid>(SESSION_USER_KEY).await.map_err(internal)? else {
        return Ok(None);
    };
    frontrow_engine::accounts::find_user(&engine()?.pool, user_id).await.map_err(internal)
}

/// The fan's admission to the event's waiting room, from the session:
/// `(admission token, queue token)` if the token verifies for this fan and
/// session.
pub async fn session_admission(event_id: Uuid, user_id: Uuid) -> Result<Option<(String, Option<String>)>, ServerFnError> {
    let session: tower_sessions::Session = leptos_axum::extract().await?;
    let key = event_id.simple().to_string();
    let token = session.get::<String>(&crate::admission_session_key(&key)).await.map_err(internal)?;
    let binding = session.get::<String>(crate::ADMISSION_BINDING_KEY).await.map_err(internal)?;
    let queue_token = session.get::<String>(&crate::queue_session_key(&key)).await.map_err(internal)?;
    let secret = use_context::<crate::AdmissionSecret>().ok_or_else(|| ServerFnError::new("no admission secret in context"))?;
    Ok(match (token, binding) {
        (Some(token), Some(binding))
            if frontrow_engine::admission::verify(secret.0.as_bytes(), &token, event_id, user_id, &binding, chrono::Utc::now().timestamp()).is_ok() =>
        {
            Some((token, queue_token))
        }
        _ => None,
    })
}

/// Sets the HTTP status of the page being rendered.
pub fn set_status(status: u16) {
    if let (Some(options), Ok(code)) = (use_context::<leptos_axum::ResponseOptions>(), http::StatusCode::from_u16(status)) {
        options.set_status(code);
    }
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
