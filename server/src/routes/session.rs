//! `/session`: hosts create and update sessions and publish offer rounds;
//! joiners read the open round and post answers; hosts long-poll for them.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lobby_api::api::{
    ANSWER_WAIT_MAX_MS, AnswerView, ErrorBody, ErrorCode, PostAnswerRequest, PutSessionRequest,
    PutSessionResponse, SessionView,
};
use lobby_api::code::SessionCode;
use lobby_api::name::sanitize_display_name;
use lobby_api::sdp::check_plausible_sdp;
use serde::Deserialize;

use crate::clock::to_datetime;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiQuery, ClientIp, CodePath, bearer_token};
use crate::fields::{checked_offer, fields_for_create};
use crate::ice::TurnGrant;
use crate::lobby_index::lobby_entry;
use crate::metrics::RejectLabels;
use crate::moderating;
use crate::rate_limit::{Budget, SessionBudget};
use crate::sessions;
use crate::state::AppState;
use crate::store::{SessionRecord, StoredAnswer};

/// The session code in a path.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // documents the path; `CodePath` parses it
pub struct CodeParam {
    /// Session code: 8 characters of `23456789ABCDEFGHJKMNPQRSTUVWXYZ`, any
    /// case; dashes and spaces between them are ignored.
    #[param(pattern = "^[- ]*([2-9A-HJKMNP-Za-hjkmnp-z][- ]*){8}$")]
    code: String,
}

/// Create a session (no `code`), or update one (`code` and the host's token).
#[utoipa::path(
    put, path = "/session", tag = "session",
    request_body = PutSessionRequest,
    security((), ("host_token" = [])),
    responses(
        (status = 201, description = "Session created; `Location` names it", body = PutSessionResponse,
            links(
                ("read" = (operation_id = "get_session", parameters(("code" = "$response.body#/code")))),
                ("answer" = (operation_id = "post_answer", parameters(("code" = "$response.body#/code")))),
                ("poll" = (operation_id = "get_answer", parameters(
                    ("code" = "$response.body#/code"),
                    ("round" = "$response.body#/round"),
                    ("header.Authorization" = "Bearer {$response.body#/hostToken}")
                ))),
                ("delete" = (operation_id = "delete_session", parameters(
                    ("code" = "$response.body#/code"),
                    ("header.Authorization" = "Bearer {$response.body#/hostToken}")
                ))),
            )
        ),
        (status = 200, description = "Session updated", body = PutSessionResponse),
        (status = 400, description = "Invalid body, field, code or offer", body = ErrorBody),
        (status = 403, description = "Missing or wrong host token (`wrong_token`), or the address is blocked by the lobby's moderators (`blocked`)", body = ErrorBody),
        (status = 404, description = "Unknown or expired code", body = ErrorBody),
        (status = 410, description = "A moderator ended the session (`session_ended`): do not publish it again", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body not sent as `application/json`", body = ErrorBody),
        (status = 429, description = "Too many creates, live sessions or bytes held by live sessions from this address, or updates of this session", body = ErrorBody),
        (status = 503, description = "Database unreachable, or the lobby holds as many sessions, or bytes of offers, answers and meta, as it is configured for", body = ErrorBody),
    )
)]
pub async fn put_session(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(req): ApiJson<PutSessionRequest>,
) -> Result<Response, AppError> {
    moderating::check_not_blocked(&state, ip)?;
    moderating::check_names(&state, &req)?;
    match req.code.as_deref() {
        None => {
            state.limits.check(Budget::Creates, ip)?;
            create_session(&state, ip, &req).await
        }
        Some(raw) => {
            let code = SessionCode::parse(raw)
                .map_err(|e| AppError::new(ErrorCode::InvalidCode, format!("code: {e}")))?;
            state.limits.check_not_blocked(ip)?;
            update_session(&state, ip, &code, bearer_token(&headers), &req).await
        }
    }
}

async fn create_session(
    state: &AppState,
    ip: std::net::IpAddr,
    req: &PutSessionRequest,
) -> Result<Response, AppError> {
    let fields = fields_for_create(req, &state.config)?;
    let offer = checked_offer(req, &state.config)?;
    let (record, token) = sessions::create(state, ip, fields, offer).await?;
    let body = put_response(state, &record, Some(token.into_string()));
    let location = HeaderValue::from_str(&format!("/session/{}", record.code))
        .map_err(|_| AppError::new(ErrorCode::Internal, "bad location header"))?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(body),
    )
        .into_response())
}

async fn update_session(
    state: &AppState,
    ip: std::net::IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    req: &PutSessionRequest,
) -> Result<Response, AppError> {
    let record = sessions::update(state, ip, code, token, req).await?;
    Ok((StatusCode::OK, Json(put_response(state, &record, None))).into_response())
}

