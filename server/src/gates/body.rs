//! The cap on request bodies.

/// The largest request body any route accepts.
pub const MAX_BODY: usize = 256 * 1024;

/// Caps every request body at [`MAX_BODY`], on every route (server
/// functions, pages and unknown paths included): a declared length above it
/// is refused at once (413), and a body without one is read up to the cap
/// and refused as soon as it passes it. Nothing can make a route buffer
/// more, and a huge upload costs at most the cap before the connection ends.
pub async fn limit_body(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let too_large = || crate::api::extract::payload_too_large().into_response();
    let headers = request.headers();
    let declared = headers.get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    let has_body = declared.is_some_and(|n| n > 0) || headers.contains_key(axum::http::header::TRANSFER_ENCODING);
    if !has_body {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await,
        Err(_) => too_large(),
    }
}
