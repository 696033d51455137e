//! The moderators' actions, and the checks requests go through: place
//! and lift blocks, hide and end sessions, reload the word list, take
//! players' reports; each change is written with its audit entry in one
//! transaction (`store::moderation`), then applied to this replica
//! ([`reload`]); other replicas reload when the change feed tells them.
//! What a replica holds of the decisions is `crate::moderation`.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use lobby_api::api::admin::{
    AuditEntry, BlockPlaced, BlockRequest, BlockView, ReportRequest, ReportView,
};
use lobby_api::api::{ErrorCode, PutSessionRequest};
use lobby_api::code::SessionCode;

use crate::clock::{Millis, to_datetime};
use crate::error::AppError;
use crate::moderation::blocks::parse_prefix;
use crate::moderation::words::WordList;
use crate::moderation::{ENDED_REMEMBERED_MS, MAX_BLOCK_SECS, MAX_REASON_CHARS, listing};
use crate::sessions;
use crate::state::AppState;
use crate::store::StoreError;
use crate::store::moderation::{Audit, AuditRow, BlockRow, ReportRow, Reported};

/// Reads what moderators decided (blocks, hidden and ended sessions) from
/// the store into this replica: its block list, its lobby index (a session
/// no longer hidden is listed again) and its ended sessions.
pub async fn reload(state: &AppState) -> Result<(), StoreError> {
    let now = state.now();
    let blocks = state.store.live_blocks(now).await?;
    let hidden = state.store.hidden_codes().await?;
    let ended = state.store.ended_sessions(now).await?;
    state.moderation.blocks.replace(&blocks);
    let hidden: HashSet<SessionCode> = hidden
        .iter()
        .filter_map(|c| SessionCode::parse(c).ok())
        .collect();
    let before = state.lobby.set_hidden(hidden.clone());
    for code in before.difference(&hidden) {
        if let Some(record) = state.store.get(code, now).await? {
            state.lobby.upsert(&record);
        }
    }
    let ended: HashMap<SessionCode, Millis> = ended
        .into_iter()
        .filter_map(|row| Some((SessionCode::parse(&row.code).ok()?, row.forget_at)))
        .collect();
    state.moderation.set_ended(ended);
    Ok(())
}

/// `400 name_refused` naming the first field of `req` (name, host name,
/// metadata) that holds a refused word. Only the fields a request sends
/// are judged, so a session whose name a newer list refuses can still
/// update its player count.
pub fn check_names(state: &AppState, req: &PutSessionRequest) -> Result<(), AppError> {
    match state.moderation.refused_field(req) {
        None => Ok(()),
        Some(field) => Err(AppError::new(
            ErrorCode::NameRefused,
            format!("{field}: holds a word this lobby does not allow; choose another"),
        )),
    }
}

/// Reads the word list file again (SIGHUP, or a moderator's call); how
/// many entries it holds. A file that cannot be read leaves the list as
/// it was.
pub fn reload_words(state: &AppState) -> Result<usize, String> {
    let Some(path) = &state.config.word_list_file else {
        return Err("no --word-list-file is configured".into());
    };
    let list = WordList::load(path)?;
    let n = list.len();
    state.moderation.set_words(list);
    tracing::info!(entries = n, "word list loaded");
    Ok(n)
}

/// Reloads the word list as `actor`, with its audit entry.
pub async fn reload_words_as(state: &AppState, actor: &str) -> Result<usize, AppError> {
    let n = reload_words(state).map_err(|why| AppError::new(ErrorCode::NotFound, why))?;
    let target = format!("{n} entries");
    let audit = Audit {
        at: state.now(),
        actor,
        action: "reload_words",
        target: &target,
        reason: "",
    };
    state.store.insert_audit(audit).await?;
    state.metrics.admin_actions.inc();
    Ok(n)
}

