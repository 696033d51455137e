//! Group commit for PostgreSQL: the requests of one kind (reads by code,
//! creates, answers, deletes) that arrive while a statement of that kind
//! is in flight wait for it, then go together as the next statement.
//!
//! A request that finds fewer than its kind's limit in flight runs at
//! once, on its own future, so a quiet server pays no hand-off and no
//! wait; under load one round trip (and one pool checkout, one commit)
//! serves a whole queue. When a statement ends, a task takes what queued
//! behind it as the next statement. A request whose requester is gone
//! before its statement runs is dropped; one whose requester left while
//! it ran is reported to its kind (`Kind::unheard`), since nobody on this
//! replica heard the change it may have made.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::store::StoreError;

/// Most requests one statement carries; a longer queue goes in several.
pub(super) const MAX_GROUP: usize = 128;

/// Most requests of one kind waiting at once; past it a request fails at
/// once (503), as one would waiting for a connection of a busy pool.
pub(super) const MAX_WAITING: usize = 4 * MAX_GROUP;

/// One kind of statement that can carry many requests at once.
pub(super) trait Kind: Send + Sync + 'static {
    /// What one request asks.
    type Request: Send + 'static;
    /// What one request gets back.
    type Outcome: Send + 'static;

    /// Runs `requests` (at least one, at most [`MAX_GROUP`]) as one
    /// statement; one outcome per request, in their order.
    fn run(
        &self,
        requests: &[Self::Request],
    ) -> impl Future<Output = Result<Vec<Self::Outcome>, StoreError>> + Send;

    /// `request`'s statement ran (or was running) but its requester was
    /// gone before it heard the outcome: a write may have been made that
    /// nobody on this replica applied. Reads need nothing.
    fn unheard(&self, _request: &Self::Request) {}
}

type Reply<K> = oneshot::Sender<Result<<K as Kind>::Outcome, StoreError>>;

/// The queue of one kind of statement.
pub(super) struct Group<K: Kind> {
    kind: K,
    /// Statements of this kind in flight at once before requests queue.
    max_in_flight: usize,
    queue: Mutex<Queue<K>>,
}

struct Queue<K: Kind> {
    /// Statements of this kind in flight (or about to be, from a queue).
    in_flight: usize,
    /// Requests for the next statement, with where their outcomes go.
    waiting: Vec<(K::Request, Reply<K>)>,
}

impl<K: Kind> Group<K> {
    /// A group running statements of `kind`, at most `max_in_flight` (at
    /// least one) at once.
    pub(super) fn new(kind: K, max_in_flight: usize) -> Arc<Self> {
        Arc::new(Self {
            kind,
            max_in_flight: max_in_flight.max(1),
            queue: Mutex::new(Queue {
                in_flight: 0,
                waiting: Vec::new(),
            }),
        })
    }

    /// Runs `request`: at once if nothing of its kind is in flight, else
    /// in the next statement.
    pub(super) async fn submit(
        self: &Arc<Self>,
        request: K::Request,
    ) -> Result<K::Outcome, StoreError> {
        let waiting = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.in_flight < self.max_in_flight {
                queue.in_flight += 1;
                Ok(request)
            } else if queue.waiting.len() >= MAX_WAITING {
                return Err(StoreError::Unavailable(
                    "too many requests wait for the database".into(),
                ));
            } else {
                let (reply, outcome) = oneshot::channel();
                queue.waiting.push((request, reply));
                Err(outcome)
            }
        };
        match waiting {
            Ok(request) => {
                // Hands the queue on even if this future is dropped mid-statement.
                let _turn = Turn(Arc::clone(self));
                let mut heard = Heard {
                    kind: &self.kind,
                    request: &request,
                    heard: false,
                };
                let outcomes = self.kind.run(std::slice::from_ref(&request)).await;
                heard.heard = true;
                let mut outcomes = outcomes?;
                match (outcomes.pop(), outcomes.is_empty()) {
                    (Some(outcome), true) => Ok(outcome),
                    _ => Err(miscounted()),
                }
            }
            Err(outcome) => outcome.await.unwrap_or_else(|_| {
                Err(StoreError::Unavailable(
                    "the store stopped before the statement ran".into(),
                ))
            }),
        }
    }

    /// The next statement's requests (those whose requesters still wait),
    /// or none, and one fewer statement is in flight.
    fn next_group(&self) -> Option<Vec<(K::Request, Reply<K>)>> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.waiting.retain(|(_, reply)| !reply.is_closed());
        if queue.waiting.is_empty() {
            queue.in_flight = queue.in_flight.saturating_sub(1);
            return None;
        }
        let take = queue.waiting.len().min(MAX_GROUP);
        Some(queue.waiting.drain(..take).collect())
    }

    /// Runs one group as a statement and answers its requests; whatever
    /// queued meanwhile goes next (even if this panics).
    async fn run_group(self: Arc<Self>, group: Vec<(K::Request, Reply<K>)>) {
        let _turn = Turn(Arc::clone(&self));
        let (requests, replies): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let outcomes: Vec<Result<K::Outcome, StoreError>> = match self.kind.run(&requests).await {
            Ok(outcomes) if outcomes.len() == replies.len() => {
                outcomes.into_iter().map(Ok).collect()
            }
            Ok(_) => (0..replies.len()).map(|_| Err(miscounted())).collect(),
            Err(err) => (0..replies.len()).map(|_| Err(err.clone())).collect(),
        };
        for ((reply, outcome), request) in replies.into_iter().zip(outcomes).zip(&requests) {
            if reply.send(outcome).is_err() {
                self.kind.unheard(request);
            }
        }
    }
}

