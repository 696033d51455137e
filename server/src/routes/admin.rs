//! The operator's admin API: every session (hide, end), blocks of
//! addresses and prefixes, and the audit log. Every call takes an admin token (`Authorization: Bearer`);
//! without `--admin-token-file` the whole surface answers 404, as an
//! unknown route does. Each call is charged to the address's admin budget
//! before its token is checked, and no response may be cached.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use lobby_api::api::HostKind;
use lobby_api::api::admin::{
    AdminSessionPage, AdminSessionView, AuditPage, BlockList, BlockPlaced, BlockRequest,
    EndRequest, HideRequest, WordsReloaded,
};
use lobby_api::api::{ErrorBody, ErrorCode};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::error::AppError;
use crate::extract::{ApiJson, ApiQuery, ClientIp, CodePath, bearer_token};
use crate::moderating;
use crate::moderation::blocks::parse_prefix;
use crate::moderation::listing::{self, SessionFilter};
use crate::rate_limit::Budget;
use crate::routes::session::CodeParam;
use crate::state::AppState;

/// The reports one session's view shows.
pub const RECENT_REPORTS: u32 = 20;

/// The most audit entries one page holds.
pub const MAX_AUDIT_PAGE: u32 = 200;

/// The refusals every admin route may answer, for the OpenAPI document.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses; AppError builds them")]
enum AdminRefusals {
    /// Missing or wrong admin token
    #[response(status = 403)]
    WrongToken(ErrorBody),
    /// Too many admin requests from this address
    #[response(status = 429)]
    TooMany(ErrorBody),
    /// Database unreachable
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The caller of an admin route: the name of the admin token it presented.
pub struct Admin(pub String);

impl FromRequestParts<AppState> for Admin {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Some(tokens) = &state.moderation.tokens else {
            return Err(AppError::new(
                ErrorCode::NotFound,
                "no such route; see /openapi.json",
            ));
        };
        let ClientIp(ip) = ClientIp::from_request_parts(parts, state).await?;
        state.limits.check(Budget::Admin, ip)?;
        match bearer_token(&parts.headers).and_then(|t| tokens.holder(t)) {
            Some(name) => Ok(Admin(name.to_owned())),
            None => {
                tracing::warn!(client = %ip, "admin call with a missing or wrong token");
                Err(AppError::new(
                    ErrorCode::WrongToken,
                    "missing or wrong admin token",
                ))
            }
        }
    }
}

/// `Cache-Control: no-store` on every admin response, errors included.
pub async fn no_store(response: Response) -> Response {
    let mut response = response;
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The blocks in force, newest first.
#[utoipa::path(
    get, path = "/admin/blocks", tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The blocks in force", body = BlockList),
        AdminRefusals,
        (status = 404, description = "The admin API is off (no --admin-token-file)", body = ErrorBody),
    )
)]
pub async fn list_blocks(
    State(state): State<AppState>,
    _admin: Admin,
) -> Result<Json<BlockList>, AppError> {
    let rows = state.store.live_blocks(state.now()).await?;
    Ok(Json(BlockList {
        blocks: rows.into_iter().map(moderating::block_view).collect(),
    }))
}

/// Blocks an address or prefix: its creates, updates and answers get
/// `403 blocked` on every replica until the block lapses or is lifted.
#[utoipa::path(
    post, path = "/admin/blocks", tag = "admin",
    security(("admin_token" = [])),
    request_body = BlockRequest,
    responses(
        (status = 201, description = "Placed (and the sessions it ended)", body = BlockPlaced),
        (status = 400, description = "Not a prefix, a duration out of range, or no reason", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "The admin API is off (no --admin-token-file)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
    )
)]
pub async fn place_block(
    State(state): State<AppState>,
    Admin(actor): Admin,
    ApiJson(req): ApiJson<BlockRequest>,
) -> Result<(StatusCode, Json<BlockPlaced>), AppError> {
    let block = moderating::place_block(&state, &actor, &req).await?;
    Ok((StatusCode::CREATED, Json(block)))
}

/// A block's id in the path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(
    dead_code,
    reason = "documents the path parameter; the handler parses it for a JSON error"
)]
pub struct BlockId {
    /// The block's id, as listed.
    id: i64,
}

/// Why a block is lifted.
#[derive(Debug, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct LiftReason {
    /// Why, for the audit log.
    #[param(max_length = 500)]
    reason: Option<String>,
}

