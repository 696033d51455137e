//! The session service: every change to a session goes through here (a
//! client's call, a moderator's end, the expiry sweep, the lobby's load at
//! start; `crate::replica` applies other replicas' changes with
//! [`forget`]), so the store, the lobby index, the answer waiters, the live
//! counters and the metrics move together, in one order, in one place. The handlers in [`crate::routes::session`] extract, call
//! and respond; the server's background tasks call in too.
//!
//! Each call checks what the lobby as a whole allows (live sessions, bytes
//! held), asks the store, and then, only for what the store did, updates
//! the rest: the counters, the index (which publishes to the lobby feed),
//! the wake-ups of the host's long-polls, the metrics.

use std::net::IpAddr;

use lobby_api::api::{ErrorCode, PutSessionRequest};
use lobby_api::code::SessionCode;

use crate::clock::Millis;
use crate::error::AppError;
use crate::fields::{checked_offer, fields_for_update};
use crate::rate_limit::SessionBudget;
use crate::state::AppState;
use crate::store::{
    Authorized, ClaimOutcome, CreateOutcome, LobbyFields, SessionRecord, SessionUpdate, StoreError,
    StoredAnswer, UpdateOutcome,
};
use crate::token::{HostToken, hash_token, token_matches};

/// Fills the lobby index from the store (at start).
pub async fn load_lobby(state: &AppState) -> Result<usize, StoreError> {
    let records = state.store.list_public(state.now()).await?;
    for record in &records {
        state.lobby.upsert(record);
    }
    Ok(records.len())
}

/// Unlists expired sessions, deletes them, ends their long-polls, forgets
/// idle rate-limit entries and recounts the live sessions. Returns how many
/// were deleted.
///
/// The lobby index is swept first and whatever the store does: an expired
/// session leaves the listing (and subscribers hear `removed`) even when the
/// delete's commit fails.
pub async fn sweep(state: &AppState) -> Result<usize, StoreError> {
    let now = state.now();
    state.lobby.evict_expired(now);
    let expired = state.store.delete_expired(now).await?;
    for code in &expired {
        forget(state, code);
    }
    state.limits.forget_idle();
    state.ice.forget_old_grants(now / 1000);
    let retention = i64::from(state.config.audit_retention_days) * 24 * 3600 * 1000;
    state
        .store
        .sweep_moderation(now, now.saturating_sub(retention))
        .await?;
    state.recount_live().await?;
    Ok(expired.len())
}

/// A session that is gone: unlisted, and its long-polls woken to find it
/// gone.
pub(crate) fn forget(state: &AppState, code: &SessionCode) {
    state.lobby.remove(code);
    state.waiters.wake(code);
}

/// `410 session_ended` when a moderator ended `code`, else `404
/// no_such_session`: what a host or joiner hears of a session that is gone.
pub fn session_gone(state: &AppState, code: &SessionCode) -> AppError {
    if state.moderation.was_ended(code, state.now()) {
        AppError::new(
            ErrorCode::SessionEnded,
            "a moderator of this lobby ended this session; do not publish it again",
        )
    } else {
        AppError::no_such_session()
    }
}

/// Creates a session (the caller charged the address's create budget):
/// a fresh code, the host's token, counted and listed.
pub async fn create(
    state: &AppState,
    ip: IpAddr,
    fields: LobbyFields,
    offer: Option<String>,
) -> Result<(SessionRecord, HostToken), AppError> {
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
        creator: state.config.client_keys().label(ip),
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
    Ok((record, token))
}

/// Updates the session of the host holding `token` as `req` asks (fields
/// and, with an offer, a new round), refreshing its TTL; the session as it
/// is now.
pub async fn update(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    req: &PutSessionRequest,
) -> Result<SessionRecord, AppError> {
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
        UpdateOutcome::NoSuchSession => return Err(session_gone(state, code)),
        UpdateOutcome::CreatorOverBytes => return Err(address_bytes_full(state)),
    };
    state.count_bytes(before, record.held_bytes());
    if update.offer.is_some() {
        state.metrics.rounds_published.inc();
    }
    state.lobby.upsert(&record);
    Ok(record)
}

