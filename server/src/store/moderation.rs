//! The moderation tables: blocks, hidden and ended sessions, and the audit
//! log, on both backends.
//!
//! Moderators act a few times a day, so these statements go straight to
//! the pool, one transaction per action (a block and its audit entry
//! commit together), instead of through SQLite's group commit or
//! PostgreSQL's statement groups. The SQL is the same for both backends
//! (numbered `$N` parameters, `RETURNING`, `ON CONFLICT`); on PostgreSQL a
//! trigger announces every change of `blocks`, `hidden_sessions` and
//! `ended_sessions` to the other replicas (`m::ORIGIN`).

use sqlx::FromRow;

use super::{Store, StoreError};
use crate::clock::Millis;

/// A block as stored.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct BlockRow {
    /// Its id.
    pub id: i64,
    /// The prefix, CIDR text with host bits cleared.
    pub prefix: String,
    /// Why it was placed.
    pub reason: String,
    /// The admin token's name that placed it.
    pub created_by: String,
    /// When it was placed.
    pub created_at: Millis,
    /// When it lapses.
    pub lapses_at: Millis,
}

/// An audit log entry as stored.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct AuditRow {
    /// Its place in the log.
    pub id: i64,
    /// When.
    pub at: Millis,
    /// The admin token's name.
    pub actor: String,
    /// What was done.
    pub action: String,
    /// To what.
    pub target: String,
    /// Why.
    pub reason: String,
}

/// A session a moderator ended, remembered for a while.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct EndedRow {
    /// The session's code.
    pub code: String,
    /// The reason the moderator gave.
    pub reason: String,
    /// When it is forgotten.
    pub forget_at: Millis,
}

/// A player's report as stored.
#[derive(Clone, Debug, PartialEq, Eq, FromRow)]
pub struct ReportRow {
    /// When.
    pub at: Millis,
    /// The reason's wire name.
    pub reason: String,
    /// What the player wrote ("" for nothing).
    pub text: String,
}

/// What became of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    /// Stored.
    Stored,
    /// This reporter had already reported this session: nothing changed.
    Already,
    /// The session holds as many reports as it may.
    SessionFull,
}

/// What an admin action writes to the audit log.
#[derive(Clone, Copy, Debug)]
pub struct Audit<'a> {
    /// When.
    pub at: Millis,
    /// The admin token's name.
    pub actor: &'a str,
    /// What was done.
    pub action: &'a str,
    /// To what.
    pub target: &'a str,
    /// Why.
    pub reason: &'a str,
}

const INSERT_AUDIT: &str =
    "INSERT INTO audit_log (at, actor, action, target, reason) VALUES ($1, $2, $3, $4, $5)";

/// Runs `$body` with `$pool` bound to the store's pool, whichever the
/// backend (the body is compiled once per backend).
macro_rules! on_pool {
    ($store:expr, $pool:ident => $body:expr) => {
        match $store {
            Store::Sqlite(s) => {
                let $pool = s.pool();
                $body
            }
            Store::Postgres(p) => {
                let $pool = p.pool();
                $body
            }
        }
    };
}

/// Runs `$body` in a transaction `$tx` that also writes `$audit`, and
/// commits both (a `return` from the body rolls both back).
macro_rules! audited {
    ($store:expr, $audit:expr, $tx:ident => $body:expr) => {
        on_pool!($store, pool => {
            let audit: Audit<'_> = $audit;
            let mut $tx = pool.begin().await.map_err(StoreError::from)?;
            let out = $body;
            sqlx::query(INSERT_AUDIT)
                .bind(audit.at)
                .bind(audit.actor)
                .bind(audit.action)
                .bind(audit.target)
                .bind(audit.reason)
                .execute(&mut *$tx)
                .await
                .map_err(StoreError::from)?;
            $tx.commit().await.map_err(StoreError::from)?;
            Ok(out)
        })
    };
}

