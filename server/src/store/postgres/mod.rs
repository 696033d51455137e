//! The PostgreSQL backend, for several replicas behind a load balancer.
//!
//! Every operation is one SQL statement against the shared table; nothing is
//! authoritative in memory. A trigger announces answers and lobby-visible
//! changes with `NOTIFY campfire_changes`, and each replica's listener turns
//! them into [`StoreChange`]s so long-polls and the lobby index on every
//! replica learn of changes made on any other.
//!
//! Each replica names its connections with a random origin (the startup
//! option `campfire.origin`), which the trigger puts in every announcement:
//! the listener drops the echo of the replica's own changes, which its
//! handlers have already applied. A write whose outcome is unknown (the
//! statement failed, but may have committed) is re-checked instead.
//!
//! The statements of an exchange (reads by code, creates, answers, host
//! deletes) go through `group`: concurrent requests of one kind share a
//! statement, as SQLite's writer shares a commit.

mod group;
mod grouped;
mod listener;

use std::str::FromStr;
use std::sync::Arc;

use lobby_api::code::SessionCode;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{PgPool, Row};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::row::{self, COLUMNS, corrupt};
use super::{
    Authorized, ClaimOutcome, CreateOutcome, CreatorLimits, SessionRecord, SessionUpdate,
    StoreChange, StoreError, StoreSettings, StoredAnswer, UpdateOutcome,
};
use crate::clock::Millis;
use crate::store::change_feed::{CHANGE_QUEUE_CAPACITY, ChangeFeed};
use group::Group;
use grouped::{Claim, Claims, Creates, Delete, Deletes, Read, Reads, Rechecks};
use listener::listen;

/// The notification channel the trigger writes to (migration 0004), with
/// payloads `KIND:CODE:ORIGIN`.
const CHANNEL: &str = "campfire_changes";

/// The startup option that names a replica's connections in announcements.
const ORIGIN_OPTION: &str = "campfire.origin";

/// [`SessionRecord::held_bytes`] in SQL, of the given offer, answer,
/// answer name and meta (columns, or the values a change puts in them).
fn held_sql(offer: &str, answer: &str, answer_name: &str, meta: &str) -> String {
    format!(
        "(octet_length(COALESCE({offer}, '')) + octet_length(COALESCE({answer}, '')) \
         + octet_length(COALESCE({answer_name}, '')) + octet_length(COALESCE({meta}, '')))"
    )
}

/// [`SessionRecord::held_bytes`] of a row, in SQL.
fn held() -> String {
    held_sql("offer", "answer", "answer_name", "meta")
}

/// The SQL condition, inside a statement on `sessions`, that a change
/// leaving the row holding `new_held` bytes fits its creator's budget,
/// the parameter `limit` (none when NULL): a change that does not grow
/// the row always fits.
fn fits_creator_budget(new_held: &str, limit: &str) -> String {
    let held = held();
    let creator_held = format!(
        "(SELECT COALESCE(SUM({}), 0) FROM sessions s WHERE s.creator = sessions.creator)",
        held_sql("s.offer", "s.answer", "s.answer_name", "s.meta")
    );
    format!(
        "({limit}::BIGINT IS NULL OR {new_held} <= {held} \
         OR {creator_held} - {held} + {new_held} <= {limit})"
    )
}

/// Reads in flight at once before they queue: an exchange's joiner reads
/// the offer while its host's long-poll reads the session, and those two
/// should not wait for each other. Writes come one at a time per exchange.
const READS_IN_FLIGHT: usize = 2;

