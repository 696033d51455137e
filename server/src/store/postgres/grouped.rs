//! The four statements of a signaling exchange, each able to carry many
//! requests at once (see `group`): reads by code, creates, answers and
//! host deletes. Each request keeps its own `now` and its own checks, so
//! a request's outcome is what it would be had the statements of its
//! group run one after another in some order.

use std::collections::HashSet;

use protocol::code::SessionCode;
use sqlx::{PgPool, Postgres, Row};

use super::group::Kind;
use super::{fits_creator_budget, held_sql, unavailable};
use crate::clock::Millis;
use crate::store::row::{self, COLUMNS, corrupt};
use crate::store::{SessionRecord, StoreError, StoredAnswer};

fn codes<'a>(codes: impl Iterator<Item = &'a SessionCode>) -> Vec<&'a str> {
    codes.map(SessionCode::as_str).collect()
}

/// Reads of live sessions by code.
pub(super) struct Reads(pub(super) PgPool);

/// A read: the session `code` if it is live at `now`.
pub(super) struct Read {
    pub(super) code: SessionCode,
    pub(super) now: Millis,
}

impl Kind for Reads {
    type Request = Read;
    type Outcome = Option<SessionRecord>;

    async fn run(&self, reads: &[Read]) -> Result<Vec<Option<SessionRecord>>, StoreError> {
        // Each read judges expiry by its own `now`.
        let sql = format!("SELECT {COLUMNS} FROM sessions WHERE code = ANY($1)");
        let rows = sqlx::query(&sql)
            .bind(codes(reads.iter().map(|r| &r.code)))
            .fetch_all(&self.0)
            .await
            .map_err(unavailable)?;
        let found = rows
            .iter()
            .map(row::decode)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(reads
            .iter()
            .map(|read| {
                found
                    .iter()
                    .find(|r| r.code == read.code && r.expires_at > read.now)
                    .cloned()
            })
            .collect())
    }
}

/// Creates: each record is stored unless its code is taken.
pub(super) struct Creates(pub(super) PgPool);

impl Kind for Creates {
    type Request = SessionRecord;
    /// Stored (else the code was taken).
    type Outcome = bool;

    async fn run(&self, records: &[SessionRecord]) -> Result<Vec<bool>, StoreError> {
        // Two draws of one code in a group: the first is stored, the
        // second finds it taken, as it would one statement later.
        let mut seen = HashSet::new();
        let first: Vec<bool> = records.iter().map(|r| seen.insert(&r.code)).collect();
        let mut q = row::insert::<Postgres>(
            records
                .iter()
                .zip(&first)
                .filter_map(|(r, f)| f.then_some(r)),
        );
        q.push(" ON CONFLICT (code) DO NOTHING RETURNING code");
        let rows = q.build().fetch_all(&self.0).await.map_err(unavailable)?;
        let stored = rows
            .iter()
            .map(|r| r.try_get::<String, _>("code").map_err(corrupt))
            .collect::<Result<HashSet<_>, _>>()?;
        Ok(records
            .iter()
            .zip(first)
            .map(|(r, first)| first && stored.contains(r.code.as_str()))
            .collect())
    }
}

/// Answers claiming a session's open round.
pub(super) struct Claims(pub(super) PgPool);

/// A claim: `answer` for round `answer.round` of `code`, live at `now`,
/// within the creator's byte budget `creator_bytes` if any.
pub(super) struct Claim {
    pub(super) code: SessionCode,
    pub(super) answer: StoredAnswer,
    pub(super) now: Millis,
    pub(super) creator_bytes: Option<u64>,
}

impl Kind for Claims {
    type Request = Claim;
    /// This answer won the round.
    type Outcome = bool;

