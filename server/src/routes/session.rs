//! `/session`: hosts create and update sessions and publish offer rounds;
//! joiners read the open round and post answers; hosts long-poll for them.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use protocol::api::{
    ANSWER_WAIT_MAX_MS, AnswerView, ErrorBody, ErrorCode, PostAnswerRequest, PutSessionRequest,
    PutSessionResponse, SessionView,
};
use protocol::code::SessionCode;
use protocol::name::sanitize_display_name;
use protocol::sdp::check_plausible_sdp;
use serde::Deserialize;

use crate::client_addr::client_label;
use crate::clock::to_datetime;
use crate::error::AppError;
use crate::extract::{ApiJson, ApiQuery, ClientIp, CodePath, bearer_token};
use crate::fields::{checked_offer, fields_for_create, fields_for_update};
use crate::ice::TurnGrant;
use crate::lobby_index::lobby_entry;
use crate::metrics::RejectLabels;
use crate::rate_limit::{Budget, SessionBudget};
use crate::state::AppState;
use crate::store::{
    Authorized, ClaimOutcome, CreateOutcome, SessionRecord, SessionUpdate, StoredAnswer,
    UpdateOutcome,
};
use crate::token::{HostToken, hash_token, token_matches};

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
        (status = 403, description = "Missing or wrong host token", body = ErrorBody),
        (status = 404, description = "Unknown or expired code", body = ErrorBody),
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
    if state.lobby_full() {
        return Err(AppError {
            retry_after_secs: Some(state.config.sweep_interval.max(1)),
            ..AppError::new(
                ErrorCode::LobbyFull,
                "the lobby holds as many sessions as it is configured for; try again later",
            )
        });
    }
    let token = HostToken::generate();
    let now = state.now();
    let mut record = SessionRecord {
        code: SessionCode::generate(rand::random::<u32>),
        token_hash: token.hash(),
        fields,
        created_at: now,
        expires_at: state.expiry_from(now),
        round: u32::from(offer.is_some()),
        offer,
        answered: None,
        creator: client_label(ip),
    };
    if state.lobby_bytes_full(record.held_bytes()) {
        return Err(lobby_bytes_full(state));
    }
    let limits = state.config.creator_limits();
    // Held until the create is counted (see `AppInner::live_gate`).
    let _counting = state.live_gate.read().await;
    // A collision among 8.5e11 codes is rare enough that three tries suffice.
    let mut created = false;
    for _ in 0..3 {
        match state.store.create(&record, limits).await? {
            CreateOutcome::Created => {
                created = true;
                break;
            }
            CreateOutcome::CodeTaken => {
                record.code = SessionCode::generate(rand::random::<u32>);
            }
            CreateOutcome::CreatorAtCap => {
                return Err(AppError::rate_limited(
                    "live sessions",
                    place_freed_secs(state),
                ));
            }
            CreateOutcome::CreatorOverBytes => return Err(address_bytes_full(state)),
        }
    }
    if !created {
        return Err(AppError::new(
            ErrorCode::Internal,
            "could not allocate a session code; retry",
        ));
    }
    state.count_session(true);
    state.count_bytes(0, record.held_bytes());
    if record.offer.is_some() {
        state.metrics.rounds_published.inc();
    }
    state.lobby.upsert(&record);
    tracing::debug!(code = %record.code, "session created");
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
    let now = state.now();
    let current = authorize(state, ip, code, token, now).await?;
    // Charged after the token check, so a stranger cannot spend a host's budget.
    state.limits.check_session(SessionBudget::Updates, code)?;
    let update = SessionUpdate {
        fields: fields_for_update(req, &current.fields, &state.config)?,
        offer: checked_offer(req, &state.config)?,
        expires_at: state.expiry_from(now),
    };
    let before = current.held_bytes();
    if state.lobby_bytes_full(updated_bytes(&current, &update).saturating_sub(before)) {
        return Err(lobby_bytes_full(state));
    }
    let creator_bytes = state.config.creator_limits().bytes;
    let record = match state
        .store
        .update(code, &update, now, creator_bytes)
        .await?
    {
        UpdateOutcome::Updated(record) => *record,
        UpdateOutcome::NoSuchSession => return Err(AppError::no_such_session()),
        UpdateOutcome::CreatorOverBytes => return Err(address_bytes_full(state)),
    };
    state.count_bytes(before, record.held_bytes());
    if update.offer.is_some() {
        state.metrics.rounds_published.inc();
    }
    state.lobby.upsert(&record);
    Ok((StatusCode::OK, Json(put_response(state, &record, None))).into_response())
}

/// The bytes `current` will hold after `update`.
fn updated_bytes(current: &SessionRecord, update: &SessionUpdate) -> u64 {
    let mut after = current.clone();
    after.fields.meta = update.fields.meta.clone();
    if update.offer.is_some() {
        after.offer = update.offer.clone();
    }
    after.held_bytes()
}

/// Seconds until a session of a capped address frees its place: it counts
/// until deleted, or swept after it expires.
fn place_freed_secs(state: &AppState) -> u64 {
    state.config.ttl().as_secs() + state.config.sweep_interval
}

/// `429`: the address's sessions hold their byte budget.
fn address_bytes_full(state: &AppState) -> AppError {
    AppError::rate_limited(
        "bytes of offers, answers and meta held by live sessions",
        place_freed_secs(state),
    )
}

/// `503 lobby_full`: the lobby's sessions hold the total byte budget.
fn lobby_bytes_full(state: &AppState) -> AppError {
    AppError {
        retry_after_secs: Some(state.config.sweep_interval.max(1)),
        ..AppError::new(
            ErrorCode::LobbyFull,
            "the lobby's sessions hold as many bytes of offers, answers and metadata as it \
             is configured for; try again later",
        )
    }
}