/// Lifts a block before it lapses.
#[utoipa::path(
    delete, path = "/admin/blocks/{id}", tag = "admin",
    security(("admin_token" = [])),
    params(BlockId, LiftReason),
    responses(
        (status = 204, description = "Lifted"),
        (status = 400, description = "Not a block id", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "No such block, or the admin API is off", body = ErrorBody),
    )
)]
pub async fn lift_block(
    State(state): State<AppState>,
    Admin(actor): Admin,
    Path(path): Path<String>,
    ApiQuery(lift): ApiQuery<LiftReason>,
) -> Result<StatusCode, AppError> {
    let id: i64 = path
        .parse()
        .map_err(|_| AppError::invalid_field("id", "not a block id"))?;
    let reason = lift.reason.unwrap_or_default();
    moderating::lift_block(&state, &actor, id, &reason).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A page of the audit log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct AuditQuery {
    /// Entries older than this id (a page's `nextBefore`).
    #[param(minimum = 1)]
    before: Option<i64>,
    /// Entries per page (default 50, at most 200).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
}

/// The audit log, newest first: every admin action that changed something.
#[utoipa::path(
    get, path = "/admin/audit", tag = "admin",
    security(("admin_token" = [])),
    params(AuditQuery),
    responses(
        (status = 200, description = "A page of the log", body = AuditPage),
        (status = 400, description = "A bad query", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "The admin API is off (no --admin-token-file)", body = ErrorBody),
    )
)]
pub async fn audit_log(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Json<AuditPage>, AppError> {
    if q.before.is_some_and(|b| b < 1) {
        return Err(AppError::invalid_field("before", "an entry id, at least 1"));
    }
    let limit = q.limit.unwrap_or(50);
    if limit == 0 || limit > MAX_AUDIT_PAGE {
        return Err(AppError::invalid_field(
            "limit",
            format!("between 1 and {MAX_AUDIT_PAGE}"),
        ));
    }
    let rows = state.store.audit_page(q.before, limit + 1).await?;
    let more = rows.len() > limit as usize;
    let entries: Vec<_> = rows
        .into_iter()
        .take(limit as usize)
        .map(moderating::audit_entry)
        .collect();
    let next_before = entries.last().filter(|_| more).map(|e| e.id);
    Ok(Json(AuditPage {
        entries,
        next_before,
    }))
}

/// What a moderator looks for in `GET /admin/sessions`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct SessionQuery {
    /// Words each of which the name or host name holds (any case).
    #[param(max_length = 200)]
    q: Option<String>,
    /// Only sessions of this host kind.
    host_kind: Option<HostKind>,
    /// Only hidden (`true`) or only unhidden (`false`) sessions.
    hidden: Option<bool>,
    /// Only reported (`true`) or only unreported (`false`) sessions.
    reported: Option<bool>,
    /// `newest` (the default) or `reports`: most reported first.
    sort: Option<SessionOrder>,
    /// Only sessions created from inside this address or CIDR prefix.
    #[param(max_length = 64, example = "203.0.113.0/24")]
    creator: Option<String>,
    /// Sessions per page (default 50, at most 200).
    #[param(minimum = 1, maximum = 200)]
    limit: Option<u32>,
    /// A page's `nextCursor` (of a list in the same order).
    #[param(pattern = r"^([0-9]{1,9}-)?[0-9]{1,18}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$")]
    cursor: Option<String>,
}

/// The order of the moderators' list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionOrder {
    /// Newest first.
    #[default]
    Newest,
    /// Most reported first, then newest.
    Reports,
}