/// A stored answer as the API shows it.
fn answer_view(a: StoredAnswer) -> AnswerView {
    AnswerView {
        round: a.round,
        answer: a.answer,
        name: a.name,
    }
}

fn put_response(
    state: &AppState,
    record: &SessionRecord,
    host_token: Option<String>,
) -> PutSessionResponse {
    PutSessionResponse {
        code: record.code.clone(),
        host_token,
        round: record.open_round(),
        expires_at: to_datetime(record.expires_at),
        ice_servers: state
            .ice
            .servers(TurnGrant::Host(record.code.as_str()), state.now() / 1000),
    }
}

/// A session's public view with its open round, for joiners.
#[utoipa::path(
    get, path = "/session/{code}", tag = "session",
    params(CodeParam),
    responses(
        (status = 200, description = "The session; `round` and `offer` are null when no round is open", body = SessionView),
        (status = 400, description = "Not a session code", body = ErrorBody),
        (status = 404, description = "Unknown or expired session", body = ErrorBody),
        (status = 410, description = "A moderator ended the session (`session_ended`): do not publish it again", body = ErrorBody),
        (status = 429, description = "Too many session reads, or unknown codes looked up, from this address", body = ErrorBody),
        (status = 503, description = "Database unreachable", body = ErrorBody),
    )
)]
pub async fn get_session(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    CodePath(code): CodePath,
) -> Result<Json<SessionView>, AppError> {
    state.limits.check_not_blocked(ip)?;
    state.limits.check(Budget::SessionReads, ip)?;
    let now = state.now();
    let Some(record) = state.store.get(&code, now).await? else {
        if state.moderation.was_ended(&code, now) {
            return Err(sessions::session_gone(&state, &code));
        }
        state.limits.record_miss(ip)?;
        return Err(AppError::no_such_session());
    };
    Ok(Json(SessionView {
        entry: lobby_entry(&record),
        public: record.fields.public,
        round: record.open_round(),
        offer: record.offer.clone(),
        ice_servers: state.ice.servers(
            match record.open_round() {
                Some(round) => TurnGrant::Round(record.code.as_str(), round),
                None => TurnGrant::Nothing,
            },
            now / 1000,
        ),
    }))
}