    async fn run(&self, claims: &[Claim]) -> Result<Vec<bool>, StoreError> {
        // A row that several claims of the group match is updated once,
        // from one of them, which RETURNING names: that one won. The
        // answer replaces the offer and the previous answer: if that grows
        // the row, it must fit under the creator's budget.
        let fits = fits_creator_budget(
            &held_sql("NULL", "d.d_answer", "d.d_name", "meta"),
            "d.d_limit",
        );
        let sql = format!(
            "UPDATE sessions SET offer = NULL, answer_round = round, answer = d.d_answer, \
             answer_name = d.d_name \
             FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[], $5::int8[], $6::int8[], \
             $7::int4[]) AS d(d_code, d_round, d_answer, d_name, d_now, d_limit, d_index) \
             WHERE code = d.d_code AND round = d.d_round AND offer IS NOT NULL \
             AND expires_at > d.d_now AND {fits} \
             RETURNING d.d_index"
        );
        let limit = |c: &Claim| {
            c.creator_bytes
                .map(|b| i64::try_from(b).unwrap_or(i64::MAX))
        };
        let rows = sqlx::query(&sql)
            .bind(codes(claims.iter().map(|c| &c.code)))
            .bind(
                claims
                    .iter()
                    .map(|c| i64::from(c.answer.round))
                    .collect::<Vec<_>>(),
            )
            .bind(
                claims
                    .iter()
                    .map(|c| c.answer.answer.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                claims
                    .iter()
                    .map(|c| c.answer.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(claims.iter().map(|c| c.now).collect::<Vec<_>>())
            .bind(claims.iter().map(limit).collect::<Vec<_>>())
            .bind((0..claims.len() as i32).collect::<Vec<_>>())
            .fetch_all(&self.0)
            .await
            .map_err(unavailable)?;
        let mut won = vec![false; claims.len()];
        for r in &rows {
            let index: i32 = r.try_get("d_index").map_err(corrupt)?;
            let slot = usize::try_from(index)
                .ok()
                .and_then(|i| won.get_mut(i))
                .ok_or_else(|| StoreError::Corrupt(format!("claim index {index}")))?;
            *slot = true;
        }
        Ok(won)
    }
}

/// Host deletes, each naming its token's hash.
pub(super) struct Deletes(pub(super) PgPool);

/// A delete of `code`, live at `now`, if its token hash is `token_hash`.
pub(super) struct Delete {
    pub(super) code: SessionCode,
    pub(super) token_hash: Vec<u8>,
    pub(super) now: Millis,
}

impl Kind for Deletes {
    type Request = Delete;
    /// The session as it was, when this delete removed it.
    type Outcome = Option<SessionRecord>;

    async fn run(&self, deletes: &[Delete]) -> Result<Vec<Option<SessionRecord>>, StoreError> {
        // The hashes compare in SQL: what a timing difference could tell is
        // how much of a SHA-256 digest matched, which leads nowhere.
        let sql = format!(
            "DELETE FROM sessions USING unnest($1::text[], $2::bytea[], $3::int8[]) \
             AS d(d_code, d_hash, d_now) \
             WHERE code = d.d_code AND token_hash = d.d_hash AND expires_at > d.d_now \
             RETURNING {COLUMNS}"
        );
        let rows = sqlx::query(&sql)
            .bind(codes(deletes.iter().map(|d| &d.code)))
            .bind(
                deletes
                    .iter()
                    .map(|d| d.token_hash.as_slice())
                    .collect::<Vec<_>>(),
            )
            .bind(deletes.iter().map(|d| d.now).collect::<Vec<_>>())
            .fetch_all(&self.0)
            .await
            .map_err(unavailable)?;
        let mut removed = rows
            .iter()
            .map(|r| row::decode(r).map(Some))
            .collect::<Result<Vec<_>, _>>()?;
        // A row goes to one delete that matched it; a second delete of the
        // same session in the group comes after, and finds it gone.
        Ok(deletes
            .iter()
            .map(|d| {
                removed
                    .iter_mut()
                    .find(|r| {
                        r.as_ref()
                            .is_some_and(|r| r.code == d.code && r.token_hash == d.token_hash)
                    })
                    .and_then(Option::take)
            })
            .collect())
    }
}
