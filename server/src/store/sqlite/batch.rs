//! The SQL of one commit: a batch's upserts and deletions, as few
//! statements as fit, in one transaction when there are several.

use lobby_api::code::SessionCode;
use sqlx::{Connection, QueryBuilder, Sqlite, SqliteConnection};

use crate::store::SessionRecord;
use crate::store::row;

/// Rows per upsert statement (21 bound values each, well under SQLite's limit).
const ROWS_PER_STATEMENT: usize = 200;

/// Upserts the rows given and deletes the codes without one, in one transaction.
/// Writes a batch atomically. A batch that fits one statement (the usual
/// case when the server is quiet: one create, one answer, one delete) is
/// that statement alone, which SQLite commits atomically by itself;
/// anything larger is one transaction. Each statement is a round trip to
/// sqlx's worker thread, so the quiet case costs one instead of three.
pub(super) async fn write_batch(
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
             host_kind = excluded.host_kind, in_progress = excluded.in_progress, bots = excluded.bots, start_at = excluded.start_at, \
             meta = excluded.meta, \
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
    use std::time::Duration;

    use sqlx::SqlitePool;

    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::{SqliteSynchronous, StoreSettings};

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
            statement_timeout: Duration::from_secs(5),
            sqlite_synchronous: SqliteSynchronous::Normal,
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
}
