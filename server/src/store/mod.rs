//! Persistent session storage behind one type, so handlers never see the
//! database backend.
//!
//! [`Store`] is an enum over backends; each method dispatches to the
//! backend. SQLite (the embedded default) serves one process; PostgreSQL
//! serves several replicas and reports changes made by other replicas as
//! [`StoreChange`]s. Every read takes `now` and filters on expiry, so an
//! expired session is invisible at once even before the sweep deletes it.
//! Both backends write and read rows through one codec (`row`): one column
//! list, one insert, one decoder; only the SQL around it is per dialect.
//! SQLite's group commit keeps its bookkeeping (changes waiting for the
//! next commit, sessions with one in flight, what each creator holds) in
//! `journal`. Other replicas' changes reach the service through a bounded
//! queue (`change_feed`) that trades an overflow for one resync.

pub mod change_feed;
mod journal;
pub mod moderation;
mod postgres;
mod row;
mod sqlite;

use std::time::Duration;

use lobby_api::api::SessionSummary;
use lobby_api::code::SessionCode;

use crate::clock::Millis;
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// What the store reads at start: which database, and how to pool
/// connections to it. Built from the server's configuration, so the store
/// does not depend on the command line.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    /// `sqlite://PATH` (created if missing) or `postgres://...`.
    pub url: String,
    /// Most connections in the pool (SQLite writes through one).
    pub max_connections: u32,
    /// How long to wait for a connection before giving up (503).
    pub acquire_timeout: Duration,
    /// When SQLite makes a commit durable (ignored on PostgreSQL).
    pub sqlite_synchronous: SqliteSynchronous,
    /// Longest a PostgreSQL statement may run before the server cancels it
    /// (ignored on SQLite): one stuck statement must not hold its kind's
    /// queue.
    pub statement_timeout: Duration,
}

/// When an embedded SQLite database makes a commit durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SqliteSynchronous {
    /// Write-ahead log synced at checkpoints: a commit survives the process
    /// being killed, but the last commits before an OS crash or power loss
    /// may be lost (the database stays consistent). The fastest.
    #[default]
    Normal,
    /// The log is synced at every commit: commits survive an OS crash or
    /// power loss too, at the cost of an fsync per write.
    Full,
}

/// A change another replica made, as the shared database reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChange {
    /// A round of this session was answered: wake its long-polls.
    Answered(SessionCode),
    /// A round of this session was answered with this (committed) answer:
    /// hand it to its long-polls, which then need not read the row.
    AnsweredWith(SessionCode, StoredAnswer),
    /// The session was created, changed visibly, or deleted: refresh it in
    /// the lobby index.
    SessionChanged(SessionCode),
    /// The session was deleted: unlist it and end its long-polls.
    Removed(SessionCode),
    /// The moderators' blocks changed: reload them.
    Moderation,
    /// Changes may have been missed (the notification connection dropped):
    /// rebuild the lobby index and re-check every long-poll.
    Resync,
}

/// A storage failure, as handlers need to tell them apart.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or refused the statement (503).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A row could not be decoded (a bug or a hand-edited database).
    #[error("corrupt row: {0}")]
    Corrupt(String),
}

/// A statement that failed: the database is unavailable to it.
impl From<sqlx::Error> for StoreError {
    fn from(err: sqlx::Error) -> Self {
        StoreError::Unavailable(err.to_string())
    }
}

/// The lobby fields of a session, as stored: what the lobby shows
/// ([`SessionSummary`], defined once in `lobby-api`), whether it is listed,
/// and the host's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct LobbyFields {
    /// Listed in `GET /lobby`.
    pub public: bool,
    /// What the lobby shows (sanitized).
    pub summary: SessionSummary,
    /// Metadata object as JSON text.
    pub meta: Option<String>,
}

/// A session as stored, with its round state.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The code.
    pub code: SessionCode,
    /// SHA-256 of the host token.
    pub token_hash: Vec<u8>,
    /// Lobby fields.
    pub fields: LobbyFields,
    /// Creation time.
    pub created_at: Millis,
    /// Expiry time.
    pub expires_at: Millis,
    /// Number of the latest published round (0: none).
    pub round: u32,
    /// The latest round's offer while it is open.
    pub offer: Option<String>,
    /// The latest answered round, its answer and the joiner's name.
    pub answered: Option<StoredAnswer>,
    /// The client key of the address that created it (see
    /// [`crate::client_addr::ClientKeys`]); the per-address cap on live
    /// sessions counts by it. Never shown to anyone.
    pub creator: String,
}

