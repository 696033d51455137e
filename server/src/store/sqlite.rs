//! The embedded SQLite backend: one file under a data directory.
//!
//! An SQLite file belongs to one server process, so this backend keeps every
//! live session in memory (authoritative while the process runs) and makes
//! each change durable with **group commit**: a change is applied in memory
//! under the session's lock (which is what makes "first answer wins" atomic),
//! marked dirty, and the request waits until a writer task has upserted the
//! dirty rows in one transaction. Whatever accumulated while one commit ran
//! goes into the next, so under load one commit carries dozens of changes,
//! and no request is answered before its change is on disk. At start the
//! live sessions are loaded back, so sessions survive restarts.
//!
//! Why not one statement per request: sqlx runs each SQLite connection on its
//! own worker thread, and every statement costs two thread hand-offs; at
//! thousands of requests a second those context switches were most of the
//! server's CPU (see docs/benchmarks.md).

use std::collections::HashSet;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use protocol::code::SessionCode;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Sqlite, SqlitePool};
use tokio::sync::{Notify, watch};

use super::row::{self, COLUMNS};
use super::{
    ClaimOutcome, CreateOutcome, SessionRecord, SessionUpdate, StoreError, StoreSettings,
    StoredAnswer,
};
use crate::clock::Millis;

/// Rows per upsert statement (19 bound values each, well under SQLite's limit).
const ROWS_PER_STATEMENT: usize = 200;

/// Sessions in memory, made durable in an SQLite file by group commit.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("sessions", &self.inner.sessions.len())
            .finish()
    }
}

struct Inner {
    pool: SqlitePool,
    sessions: DashMap<SessionCode, SessionRecord>,
    /// Sessions stored per creator (live, or expired and not yet swept),
    /// so the per-address cap costs one lookup, not a scan.
    creators: DashMap<String, u32>,
    journal: Mutex<Journal>,
    /// Wakes the writer when something became dirty (or at close).
    dirty: Notify,
    /// What the writer has made durable, or failed to.
    flushed: watch::Sender<FlushState>,
    closed: std::sync::atomic::AtomicBool,
}

/// Changes not yet written.
#[derive(Default)]
struct Journal {
    /// Codes whose row must be upserted (present in memory) or deleted (absent).
    codes: HashSet<SessionCode>,
    /// Sequence number of the latest change.
    seq: u64,
}

#[derive(Debug, Clone, Default)]
struct FlushState {
    /// Every change up to this sequence number is durable.
    durable: u64,
    /// The latest failed commit: changes up to this sequence number were in it.
    failed_through: u64,
    error: Option<String>,
}

