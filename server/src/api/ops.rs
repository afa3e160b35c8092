//! Liveness, readiness and Prometheus metrics.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use crate::state::AppState;

#[utoipa::path(get, path = "/healthz", responses((status = 200)))]
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// Ready when the database answers and every migration this build knows is applied.
#[utoipa::path(get, path = "/readyz", responses((status = 200), (status = 503)))]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    // A load balancer asks often: answer within a second either way.
    match tokio::time::timeout(std::time::Duration::from_secs(1), state.engine.migrations_applied()).await {
        Ok(Ok((n, expected))) if n >= expected => (StatusCode::OK, Json(json!({ "status": "ready", "migrations": n }))),
        Ok(Ok((n, expected))) => {
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "migrations_pending", "applied": n, "expected": expected })))
        }
        Ok(Err(_)) | Err(_) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "database_unreachable" }))),
    }
}

#[utoipa::path(get, path = "/metrics", responses((status = 200, content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    ([("content-type", "text/plain; version=0.0.4")], state.metrics.render())
}
