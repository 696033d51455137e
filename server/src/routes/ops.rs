//! Operator endpoints: liveness, readiness, metrics.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use lobby_api::api::{ErrorBody, ErrorCode};
use serde_json::{Value, json};

use crate::error::AppError;
use crate::extract::ClientIp;
use crate::state::AppState;

/// Liveness: the process is serving.
#[utoipa::path(get, path = "/healthz", tag = "ops", responses((status = 200, description = "Alive")))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: the database answers within two seconds.
#[utoipa::path(
    get, path = "/readyz", tag = "ops",
    responses(
        (status = 200, description = "Ready"),
        (status = 503, description = "Database unreachable or shutting down", body = ErrorBody),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, AppError> {
    if state.shutdown.is_cancelled() {
        return Err(AppError::new(
            ErrorCode::ShuttingDown,
            "the server is shutting down",
        ));
    }
    match tokio::time::timeout(Duration::from_secs(2), state.store.ping()).await {
        Ok(Ok(())) => Ok(Json(json!({"status": "ready"}))),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => Err(AppError::new(
            ErrorCode::Unavailable,
            "the database did not answer within 2 s",
        )),
    }
}

/// Prometheus metrics (OpenMetrics text), for clients inside
/// `--metrics-allow` only (others get 404, as for a path that is not there).
#[utoipa::path(get, path = "/metrics", tag = "ops", responses(
    (status = 200, description = "OpenMetrics text", body = String, content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
    (status = 404, description = "The client is not allowed to read the metrics", body = ErrorBody),
))]
pub async fn metrics(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
) -> Result<impl IntoResponse, AppError> {
    let client = crate::client_addr::canonical(client);
    if !state
        .config
        .metrics_allow
        .iter()
        .any(|n| n.contains(&client))
    {
        return Err(AppError::new(
            ErrorCode::NotFound,
            "no such route; see /openapi.json",
        ));
    }
    if let Ok(n) = state.store.count_live(state.now()).await {
        state
            .metrics
            .sessions_live
            .set(n.min(i64::MAX as u64) as i64);
    }
    state.metrics.long_poll_waiters.set(state.waiters.waiting());
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    ))
}
