//! The operator's levers on a public lobby: admin tokens, blocks of
//! addresses and prefixes, and the audit log of every admin action.
//!
//! # Layout
//!
//! - here: [`Moderation`] (the tokens and the blocks in force) and the
//!   actions (place and lift a block), each written with its audit entry
//!   in one transaction, then applied to this replica's list.
//! - [`tokens`]: the admin token file, kept as hashes.
//! - [`blocks`]: the blocks in force, in memory, and prefix parsing.
//!
//! The tables live in the store (`store::moderation`); other replicas hear
//! of a block through the change feed and reload theirs.

pub mod blocks;
pub mod tokens;

use std::net::IpAddr;

use protocol::api::ErrorCode;
use protocol::api::admin::{AuditEntry, BlockRequest, BlockView};

use crate::clock::{Millis, to_datetime};
use crate::error::AppError;
use crate::state::AppState;
use crate::store::StoreError;
use crate::store::moderation::{Audit, AuditRow, BlockRow};
use blocks::{Blocklist, parse_prefix};
use tokens::AdminTokens;

/// The longest block a moderator may place: a year.
pub const MAX_BLOCK_SECS: u64 = 365 * 24 * 3600;

/// The longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// The admin tokens (none: the admin API is off) and the blocks in force.
#[derive(Debug, Default)]
pub struct Moderation {
    /// Who may use the admin API.
    pub tokens: Option<AdminTokens>,
    /// The blocks every create, update and answer is checked against.
    pub blocks: Blocklist,
}

impl Moderation {
    /// With `tokens` (or none) and no blocks yet (see [`reload_blocks`]).
    pub fn new(tokens: Option<AdminTokens>) -> Self {
        Self {
            tokens,
            blocks: Blocklist::default(),
        }
    }
}

/// Reads the blocks in force from the store into this replica's list.
pub async fn reload_blocks(state: &AppState) -> Result<(), StoreError> {
    let rows = state.store.live_blocks(state.now()).await?;
    state.moderation.blocks.replace(&rows);
    Ok(())
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
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(AppError::invalid_field(
            "reason",
            format!("at most {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(reason.trim().chars().filter(|c| !c.is_control()).collect())
}

/// Places the block `req` asks for, as `actor`.
pub async fn place_block(
    state: &AppState,
    actor: &str,
    req: &BlockRequest,
) -> Result<BlockView, AppError> {
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
    reload_blocks(state).await?;
    tracing::info!(actor, %prefix, id, "block placed");
    Ok(block_view(BlockRow {
        id,
        prefix,
        reason,
        created_by: actor.to_owned(),
        created_at: now,
        lapses_at,
    }))
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
    reload_blocks(state).await?;
    tracing::info!(actor, id, "block lifted");
    Ok(())
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
