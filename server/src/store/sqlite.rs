//! The embedded SQLite backend (WAL mode, one file under a data directory).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use protocol::api::HostKind;
use protocol::code::SessionCode;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};

use super::{ClaimOutcome, LobbyFields, SessionRecord, SessionUpdate, StoreError, StoredAnswer};
use crate::clock::Millis;
use crate::config::Config;

const COLUMNS: &str = "code, token_hash, public, name, host_name, players, max_players, build, \
     difficulty, campaign, host_kind, meta, created_at, expires_at, round, offer, answer_round, answer, answer_name";

/// Sessions in an SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

fn unavailable(err: sqlx::Error) -> StoreError {
    StoreError::Unavailable(err.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `url` and migrates it.
    pub async fn connect(url: &str, config: &Config) -> anyhow::Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        if let Some(dir) = Path::new(options.get_filename()).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| {
                    anyhow::anyhow!("cannot create the data directory {}: {e}", dir.display())
                })?;
            }
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(config.db_max_connections.max(1))
            .acquire_timeout(Duration::from_millis(config.db_acquire_timeout_ms))
            .connect_with(options)
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&pool).await?;
        Ok(Self { pool })
    }

    pub(super) async fn create(&self, r: &SessionRecord) -> Result<bool, StoreError> {
        let f = &r.fields;
        let result = sqlx::query(
            "INSERT INTO sessions (code, token_hash, public, name, host_name, players, max_players, build, \
             difficulty, campaign, host_kind, meta, created_at, expires_at, round, offer) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (code) DO NOTHING",
        )
        .bind(r.code.as_str())
        .bind(&r.token_hash)
        .bind(f.public)
        .bind(&f.name)
        .bind(&f.host_name)
        .bind(f.players)
        .bind(f.max_players)
        .bind(&f.build)
        .bind(&f.difficulty)
        .bind(&f.campaign)
        .bind(f.host_kind.as_str())
        .bind(&f.meta)
        .bind(r.created_at)
        .bind(r.expires_at)
        .bind(r.round)
        .bind(&r.offer)
        .execute(&self.pool)
        .await
        .map_err(unavailable)?;
        Ok(result.rows_affected() == 1)
    }

    pub(super) async fn get(
        &self,
        code: &SessionCode,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE code = ? AND expires_at > ?");
        let row = sqlx::query(&sql)
            .bind(code.as_str())
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(unavailable)?;
        row.map(|r| decode(&r)).transpose()
    }

    pub(super) async fn update(
        &self,
        code: &SessionCode,
        u: &SessionUpdate,
        now: Millis,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let f = &u.fields;
        let sql = format!(
            "UPDATE sessions SET public = ?, name = ?, host_name = ?, players = ?, max_players = ?, build = ?, \
             difficulty = ?, campaign = ?, host_kind = ?, meta = ?, expires_at = ?, \
             round = round + ?, offer = COALESCE(?, offer) \
             WHERE code = ? AND expires_at > ? RETURNING {COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(f.public)
            .bind(&f.name)
            .bind(&f.host_name)
            .bind(f.players)
            .bind(f.max_players)
            .bind(&f.build)
            .bind(&f.difficulty)
            .bind(&f.campaign)
            .bind(f.host_kind.as_str())
            .bind(&f.meta)
            .bind(u.expires_at)
            .bind(u32::from(u.offer.is_some()))
            .bind(&u.offer)
            .bind(code.as_str())
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(unavailable)?;
        row.map(|r| decode(&r)).transpose()
    }

    pub(super) async fn refresh(
        &self,
        code: &SessionCode,
        expires_at: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let result =
            sqlx::query("UPDATE sessions SET expires_at = ? WHERE code = ? AND expires_at > ?")
                .bind(expires_at)
                .bind(code.as_str())
                .bind(now)
                .execute(&self.pool)
                .await
                .map_err(unavailable)?;
        Ok(result.rows_affected() == 1)
    }

    pub(super) async fn claim_round(
        &self,
        code: &SessionCode,
        a: &StoredAnswer,
        now: Millis,
    ) -> Result<ClaimOutcome, StoreError> {
        // One UPDATE, guarded by `offer IS NOT NULL`: SQLite runs writers one
        // at a time, so exactly one racing answer sees the round still open.
        let result = sqlx::query(
            "UPDATE sessions SET offer = NULL, answer_round = round, answer = ?, answer_name = ? \
             WHERE code = ? AND round = ? AND offer IS NOT NULL AND expires_at > ?",
        )
        .bind(&a.answer)
        .bind(&a.name)
        .bind(code.as_str())
        .bind(a.round)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(unavailable)?;
        if result.rows_affected() == 1 {
            return Ok(ClaimOutcome::Claimed);
        }
        Ok(match self.get(code, now).await? {
            None => ClaimOutcome::NoSuchSession,
            Some(_) => ClaimOutcome::RoundTaken,
        })
    }

    pub(super) async fn delete(&self, code: &SessionCode) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM sessions WHERE code = ?")
            .bind(code.as_str())
            .execute(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(result.rows_affected() == 1)
    }

    pub(super) async fn delete_expired(&self, now: Millis) -> Result<Vec<SessionCode>, StoreError> {
        let rows = sqlx::query("DELETE FROM sessions WHERE expires_at <= ? RETURNING code")
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)?;
        rows.iter()
            .map(|r| decode_code(r.try_get("code").map_err(corrupt)?))
            .collect()
    }

    pub(super) async fn list_public(&self, now: Millis) -> Result<Vec<SessionRecord>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE public = 1 AND expires_at > ?");
        let rows = sqlx::query(&sql)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)?;
        rows.iter().map(decode).collect()
    }

    pub(super) async fn count_live(&self, now: Millis) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) AS n FROM sessions WHERE expires_at > ?")
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        let n: i64 = row.try_get("n").map_err(corrupt)?;
        Ok(n.max(0) as u64)
    }

    pub(super) async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    pub(super) async fn close(&self) {
        self.pool.close().await;
    }
}

