//! The four statements of a signaling exchange, each able to carry many
//! requests at once (see `group`): reads by code, creates, answers and
//! host deletes. Each request keeps its own `now` and its own checks, so
//! a request's outcome is what it would be had the statements of its
//! group run one after another in some order (but for creator byte
//! budgets, which every answer of a group checks against the total before
//! any of them, as concurrent statements on several connections would).
//!
//! Answers and deletes lock the rows they change, so they bind their
//! requests in code order: two such statements (on this replica or
//! another) then take their locks in one order and cannot deadlock. Should
//! PostgreSQL still report a deadlock (its plan need not follow the
//! array), the group's requests run again one by one.

use std::collections::HashSet;

use lobby_api::code::SessionCode;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Postgres, Row};

use super::group::Kind;
use super::{fits_creator_budget, held_sql};
use crate::clock::Millis;
use crate::store::change_feed::ChangeFeed;
use crate::store::row::{self, COLUMNS, corrupt};
use crate::store::{SessionRecord, StoreChange, StoreError, StoredAnswer};

fn codes<'a>(codes: impl Iterator<Item = &'a SessionCode>) -> Vec<&'a str> {
    codes.map(SessionCode::as_str).collect()
}

/// Where a write whose outcome nobody on this replica heard is reported:
/// the replica reads the session again (its lobby entry and long-polls),
/// as for a write that failed and may have committed.
#[derive(Clone)]
pub(super) struct Rechecks(pub(super) ChangeFeed);

impl Rechecks {
    /// Has the lobby index and the long-polls on `code` check the row again.
    pub(super) fn session(&self, code: &SessionCode) {
        self.0.push(StoreChange::SessionChanged(code.clone()));
        self.0.push(StoreChange::Answered(code.clone()));
    }
}

/// The positions of `requests` in the order of their codes: the order a
/// locking statement binds them in.
fn code_order<T>(requests: &[T], code: impl Fn(&T) -> &SessionCode) -> Vec<usize> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by(|&a, &b| code(&requests[a]).as_str().cmp(code(&requests[b]).as_str()));
    order
}

/// A statement that locks the rows of the sessions its requests name.
trait Locking: Sync {
    /// One request.
    type Request: Sync;

    /// The session a request names.
    fn code(request: &Self::Request) -> &SessionCode;

    /// The statement over `requests` (each with its position in the
    /// group), bound in the order given; its rows name their request by
    /// position (`d_index`).
    fn statement(
        &self,
        requests: &[(usize, &Self::Request)],
    ) -> impl std::future::Future<Output = Result<Vec<PgRow>, sqlx::Error>> + Send;
}

/// The rows of `kind`'s statement over `requests`, bound in code order;
/// after a reported deadlock, those of each request run alone (a
/// statement that locks one row cannot deadlock).
async fn locking_rows<L: Locking>(
    kind: &L,
    requests: &[L::Request],
) -> Result<Vec<PgRow>, StoreError> {
    let ordered: Vec<(usize, &L::Request)> = code_order(requests, L::code)
        .into_iter()
        .map(|i| (i, &requests[i]))
        .collect();
    match kind.statement(&ordered).await {
        Err(err) if ordered.len() > 1 && deadlocked(&err) => {
            let mut rows = Vec::new();
            for one in &ordered {
                rows.extend(kind.statement(std::slice::from_ref(one)).await?);
            }
            Ok(rows)
        }
        rows => Ok(rows?),
    }
}

/// Whether PostgreSQL ended the statement to break a deadlock.
fn deadlocked(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("40P01"))
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
            .map_err(StoreError::from)?;
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
pub(super) struct Creates(pub(super) PgPool, pub(super) Rechecks);

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
        let rows = q
            .build()
            .fetch_all(&self.0)
            .await
            .map_err(StoreError::from)?;
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

    fn unheard(&self, record: &SessionRecord) {
        self.1.session(&record.code);
    }
}

/// Answers claiming a session's open round.
pub(super) struct Claims(pub(super) PgPool, pub(super) Rechecks);

/// A claim: `answer` for round `answer.round` of `code`, live at `now`,
/// within the creator's byte budget `creator_bytes` if any.
pub(super) struct Claim {
    pub(super) code: SessionCode,
    pub(super) answer: StoredAnswer,
    pub(super) now: Millis,
    pub(super) creator_bytes: Option<u64>,
}

impl Locking for Claims {
    type Request = Claim;

    fn code(claim: &Claim) -> &SessionCode {
        &claim.code
    }