/// Sessions in a PostgreSQL database shared by every replica.
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    stop: CancellationToken,
    /// Where failed writes (and writes nobody heard) queue re-checks: the
    /// listener's channel of changes.
    rechecks: Rechecks,
    reads: Arc<Group<Reads>>,
    creates: Arc<Group<Creates>>,
    claims: Arc<Group<Claims>>,
    deletes: Arc<Group<Deletes>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects, migrates, and starts the change listener; changes arrive on
    /// the returned receiver.
    pub async fn connect(
        settings: &StoreSettings,
    ) -> anyhow::Result<(Self, mpsc::Receiver<StoreChange>)> {
        let origin = format!("{:016x}", rand::random::<u64>());
        let base = PgConnectOptions::from_str(&settings.url)?;
        // Migrations (and sqlx's migration lock, which waits for another
        // replica's) run on a connection of their own, without the
        // statement timeout the pool's requests have.
        let mut migrator = sqlx::migrate!("migrations/postgres");
        // A replica of an earlier version restarting during a rolling
        // upgrade (or a rollback) meets migrations it does not know.
        migrator.set_ignore_missing(true);
        {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect_with(&base).await?;
            migrator.run(&mut conn).await?;
            conn.close().await?;
        }
        let statement_timeout = settings.statement_timeout.as_millis().to_string();
        let options = base.options([
            (ORIGIN_OPTION, origin.as_str()),
            ("statement_timeout", statement_timeout.as_str()),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(2))
            // A ping before every acquire doubles the round trips; a dead
            // connection instead fails its statement once (503) and is dropped.
            .test_before_acquire(false)
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options)
            .await?;
        let stop = CancellationToken::new();
        let (tx, rx) = ChangeFeed::bounded(CHANGE_QUEUE_CAPACITY);
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(CHANNEL).await?;
        tokio::spawn(tx.clone().deliver_resyncs(stop.clone()));
        tokio::spawn(listen(listener, tx.clone(), origin, stop.clone()));
        Ok((
            Self {
                reads: Group::new(Reads(pool.clone()), READS_IN_FLIGHT),
                creates: Group::new(Creates(pool.clone(), Rechecks(tx.clone())), 1),
                claims: Group::new(Claims(pool.clone(), Rechecks(tx.clone())), 1),
                deletes: Group::new(Deletes(pool.clone(), Rechecks(tx.clone())), 1),
                rechecks: Rechecks(tx),
                pool,
                stop,
            },
            rx,
        ))
    }

    /// The error of a write to `code` whose outcome is unknown: it may have
    /// committed, and its echo will be dropped as this replica's own, so
    /// the lobby index and the long-polls on `code` check the row again.
    fn write_failed(&self, code: &SessionCode, err: impl Into<StoreError>) -> StoreError {
        self.rechecks.session(code);
        err.into()
    }

    pub(super) async fn create(
        &self,
        record: &SessionRecord,
        limits: CreatorLimits,
    ) -> Result<CreateOutcome, StoreError> {
        if limits != CreatorLimits::default() {
            // Counts what the sweep has not deleted yet, as SQLite does.
            let sql = format!(
                "SELECT COUNT(*) AS n, COALESCE(SUM({held}), 0)::BIGINT AS bytes \
                 FROM sessions WHERE creator = $1",
                held = held()
            );
            let row = sqlx::query(&sql)
                .bind(&record.creator)
                .fetch_one(&self.pool)
                .await
                .map_err(StoreError::from)?;
            let n: i64 = row.try_get("n").map_err(corrupt)?;
            let bytes: i64 = row.try_get("bytes").map_err(corrupt)?;
            if limits.sessions.is_some_and(|cap| n >= i64::from(cap)) {
                return Ok(CreateOutcome::CreatorAtCap);
            }
            let after = u64::try_from(bytes).unwrap_or(0) + record.held_bytes();
            if limits.bytes.is_some_and(|cap| after > cap) {
                return Ok(CreateOutcome::CreatorOverBytes);
            }
        }
        let stored = self
            .creates
            .submit(record.clone())
            .await
            .map_err(|e| self.write_failed(&record.code, e))?;
        Ok(if stored {
            CreateOutcome::Created
        } else {
            CreateOutcome::CodeTaken
        })
    }

    pub(super) async fn get(
        &self,
        code: &SessionCode,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let read = Read {
            code: code.clone(),
            now,
        };
        self.reads.submit(read).await
    }

    pub(super) async fn update(
        &self,
        code: &SessionCode,
        u: &SessionUpdate,
        now: Millis,
        creator_bytes: Option<u64>,
    ) -> Result<UpdateOutcome, StoreError> {
        let f = &u.fields;
        // The row's bytes after the update; a change that grows them must
        // fit under the creator's budget (one that shrinks them always may).
        let fits = fits_creator_budget(
            &held_sql("COALESCE($13, offer)", "answer", "answer_name", "$10"),
            "$16",
        );
        let sql = format!(
            "UPDATE sessions SET public = $1, name = $2, host_name = $3, players = $4, max_players = $5, \
             build = $6, difficulty = $7, campaign = $8, host_kind = $9, meta = $10, expires_at = GREATEST(expires_at, $11), \
             round = round + $12, offer = COALESCE($13, offer), in_progress = $17, \
             bots = $18, start_at = $19 \
             WHERE code = $14 AND expires_at > $15 \
             AND {fits} \
             RETURNING {COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(f.public)
            .bind(&f.summary.name)
            .bind(&f.summary.host_name)
            .bind(i64::from(f.summary.players))
            .bind(i64::from(f.summary.max_players))
            .bind(&f.summary.build)
            .bind(&f.summary.difficulty)
            .bind(&f.summary.campaign)
            .bind(f.summary.host_kind.as_str())
            .bind(&f.meta)
            .bind(u.expires_at)
            .bind(i64::from(u.offer.is_some()))
            .bind(&u.offer)
            .bind(code.as_str())
            .bind(now)
            .bind(creator_bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)))
            .bind(f.summary.in_progress)
            .bind(i64::from(f.summary.bots))
            .bind(f.summary.start_at.map(i64::from))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.write_failed(code, e))?;
        if let Some(row) = row {
            return Ok(UpdateOutcome::Updated(Box::new(row::decode(&row)?)));
        }
        Ok(match self.get(code, now).await? {
            None => UpdateOutcome::NoSuchSession,
            Some(_) => UpdateOutcome::CreatorOverBytes,
        })
    }

    pub(super) async fn refresh(
        &self,
        code: &SessionCode,
        expires_at: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE sessions SET expires_at = GREATEST(expires_at, $1) WHERE code = $2 AND expires_at > $3",
        )
        .bind(expires_at)
        .bind(code.as_str())
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(StoreError::from)?;
        Ok(result.rows_affected() == 1)
    }

    pub(super) async fn delete_authorized(
        &self,
        code: &SessionCode,
        token_hash: &[u8],
        now: Millis,
    ) -> Result<Authorized, StoreError> {
        let delete = Delete {
            code: code.clone(),
            token_hash: token_hash.to_vec(),
            now,
        };
        match self
            .deletes
            .submit(delete)
            .await
            .map_err(|e| self.write_failed(code, e))?
        {
            Some(record) => Ok(Authorized::Done(Box::new(record))),
            None => Ok(Authorized::Refused(
                self.get(code, now).await?.map(Box::new),
            )),
        }
    }

    pub(super) async fn claim_round(
        &self,
        code: &SessionCode,
        a: &StoredAnswer,
        now: Millis,
        creator_bytes: Option<u64>,
    ) -> Result<ClaimOutcome, StoreError> {
        // Racing UPDATEs of one row queue on its lock; each re-checks
        // `offer IS NOT NULL` on the row as the previous one left it.
        let claim = Claim {
            code: code.clone(),
            answer: a.clone(),
            now,
            creator_bytes,
        };
        let claimed = self
            .claims
            .submit(claim)
            .await
            .map_err(|e| self.write_failed(code, e))?;
        if claimed {
            return Ok(ClaimOutcome::Claimed);
        }
        Ok(match self.get(code, now).await? {
            None => ClaimOutcome::NoSuchSession,
            Some(r) if r.open_round() == Some(a.round) => ClaimOutcome::CreatorOverBytes,
            Some(_) => ClaimOutcome::RoundTaken,
        })
    }

    pub(super) async fn delete(&self, code: &SessionCode) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM sessions WHERE code = $1")
            .bind(code.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| self.write_failed(code, e))?;
        Ok(result.rows_affected() == 1)
    }

    pub(super) async fn delete_expired(&self, now: Millis) -> Result<Vec<SessionCode>, StoreError> {
        // Safe with many replicas sweeping at once: each row is deleted (and
        // returned) by exactly one of them.
        let rows = sqlx::query("DELETE FROM sessions WHERE expires_at <= $1 RETURNING code")
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from)?;
        rows.iter()
            .map(|r| row::parse_code(r.try_get("code").map_err(corrupt)?))
            .collect()
    }

    pub(super) async fn list_public(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE public AND expires_at > $1");
        let rows = sqlx::query(&sql)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from)?;
        rows.iter().map(row::decode).collect()
    }

    pub(super) async fn list_all(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE expires_at > $1");
        let rows = sqlx::query(&sql)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from)?;
        rows.iter().map(row::decode).collect()
    }

    pub(super) async fn count_live(&self, now: Millis) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM sessions WHERE expires_at > $1")
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::from)?;
        let n: i64 = row.try_get("n").map_err(corrupt)?;
        Ok(n.max(0) as u64)
    }

    pub(super) async fn held_bytes_live(&self, now: Millis) -> Result<u64, StoreError> {
        let sql = format!(
            "SELECT COALESCE(SUM({held}), 0)::BIGINT AS n FROM sessions WHERE expires_at > $1",
            held = held()
        );
        let row = sqlx::query(&sql)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(StoreError::from)?;
        let n: i64 = row.try_get("n").map_err(corrupt)?;
        Ok(n.max(0) as u64)
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    /// The pool, for the moderation tables (see `store::moderation`).
    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(super) async fn close(&self) {
        self.stop.cancel();
        self.pool.close().await;
    }
}