/// End a session now.
#[utoipa::path(
    delete, path = "/session/{code}", tag = "session",
    params(CodeParam),
    security(("host_token" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Not a session code", body = ErrorBody),
        (status = 403, description = "Missing or wrong host token", body = ErrorBody),
        (status = 404, description = "Unknown or expired session", body = ErrorBody),
        (status = 410, description = "A moderator ended the session (`session_ended`): do not publish it again", body = ErrorBody),
        (status = 429, description = "Too many unknown codes looked up from this address", body = ErrorBody),
        (status = 503, description = "Database unreachable", body = ErrorBody),
    )
)]
pub async fn delete_session(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    CodePath(code): CodePath,
) -> Result<StatusCode, AppError> {
    state.limits.check_not_blocked(ip)?;
    sessions::delete(&state, ip, &code, bearer_token(&headers)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Claim the open round with an answer: the first valid answer wins.
#[utoipa::path(
    post, path = "/session/{code}/answer", tag = "session",
    params(CodeParam),
    request_body = PostAnswerRequest,
    responses(
        (status = 201, description = "This answer won the round", body = AnswerView),
        (status = 400, description = "Invalid body or an answer that is not SDP", body = ErrorBody),
        (status = 403, description = "The address is blocked by the lobby's moderators (`blocked`)", body = ErrorBody),
        (status = 404, description = "Unknown or expired session", body = ErrorBody),
        (status = 410, description = "A moderator ended the session (`session_ended`): do not publish it again", body = ErrorBody),
        (status = 409, description = "The round was already answered or is not the open round", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body not sent as `application/json`", body = ErrorBody),
        (status = 429, description = "Too many answers or unknown codes from this address, too many answers to this session from this address, or an answer that would take the host's address past its byte budget", body = ErrorBody),
        (status = 503, description = "Database unreachable, or the lobby holds as many bytes of offers, answers and meta as it is configured for", body = ErrorBody),
    )
)]
pub async fn post_answer(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    CodePath(code): CodePath,
    ApiJson(req): ApiJson<PostAnswerRequest>,
) -> Result<Response, AppError> {
    moderating::check_not_blocked(&state, ip)?;
    state.limits.check_not_blocked(ip)?;
    // Refused for this session first: that costs the address nothing.
    state.limits.check_session_answer(&code, ip)?;
    state.limits.check(Budget::Answers, ip)?;
    let result = claim(&state, ip, &code, req).await;
    if let Err(err) = &result {
        let reason = serde_json::to_value(err.code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
        state
            .metrics
            .answers_rejected
            .get_or_create(&RejectLabels {
                reason: reason.unwrap_or_default(),
            })
            .inc();
    }
    result
}

async fn claim(
    state: &AppState,
    ip: std::net::IpAddr,
    code: &SessionCode,
    req: PostAnswerRequest,
) -> Result<Response, AppError> {
    check_plausible_sdp(&req.answer, state.config.max_sdp_bytes)
        .map_err(|e| AppError::new(ErrorCode::InvalidSdp, format!("answer: {e}")))?;
    let answer = StoredAnswer {
        round: req.round,
        answer: req.answer,
        name: sanitize_display_name(req.name.as_deref().unwrap_or("")),
    };
    let answer = sessions::claim(state, ip, code, answer).await?;
    state.limits.won_round(code, ip);
    Ok((StatusCode::CREATED, Json(answer_view(answer))).into_response())
}

/// Query of the host's answer long-poll.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AnswerPoll {
    /// The round whose answer to wait for.
    #[param(maximum = 4294967295u64)]
    round: u32,
    /// How long to wait, in ms: at most 60000 (more is refused), and the
    /// server waits at most its `--max-wait-ms` (default 0: no wait).
    #[param(maximum = 60000)]
    wait_ms: Option<u64>,
}

/// The host's long-poll for the answer to a round; refreshes the TTL.
#[utoipa::path(
    get, path = "/session/{code}/answer", tag = "session",
    params(CodeParam, AnswerPoll),
    security(("host_token" = [])),
    responses(
        (status = 200, description = "The round's answer", body = AnswerView),
        (status = 204, description = "The wait ran out with no answer"),
        (status = 400, description = "Not a session code, or a bad query", body = ErrorBody),
        (status = 403, description = "Missing or wrong host token", body = ErrorBody),
        (status = 404, description = "Unknown session, or a round that is neither open nor answered", body = ErrorBody),
        (status = 410, description = "A moderator ended the session (`session_ended`): do not publish it again", body = ErrorBody),
        (status = 429, description = "Too many answer polls of this session, at once or per minute", body = ErrorBody),
        (status = 503, description = "Database unreachable", body = ErrorBody),
    )
)]
pub async fn get_answer(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    CodePath(code): CodePath,
    ApiQuery(poll): ApiQuery<AnswerPoll>,
) -> Result<Response, AppError> {
    let asked = poll.wait_ms.unwrap_or(0);
    if asked > ANSWER_WAIT_MAX_MS {
        return Err(AppError::invalid_field(
            "waitMs",
            format!("at most {ANSWER_WAIT_MAX_MS}"),
        ));
    }
    state.limits.check_not_blocked(ip)?;
    // Register before the first read, so an answer landing at any point
    // after this line wakes the poll.
    let guard = state.waiters.register(&code);
    let mut notified = Box::pin(guard.notified());
    notified.as_mut().enable();
    let now = state.now();
    let mut current = sessions::authorize(&state, ip, &code, bearer_token(&headers), now).await?;
    // Charged after the token check, so a stranger cannot spend a host's budget.
    state
        .limits
        .check_session(SessionBudget::AnswerPolls, &code)?;
    let _held = state
        .long_polls
        .try_take(code.clone(), state.config.max_long_polls_per_session)
        .ok_or_else(|| AppError::rate_limited("open answer long-polls of this session", 1))?;
    // Only a poll within its budget keeps the session alive.
    sessions::refresh(&state, &current, now).await?;
    let wait = Duration::from_millis(asked.min(state.config.max_wait_ms));
    let deadline = tokio::time::Instant::now() + wait;

    let response = loop {
        if let Some(answer) = current.answered.as_ref().filter(|a| a.round == poll.round) {
            break (StatusCode::OK, Json(answer_view(answer.clone()))).into_response();
        }
        if current.open_round() != Some(poll.round) {
            break AppError::new(
                ErrorCode::NoSuchRound,
                format!("round {} is neither open nor holding an answer", poll.round),
            )
            .into_response();
        }
        tokio::select! {
            () = notified.as_mut() => {}
            () = tokio::time::sleep_until(deadline) => break StatusCode::NO_CONTENT.into_response(),
            () = state.shutdown.cancelled() => break StatusCode::NO_CONTENT.into_response(),
        }
        // Re-arm before re-reading, so a wake-up during the read is not lost.
        notified.set(guard.notified());
        notified.as_mut().enable();
        // An answer this process accepted came with the wake-up.
        if let Some(answer) = guard.handed_answer(poll.round) {
            break (StatusCode::OK, Json(answer_view(answer))).into_response();
        }
        current = state
            .store
            .get(&code, state.now())
            .await?
            .ok_or_else(|| sessions::session_gone(&state, &code))?;
    };
    Ok(response)
}