/// A request running alone, until its outcome is back: dropped before
/// that, its kind hears of it (`Kind::unheard`).
struct Heard<'a, K: Kind> {
    kind: &'a K,
    request: &'a K::Request,
    heard: bool,
}

impl<K: Kind> Drop for Heard<'_, K> {
    fn drop(&mut self) {
        if !self.heard {
            self.kind.unheard(self.request);
        }
    }
}

/// The turn of a statement in flight: when it ends (done, failed, dropped
/// or panicked), whatever queued behind it runs on a task of its own.
struct Turn<K: Kind>(Arc<Group<K>>);

impl<K: Kind> Drop for Turn<K> {
    fn drop(&mut self) {
        let Some(group) = self.0.next_group() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(Arc::clone(&self.0).run_group(group));
            }
            // No runtime (it is shutting down): nothing will run them, and
            // their requesters hear that the store stopped.
            Err(_) => {
                drop(group);
                let mut queue = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
                queue.in_flight = queue.in_flight.saturating_sub(1);
            }
        }
    }
}

fn miscounted() -> StoreError {
    StoreError::Corrupt("a grouped statement returned the wrong number of outcomes".into())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Notify;

    use super::*;

    /// Doubles numbers, one statement per call, each held until released.
    struct Doubler {
        release: Notify,
        calls: Mutex<Vec<Vec<u32>>>,
        started: AtomicUsize,
        unheard: Mutex<Vec<u32>>,
    }

    impl Kind for Arc<Doubler> {
        type Request = u32;
        type Outcome = u32;

        async fn run(&self, requests: &[u32]) -> Result<Vec<u32>, StoreError> {
            self.calls.lock().unwrap().push(requests.to_vec());
            self.started.fetch_add(1, Ordering::SeqCst);
            self.release.notified().await;
            if requests.contains(&13) {
                return Err(StoreError::Unavailable("unlucky".into()));
            }
            Ok(requests.iter().map(|n| n * 2).collect())
        }

        fn unheard(&self, request: &u32) {
            self.unheard.lock().unwrap().push(*request);
        }
    }

    fn doubler() -> Arc<Doubler> {
        Arc::new(Doubler {
            release: Notify::new(),
            calls: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
            unheard: Mutex::new(Vec::new()),
        })
    }

    async fn started(d: &Doubler, n: usize) {
        while d.started.load(Ordering::SeqCst) < n {
            tokio::task::yield_now().await;
        }
    }

    /// A request alone runs at once; those arriving while it is in flight
    /// wait, then go as one statement; each gets its own outcome.
    #[tokio::test]
    async fn requests_behind_one_in_flight_go_as_one_statement() {
        let d = doubler();
        let group = Group::new(Arc::clone(&d), 1);
        let first = tokio::spawn({
            let g = Arc::clone(&group);
            async move { g.submit(1).await }
        });
        started(&d, 1).await;
        let rest: Vec<_> = (2..=4)
            .map(|n| {
                let g = Arc::clone(&group);
                tokio::spawn(async move { g.submit(n).await })
            })
            .collect();
        // Let the three queue behind the first.
        while group.queue.lock().unwrap().waiting.len() < 3 {
            tokio::task::yield_now().await;
        }
        d.release.notify_one();
        assert_eq!(first.await.unwrap().unwrap(), 2);
        started(&d, 2).await;
        d.release.notify_one();
        let mut outcomes = Vec::new();
        for r in rest {
            outcomes.push(r.await.unwrap().unwrap());
        }
        assert_eq!(outcomes, vec![4, 6, 8]);
        assert_eq!(*d.calls.lock().unwrap(), vec![vec![1], vec![2, 3, 4]]);
        assert_eq!(group.queue.lock().unwrap().in_flight, 0, "idle again");
    }

    /// A failed statement fails every request in it and no other; a
    /// request whose future is dropped mid-statement still hands the
    /// queue on.
    #[tokio::test]
    async fn failures_and_dropped_requests_leave_the_queue_running() {
        let d = doubler();
        let group = Group::new(Arc::clone(&d), 1);
        let first = tokio::spawn({
            let g = Arc::clone(&group);
            async move { g.submit(5).await }
        });
        started(&d, 1).await;
        let unlucky = tokio::spawn({
            let g = Arc::clone(&group);
            async move { g.submit(13).await }
        });
        while group.queue.lock().unwrap().waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        started(&d, 2).await;
        d.release.notify_one();
        assert!(matches!(
            unlucky.await.unwrap(),
            Err(StoreError::Unavailable(_))
        ));
        // Idle again: the next request runs alone, at once.
        let g = Arc::clone(&group);
        let next = tokio::spawn(async move { g.submit(7).await });
        started(&d, 3).await;
        d.release.notify_one();
        assert_eq!(next.await.unwrap().unwrap(), 14);
        assert_eq!(*d.calls.lock().unwrap(), vec![vec![5], vec![13], vec![7]]);
    }

    /// With two in flight allowed, two requests run alone at once; the
    /// third waits, and goes once either is done.
    #[tokio::test]
    async fn a_kind_may_run_several_alone_before_requests_queue() {
        let d = doubler();
        let group = Group::new(Arc::clone(&d), 2);
        let submit = |n: u32| {
            let g = Arc::clone(&group);
            tokio::spawn(async move { g.submit(n).await })
        };
        let (one, two) = (submit(1), submit(2));
        started(&d, 2).await;
        let three = submit(3);
        while group.queue.lock().unwrap().waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        d.release.notify_one();
        d.release.notify_one();
        assert_eq!(
            (one.await.unwrap().unwrap(), two.await.unwrap().unwrap()),
            (2, 4)
        );
        started(&d, 3).await;
        d.release.notify_one();
        assert_eq!(three.await.unwrap().unwrap(), 6);
        assert_eq!(*d.calls.lock().unwrap(), vec![vec![1], vec![2], vec![3]]);
        assert_eq!(group.queue.lock().unwrap().in_flight, 0, "idle again");
    }

    /// A queued request whose requester left is never run; one whose
    /// requester left while its statement ran is reported unheard, alone or
    /// in a group. A full queue refuses at once.
    #[tokio::test]
    async fn requesters_who_leave_are_skipped_or_reported_and_the_queue_is_bounded() {
        let d = doubler();
        let group = Group::new(Arc::clone(&d), 1);
        let submit = |n: u32| {
            let g = Arc::clone(&group);
            tokio::spawn(async move { g.submit(n).await })
        };
        let alone = submit(1);
        started(&d, 1).await;
        let (left_early, left_late, stays) = (submit(2), submit(3), submit(4));
        while group.queue.lock().unwrap().waiting.len() < 3 {
            tokio::task::yield_now().await;
        }
        left_early.abort();
        assert!(left_early.await.unwrap_err().is_cancelled());
        for n in 0..MAX_WAITING as u32 - 2 {
            drop(submit(100 + n));
        }
        while group.queue.lock().unwrap().waiting.len() < MAX_WAITING {
            tokio::task::yield_now().await;
        }
        let refused = group.submit(99).await;
        assert!(
            matches!(refused, Err(StoreError::Unavailable(_))),
            "{refused:?}"
        );
        alone.abort();
        assert!(alone.await.unwrap_err().is_cancelled());
        assert_eq!(*d.unheard.lock().unwrap(), vec![1], "left mid-statement");
        started(&d, 2).await;
        let group_call = d.calls.lock().unwrap()[1].clone();
        assert_eq!(group_call[..2], [3, 4], "the one who left early is not run");
        left_late.abort();
        assert!(left_late.await.unwrap_err().is_cancelled());
        d.release.notify_one();
        assert_eq!(stays.await.unwrap().unwrap(), 8);
        assert_eq!(d.unheard.lock().unwrap()[1], 3, "left while its group ran");
    }
}
