//! What this replica does with the changes other replicas made (heard on
//! PostgreSQL's change feed): long-polls woken, the lobby index kept
//! current, the moderators' decisions reloaded, and after missed
//! notifications a full resync.

use std::collections::HashSet;

use crate::sessions::forget;
use crate::state::AppState;
use crate::store::{StoreChange, StoreError};

/// Applies a change another replica made: wakes long-polls on answers and
/// keeps the lobby index current. The store drops the echo of this
/// replica's own changes (this service applied them), except where a failed
/// write may have committed; applying a change twice is harmless (the index
/// only publishes events for real differences).
pub async fn apply_change(state: &AppState, change: StoreChange) {
    match change {
        StoreChange::Answered(code) => state.waiters.wake(&code),
        StoreChange::AnsweredWith(code, answer) => state.waiters.wake_with_answer(&code, &answer),
        StoreChange::Removed(code) => forget(state, &code),
        StoreChange::SessionChanged(code) => match state.store.get(&code, state.now()).await {
            // Checked again on arrival: a sweep may have unlisted it as
            // expired while the read was in flight.
            Ok(Some(record)) if record.expires_at > state.now() => state.lobby.upsert(&record),
            Ok(_) => forget(state, &code),
            Err(err) => tracing::warn!(error = %err, "cannot refresh a changed session"),
        },
        StoreChange::Moderation => reload_moderation(state).await,
        StoreChange::Resync => {
            if let Err(err) = resync_lobby(state).await {
                tracing::warn!(error = %err, "lobby resync failed; will retry on the next change");
            }
            reload_moderation(state).await;
            state.waiters.wake_all();
        }
    }
}

/// Reloads what moderators decided (another replica changed it, or
/// changes may have been missed).
async fn reload_moderation(state: &AppState) {
    if let Err(err) = crate::moderating::reload(state).await {
        tracing::warn!(error = %err, "cannot reload the moderators' decisions; will retry on the next change");
    }
}

/// Rebuilds the lobby index from the store (after missed notifications).
async fn resync_lobby(state: &AppState) -> Result<(), StoreError> {
    let records = state.store.list_public(state.now()).await?;
    let live: HashSet<_> = records.iter().map(|r| r.code.clone()).collect();
    for code in state.lobby.codes() {
        if !live.contains(&code) {
            state.lobby.remove(&code);
        }
    }
    for record in &records {
        state.lobby.upsert(record);
    }
    Ok(())
}
