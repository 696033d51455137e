//! The embedded SQLite backend: one file under a data directory.
//!
//! An SQLite file belongs to one server process, so this backend keeps every
//! live session in memory and makes each change durable with **group
//! commit**: a request stages its change (the session's record as it will
//! be, or its deletion) in the journal (`journal`), and a writer task
//! commits whatever is staged in one transaction. Whatever accumulated while one commit ran goes
//! into the next, so under load one commit carries dozens of changes.
//!
//! Memory holds committed sessions only: the writer applies a change to
//! memory after its commit succeeds, and drops it when the commit fails, so
//! the request's 503 means nothing happened (no answer delivered, no round
//! used up, no session counted or left behind). While a session's change is
//! staged or committing the session is *busy*: another change of it waits
//! until that one settles, so every change starts from a committed record
//! (which is also what makes "first answer wins" atomic). The writer, not
//! the request, applies and settles, so a request dropped mid-wait leaves
//! memory and file in step.
//!
//! Two writes are soft and retried until they commit instead: expiry
//! refreshes (applied in memory at once; losing one in a crash only makes
//! the session expire earlier after a restart) and the sweep's deletion of
//! expired sessions (invisible to every read already). At start the
//! sessions are loaded back, so they survive restarts.
//!
//! Why not one statement per request: sqlx runs each SQLite connection on its
//! own worker thread, and every statement costs two thread hand-offs; at
//! thousands of requests a second those context switches were most of the
//! server's CPU (see docs/benchmarks.md).
//!
//! # Layout
//!
//! - here: [`SqliteStore`]: opening the file (migrations, sessions loaded
//!   back), and the store's reads and staged writes.
//! - `writer`: the group-commit writer task: takes what is staged, commits
//!   it, then applies it to memory (or drops it) and settles it.
//! - `batch`: the SQL of one commit: upserts and deletions, one statement
//!   alone or several in one transaction.

mod batch;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dashmap::DashMap;
use lobby_api::code::SessionCode;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use tokio::sync::{Notify, watch};

use super::journal::{Change, Journal, OverCap, Pending, UsageChange};
use super::row::{self, COLUMNS};
use super::{
    ClaimOutcome, CreateOutcome, CreatorLimits, SessionRecord, SessionUpdate, StoreError,
    StoreSettings, StoredAnswer, UpdateOutcome,
};
use crate::clock::Millis;
use writer::run_writer;

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
    /// Committed sessions: what every read sees.
    sessions: DashMap<SessionCode, SessionRecord>,
    journal: Mutex<Journal>,
    /// Wakes the writer when something was staged (or at close).
    staged: Notify,
    /// Bumped each time a commit settles: changes waiting for a busy
    /// session look again.
    settled: watch::Sender<u64>,
    /// Set when the writer has stopped (after close).
    stopped: watch::Sender<bool>,
}

