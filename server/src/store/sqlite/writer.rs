//! The group-commit writer: one task that commits whatever requests
//! staged in the journal in one go, then makes each change visible in
//! memory (or drops it, when the commit failed) and answers the requests
//! waiting for it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lobby_api::code::SessionCode;
use sqlx::Sqlite;
use sqlx::pool::PoolConnection;

use super::Inner;
use super::batch::write_batch;
use crate::store::journal::{Journal, Pending};
use crate::store::{SessionRecord, StoreError};

/// Pause after a failed commit before the soft writes are tried again.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

/// The writer: whenever something is staged, commit it all in one
/// transaction, then apply the changes to memory (or drop them) and settle
/// them. Stops once the store is closed and nothing is left.
pub(super) async fn run_writer(inner: Arc<Inner>) {
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