fn unavailable(err: sqlx::Error) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `settings.url`, migrates
    /// it, loads the live sessions and starts the writer.
    pub async fn connect(settings: &StoreSettings) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(&settings.url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match settings.sqlite_synchronous {
                super::SqliteSynchronous::Normal => SqliteSynchronous::Normal,
                super::SqliteSynchronous::Full => SqliteSynchronous::Full,
            })
            .busy_timeout(Duration::from_secs(5));
        if let Some(dir) = Path::new(options.get_filename()).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    anyhow::anyhow!("cannot create the data directory {}: {e}", dir.display())
                })?;
            }
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(settings.acquire_timeout)
            // A local file has no connection to go stale, and a ping before
            // every acquire would cost another round trip to the worker thread.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;

        let sessions = DashMap::new();
        let creators = DashMap::<String, u32>::new();
        let sql = format!("SELECT {COLUMNS} FROM sessions");
        for row in sqlx::query(&sql).fetch_all(&pool).await? {
            let record = row::decode(&row)?;
            *creators.entry(record.creator.clone()).or_default() += 1;
            sessions.insert(record.code.clone(), record);
        }
        let (flushed, _) = watch::channel(FlushState::default());
        let inner = Arc::new(Inner {
            pool,
            sessions,
            creators,
            journal: Mutex::new(Journal::default()),
            dirty: Notify::new(),
            flushed,
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(run_writer(inner.clone()));
        Ok(Self { inner })
    }

    /// Queues rows for the next commit; returns the change's sequence number.
    fn mark_dirty(&self, codes: impl IntoIterator<Item = SessionCode>) -> Result<u64, StoreError> {
        let seq = {
            let mut journal = self.inner.journal.lock().map_err(|_| poisoned())?;
            journal.codes.extend(codes);
            journal.seq += 1;
            journal.seq
        };
        self.inner.dirty.notify_one();
        Ok(seq)
    }

    /// Queues `code`'s row and waits until that change is durable.
    async fn persist(&self, code: &SessionCode) -> Result<(), StoreError> {
        let seq = self.mark_dirty(std::iter::once(code.clone()))?;
        self.durable(seq).await
    }

    async fn durable(&self, seq: u64) -> Result<(), StoreError> {
        let mut rx = self.inner.flushed.subscribe();
        let state = rx
            .wait_for(|s| s.durable >= seq || s.failed_through >= seq)
            .await
            .map_err(|_| StoreError::Unavailable("the database writer stopped".into()))?;
        if state.durable >= seq {
            Ok(())
        } else {
            Err(StoreError::Unavailable(
                state.error.clone().unwrap_or_default(),
            ))
        }
    }

    fn check_open(&self) -> Result<(), StoreError> {
        if self.inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::Unavailable("the database is closed".into()));
        }
        Ok(())
    }

    pub(super) async fn create(
        &self,
        record: &SessionRecord,
        per_creator: Option<u32>,
    ) -> Result<CreateOutcome, StoreError> {
        self.check_open()?;
        {
            // The creator's count is locked from the check to the insert, so
            // racing creates from one address cannot overshoot the cap.
            let mut count = self
                .inner
                .creators
                .entry(record.creator.clone())
                .or_default();
            if per_creator.is_some_and(|cap| *count >= cap) {
                return Ok(CreateOutcome::CreatorAtCap);
            }
            match self.inner.sessions.entry(record.code.clone()) {
                dashmap::Entry::Occupied(_) => return Ok(CreateOutcome::CodeTaken),
                dashmap::Entry::Vacant(slot) => {
                    slot.insert(record.clone());
                }
            }
            *count += 1;
        }
        self.persist(&record.code).await?;
        Ok(CreateOutcome::Created)
    }

    /// Counts one stored session of `creator` less (forgetting creators
    /// with none, so the map stays as small as the sessions).
    fn release_creator(&self, creator: &str) {
        if let dashmap::Entry::Occupied(mut count) = self.inner.creators.entry(creator.to_owned()) {
            *count.get_mut() = count.get().saturating_sub(1);
            if *count.get() == 0 {
                count.remove();
            }
        }
    }

    pub(super) async fn get(
        &self,
        code: &SessionCode,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self
            .inner
            .sessions
            .get(code)
            .filter(|r| r.expires_at > now)
            .map(|r| r.clone()))
    }

    pub(super) async fn update(
        &self,
        code: &SessionCode,
        u: &SessionUpdate,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        self.check_open()?;
        let updated = {
            let Some(mut record) = self.inner.sessions.get_mut(code) else {
                return Ok(None);
            };
            if record.expires_at <= now {
                return Ok(None);
            }
            record.fields = u.fields.clone();
            record.expires_at = u.expires_at;
            if let Some(offer) = &u.offer {
                record.round += 1;
                record.offer = Some(offer.clone());
            }
            record.clone()
        };
        self.persist(code).await?;
        Ok(Some(updated))
    }

    /// Moves the expiry in memory and queues the row for the next commit
    /// without waiting for it: an expiry is soft state, and losing the last
    /// refresh in a crash only makes the session expire a little earlier
    /// after the restart (its host refreshes again on its next call).
    pub(super) async fn refresh(
        &self,
        code: &SessionCode,
        expires_at: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.check_open()?;
        {
            let Some(mut record) = self.inner.sessions.get_mut(code) else {
                return Ok(false);
            };
            if record.expires_at <= now {
                return Ok(false);
            }
            record.expires_at = record.expires_at.max(expires_at);
        }
        self.mark_dirty(std::iter::once(code.clone()))?;
        Ok(true)
    }

    pub(super) async fn claim_round(
        &self,
        code: &SessionCode,
        a: &StoredAnswer,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        self.check_open()?;
        {
            // The shard lock is held from the check to the write: exactly one
            // racing answer sees the round open.
            let Some(mut record) = self.inner.sessions.get_mut(code) else {
                return Ok(ClaimOutcome::NoSuchSession);
            };
            if record.expires_at <= now {
                return Ok(ClaimOutcome::NoSuchSession);
            }
            if record.round != a.round || record.offer.is_none() {
                return Ok(ClaimOutcome::RoundTaken);
            }
            record.offer = None;
            record.answered = Some(a.clone());
        }
        self.persist(code).await?;
        Ok(ClaimOutcome::Claimed)
    }

    pub(super) async fn delete(&self, code: &SessionCode) -> Result<bool, StoreError> {
        self.check_open()?;
        let Some((_, removed)) = self.inner.sessions.remove(code) else {
            return Ok(false);
        };
        self.release_creator(&removed.creator);
        self.persist(code).await?;
        Ok(true)
    }

    pub(super) async fn delete_expired(&self, now: Millis) -> Result<Vec<SessionCode>, StoreError> {
        self.check_open()?;
        let mut expired = Vec::new();
        let mut creators = Vec::new();
        self.inner.sessions.retain(|code, record| {
            let keep = record.expires_at > now;
            if !keep {
                expired.push(code.clone());
                creators.push(std::mem::take(&mut record.creator));
            }
            keep
        });
        for creator in &creators {
            self.release_creator(creator);
        }
        if expired.is_empty() {
            return Ok(expired);
        }
        let seq = self.mark_dirty(expired.iter().cloned())?;
        self.durable(seq).await?;
        Ok(expired)
    }

    pub(super) async fn list_public(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self
            .inner
            .sessions
            .iter()
            .filter(|r| r.fields.public && r.expires_at > now)
            .map(|r| r.clone())
            .collect())
    }

    pub(super) async fn count_live(&self, now: Millis) -> Result<u64, StoreError> {
        Ok(self
            .inner
            .sessions
            .iter()
            .filter(|r| r.expires_at > now)
            .count() as u64)
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        self.check_open()?;
        sqlx::query("SELECT 1")
            .execute(&self.inner.pool)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// Writes what is pending, then closes the pool; later writes fail with 503.
    pub(super) async fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
        let seq = self.inner.journal.lock().map(|j| j.seq).unwrap_or(0);
        self.inner.dirty.notify_one();
        if let Err(err) = tokio::time::timeout(Duration::from_secs(10), self.durable(seq)).await {
            tracing::warn!(error = %err, "closing with unwritten session changes");
        }
        self.inner.pool.close().await;
    }
}

