//! In-process wake-ups for hosts long-polling for an answer.
//!
//! A long-poll registers interest in its session's code, checks the store,
//! and sleeps until [`AnswerWaiters::wake`] fires for that code (or its wait
//! runs out). The registration is a guard: when the request finishes or the
//! client goes away and the handler future is dropped, the guard removes the
//! entry once nobody else waits on it, so nothing accumulates.
//!
//! An answer accepted by this process is handed to the polls with the
//! wake-up ([`AnswerWaiters::wake_with_answer`]), so they need not read it
//! back from the store; a wake-up from another replica carries none.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use dashmap::DashMap;
use lobby_api::code::SessionCode;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::store::StoredAnswer;

/// Long-poll registrations by session code.
#[derive(Default)]
pub struct AnswerWaiters {
    by_code: DashMap<SessionCode, Arc<Waiting>>,
    waiting: AtomicI64,
}

/// The long-polls on one code: their wake-up, and the answer this process
/// accepted last, if any.
#[derive(Default)]
struct Waiting {
    notify: Notify,
    handed: std::sync::Mutex<Option<StoredAnswer>>,
}

impl AnswerWaiters {
    /// Registers a long-poll on `code`.
    pub fn register(&self, code: &SessionCode) -> WaiterGuard<'_> {
        let entry = self.by_code.entry(code.clone()).or_default().clone();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        WaiterGuard {
            waiters: self,
            code: code.clone(),
            entry,
        }
    }

    /// Wakes every long-poll registered on `code` (they re-check the store).
    pub fn wake(&self, code: &SessionCode) {
        if let Some(entry) = self.by_code.get(code) {
            entry.notify.notify_waiters();
        }
    }

    /// Wakes every long-poll registered on `code` with `answer`, which
    /// this process has just stored (committed).
    pub fn wake_with_answer(&self, code: &SessionCode, answer: &StoredAnswer) {
        if let Some(entry) = self.by_code.get(code) {
            if let Ok(mut handed) = entry.handed.lock() {
                *handed = Some(answer.clone());
            }
            entry.notify.notify_waiters();
        }
    }

    /// Wakes every long-poll (they re-check the store).
    pub fn wake_all(&self) {
        for entry in self.by_code.iter() {
            entry.value().notify.notify_waiters();
        }
    }

    /// Long-polls in flight right now.
    pub fn waiting(&self) -> i64 {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Codes with at least one registration (for tests and leak checks).
    pub fn codes(&self) -> usize {
        self.by_code.len()
    }
}

/// One long-poll's registration; unregisters on drop.
pub struct WaiterGuard<'a> {
    waiters: &'a AnswerWaiters,
    code: SessionCode,
    entry: Arc<Waiting>,
}

impl WaiterGuard<'_> {
    /// A future that completes at the next wake-up of this code. Call
    /// `enable()` on it before checking the store so no wake-up is lost.
    pub fn notified(&self) -> Notified<'_> {
        self.entry.notify.notified()
    }

    /// The answer of `round` that this process accepted while this code
    /// had polls, if it did: stored, so it needs no read.
    pub fn handed_answer(&self, round: u32) -> Option<StoredAnswer> {
        let handed = self.entry.handed.lock().ok()?;
        handed.as_ref().filter(|a| a.round == round).cloned()
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.waiters.waiting.fetch_sub(1, Ordering::Relaxed);
        // The map holds one reference and this guard another: if those are
        // all, no other long-poll uses the entry. `remove_if` runs under the
        // shard lock that `register` also takes, so this cannot race.
        self.waiters.by_code.remove_if(&self.code, |_, n| {
            Arc::ptr_eq(n, &self.entry) && Arc::strong_count(n) == 2
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_accepted_here_is_handed_to_the_polls_of_its_round() {
        let waiters = AnswerWaiters::default();
        let code = SessionCode::parse("ABCDEFGH").unwrap();
        let guard = waiters.register(&code);
        assert_eq!(guard.handed_answer(1), None);
        let notified = guard.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let answer = StoredAnswer {
            round: 1,
            answer: "v=0".into(),
            name: "Bob".into(),
        };
        waiters.wake_with_answer(&code, &answer);
        notified.await;
        assert_eq!(guard.handed_answer(1), Some(answer.clone()));
        assert_eq!(
            guard.handed_answer(2),
            None,
            "another round reads the store"
        );
        // A code nobody polls keeps nothing.
        let other = SessionCode::parse("HGFEDCBA").unwrap();
        waiters.wake_with_answer(&other, &answer);
        assert_eq!(waiters.codes(), 1);
    }

    #[tokio::test]
    async fn wake_reaches_an_enabled_waiter_and_guards_clean_up() {
        let waiters = AnswerWaiters::default();
        let code = SessionCode::parse("ABCDEFGH").unwrap();
        {
            let a = waiters.register(&code);
            let b = waiters.register(&code);
            assert_eq!(waiters.waiting(), 2);
            let notified = a.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            waiters.wake(&code);
            notified.await;
            drop(b);
            assert_eq!(waiters.codes(), 1);
        }
        assert_eq!(waiters.waiting(), 0);
        assert_eq!(waiters.codes(), 0);
    }
}
