//! A session as one row of the `sessions` table, shared by both backends:
//! the column list, the values an insert binds, and the decoding of a row
//! back into a [`SessionRecord`].
//!
//! Both schemas store the same columns; the integers are `INTEGER` in
//! SQLite and `BIGINT` in PostgreSQL, so they travel as `i64` here and are
//! range-checked into the domain's `u32` on the way out.

use lobby_api::api::{HostKind, SessionSummary};
use lobby_api::code::SessionCode;
use sqlx::query_builder::Separated;
use sqlx::{Database, Encode, FromRow, QueryBuilder, Row, Type};

use super::{LobbyFields, SessionRecord, StoreError, StoredAnswer};

/// Every column of `sessions`, in the order [`insert`] binds them.
pub(super) const COLUMNS: &str = "code, token_hash, public, name, host_name, players, max_players, build, \
     difficulty, campaign, host_kind, meta, created_at, expires_at, round, offer, answer_round, answer, answer_name, creator, \
     in_progress, bots, start_at";

/// One row of `sessions` in the column types both backends read and write.
#[derive(Debug, FromRow)]
pub(super) struct SessionRow {
    code: String,
    token_hash: Vec<u8>,
    public: bool,
    name: String,
    host_name: String,
    players: i64,
    max_players: i64,
    build: String,
    difficulty: Option<String>,
    campaign: Option<String>,
    host_kind: String,
    meta: Option<String>,
    created_at: i64,
    expires_at: i64,
    round: i64,
    offer: Option<String>,
    answer_round: Option<i64>,
    answer: Option<String>,
    answer_name: Option<String>,
    creator: String,
    in_progress: bool,
    bots: i64,
    start_at: Option<i64>,
}

/// A row the database could not decode: a bug or a hand-edited database.
pub(super) fn corrupt(err: sqlx::Error) -> StoreError {
    StoreError::Corrupt(err.to_string())
}

/// Decodes a row holding every column of [`COLUMNS`], from either backend.
pub(super) fn decode<'r, R>(row: &'r R) -> Result<SessionRecord, StoreError>
where
    R: Row,
    SessionRow: FromRow<'r, R>,
{
    SessionRow::from_row(row).map_err(corrupt)?.into_record()
}

/// Parses a stored session code.
pub(super) fn parse_code(text: String) -> Result<SessionCode, StoreError> {
    SessionCode::parse(&text).map_err(|e| StoreError::Corrupt(format!("code {text:?}: {e}")))
}

/// `INSERT INTO sessions (COLUMNS) VALUES (...), ...` with one tuple per
/// record; the caller appends the `ON CONFLICT` clause it needs.
pub(super) fn insert<'args, 'r, DB>(
    records: impl IntoIterator<Item = &'r SessionRecord>,
) -> QueryBuilder<'args, DB>
where
    DB: Database,
    DB::Arguments<'args>: Default,
    String: Encode<'args, DB> + Type<DB>,
    Vec<u8>: Encode<'args, DB> + Type<DB>,
    bool: Encode<'args, DB> + Type<DB>,
    i64: Encode<'args, DB> + Type<DB>,
    Option<String>: Encode<'args, DB> + Type<DB>,
    Option<i64>: Encode<'args, DB> + Type<DB>,
{
    let mut q = QueryBuilder::new(format!("INSERT INTO sessions ({COLUMNS}) "));
    q.push_values(records, |mut values, record| {
        SessionRow::from_record(record).push_values(&mut values);
    });
    q
}

impl SessionRow {
    fn from_record(r: &SessionRecord) -> Self {
        let (f, summary) = (&r.fields, &r.fields.summary);
        Self {
            code: r.code.as_str().to_owned(),
            token_hash: r.token_hash.clone(),
            public: f.public,
            name: summary.name.clone(),
            host_name: summary.host_name.clone(),
            players: i64::from(summary.players),
            max_players: i64::from(summary.max_players),
            build: summary.build.clone(),
            difficulty: summary.difficulty.clone(),
            campaign: summary.campaign.clone(),
            host_kind: summary.host_kind.as_str().to_owned(),
            meta: f.meta.clone(),
            created_at: r.created_at,
            expires_at: r.expires_at,
            round: i64::from(r.round),
            offer: r.offer.clone(),
            answer_round: r.answered.as_ref().map(|a| i64::from(a.round)),
            answer: r.answered.as_ref().map(|a| a.answer.clone()),
            answer_name: r.answered.as_ref().map(|a| a.name.clone()),
            creator: r.creator.clone(),
            in_progress: summary.in_progress,
            bots: i64::from(summary.bots),
            start_at: summary.start_at.map(i64::from),
        }
    }