/// `403 blocked` when a moderator blocked `ip`'s address or a prefix
/// holding it.
pub fn check_not_blocked(state: &AppState, ip: IpAddr) -> Result<(), AppError> {
    match state.moderation.blocks.blocked_until(ip, state.now()) {
        None => Ok(()),
        Some(until) => {
            state.metrics.blocked_requests.inc();
            Err(blocked(until))
        }
    }
}

/// `403 blocked` until `until`.
fn blocked(until: Millis) -> AppError {
    AppError::new(
        ErrorCode::Blocked,
        format!(
            "this address is blocked by the lobby's moderators until {}: it may not \
                 create, update or answer sessions",
            rfc3339(until)
        ),
    )
}

/// A reason as kept: trimmed, control characters dropped; `400` past
/// [`MAX_REASON_CHARS`] (as the schema says).
fn clean_reason(reason: &str) -> Result<String, AppError> {
    clean_text("reason", reason)
}

/// Free text of `field` as kept: trimmed, control characters dropped;
/// `400` past [`MAX_REASON_CHARS`].
fn clean_text(field: &str, text: &str) -> Result<String, AppError> {
    if text.chars().count() > MAX_REASON_CHARS {
        return Err(AppError::invalid_field(
            field,
            format!("at most {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(text.trim().chars().filter(|c| !c.is_control()).collect())
}

/// Places the block `req` asks for, as `actor`, and (`endSessions`) ends
/// every live session created from inside its prefix.
pub async fn place_block(
    state: &AppState,
    actor: &str,
    req: &BlockRequest,
) -> Result<BlockPlaced, AppError> {
    let net = parse_prefix(&req.prefix).map_err(|why| AppError::invalid_field("prefix", why))?;
    if req.duration_secs == 0 || req.duration_secs > MAX_BLOCK_SECS {
        return Err(AppError::invalid_field(
            "durationSecs",
            format!("between 1 and {MAX_BLOCK_SECS} seconds"),
        ));
    }
    let reason = clean_reason(&req.reason)?;
    if reason.is_empty() {
        return Err(AppError::invalid_field(
            "reason",
            "say why, for the audit log",
        ));
    }
    let prefix = net.to_string();
    let now = state.now();
    let lapses_at = now.saturating_add((req.duration_secs * 1000) as Millis);
    let audit = Audit {
        at: now,
        actor,
        action: "block",
        target: &prefix,
        reason: &reason,
    };
    let id = state
        .store
        .insert_block(&prefix, &reason, lapses_at, audit)
        .await?;
    state.metrics.admin_actions.inc();
    reload(state).await?;
    tracing::info!(actor, %prefix, id, "block placed");
    let mut ended = Vec::new();
    if req.end_sessions {
        let why = format!("blocked {prefix}: {reason}");
        for record in state.store.list_all(now).await? {
            if listing::created_inside(&record, &net) {
                end_session(state, actor, &record.code, &why).await?;
                ended.push(record.code.to_string());
            }
        }
    }
    Ok(BlockPlaced {
        block: block_view(BlockRow {
            id,
            prefix,
            reason,
            created_by: actor.to_owned(),
            created_at: now,
            lapses_at,
        }),
        ended,
    })
}

/// Lifts block `id`, as `actor`; `404` when there is no such block.
pub async fn lift_block(
    state: &AppState,
    actor: &str,
    id: i64,
    reason: &str,
) -> Result<(), AppError> {
    let reason = clean_reason(reason)?;
    let target = id.to_string();
    let audit = Audit {
        at: state.now(),
        actor,
        action: "unblock",
        target: &target,
        reason: &reason,
    };
    if !state.store.delete_block(id, audit).await? {
        return Err(AppError::new(ErrorCode::NotFound, "no block has this id"));
    }
    state.metrics.admin_actions.inc();
    reload(state).await?;
    tracing::info!(actor, id, "block lifted");
    Ok(())
}

/// Hides session `code` from the lobby and its feed (or lists it again),
/// as `actor`; it stays joinable by code. `404` when there is no such
/// live session.
pub async fn hide_session(
    state: &AppState,
    actor: &str,
    code: &SessionCode,
    hidden: bool,
    reason: &str,
) -> Result<(), AppError> {
    let reason = clean_reason(reason)?;
    let now = state.now();
    if state.store.get(code, now).await?.is_none() {
        return Err(AppError::no_such_session());
    }
    let audit = Audit {
        at: now,
        actor,
        action: if hidden { "hide" } else { "unhide" },
        target: code.as_str(),
        reason: &reason,
    };
    state.store.set_hidden(code.as_str(), hidden, audit).await?;
    state.metrics.admin_actions.inc();
    reload(state).await?;
    tracing::info!(actor, %code, hidden, "session hidden or listed again");
    Ok(())
}

/// Ends session `code` as `actor`: remembered as ended by a moderator
/// (its host's next call, its long-polls and its joiners get `410
/// session_ended`), then deleted like an expired session. `404` when
/// there is no such live session.
pub async fn end_session(
    state: &AppState,
    actor: &str,
    code: &SessionCode,
    reason: &str,
) -> Result<(), AppError> {
    let reason = clean_reason(reason)?;
    if reason.is_empty() {
        return Err(AppError::invalid_field(
            "reason",
            "say why, for the audit log",
        ));
    }
    let now = state.now();
    if state.store.get(code, now).await?.is_none() {
        return Err(AppError::no_such_session());
    }
    let audit = Audit {
        at: now,
        actor,
        action: "end",
        target: code.as_str(),
        reason: &reason,
    };
    // Remembered first (and announced to the other replicas first), so
    // whoever the deletion wakes hears why.
    state
        .store
        .insert_ended(code.as_str(), now + ENDED_REMEMBERED_MS, audit)
        .await?;
    reload(state).await?;
    sessions::remove(state, code).await?;
    state.metrics.admin_actions.inc();
    tracing::info!(actor, %code, "session ended by a moderator");
    Ok(())
}

/// Stores a player's report of session `code` from `ip`: one per session
/// and client address (a repeat changes nothing), at most
/// `--max-reports-per-session` per session. The caller charged the
/// address's report budget.
pub async fn report(
    state: &AppState,
    ip: IpAddr,
    code: &SessionCode,
    req: &ReportRequest,
) -> Result<(), AppError> {
    let text = match &req.text {
        Some(text) => clean_text("text", text)?,
        None => String::new(),
    };
    let now = state.now();
    if state.store.get(code, now).await?.is_none() {
        return Err(sessions::session_gone(state, code));
    }
    let reporter = state.config.client_keys().label(ip);
    let outcome = state
        .store
        .insert_report(
            code.as_str(),
            now,
            req.reason.as_str(),
            &text,
            &reporter,
            state.config.max_reports_per_session,
        )
        .await?;
    match outcome {
        Reported::Stored => {
            state.metrics.reports.inc();
            tracing::info!(%code, reason = req.reason.as_str(), "session reported");
            Ok(())
        }
        Reported::Already => Ok(()),
        Reported::SessionFull => Err(AppError::rate_limited(
            "reports of this session (the moderators have enough to go on)",
            3600,
        )),
    }
}

/// A stored report as the admin API shows it.
pub fn report_view(row: ReportRow) -> ReportView {
    ReportView {
        at: to_datetime(row.at),
        reason: row.reason,
        text: row.text,
    }
}

/// A stored block as the admin API shows it.
pub fn block_view(row: BlockRow) -> BlockView {
    BlockView {
        id: row.id,
        prefix: row.prefix,
        reason: row.reason,
        created_by: row.created_by,
        created_at: to_datetime(row.created_at),
        until: to_datetime(row.lapses_at),
    }
}

/// A stored audit entry as the admin API shows it.
pub fn audit_entry(row: AuditRow) -> AuditEntry {
    AuditEntry {
        id: row.id,
        at: to_datetime(row.at),
        actor: row.actor,
        action: row.action,
        target: row.target,
        reason: row.reason,
    }
}

fn rfc3339(ms: Millis) -> String {
    to_datetime(ms)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| ms.to_string())
}