impl Store {
    /// Stores a block of `prefix` and its audit entry; the block's id.
    pub async fn insert_block(
        &self,
        prefix: &str,
        reason: &str,
        lapses_at: Millis,
        audit: Audit<'_>,
    ) -> Result<i64, StoreError> {
        audited!(self, audit, tx => {
            let (id,): (i64,) = sqlx::query_as(
                "INSERT INTO blocks (prefix, reason, created_by, created_at, lapses_at) \
                 VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .bind(prefix)
            .bind(reason)
            .bind(audit.actor)
            .bind(audit.at)
            .bind(lapses_at)
            .fetch_one(&mut *tx)
            .await
            .map_err(StoreError::from)?;
            id
        })
    }

    /// Lifts block `id` (deletes it) with its audit entry; whether it was
    /// there (if not, nothing is written).
    pub async fn delete_block(&self, id: i64, audit: Audit<'_>) -> Result<bool, StoreError> {
        audited!(self, audit, tx => {
            let deleted = sqlx::query("DELETE FROM blocks WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from)?
                .rows_affected();
            if deleted == 0 {
                // Dropping the transaction rolls it back: no audit entry.
                return Ok(false);
            }
            true
        })
    }

    /// Writes an audit entry on its own (an action with no row of its
    /// own, such as reloading the word list).
    pub async fn insert_audit(&self, audit: Audit<'_>) -> Result<(), StoreError> {
        audited!(self, audit, _tx => {})
    }

    /// Marks session `code` hidden (or not), with its audit entry.
    pub async fn set_hidden(
        &self,
        code: &str,
        hidden: bool,
        audit: Audit<'_>,
    ) -> Result<(), StoreError> {
        audited!(self, audit, tx => {
            let query = if hidden {
                sqlx::query(
                    "INSERT INTO hidden_sessions (code, hidden_by, hidden_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (code) DO NOTHING",
                )
                .bind(code)
                .bind(audit.actor)
                .bind(audit.at)
            } else {
                sqlx::query("DELETE FROM hidden_sessions WHERE code = $1").bind(code)
            };
            query.execute(&mut *tx).await.map_err(StoreError::from)?;
        })
    }

    /// Remembers that a moderator ended session `code` until `forget_at`,
    /// with its audit entry (the session itself is deleted by the caller,
    /// after this commits).
    pub async fn insert_ended(
        &self,
        code: &str,
        forget_at: Millis,
        audit: Audit<'_>,
    ) -> Result<(), StoreError> {
        audited!(self, audit, tx => {
            sqlx::query(
                "INSERT INTO ended_sessions (code, reason, ended_by, ended_at, forget_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (code) DO UPDATE SET \
                 reason = excluded.reason, ended_by = excluded.ended_by, \
                 ended_at = excluded.ended_at, forget_at = excluded.forget_at",
            )
            .bind(code)
            .bind(audit.reason)
            .bind(audit.actor)
            .bind(audit.at)
            .bind(forget_at)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from)?;
        })
    }

    /// The codes of every hidden session.
    pub async fn hidden_codes(&self) -> Result<Vec<String>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_scalar("SELECT code FROM hidden_sessions")
                .fetch_all(pool)
                .await
                .map_err(StoreError::from)
        })
    }

    /// The sessions moderators ended that are still remembered at `now`.
    pub async fn ended_sessions(&self, now: Millis) -> Result<Vec<EndedRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT code, reason, forget_at FROM ended_sessions WHERE forget_at > $1",
            )
            .bind(now)
            .fetch_all(pool)
            .await
            .map_err(StoreError::from)
        })
    }

    /// Stores a player's report of session `code`, one per reporter and at
    /// most `per_session` per session.
    #[allow(clippy::too_many_arguments)]
    pub async fn insert_report(
        &self,
        code: &str,
        at: Millis,
        reason: &str,
        text: &str,
        reporter: &str,
        per_session: u32,
    ) -> Result<Reported, StoreError> {
        on_pool!(self, pool => {
            // One statement: the count and the insert cannot be split by
            // another reporter's.
            let inserted = sqlx::query(
                "INSERT INTO reports (code, at, reason, text, reporter) \
                 SELECT $1, $2, $3, $4, $5 \
                 WHERE (SELECT COUNT(*) FROM reports WHERE code = $1) < $6 \
                 ON CONFLICT (code, reporter) DO NOTHING",
            )
            .bind(code)
            .bind(at)
            .bind(reason)
            .bind(text)
            .bind(reporter)
            .bind(i64::from(per_session))
            .execute(pool)
            .await
            .map_err(StoreError::from)?
            .rows_affected();
            if inserted > 0 {
                return Ok(Reported::Stored);
            }
            let (already,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM reports WHERE code = $1 AND reporter = $2",
            )
            .bind(code)
            .bind(reporter)
            .fetch_one(pool)
            .await
            .map_err(StoreError::from)?;
            Ok(if already > 0 { Reported::Already } else { Reported::SessionFull })
        })
    }

    /// How many reports each reported session has.
    pub async fn report_counts(&self) -> Result<Vec<(String, i64)>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_as("SELECT code, COUNT(*) FROM reports GROUP BY code")
                .fetch_all(pool)
                .await
                .map_err(StoreError::from)
        })
    }

    /// How many reports session `code` has.
    pub async fn report_count(&self, code: &str) -> Result<i64, StoreError> {
        on_pool!(self, pool => {
            let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM reports WHERE code = $1")
                .bind(code)
                .fetch_one(pool)
                .await
                .map_err(StoreError::from)?;
            Ok(n)
        })
    }

    /// The latest `limit` reports of session `code`, newest first.
    pub async fn reports_of(&self, code: &str, limit: u32) -> Result<Vec<ReportRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT at, reason, text FROM reports WHERE code = $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(code)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await
            .map_err(StoreError::from)
        })
    }

    /// Every block in force at `now`, newest first.
    pub async fn live_blocks(&self, now: Millis) -> Result<Vec<BlockRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, prefix, reason, created_by, created_at, lapses_at FROM blocks \
                 WHERE lapses_at > $1 ORDER BY id DESC",
            )
            .bind(now)
            .fetch_all(pool)
            .await
            .map_err(StoreError::from)
        })
    }

    /// Up to `limit` audit entries older than entry `before` (all when
    /// `None`), newest first.
    pub async fn audit_page(
        &self,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<AuditRow>, StoreError> {
        on_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, at, actor, action, target, reason FROM audit_log \
                 WHERE id < $1 ORDER BY id DESC LIMIT $2",
            )
            .bind(before.unwrap_or(i64::MAX))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await
            .map_err(StoreError::from)
        })
    }

    /// Deletes lapsed blocks, ended sessions no longer remembered, hidden
    /// marks of sessions gone, and audit entries and reports from before
    /// `audit_cutoff`; how many rows went.
    pub async fn sweep_moderation(
        &self,
        now: Millis,
        audit_cutoff: Millis,
    ) -> Result<u64, StoreError> {
        on_pool!(self, pool => {
            let blocks = sqlx::query("DELETE FROM blocks WHERE lapses_at <= $1")
                .bind(now)
                .execute(pool)
                .await
                .map_err(StoreError::from)?;
            let ended = sqlx::query("DELETE FROM ended_sessions WHERE forget_at <= $1")
                .bind(now)
                .execute(pool)
                .await
                .map_err(StoreError::from)?;
            let hidden = sqlx::query(
                "DELETE FROM hidden_sessions WHERE code NOT IN (SELECT code FROM sessions)",
            )
            .execute(pool)
            .await
            .map_err(StoreError::from)?;
            let audit = sqlx::query("DELETE FROM audit_log WHERE at < $1")
                .bind(audit_cutoff)
                .execute(pool)
                .await
                .map_err(StoreError::from)?;
            let reports = sqlx::query("DELETE FROM reports WHERE at < $1")
                .bind(audit_cutoff)
                .execute(pool)
                .await
                .map_err(StoreError::from)?;
            Ok(blocks.rows_affected()
                + ended.rows_affected()
                + hidden.rows_affected()
                + audit.rows_affected()
                + reports.rows_affected())
        })
    }
}