    /// Binds every column, in the order of [`COLUMNS`].
    fn push_values<'args, DB>(self, values: &mut Separated<'_, 'args, DB, &'static str>)
    where
        DB: Database,
        String: Encode<'args, DB> + Type<DB>,
        Vec<u8>: Encode<'args, DB> + Type<DB>,
        bool: Encode<'args, DB> + Type<DB>,
        i64: Encode<'args, DB> + Type<DB>,
        Option<String>: Encode<'args, DB> + Type<DB>,
        Option<i64>: Encode<'args, DB> + Type<DB>,
    {
        values
            .push_bind(self.code)
            .push_bind(self.token_hash)
            .push_bind(self.public)
            .push_bind(self.name)
            .push_bind(self.host_name)
            .push_bind(self.players)
            .push_bind(self.max_players)
            .push_bind(self.build)
            .push_bind(self.difficulty)
            .push_bind(self.campaign)
            .push_bind(self.host_kind)
            .push_bind(self.meta)
            .push_bind(self.created_at)
            .push_bind(self.expires_at)
            .push_bind(self.round)
            .push_bind(self.offer)
            .push_bind(self.answer_round)
            .push_bind(self.answer)
            .push_bind(self.answer_name)
            .push_bind(self.creator)
            .push_bind(self.in_progress)
            .push_bind(self.bots)
            .push_bind(self.start_at);
    }

    fn into_record(self) -> Result<SessionRecord, StoreError> {
        let answered = match self.answer_round {
            Some(round) => Some(StoredAnswer {
                round: to_u32("answer_round", round)?,
                answer: self.answer.unwrap_or_default(),
                name: self.answer_name.unwrap_or_default(),
            }),
            None => None,
        };
        let host_kind = HostKind::parse(&self.host_kind)
            .ok_or_else(|| StoreError::Corrupt(format!("host_kind {:?}", self.host_kind)))?;
        Ok(SessionRecord {
            code: parse_code(self.code)?,
            token_hash: self.token_hash,
            fields: LobbyFields {
                public: self.public,
                summary: SessionSummary {
                    name: self.name,
                    host_name: self.host_name,
                    players: to_u32("players", self.players)?,
                    max_players: to_u32("max_players", self.max_players)?,
                    build: self.build,
                    difficulty: self.difficulty,
                    campaign: self.campaign,
                    host_kind,
                    in_progress: self.in_progress,
                    bots: to_u32("bots", self.bots)?,
                    start_at: self.start_at.map(|v| to_u32("start_at", v)).transpose()?,
                },
                meta: self.meta,
            },
            created_at: self.created_at,
            expires_at: self.expires_at,
            round: to_u32("round", self.round)?,
            offer: self.offer,
            answered,
            creator: self.creator,
        })
    }
}

fn to_u32(column: &str, value: i64) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("{column} = {value}")))
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePoolOptions;
    use sqlx::{Sqlite, SqlitePool};

    use super::*;

    fn answered_record() -> SessionRecord {
        SessionRecord {
            code: SessionCode::parse("ABCDEFGH").unwrap(),
            token_hash: vec![7; 32],
            fields: LobbyFields {
                public: true,
                summary: SessionSummary {
                    name: "Friday night".into(),
                    host_name: "ada".into(),
                    players: 3,
                    max_players: u32::MAX,
                    build: "v1".into(),
                    difficulty: Some("hard".into()),
                    campaign: None,
                    host_kind: HostKind::Daemon,
                    in_progress: true,
                    bots: 2,
                    start_at: Some(4),
                },
                meta: Some("{\"map\":\"e1m1\"}".into()),
            },
            created_at: 1_767_225_600_000,
            expires_at: 1_767_225_660_000,
            round: 2,
            offer: None,
            answered: Some(StoredAnswer {
                round: 2,
                answer: "v=0".into(),
                name: "bob".into(),
            }),
            creator: "2001:db8:1:2::/64".into(),
        }
    }

    async fn migrated() -> SqlitePool {
        // One connection: every connection to `:memory:` is its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::migrate!("migrations/sqlite")
            .run(&pool)
            .await
            .unwrap();
        pool
    }

    async fn read_back(pool: &SqlitePool) -> Result<SessionRecord, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM sessions"))
            .fetch_one(pool)
            .await
            .unwrap();
        decode(&row)
    }

    #[tokio::test]
    async fn a_record_survives_insert_and_decode() {
        let pool = migrated().await;
        let record = answered_record();
        insert::<Sqlite>([&record])
            .build()
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(read_back(&pool).await.unwrap(), record);
    }

    #[tokio::test]
    async fn out_of_range_and_unknown_values_are_corrupt_not_truncated() {
        let pool = migrated().await;
        insert::<Sqlite>([&answered_record()])
            .build()
            .execute(&pool)
            .await
            .unwrap();
        for (edit, expected) in [
            ("players = -1", "players = -1"),
            ("round = 4294967296", "round = 4294967296"),
            ("round = 2, host_kind = 'robot'", "host_kind \"robot\""),
        ] {
            sqlx::query(&format!("UPDATE sessions SET {edit}"))
                .execute(&pool)
                .await
                .unwrap();
            match read_back(&pool).await {
                Err(StoreError::Corrupt(message)) => {
                    assert!(message.contains(expected), "{message}")
                }
                other => panic!("{edit}: expected a corrupt row, got {other:?}"),
            }
            sqlx::query("UPDATE sessions SET players = 3")
                .execute(&pool)
                .await
                .unwrap();
        }
    }
}