impl SessionRecord {
    /// The open round's number, if a round is open.
    pub fn open_round(&self) -> Option<u32> {
        self.offer.as_ref().map(|_| self.round)
    }

    /// Bytes of what its host and joiners chose that the session holds:
    /// the open offer, the latest answer (with the joiner's name) and
    /// `meta`. What the byte budgets count; everything else a session holds
    /// is small and capped by the session count caps.
    pub fn held_bytes(&self) -> u64 {
        let answer = self
            .answered
            .as_ref()
            .map_or(0, |a| a.answer.len() + a.name.len());
        let offer = self.offer.as_ref().map_or(0, String::len);
        let meta = self.fields.meta.as_ref().map_or(0, String::len);
        (offer + answer + meta) as u64
    }
}

/// What one creator (client address) may hold at once, counted over its
/// stored sessions (live, or expired and not yet swept). `None`: no cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CreatorLimits {
    /// Most sessions.
    pub sessions: Option<u32>,
    /// Most [`SessionRecord::held_bytes`] in all.
    pub bytes: Option<u64>,
}

/// The answer that won a round. PostgreSQL announcements carry it as
/// JSON with these field names (migration 0005).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct StoredAnswer {
    /// The round it answered.
    pub round: u32,
    /// SDP answer.
    pub answer: String,
    /// Joiner's sanitized name.
    pub name: String,
}

/// What an update changes: the merged lobby fields, the new expiry, and a
/// new offer (opening the next round) if any.
#[derive(Debug, Clone)]
pub struct SessionUpdate {
    /// The full lobby fields after the update.
    pub fields: LobbyFields,
    /// New expiry.
    pub expires_at: Millis,
    /// Offer of a new round.
    pub offer: Option<String>,
}

/// Outcome of creating a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// Stored.
    Created,
    /// The code is already taken (draw another).
    CodeTaken,
    /// Its creator already has the most live sessions allowed.
    CreatorAtCap,
    /// Its creator's sessions would hold more bytes than allowed.
    CreatorOverBytes,
}

/// Outcome of updating a session.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOutcome {
    /// Stored; the record after the update.
    Updated(Box<SessionRecord>),
    /// The session is unknown or expired.
    NoSuchSession,
    /// Its creator's sessions would hold more bytes than allowed.
    CreatorOverBytes,
}

/// Outcome of a host's change that names its token's hash.
#[derive(Debug, Clone, PartialEq)]
pub enum Authorized {
    /// The token matched and the change is done; the session (as it was
    /// before a delete).
    Done(Box<SessionRecord>),
    /// Nothing changed: the live session (whose token is another), or
    /// `None` when there is none.
    Refused(Option<Box<SessionRecord>>),
}

/// Outcome of posting an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This answer won the round.
    Claimed,
    /// The session is unknown or expired.
    NoSuchSession,
    /// The round was already answered or is not the open round.
    RoundTaken,
    /// The answer would take the sessions of the session's creator over
    /// their byte budget.
    CreatorOverBytes,
}

/// The session store.
#[derive(Debug, Clone)]
pub enum Store {
    /// The embedded default.
    Sqlite(SqliteStore),
    /// Shared by several replicas.
    Postgres(PostgresStore),
}

/// Changes other replicas made (empty for SQLite, which has no other replicas).
pub type StoreChanges = Option<tokio::sync::mpsc::Receiver<StoreChange>>;

macro_rules! dispatch {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            Store::Sqlite($store) => $call,
            Store::Postgres($store) => $call,
        }
    };
}

impl Store {
    /// Opens the database named by `settings.url`, creating it and running
    /// migrations as needed.
    pub async fn connect(settings: &StoreSettings) -> anyhow::Result<(Self, StoreChanges)> {
        let url = settings.url.as_str();
        if url.starts_with("sqlite:") {
            Ok((Store::Sqlite(SqliteStore::connect(settings).await?), None))
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let (store, changes) = PostgresStore::connect(settings).await?;
            Ok((Store::Postgres(store), Some(changes)))
        } else {
            anyhow::bail!("unsupported database URL: expected sqlite://PATH or postgres://...")
        }
    }

    /// Inserts a new session with an optional first offer, unless its code
    /// is taken or its creator's stored sessions (live, or expired and not
    /// yet swept) would pass `limits`. With several PostgreSQL replicas the
    /// count and the insert are two statements, so concurrent creates from
    /// one address may overshoot the caps by their number.
    pub async fn create(
        &self,
        record: &SessionRecord,
        limits: CreatorLimits,
    ) -> Result<CreateOutcome, StoreError> {
        dispatch!(self, s => s.create(record, limits).await)
    }

