//! In-process wake-ups for hosts long-polling for an answer.
//!
//! A long-poll registers interest in its session's code, checks the store,
//! and sleeps until [`AnswerWaiters::wake`] fires for that code (or its wait
//! runs out). The registration is a guard: when the request finishes or the
//! client goes away and the handler future is dropped, the guard removes the
//! entry once nobody else waits on it, so nothing accumulates.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use dashmap::DashMap;
use protocol::code::SessionCode;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// Long-poll registrations by session code.
#[derive(Default)]
pub struct AnswerWaiters {
    by_code: DashMap<SessionCode, Arc<Notify>>,
    waiting: AtomicI64,
}

impl AnswerWaiters {
    /// Registers a long-poll on `code`.
    pub fn register(&self, code: &SessionCode) -> WaiterGuard<'_> {
        let notify = self.by_code.entry(code.clone()).or_default().clone();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        WaiterGuard {
            waiters: self,
            code: code.clone(),
            notify,
        }
    }

    /// Wakes every long-poll registered on `code`.
    pub fn wake(&self, code: &SessionCode) {
        if let Some(notify) = self.by_code.get(code) {
            notify.notify_waiters();
        }
    }

    /// Wakes every long-poll (they re-check the store).
    pub fn wake_all(&self) {
        for entry in self.by_code.iter() {
            entry.value().notify_waiters();
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
    notify: Arc<Notify>,
}

impl WaiterGuard<'_> {
    /// A future that completes at the next wake-up of this code. Call
    /// `enable()` on it before checking the store so no wake-up is lost.
    pub fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.waiters.waiting.fetch_sub(1, Ordering::Relaxed);
        // The map holds one reference and this guard another: if those are
        // all, no other long-poll uses the entry. `remove_if` runs under the
        // shard lock that `register` also takes, so this cannot race.
        self.waiters.by_code.remove_if(&self.code, |_, n| {
            Arc::ptr_eq(n, &self.notify) && Arc::strong_count(n) == 2
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