/// Ends the session of the host holding `token`: uncounted, unlisted, its
/// long-polls woken.
pub async fn delete(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    token: Option<&str>,
) -> Result<(), AppError> {
    let now = state.now();
    let counting = state.live_gate.read().await;
    // The token check and the delete are one store call (one statement on
    // PostgreSQL).
    let deleted = delete_authorized(state, ip, code, token, now).await?;
    uncount(state, &deleted);
    drop(counting);
    forget(state, code);
    Ok(())
}

/// Deletes session `code` whoever holds it (a moderator ended it):
/// uncounted, unlisted, its long-polls woken to hear why.
pub async fn remove(state: &AppState, code: &SessionCode) -> Result<(), AppError> {
    let counting = state.live_gate.read().await;
    let before = state.store.get(code, state.now()).await?;
    if state.store.delete(code).await?
        && let Some(before) = before
    {
        uncount(state, &before);
    }
    drop(counting);
    forget(state, code);
    Ok(())
}

/// Takes a deleted session off the live counters.
fn uncount(state: &AppState, deleted: &SessionRecord) {
    state.count_session(false);
    state.count_bytes(deleted.held_bytes(), 0);
}

/// Claims the open round with `answer` (sanitized and checked by the
/// caller): the first valid answer wins and is handed to the host's polls.
pub async fn claim(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    answer: StoredAnswer,
) -> Result<StoredAnswer, AppError> {
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
    match outcome {
        ClaimOutcome::Claimed => {
            // Counted in full until the next recount, which also settles any
            // change it raced with (answers do not wait on the sweep's gate).
            state.count_bytes(0, grows);
            state.metrics.answers_accepted.inc();
            state.waiters.wake_with_answer(code, &answer);
            Ok(answer)
        }
        ClaimOutcome::NoSuchSession if state.moderation.was_ended(code, state.now()) => {
            Err(session_gone(state, code))
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

/// How far a poll must move a session's expiry before it is written: a
/// poll within a second of the host's last write (the poll a host starts
/// right after publishing its offer) leaves the stored expiry as it is.
pub const REFRESH_STEP_MS: Millis = 1_000;

/// Keeps the session `current` alive from `now` (a host's poll within its
/// budget): stored and listed with its new expiry, unless that would move
/// the expiry by less than [`REFRESH_STEP_MS`].
pub async fn refresh(
    state: &AppState,
    current: &SessionRecord,
    now: Millis,
) -> Result<(), AppError> {
    let expires_at = state.expiry_from(now);
    if expires_at.saturating_sub(current.expires_at) < REFRESH_STEP_MS {
        return Ok(());
    }
    let code = &current.code;
    if state.store.refresh(code, expires_at, now).await? {
        state.lobby.touch(code, expires_at);
    }
    Ok(())
}

/// The live session `code` if `token` is its host's; 404 or 403 otherwise.
pub async fn authorize(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    now: Millis,
) -> Result<SessionRecord, AppError> {
    let found = state.store.get(code, now).await?;
    match found {
        Some(record) if token_matches(token, &record.token_hash) => Ok(record),
        found => Err(refusal(state, ip, code, found.is_some(), token)),
    }
}

/// Why a host call was refused: a moderator ended the session, no such
/// session (a miss the address is charged for), or a wrong or missing
/// token.
fn refusal(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    found: bool,
    token: Option<&str>,
) -> AppError {
    if !found && state.moderation.was_ended(code, state.now()) {
        return session_gone(state, code);
    }
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
    ip: IpAddr,
    code: &SessionCode,
    token: Option<&str>,
    now: Millis,
) -> Result<SessionRecord, AppError> {
    let store = &state.store;
    let outcome = match token.map(hash_token) {
        None => Authorized::Refused(store.get(code, now).await?.map(Box::new)),
        Some(hash) => store.delete_authorized(code, &hash, now).await?,
    };
    match outcome {
        Authorized::Done(record) => Ok(*record),
        Authorized::Refused(found) => Err(refusal(state, ip, code, found.is_some(), token)),
    }
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
