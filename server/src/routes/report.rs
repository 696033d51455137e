//! Players' reports of sessions: `POST /session/{code}/report` tells the
//! lobby's moderators about a session (its name, spam, cheating,
//! harassment). Budgeted per address and per session; moderators see them
//! in the admin API.

use axum::extract::State;
use axum::http::StatusCode;
use lobby_api::api::ErrorBody;
use lobby_api::api::admin::ReportRequest;

use crate::error::AppError;
use crate::extract::{ApiJson, ClientIp, CodePath};
use crate::moderating;
use crate::rate_limit::Budget;
use crate::routes::session::CodeParam;
use crate::state::AppState;

/// Report a session to the lobby's moderators.
#[utoipa::path(
    post, path = "/session/{code}/report", tag = "session",
    params(CodeParam),
    request_body = ReportRequest,
    responses(
        (status = 204, description = "Reported (a repeat from the same address changes nothing)"),
        (status = 400, description = "Not a session code, or a bad body", body = ErrorBody),
        (status = 404, description = "Unknown or expired session", body = ErrorBody),
        (status = 410, description = "A moderator already ended the session", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body not sent as `application/json`", body = ErrorBody),
        (status = 429, description = "Too many reports from this address, or of this session", body = ErrorBody),
        (status = 503, description = "Database unreachable", body = ErrorBody),
    )
)]
pub async fn report_session(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    CodePath(code): CodePath,
    ApiJson(req): ApiJson<ReportRequest>,
) -> Result<StatusCode, AppError> {
    state.limits.check_not_blocked(ip)?;
    state.limits.check(Budget::Reports, ip)?;
    moderating::report(&state, ip, &code, &req).await?;
    Ok(StatusCode::NO_CONTENT)
}