fn closed() -> StoreError {
    StoreError::Unavailable("the database is closed".into())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `settings.url`, migrates
    /// it, loads the sessions and starts the writer.
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
        let mut journal = Journal::default();
        let sql = format!("SELECT {COLUMNS} FROM sessions");
        for row in sqlx::query(&sql).fetch_all(&pool).await? {
            let record = row::decode(&row)?;
            journal.count_stored(&record);
            sessions.insert(record.code.clone(), record);
        }
        let inner = Arc::new(Inner {
            pool,
            sessions,
            journal: Mutex::new(journal),
            staged: Notify::new(),
            settled: watch::channel(0).0,
            stopped: watch::channel(false).0,
        });
        tokio::spawn(run_writer(inner.clone()));
        Ok(Self { inner })
    }

    fn journal(&self) -> Result<MutexGuard<'_, Journal>, StoreError> {
        self.inner.journal.lock().map_err(|_| poisoned())
    }

    /// Runs `decide` under the journal's lock once `code` is not busy (no
    /// change of it staged or committing), so it reads `code`'s committed
    /// record and may stage the next change of it.
    async fn when_settled<T>(
        &self,
        code: &SessionCode,
        mut decide: impl FnMut(&Inner, &mut Journal) -> T,
    ) -> Result<T, StoreError> {
        loop {
            let mut settled = self.inner.settled.subscribe();
            {
                let mut journal = self.journal()?;
                if journal.closed {
                    return Err(closed());
                }
                if !journal.busy.contains(code) {
                    let decided = decide(&self.inner, &mut journal);
                    drop(journal);
                    // Whatever was decided, the writer may look (a spare
                    // wake-up finds nothing staged).
                    self.inner.staged.notify_one();
                    return Ok(decided);
                }
            }
            settled
                .changed()
                .await
                .map_err(|_| StoreError::Unavailable("the database writer stopped".into()))?;
        }
    }

    pub(super) async fn create(
        &self,
        record: &SessionRecord,
        limits: CreatorLimits,
    ) -> Result<CreateOutcome, StoreError> {
        let staged = self
            .when_settled(&record.code, |inner, journal| {
                if inner.sessions.contains_key(&record.code) {
                    return Err(CreateOutcome::CodeTaken);
                }
                let bytes = record.held_bytes();
                journal
                    .reserve(&record.creator, limits, 1, bytes)
                    .map_err(|over| match over {
                        OverCap::Sessions => CreateOutcome::CreatorAtCap,
                        OverCap::Bytes => CreateOutcome::CreatorOverBytes,
                    })?;
                let usage = UsageChange {
                    creator: record.creator.clone(),
                    reserved_sessions: 1,
                    reserved_bytes: bytes,
                    freed_bytes: 0,
                };
                Ok(journal.stage(&record.code, Some(record.clone()), usage))
            })
            .await?;
        match staged {
            Ok(staged) => {
                staged.committed().await?;
                Ok(CreateOutcome::Created)
            }
            Err(outcome) => Ok(outcome),
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
        creator_bytes: Option<u64>,
    ) -> Result<UpdateOutcome, StoreError> {
        let staged = self
            .when_settled(code, |inner, journal| {
                let Some(before) = live(inner, code, now) else {
                    return Err(UpdateOutcome::NoSuchSession);
                };
                let mut record = before.clone();
                record.fields = u.fields.clone();
                record.expires_at = record.expires_at.max(u.expires_at);
                if let Some(offer) = &u.offer {
                    record.round += 1;
                    record.offer = Some(offer.clone());
                }
                let usage = journal
                    .usage_change(&before, &record, creator_bytes)
                    .ok_or(UpdateOutcome::CreatorOverBytes)?;
                Ok((journal.stage(code, Some(record.clone()), usage), record))
            })
            .await?;
        match staged {
            Ok((staged, record)) => {
                staged.committed().await?;
                Ok(UpdateOutcome::Updated(Box::new(record)))
            }
            Err(outcome) => Ok(outcome),
        }
    }

    /// Moves the expiry in memory and stages the row for the next commit
    /// without waiting for it: an expiry is soft state, and losing the last
    /// refresh in a crash only makes the session expire a little earlier
    /// after the restart (its host refreshes again on its next call).
    pub(super) async fn refresh(
        &self,
        code: &SessionCode,
        expires_at: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let mut journal = self.journal()?;
        if journal.closed {
            return Err(closed());
        }
        {
            let Some(mut record) = self.inner.sessions.get_mut(code) else {
                return Ok(false);
            };
            if record.expires_at <= now {
                return Ok(false);
            }
            record.expires_at = record.expires_at.max(expires_at);
        }
        match journal.staged.get_mut(code) {
            // A staged change carries the new expiry with it.
            Some(Pending::Change(Change {
                after: Some(after), ..
            })) => after.expires_at = after.expires_at.max(expires_at),
            Some(_) => {}
            None => {
                journal.staged.insert(code.clone(), Pending::Flush);
            }
        }
        drop(journal);
        self.inner.staged.notify_one();
        Ok(true)
    }

    pub(super) async fn claim_round(
        &self,
        code: &SessionCode,
        a: &StoredAnswer,
        now: Millis,
        creator_bytes: Option<u64>,
    ) -> Result<ClaimOutcome, StoreError> {
        let staged = self
            .when_settled(code, |inner, journal| {
                let Some(before) = live(inner, code, now) else {
                    return Err(ClaimOutcome::NoSuchSession);
                };
                if before.round != a.round || before.offer.is_none() {
                    return Err(ClaimOutcome::RoundTaken);
                }
                let mut record = before.clone();
                record.offer = None;
                record.answered = Some(a.clone());
                let usage = journal
                    .usage_change(&before, &record, creator_bytes)
                    .ok_or(ClaimOutcome::CreatorOverBytes)?;
                Ok(journal.stage(code, Some(record), usage))
            })
            .await?;
        match staged {
            Ok(staged) => {
                staged.committed().await?;
                Ok(ClaimOutcome::Claimed)
            }
            Err(outcome) => Ok(outcome),
        }
    }

    pub(super) async fn delete(&self, code: &SessionCode) -> Result<bool, StoreError> {
        let staged = self
            .when_settled(code, |inner, journal| {
                inner
                    .sessions
                    .contains_key(code)
                    .then(|| journal.stage(code, None, UsageChange::default()))
            })
            .await?;
        let Some(staged) = staged else {
            return Ok(false);
        };
        staged.committed().await?;
        Ok(true)
    }

    /// Forgets every session expired at `now` whose change is not in
    /// flight, and stages their rows' deletion (retried until it commits).
    pub(super) async fn delete_expired(&self, now: Millis) -> Result<Vec<SessionCode>, StoreError> {
        let mut journal = self.journal()?;
        if journal.closed {
            return Err(closed());
        }
        let mut expired = Vec::new();
        let mut creators = Vec::new();
        self.inner.sessions.retain(|code, record| {
            let keep = record.expires_at > now || journal.busy.contains(code);
            if !keep {
                expired.push(code.clone());
                creators.push((std::mem::take(&mut record.creator), record.held_bytes()));
            }
            keep
        });
        for (creator, bytes) in &creators {
            journal.release(creator, 1, *bytes);
        }
        for code in &expired {
            journal.staged.insert(code.clone(), Pending::Flush);
        }
        drop(journal);
        if !expired.is_empty() {
            self.inner.staged.notify_one();
        }
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

    pub(super) async fn list_all(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self
            .inner
            .sessions
            .iter()
            .filter(|r| r.expires_at > now)
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

    pub(super) async fn held_bytes_live(&self, now: Millis) -> Result<u64, StoreError> {
        Ok(self
            .inner
            .sessions
            .iter()
            .filter(|r| r.expires_at > now)
            .map(|r| r.held_bytes())
            .sum())
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        if self.journal()?.closed {
            return Err(closed());
        }
        sqlx::query("SELECT 1")
            .execute(&self.inner.pool)
            .await
            .map_err(StoreError::from)?;
        Ok(())
    }

    /// Commits what is staged, then closes the pool; later writes fail with 503.
    /// The pool, for the moderation tables' rare writes (they do not go
    /// through the group commit: see `store::moderation`).
    pub(super) fn pool(&self) -> &SqlitePool {
        &self.inner.pool
    }

    pub(super) async fn close(&self) {
        if let Ok(mut journal) = self.inner.journal.lock() {
            journal.closed = true;
        }
        self.inner.staged.notify_one();
        let mut stopped = self.inner.stopped.subscribe();
        if tokio::time::timeout(Duration::from_secs(10), stopped.wait_for(|s| *s))
            .await
            .is_err()
        {
            tracing::warn!("closing with uncommitted session changes");
        }
        self.inner.pool.close().await;
    }
}

/// The committed, unexpired record of `code`.
fn live(inner: &Inner, code: &SessionCode, now: Millis) -> Option<SessionRecord> {
    inner
        .sessions
        .get(code)
        .filter(|r| r.expires_at > now)
        .map(|r| r.clone())
}

fn poisoned() -> StoreError {
    StoreError::Unavailable("the session journal lock was poisoned".into())
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
            statement_timeout: Duration::from_secs(5),
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