/// The live session `code` if `token` is its host's; 404 or 403 otherwise.
async fn authorize(
    state: &AppState,
    ip: std::net::IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    now: i64,
) -> Result<SessionRecord, AppError> {
    let found = state.store.get(code, now).await?;
    match found {
        Some(record) if token_matches(token, &record.token_hash) => Ok(record),
        found => Err(refusal(state, ip, found.is_some(), token)),
    }
}

/// Why a host call was refused: no such session (a miss the address is
/// charged for), or a wrong or missing token.
fn refusal(state: &AppState, ip: std::net::IpAddr, found: bool, token: Option<&str>) -> AppError {
    if !found {
        return match state.limits.record_miss(ip) {
            Err(blocked) => blocked,
            Ok(()) => AppError::no_such_session(),
        };
    }
    let why = if token.is_some() {
        "wrong host token"
    } else {
        "missing bearer token"
    };
    AppError::new(ErrorCode::WrongToken, format!("{why} for this session"))
}

/// Deletes the session if `token` is its own (one store call), judged as
/// [`authorize`] would: the session as it was, or why it was refused.
/// Without a token nothing is asked to change.
async fn delete_authorized(
    state: &AppState,
    ip: std::net::IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    now: i64,
) -> Result<SessionRecord, AppError> {
    let store = &state.store;
    let outcome = match token.map(hash_token) {
        None => Authorized::Refused(store.get(code, now).await?.map(Box::new)),
        Some(hash) => store.delete_authorized(code, &hash, now).await?,
    };
    match outcome {
        Authorized::Done(record) => Ok(*record),
        Authorized::Refused(found) => Err(refusal(state, ip, found.is_some(), token)),
    }
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
        (status = 429, description = "Too many unknown codes looked up from this address", body = ErrorBody),
        (status = 503, description = "Database unreachable", body = ErrorBody),
    )
)]
pub async fn get_session(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    CodePath(code): CodePath,
) -> Result<Json<SessionView>, AppError> {
    state.limits.check_not_blocked(ip)?;
    let now = state.now();
    let Some(record) = state.store.get(&code, now).await? else {
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
    let now = state.now();
    let counting = state.live_gate.read().await;
    // The token check and the delete are one store call (one statement on
    // PostgreSQL).
    let deleted = delete_authorized(&state, ip, &code, bearer_token(&headers), now).await?;
    state.count_session(false);
    state.count_bytes(deleted.held_bytes(), 0);
    drop(counting);
    state.lobby.remove(&code);
    state.waiters.wake(&code);
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
        (status = 404, description = "Unknown or expired session", body = ErrorBody),
        (status = 409, description = "The round was already answered or is not the open round", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body not sent as `application/json`", body = ErrorBody),
        (status = 429, description = "Too many answers or unknown codes from this address, or an answer that would take the host's address past its byte budget", body = ErrorBody),
        (status = 503, description = "Database unreachable, or the lobby holds as many bytes of offers, answers and meta as it is configured for", body = ErrorBody),
    )
)]
pub async fn post_answer(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    CodePath(code): CodePath,
    ApiJson(req): ApiJson<PostAnswerRequest>,
) -> Result<Response, AppError> {
    state.limits.check_not_blocked(ip)?;
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
    // At most this much more is held (the offer it closes is let go).
    let grows = (answer.answer.len() + answer.name.len()) as u64;
    if state.lobby_bytes_full(grows) {
        return Err(lobby_bytes_full(state));
    }
    let creator_bytes = state.config.creator_limits().bytes;
    let outcome = state
        .store
        .claim_round(code, &answer, state.now(), creator_bytes)
        .await?;
    if outcome == ClaimOutcome::Claimed {
        // Counted in full until the next recount, which also settles any
        // change it raced with (answers do not wait on the sweep's gate).
        state.count_bytes(0, grows);
    }
    match outcome {
        ClaimOutcome::Claimed => {
            state.metrics.answers_accepted.inc();
            state.waiters.wake_with_answer(code, &answer);
            Ok((StatusCode::CREATED, Json(answer_view(answer))).into_response())
        }
        ClaimOutcome::NoSuchSession => {
            state.limits.record_miss(ip)?;
            Err(AppError::no_such_session())
        }
        ClaimOutcome::CreatorOverBytes => Err(AppError {
            retry_after_secs: Some(place_freed_secs(state)),
            ..AppError::new(
                ErrorCode::RateLimited,
                "this answer would take the sessions of this session's host past the bytes \
                 its address may hold; a smaller answer may fit",
            )
        }),
        ClaimOutcome::RoundTaken => Err(AppError::new(
            ErrorCode::RoundTaken,
            format!(
                "round {} was already answered or is not the open round",
                answer.round
            ),
        )),
    }
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
    let mut current = authorize(&state, ip, &code, bearer_token(&headers), now).await?;
    // Charged after the token check, so a stranger cannot spend a host's budget.
    state
        .limits
        .check_session(SessionBudget::AnswerPolls, &code)?;
    let _held = state
        .long_polls
        .try_take(code.clone(), state.config.max_long_polls_per_session)
        .ok_or_else(|| AppError::rate_limited("open answer long-polls of this session", 1))?;
    // Only a poll within its budget keeps the session alive.
    let expires_at = state.expiry_from(now);
    if state.store.refresh(&code, expires_at, now).await? {
        state.lobby.touch(&code, expires_at);
    }
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
            .ok_or_else(AppError::no_such_session)?;
    };
    Ok(response)
}