    /// The live session with `code`.
    pub async fn get(
        &self,
        code: &SessionCode,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        dispatch!(self, s => s.get(code, now).await)
    }

    /// Applies `update` to the live session, unless it would take its
    /// creator's sessions over `creator_bytes` in all.
    pub async fn update(
        &self,
        code: &SessionCode,
        update: &SessionUpdate,
        now: Millis,
        creator_bytes: Option<u64>,
    ) -> Result<UpdateOutcome, StoreError> {
        dispatch!(self, s => s.update(code, update, now, creator_bytes).await)
    }

    /// Moves the expiry of a live session; `false` when unknown or expired.
    pub async fn refresh(
        &self,
        code: &SessionCode,
        expires_at: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        dispatch!(self, s => s.refresh(code, expires_at, now).await)
    }

    /// Claims `round` for `answer`: the first call for an open round wins,
    /// unless the answer would take the sessions of the session's creator
    /// over `creator_bytes` in all.
    pub async fn claim_round(
        &self,
        code: &SessionCode,
        answer: &StoredAnswer,
        now: Millis,
        creator_bytes: Option<u64>,
    ) -> Result<ClaimOutcome, StoreError> {
        dispatch!(self, s => s.claim_round(code, answer, now, creator_bytes).await)
    }

    /// Deletes the live session with `code` if its token hashes to
    /// `token_hash`; one statement on PostgreSQL.
    pub async fn delete_authorized(
        &self,
        code: &SessionCode,
        token_hash: &[u8],
        now: Millis,
    ) -> Result<Authorized, StoreError> {
        match self {
            Store::Postgres(s) => s.delete_authorized(code, token_hash, now).await,
            Store::Sqlite(_) => {
                let Some(record) = self.get(code, now).await? else {
                    return Ok(Authorized::Refused(None));
                };
                if !crate::token::hashes_match(token_hash, &record.token_hash) {
                    return Ok(Authorized::Refused(Some(Box::new(record))));
                }
                Ok(if self.delete(code).await? {
                    Authorized::Done(Box::new(record))
                } else {
                    Authorized::Refused(None)
                })
            }
        }
    }

    /// Deletes a session; `false` when it did not exist.
    pub async fn delete(&self, code: &SessionCode) -> Result<bool, StoreError> {
        dispatch!(self, s => s.delete(code).await)
    }

    /// Deletes every session expired at `now`; returns their codes.
    pub async fn delete_expired(&self, now: Millis) -> Result<Vec<SessionCode>, StoreError> {
        dispatch!(self, s => s.delete_expired(now).await)
    }

    /// Every live public session (to build the lobby index at start).
    pub async fn list_public(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        dispatch!(self, s => s.list_public(now).await)
    }

    /// Every live session, public or not (the admin list).
    pub async fn list_all(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        dispatch!(self, s => s.list_all(now).await)
    }

    /// Number of live sessions.
    pub async fn count_live(&self, now: Millis) -> Result<u64, StoreError> {
        dispatch!(self, s => s.count_live(now).await)
    }

    /// [`SessionRecord::held_bytes`] of every live session, summed.
    pub async fn held_bytes_live(&self, now: Millis) -> Result<u64, StoreError> {
        dispatch!(self, s => s.held_bytes_live(now).await)
    }

    /// Checks that the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        dispatch!(self, s => s.ping().await)
    }

    /// Closes every connection (at shutdown; also how tests make the database unreachable).
    pub async fn close(&self) {
        dispatch!(self, s => s.close().await)
    }
}

/// A public session for the store's unit tests: one player of two, a
/// one-round offer, expiring at 1.
#[cfg(test)]
pub(crate) fn test_record(code: &str) -> SessionRecord {
    SessionRecord {
        code: SessionCode::parse(code).expect("code"),
        token_hash: vec![1; 32],
        fields: LobbyFields {
            public: true,
            summary: SessionSummary {
                name: "n".into(),
                host_name: "h".into(),
                players: 1,
                max_players: 2,
                build: "b".into(),
                difficulty: None,
                campaign: None,
                host_kind: lobby_api::api::HostKind::Player,
                in_progress: false,
                bots: 0,
                start_at: None,
            },
            meta: None,
        },
        created_at: 0,
        expires_at: 1,
        round: 1,
        offer: Some("v=0".into()),
        answered: None,
        creator: "c".into(),
    }
}
