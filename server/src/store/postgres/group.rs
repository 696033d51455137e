//! Group commit for PostgreSQL: the requests of one kind (reads by code,
//! creates, answers, deletes) that arrive while a statement of that kind
//! is in flight wait for it, then go together as the next statement.
//!
//! A request that finds nothing of its kind in flight runs at once, on its
//! own future, so a quiet server pays no hand-off and no wait; under load
//! one round trip (and one pool checkout, one commit) serves a whole
//! queue. Once the request that ran alone is done, a task takes over the
//! queue and runs it statement by statement until it is empty.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::store::StoreError;

/// Most requests one statement carries; a longer queue goes in several.
pub(super) const MAX_GROUP: usize = 128;

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
            if queue.in_flight >= self.max_in_flight {
                let (reply, outcome) = oneshot::channel();
                queue.waiting.push((request, reply));
                Err(outcome)
            } else {
                queue.in_flight += 1;
                Ok(request)
            }
        };
        match waiting {
            Ok(request) => {
                // Hands the queue on even if this future is dropped mid-statement.
                let _turn = Turn(Arc::clone(self));
                let mut outcomes = self.kind.run(std::slice::from_ref(&request)).await?;
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

    /// The next statement's requests, or none (and the kind is idle).
    fn next_group(&self) -> Option<Vec<(K::Request, Reply<K>)>> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.waiting.is_empty() {
            queue.in_flight -= 1;
            return None;
        }
        let take = queue.waiting.len().min(MAX_GROUP);
        Some(queue.waiting.drain(..take).collect())
    }

    /// Runs the queue until it is empty.
    async fn drain(self: Arc<Self>, mut group: Vec<(K::Request, Reply<K>)>) {
        loop {
            let (requests, replies): (Vec<_>, Vec<_>) = group.into_iter().unzip();
            match self.kind.run(&requests).await {
                Ok(outcomes) if outcomes.len() == replies.len() => {
                    for (reply, outcome) in replies.into_iter().zip(outcomes) {
                        // The request may be gone; its change stands all the same.
                        let _ = reply.send(Ok(outcome));
                    }
                }
                Ok(_) => replies
                    .into_iter()
                    .for_each(|r| drop(r.send(Err(miscounted())))),
                Err(err) => replies
                    .into_iter()
                    .for_each(|r| drop(r.send(Err(err.clone())))),
            }
            match self.next_group() {
                Some(next) => group = next,
                None => return,
            }
        }
    }
}

/// The turn of the request that ran alone: when it ends (done, failed or
/// dropped), whatever queued behind it runs on a task of its own.
struct Turn<K: Kind>(Arc<Group<K>>);

impl<K: Kind> Drop for Turn<K> {
    fn drop(&mut self) {
        let Some(group) = self.0.next_group() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(Arc::clone(&self.0).drain(group));
            }
            // No runtime (it is shutting down): nothing will run them.
            Err(_) => drop(group),
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
    }

    fn doubler() -> Arc<Doubler> {
        Arc::new(Doubler {
            release: Notify::new(),
            calls: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
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
}