/// Every live session, public or private, hidden or not, newest first.
#[utoipa::path(
    get, path = "/admin/sessions", tag = "admin",
    security(("admin_token" = [])),
    params(SessionQuery),
    responses(
        (status = 200, description = "A page of sessions", body = AdminSessionPage),
        (status = 400, description = "A bad query", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "The admin API is off (no --admin-token-file)", body = ErrorBody),
    )
)]
pub async fn list_sessions(
    State(state): State<AppState>,
    _admin: Admin,
    ApiQuery(q): ApiQuery<SessionQuery>,
) -> Result<Json<AdminSessionPage>, AppError> {
    let limit = q.limit.unwrap_or(50) as usize;
    if limit == 0 || limit > listing::MAX_PAGE {
        return Err(AppError::invalid_field(
            "limit",
            format!("between 1 and {}", listing::MAX_PAGE),
        ));
    }
    let words = q.q.unwrap_or_default();
    if words.chars().count() > 200 {
        return Err(AppError::invalid_field("q", "at most 200 characters"));
    }
    let creator = match q.creator.as_deref() {
        None => None,
        Some(text) => {
            Some(parse_prefix(text).map_err(|why| AppError::invalid_field("creator", why))?)
        }
    };
    let filter = SessionFilter {
        words: words.split_whitespace().map(str::to_lowercase).collect(),
        host_kind: q.host_kind,
        hidden: q.hidden,
        creator,
        reported: q.reported,
        by_reports: q.sort == Some(SessionOrder::Reports),
    };
    let after = match q.cursor.as_deref() {
        None => None,
        Some(text) => Some(
            listing::parse_cursor(text, &filter)
                .ok_or_else(|| AppError::invalid_field("cursor", "not a cursor of this list"))?,
        ),
    };
    let records = state.store.list_all(state.now()).await?;
    let reports: HashMap<String, u32> = state
        .store
        .report_counts()
        .await?
        .into_iter()
        .map(|(code, n)| (code, u32::try_from(n).unwrap_or(u32::MAX)))
        .collect();
    let hidden = state.lobby.hidden();
    Ok(Json(listing::page(
        records,
        &hidden,
        &reports,
        &filter,
        after.as_ref(),
        limit,
    )))
}

/// One live session as moderators see it.
#[utoipa::path(
    get, path = "/admin/sessions/{code}", tag = "admin",
    security(("admin_token" = [])),
    params(CodeParam),
    responses(
        (status = 200, description = "The session", body = AdminSessionView),
        (status = 400, description = "Not a session code", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "No such live session, or the admin API is off", body = ErrorBody),
    )
)]
pub async fn get_session(
    State(state): State<AppState>,
    _admin: Admin,
    CodePath(code): CodePath,
) -> Result<Json<AdminSessionView>, AppError> {
    let record = state
        .store
        .get(&code, state.now())
        .await?
        .ok_or_else(AppError::no_such_session)?;
    let hidden = state.lobby.is_hidden(&code);
    let recent = state
        .store
        .reports_of(code.as_str(), RECENT_REPORTS)
        .await?;
    let count = state.store.report_count(code.as_str()).await?;
    Ok(Json(listing::view(
        &record,
        hidden,
        u32::try_from(count).unwrap_or(u32::MAX),
        recent.into_iter().map(moderating::report_view).collect(),
    )))
}

/// Hides a session from the lobby and its feed (still joinable by code),
/// or lists it again.
#[utoipa::path(
    post, path = "/admin/sessions/{code}/hide", tag = "admin",
    security(("admin_token" = [])),
    params(CodeParam),
    request_body = HideRequest,
    responses(
        (status = 204, description = "Hidden, or listed again"),
        (status = 400, description = "Not a session code, or a bad body", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "No such live session, or the admin API is off", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
    )
)]
pub async fn hide_session(
    State(state): State<AppState>,
    Admin(actor): Admin,
    CodePath(code): CodePath,
    ApiJson(req): ApiJson<HideRequest>,
) -> Result<StatusCode, AppError> {
    moderating::hide_session(&state, &actor, &code, req.hidden, &req.reason).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ends a session now: its host's next call, its long-polls and its
/// joiners get `410 session_ended`.
#[utoipa::path(
    post, path = "/admin/sessions/{code}/end", tag = "admin",
    security(("admin_token" = [])),
    params(CodeParam),
    request_body = EndRequest,
    responses(
        (status = 204, description = "Ended"),
        (status = 400, description = "Not a session code, a bad body, or no reason", body = ErrorBody),
        AdminRefusals,
        (status = 404, description = "No such live session, or the admin API is off", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
    )
)]
pub async fn end_session(
    State(state): State<AppState>,
    Admin(actor): Admin,
    CodePath(code): CodePath,
    ApiJson(req): ApiJson<EndRequest>,
) -> Result<StatusCode, AppError> {
    moderating::end_session(&state, &actor, &code, &req.reason).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Reads the word list file again (as SIGHUP does).
#[utoipa::path(
    post, path = "/admin/words/reload", tag = "admin",
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "Read; how many entries it holds", body = WordsReloaded),
        AdminRefusals,
        (status = 404, description = "No --word-list-file (or it cannot be read), or the admin API is off", body = ErrorBody),
    )
)]
pub async fn reload_words(
    State(state): State<AppState>,
    Admin(actor): Admin,
) -> Result<Json<WordsReloaded>, AppError> {
    let entries = moderating::reload_words_as(&state, &actor).await?;
    Ok(Json(WordsReloaded {
        entries: entries as u64,
    }))
}