fn corrupt(err: sqlx::Error) -> StoreError {
    StoreError::Corrupt(err.to_string())
}

fn decode_code(text: String) -> Result<SessionCode, StoreError> {
    SessionCode::parse(&text).map_err(|e| StoreError::Corrupt(format!("code {text:?}: {e}")))
}

fn decode(row: &SqliteRow) -> Result<SessionRecord, StoreError> {
    let host_kind: String = row.try_get("host_kind").map_err(corrupt)?;
    let answer_round: Option<u32> = row.try_get("answer_round").map_err(corrupt)?;
    let answered = match answer_round {
        Some(round) => Some(StoredAnswer {
            round,
            answer: row
                .try_get::<Option<String>, _>("answer")
                .map_err(corrupt)?
                .unwrap_or_default(),
            name: row
                .try_get::<Option<String>, _>("answer_name")
                .map_err(corrupt)?
                .unwrap_or_default(),
        }),
        None => None,
    };
    Ok(SessionRecord {
        code: decode_code(row.try_get("code").map_err(corrupt)?)?,
        token_hash: row.try_get("token_hash").map_err(corrupt)?,
        fields: LobbyFields {
            public: row.try_get("public").map_err(corrupt)?,
            name: row.try_get("name").map_err(corrupt)?,
            host_name: row.try_get("host_name").map_err(corrupt)?,
            players: row.try_get("players").map_err(corrupt)?,
            max_players: row.try_get("max_players").map_err(corrupt)?,
            build: row.try_get("build").map_err(corrupt)?,
            difficulty: row.try_get("difficulty").map_err(corrupt)?,
            campaign: row.try_get("campaign").map_err(corrupt)?,
            host_kind: HostKind::parse(&host_kind)
                .ok_or_else(|| StoreError::Corrupt(format!("host_kind {host_kind:?}")))?,
            meta: row.try_get("meta").map_err(corrupt)?,
        },
        created_at: row.try_get("created_at").map_err(corrupt)?,
        expires_at: row.try_get("expires_at").map_err(corrupt)?,
        round: row.try_get("round").map_err(corrupt)?,
        offer: row.try_get("offer").map_err(corrupt)?,
        answered,
    })
}