    /// One row per claim that won its round.
    async fn statement(&self, claims: &[(usize, &Claim)]) -> Result<Vec<PgRow>, sqlx::Error> {
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
        let each = || claims.iter().map(|(_, c)| *c);
        sqlx::query(&sql)
            .bind(codes(each().map(|c| &c.code)))
            .bind(
                each()
                    .map(|c| i64::from(c.answer.round))
                    .collect::<Vec<_>>(),
            )
            .bind(each().map(|c| c.answer.answer.as_str()).collect::<Vec<_>>())
            .bind(each().map(|c| c.answer.name.as_str()).collect::<Vec<_>>())
            .bind(each().map(|c| c.now).collect::<Vec<_>>())
            .bind(each().map(limit).collect::<Vec<_>>())
            .bind(claims.iter().map(|(i, _)| position(*i)).collect::<Vec<_>>())
            .fetch_all(&self.0)
            .await
    }
}

impl Kind for Claims {
    type Request = Claim;
    /// This answer won the round.
    type Outcome = bool;

    async fn run(&self, claims: &[Claim]) -> Result<Vec<bool>, StoreError> {
        let rows = locking_rows(self, claims).await?;
        let mut won = vec![false; claims.len()];
        for r in &rows {
            *slot(&mut won, r)? = true;
        }
        Ok(won)
    }

    fn unheard(&self, claim: &Claim) {
        self.1.session(&claim.code);
    }
}

/// A request's position in its group, as the statement binds it.
fn position(index: usize) -> i32 {
    // A group holds at most `MAX_GROUP` requests.
    i32::try_from(index).unwrap_or(i32::MAX)
}

/// The outcome slot of the request a returned row names (`d_index`).
fn slot<'a, T>(outcomes: &'a mut [T], row: &PgRow) -> Result<&'a mut T, StoreError> {
    let index: i32 = row.try_get("d_index").map_err(corrupt)?;
    usize::try_from(index)
        .ok()
        .and_then(|i| outcomes.get_mut(i))
        .ok_or_else(|| StoreError::Corrupt(format!("a grouped statement named request {index}")))
}

/// Host deletes, each naming its token's hash.
pub(super) struct Deletes(pub(super) PgPool, pub(super) Rechecks);

/// A delete of `code`, live at `now`, if its token hash is `token_hash`.
pub(super) struct Delete {
    pub(super) code: SessionCode,
    pub(super) token_hash: Vec<u8>,
    pub(super) now: Millis,
}

impl Locking for Deletes {
    type Request = Delete;

    fn code(delete: &Delete) -> &SessionCode {
        &delete.code
    }

    /// The row each delete removed.
    async fn statement(&self, deletes: &[(usize, &Delete)]) -> Result<Vec<PgRow>, sqlx::Error> {
        // The hashes compare in SQL: what a timing difference could tell is
        // how much of a SHA-256 digest matched, which leads nowhere. Two
        // deletes of one row remove it once; RETURNING names which.
        let sql = format!(
            "DELETE FROM sessions USING unnest($1::text[], $2::bytea[], $3::int8[], $4::int4[]) \
             AS d(d_code, d_hash, d_now, d_index) \
             WHERE code = d.d_code AND token_hash = d.d_hash AND expires_at > d.d_now \
             RETURNING {COLUMNS}, d.d_index"
        );
        let each = || deletes.iter().map(|(_, d)| *d);
        sqlx::query(&sql)
            .bind(codes(each().map(|d| &d.code)))
            .bind(each().map(|d| d.token_hash.as_slice()).collect::<Vec<_>>())
            .bind(each().map(|d| d.now).collect::<Vec<_>>())
            .bind(
                deletes
                    .iter()
                    .map(|(i, _)| position(*i))
                    .collect::<Vec<_>>(),
            )
            .fetch_all(&self.0)
            .await
    }
}

impl Kind for Deletes {
    type Request = Delete;
    /// The session as it was, when this delete removed it.
    type Outcome = Option<SessionRecord>;

    async fn run(&self, deletes: &[Delete]) -> Result<Vec<Option<SessionRecord>>, StoreError> {
        let rows = locking_rows(self, deletes).await?;
        let mut removed: Vec<Option<SessionRecord>> = deletes.iter().map(|_| None).collect();
        for r in &rows {
            *slot(&mut removed, r)? = Some(row::decode(r)?);
        }
        Ok(removed)
    }

    fn unheard(&self, delete: &Delete) {
        self.1.session(&delete.code);
    }
}
