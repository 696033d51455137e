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

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dashmap::DashMap;
use protocol::code::SessionCode;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, QueryBuilder, Sqlite, SqliteConnection, SqlitePool};
use tokio::sync::{Notify, watch};

use super::journal::{Change, Journal, OverCap, Pending, UsageChange};
use super::row::{self, COLUMNS};
use super::{
    ClaimOutcome, CreateOutcome, CreatorLimits, SessionRecord, SessionUpdate, StoreError,
    StoreSettings, StoredAnswer, UpdateOutcome,
};
use crate::clock::Millis;

/// Rows per upsert statement (21 bound values each, well under SQLite's limit).
const ROWS_PER_STATEMENT: usize = 200;

/// Pause after a failed commit before the soft writes are tried again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

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

fn unavailable(err: sqlx::Error) -> StoreError {
    StoreError::Unavailable(err.to_string())
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
            .map_err(unavailable)?;
        Ok(())
    }

    /// Commits what is staged, then closes the pool; later writes fail with 503.
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

/// The writer: whenever something is staged, commit it all in one
/// transaction, then apply the changes to memory (or drop them) and settle
/// them. Stops once the store is closed and nothing is left.
async fn run_writer(inner: Arc<Inner>) {
    // One connection for every commit: its page cache stays warm (no other
    // connection writes the file), and no pool checkout per commit. A
    // failed commit drops it; the next batch takes a fresh one.
    let mut conn: Option<PoolConnection<Sqlite>> = None;
    loop {
        let notified = inner.staged.notified();
        let batch = match inner.journal.lock() {
            Ok(mut journal) if !journal.staged.is_empty() => {
                Some(std::mem::take(&mut journal.staged))
            }
            Ok(journal) if !journal.closed => None,
            _ => break,
        };
        let Some(batch) = batch else {
            notified.await;
            continue;
        };
        let rows: Vec<(SessionCode, Option<SessionRecord>)> = batch
            .iter()
            .map(|(code, pending)| {
                let row = match pending {
                    Pending::Change(change) => change.after.as_deref().cloned(),
                    Pending::Flush => inner.sessions.get(code).map(|r| r.clone()),
                };
                (code.clone(), row)
            })
            .collect();
        let result = match conn.take() {
            Some(c) => Ok(c),
            None => inner.pool.acquire().await,
        };
        let result = match result {
            Ok(mut c) => {
                let written = write_batch(&mut c, &rows).await;
                if written.is_ok() {
                    conn = Some(c);
                }
                written
            }
            Err(e) => Err(e),
        };
        let retry = settle(&inner, batch, result);
        inner.settled.send_modify(|n| *n = n.wrapping_add(1));
        if retry {
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }
    drop(conn);
    inner.settled.send_modify(|n| *n = n.wrapping_add(1));
    inner.stopped.send_replace(true);
}

/// Applies a committed batch to memory, or drops its changes (and stages
/// its soft writes again) when the commit failed; answers every waiting
/// request. Returns whether soft writes wait for a retry.
fn settle(
    inner: &Inner,
    batch: HashMap<SessionCode, Pending>,
    result: Result<(), sqlx::Error>,
) -> bool {
    let Ok(mut journal) = inner.journal.lock() else {
        return false;
    };
    let error = result.as_ref().err().map(|e| e.to_string());
    if let Some(error) = &error {
        tracing::warn!(error = %error, rows = batch.len(), "commit of session changes failed");
    }
    let mut retry = false;
    for (code, pending) in batch {
        let change = match pending {
            Pending::Change(change) => change,
            Pending::Flush => {
                if error.is_some() && !journal.closed {
                    journal.staged.entry(code).or_insert(Pending::Flush);
                    retry = true;
                }
                continue;
            }
        };
        journal.busy.remove(&code);
        let usage = &change.usage;
        let outcome = match &error {
            None => {
                journal.release(&usage.creator, 0, usage.freed_bytes);
                apply(inner, &mut journal, &code, change.after);
                Ok(())
            }
            Some(error) => {
                journal.release(
                    &usage.creator,
                    usage.reserved_sessions,
                    usage.reserved_bytes,
                );
                Err(StoreError::Unavailable(error.clone()))
            }
        };
        // The request may be gone; its change stands (or not) all the same.
        let _ = change.done.send(outcome);
    }
    retry
}

/// Makes a committed change visible: the session as it is now, or gone.
fn apply(
    inner: &Inner,
    journal: &mut Journal,
    code: &SessionCode,
    after: Option<Box<SessionRecord>>,
) {
    match after.map(|record| *record) {
        Some(mut record) => {
            if let Some(current) = inner.sessions.get(code) {
                // A refresh while the change was committing moved the expiry.
                record.expires_at = record.expires_at.max(current.expires_at);
            }
            inner.sessions.insert(code.clone(), record);
        }
        None => {
            if let Some((_, removed)) = inner.sessions.remove(code) {
                journal.release(&removed.creator, 1, removed.held_bytes());
            }
        }
    }
}

/// Upserts the rows given and deletes the codes without one, in one transaction.
/// Writes a batch atomically. A batch that fits one statement (the usual
/// case when the server is quiet: one create, one answer, one delete) is
/// that statement alone, which SQLite commits atomically by itself;
/// anything larger is one transaction. Each statement is a round trip to
/// sqlx's worker thread, so the quiet case costs one instead of three.
async fn write_batch(
    conn: &mut SqliteConnection,
    rows: &[(SessionCode, Option<SessionRecord>)],
) -> Result<(), sqlx::Error> {
    let upserts: Vec<&SessionRecord> = rows.iter().filter_map(|(_, r)| r.as_ref()).collect();
    let deletes: Vec<&SessionCode> = rows
        .iter()
        .filter(|(_, r)| r.is_none())
        .map(|(c, _)| c)
        .collect();
    let statements =
        upserts.len().div_ceil(ROWS_PER_STATEMENT) + deletes.len().div_ceil(ROWS_PER_STATEMENT);
    if statements <= 1 {
        return write_statements(conn, &upserts, &deletes).await;
    }
    let mut tx = conn.begin().await?;
    write_statements(&mut tx, &upserts, &deletes).await?;
    tx.commit().await
}

/// The upserts and deletions of a batch, [`ROWS_PER_STATEMENT`] rows per
/// statement.
async fn write_statements(
    conn: &mut SqliteConnection,
    upserts: &[&SessionRecord],
    deletes: &[&SessionCode],
) -> Result<(), sqlx::Error> {
    for chunk in upserts.chunks(ROWS_PER_STATEMENT) {
        let mut q = row::insert::<Sqlite>(chunk.iter().copied());
        q.push(
            " ON CONFLICT (code) DO UPDATE SET public = excluded.public, name = excluded.name, \
             host_name = excluded.host_name, players = excluded.players, max_players = excluded.max_players, \
             build = excluded.build, difficulty = excluded.difficulty, campaign = excluded.campaign, \
             host_kind = excluded.host_kind, in_progress = excluded.in_progress, meta = excluded.meta, \
             expires_at = excluded.expires_at, \
             round = excluded.round, offer = excluded.offer, answer_round = excluded.answer_round, \
             answer = excluded.answer, answer_name = excluded.answer_name",
        );
        q.build().execute(&mut *conn).await?;
    }
    for chunk in deletes.chunks(ROWS_PER_STATEMENT) {
        let mut q = QueryBuilder::<Sqlite>::new("DELETE FROM sessions WHERE code IN (");
        let mut list = q.separated(", ");
        for code in chunk {
            list.push_bind(code.as_str().to_owned());
        }
        q.push(")");
        q.build().execute(&mut *conn).await?;
    }
    Ok(())
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

    fn record(code: SessionCode) -> SessionRecord {
        crate::store::test_record(code.as_str())
    }

    async fn stored_codes(pool: &SqlitePool) -> Vec<String> {
        sqlx::query_scalar("SELECT code FROM sessions ORDER BY code")
            .fetch_all(pool)
            .await
            .expect("select")
    }

    /// A batch of one statement goes without a transaction, a larger one
    /// in one; either way every row lands, and deletions and upserts in
    /// one batch both take effect.
    #[tokio::test]
    async fn batches_of_one_statement_and_of_several_all_land() {
        let dir = tempfile::tempdir().expect("temp dir");
        let settings = StoreSettings {
            url: format!("sqlite://{}", dir.path().join("lobby.db").display()),
            max_connections: 2,
            acquire_timeout: Duration::from_secs(3),
            sqlite_synchronous: super::super::SqliteSynchronous::Normal,
        };
        let store = SqliteStore::connect(&settings).await.expect("open");
        let pool = &store.inner.pool;
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed
        };
        let mut codes: Vec<SessionCode> = Vec::new();
        while codes.len() < ROWS_PER_STATEMENT + 51 {
            let code = SessionCode::generate(&mut next);
            if !codes.contains(&code) {
                codes.push(code);
            }
        }
        let mut conn = pool.acquire().await.expect("connection");

        // One upsert: one statement.
        let one = vec![(codes[0].clone(), Some(record(codes[0].clone())))];
        write_batch(&mut conn, &one).await.expect("one row");
        assert_eq!(stored_codes(pool).await, vec![codes[0].as_str()]);

        // More rows than one statement takes: a transaction of two.
        let many: Vec<_> = codes[1..]
            .iter()
            .map(|c| (c.clone(), Some(record(c.clone()))))
            .collect();
        write_batch(&mut conn, &many).await.expect("many rows");
        assert_eq!(stored_codes(pool).await.len(), codes.len());

        // A deletion and an upsert in one batch: both.
        let mut changed = record(codes[2].clone());
        changed.round = 9;
        let mixed = vec![(codes[1].clone(), None), (codes[2].clone(), Some(changed))];
        write_batch(&mut conn, &mixed).await.expect("mixed");
        let left = stored_codes(pool).await;
        assert_eq!(left.len(), codes.len() - 1);
        assert!(!left.iter().any(|c| c == codes[1].as_str()));
        let round: i64 = sqlx::query_scalar("SELECT round FROM sessions WHERE code = ?")
            .bind(codes[2].as_str())
            .fetch_one(pool)
            .await
            .expect("round");
        assert_eq!(round, 9);
    }

    #[tokio::test]
    async fn the_synchronous_setting_reaches_every_connection() {
        use super::super::SqliteSynchronous as Mode;
        // SQLite's numbers: 1 NORMAL, 2 FULL.
        assert_eq!(synchronous_of(Mode::Normal).await, 1);
        assert_eq!(synchronous_of(Mode::Full).await, 2);
    }
}
