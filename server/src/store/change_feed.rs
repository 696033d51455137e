//! The bounded queue between a store's change listener and the service
//! that applies other replicas' changes.
//!
//! Applying a change may read the database, so a burst of changes from
//! other replicas (or a slow database) can outpace it. The queue holds at
//! most its capacity; a change that finds it full is dropped and a
//! [`StoreChange::Resync`] is owed instead, delivered as soon as there is
//! room. A resync rebuilds the lobby index and re-checks every long-poll,
//! so it covers every change dropped before it: memory stays bounded and
//! nothing is lost for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use super::StoreChange;

/// Changes the queue holds before it drops them for a resync.
pub const CHANGE_QUEUE_CAPACITY: usize = 4096;

/// The sending side: never waits, never grows past its capacity.
#[derive(Clone, Debug)]
pub struct ChangeFeed {
    tx: mpsc::Sender<StoreChange>,
    owed: Arc<Owed>,
}

/// Whether a resync is owed, and a wake-up for whoever delivers it.
#[derive(Debug, Default)]
struct Owed {
    resync: AtomicBool,
    wake: Notify,
}

impl ChangeFeed {
    /// A feed holding at most `capacity` changes, and its receiver.
    pub fn bounded(capacity: usize) -> (Self, mpsc::Receiver<StoreChange>) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let owed = Arc::new(Owed::default());
        (Self { tx, owed }, rx)
    }

    /// Queues `change`; when the queue is full, drops it and owes a
    /// resync. Changes after a dropped one may still arrive before the
    /// resync, which is harmless: the resync reads everything afresh.
    pub fn push(&self, change: StoreChange) {
        match self.tx.try_send(change) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if !self.owed.resync.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        capacity = self.tx.max_capacity(),
                        "replica changes arrive faster than they are applied; resyncing"
                    );
                }
                self.owed.wake.notify_one();
            }
            // The receiver is gone only at shutdown, when nothing is left
            // to update.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Delivers owed resyncs, each as soon as the queue has room, until
    /// `stop` is cancelled or the receiver is gone.
    pub async fn deliver_resyncs(self, stop: CancellationToken) {
        loop {
            let woken = self.owed.wake.notified();
            tokio::pin!(woken);
            // Registered before the flag is read, so a push in between
            // still wakes this loop.
            woken.as_mut().enable();
            if self.owed.resync.load(Ordering::Acquire) {
                let permit = tokio::select! {
                    () = stop.cancelled() => return,
                    permit = self.tx.reserve() => match permit {
                        Ok(permit) => permit,
                        Err(_) => return,
                    },
                };
                self.owed.resync.store(false, Ordering::Release);
                permit.send(StoreChange::Resync);
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = woken => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use lobby_api::code::{CODE_ALPHABET, SessionCode};

    use super::*;

    /// A change of the `i`th session (a distinct code for each `i`).
    fn changed(i: usize) -> StoreChange {
        let base = CODE_ALPHABET.len();
        let code: String = (0..8)
            .map(|digit| CODE_ALPHABET[i / base.pow(digit) % base] as char)
            .collect();
        StoreChange::SessionChanged(SessionCode::parse(&code).expect("a code"))
    }

    #[tokio::test]
    async fn a_burst_is_held_to_the_capacity_and_followed_by_a_resync() {
        let (feed, mut rx) = ChangeFeed::bounded(8);
        let stop = CancellationToken::new();
        let resyncs = tokio::spawn(feed.clone().deliver_resyncs(stop.clone()));
        for i in 0..10_000 {
            feed.push(changed(i));
        }
        assert_eq!(rx.len(), 8, "the queue never holds more than its capacity");
        let mut received = Vec::new();
        while received.last() != Some(&StoreChange::Resync) {
            received.push(rx.recv().await.expect("the feed is open"));
        }
        assert_eq!(received.len(), 9, "the eight queued, then the resync");
        assert!(received[..8].iter().all(|c| *c != StoreChange::Resync));
        // Owed once, delivered once; later changes flow again.
        feed.push(changed(1));
        assert_eq!(rx.recv().await, Some(changed(1)));
        assert!(rx.try_recv().is_err());
        stop.cancel();
        resyncs.await.expect("the resync task ends when stopped");
    }

    #[tokio::test]
    async fn a_feed_that_never_overflows_owes_nothing() {
        let (feed, mut rx) = ChangeFeed::bounded(8);
        let stop = CancellationToken::new();
        let resyncs = tokio::spawn(feed.clone().deliver_resyncs(stop.clone()));
        for round in 0..3 {
            for i in 0..8 {
                feed.push(changed(round * 8 + i));
            }
            for i in 0..8 {
                assert_eq!(rx.recv().await, Some(changed(round * 8 + i)));
            }
        }
        tokio::task::yield_now().await;
        assert!(rx.try_recv().is_err(), "no resync was owed");
        stop.cancel();
        resyncs.await.expect("stopped");
    }
}