fn poisoned() -> StoreError {
    StoreError::Unavailable("the session journal lock was poisoned".into())
}

/// The writer: whenever something is dirty, commit every dirty row in one
/// transaction and publish how far the changes are durable.
async fn run_writer(inner: Arc<Inner>) {
    loop {
        let (codes, seq) = loop {
            let notified = inner.dirty.notified();
            let taken = match inner.journal.lock() {
                Ok(mut journal) if !journal.codes.is_empty() => {
                    Some((std::mem::take(&mut journal.codes), journal.seq))
                }
                Ok(journal) => {
                    if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
                        let seq = journal.seq;
                        inner
                            .flushed
                            .send_modify(|s| s.durable = s.durable.max(seq));
                        return;
                    }
                    None
                }
                Err(_) => return,
            };
            match taken {
                Some(t) => break t,
                None => notified.await,
            }
        };
        match write_batch(&inner, &codes).await {
            Ok(()) => inner.flushed.send_modify(|s| s.durable = seq),
            Err(err) => {
                tracing::warn!(error = %err, rows = codes.len(), "commit of session changes failed; will retry");
                if let Ok(mut journal) = inner.journal.lock() {
                    journal.codes.extend(codes);
                }
                inner.flushed.send_modify(|s| {
                    s.failed_through = seq;
                    s.error = Some(err.to_string());
                });
                if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Upserts every dirty code still in memory and deletes the others, in one transaction.
async fn write_batch(inner: &Inner, codes: &HashSet<SessionCode>) -> Result<(), sqlx::Error> {
    let mut upserts = Vec::with_capacity(codes.len());
    let mut deletes = Vec::new();
    for code in codes {
        match inner.sessions.get(code) {
            Some(record) => upserts.push(record.clone()),
            None => deletes.push(code.clone()),
        }
    }
    let mut tx = inner.pool.begin().await?;
    for chunk in upserts.chunks(ROWS_PER_STATEMENT) {
        let mut q = row::insert::<Sqlite>(chunk);
        q.push(
            " ON CONFLICT (code) DO UPDATE SET public = excluded.public, name = excluded.name, \
             host_name = excluded.host_name, players = excluded.players, max_players = excluded.max_players, \
             build = excluded.build, difficulty = excluded.difficulty, campaign = excluded.campaign, \
             host_kind = excluded.host_kind, meta = excluded.meta, expires_at = excluded.expires_at, \
             round = excluded.round, offer = excluded.offer, answer_round = excluded.answer_round, \
             answer = excluded.answer, answer_name = excluded.answer_name",
        );
        q.build().execute(&mut *tx).await?;
    }
    for chunk in deletes.chunks(ROWS_PER_STATEMENT) {
        let mut q = QueryBuilder::<Sqlite>::new("DELETE FROM sessions WHERE code IN (");
        let mut list = q.separated(", ");
        for code in chunk {
            list.push_bind(code.as_str().to_owned());
        }
        q.push(")");
        q.build().execute(&mut *tx).await?;
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn synchronous_of(mode: super::super::SqliteSynchronous) -> i64 {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = StoreSettings {
            url: format!("sqlite://{}", dir.path().join("lobby.db").display()),
            max_connections: 2,
            acquire_timeout: Duration::from_secs(3),
            sqlite_synchronous: mode,
        };
        let store = SqliteStore::connect(&settings).await.expect("open");
        sqlx::query_scalar("PRAGMA synchronous")
            .fetch_one(&store.inner.pool)
            .await
            .expect("pragma")
    }

    #[tokio::test]
    async fn the_synchronous_setting_reaches_every_connection() {
        use super::super::SqliteSynchronous as Mode;
        // SQLite's numbers: 1 NORMAL, 2 FULL.
        assert_eq!(synchronous_of(Mode::Normal).await, 1);
        assert_eq!(synchronous_of(Mode::Full).await, 2);
    }
}
