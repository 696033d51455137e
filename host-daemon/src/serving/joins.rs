//! The answers one served session is connecting: `netcode`'s join policy
//! ([`JoinSlots`]) applied to WebRTC connections on tokio's clock.
//!
//! Each answer is connected by its own task, which reports the first ICE
//! progress and can be told to give up. This owner feeds the policy the
//! time, the answers, the ICE progress and the ends, closes the joins it
//! drops or that expire, and hands back only the joins that ended on
//! their own (connected, or failed).

use std::collections::HashMap;
use std::time::Duration;

use netcode::host::join_slots::{JoinId, JoinPolicy, JoinSlots};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{self, JoinSet};
use tokio::time::Instant;

use crate::transport::webrtc::{OpenOffer, WebRtcError, WebRtcLink};

/// A join that ended on its own.
pub(super) struct Joined {
    /// The joiner's name from its answer.
    pub(super) name: String,
    /// Its link, or why it did not open.
    pub(super) link: Result<WebRtcLink, WebRtcError>,
}

/// What a join's task returns.
struct Finished {
    id: JoinId,
    name: String,
    /// `None`: told to give up.
    link: Option<Result<WebRtcLink, WebRtcError>>,
}

/// The joins in flight of one session.
pub(super) struct Joins {
    slots: JoinSlots,
    tasks: JoinSet<Finished>,
    /// Dropping a join's sender tells its task to give up.
    cancels: HashMap<JoinId, oneshot::Sender<()>>,
    /// Each task's join, to free the slot of a task that panicked.
    task_joins: HashMap<task::Id, JoinId>,
    ice_tx: mpsc::UnboundedSender<JoinId>,
    ice_rx: mpsc::UnboundedReceiver<JoinId>,
    origin: Instant,
}

impl Joins {
    /// No joins yet, under `policy`.
    pub(super) fn new(policy: JoinPolicy) -> Self {
        let (ice_tx, ice_rx) = mpsc::unbounded_channel();
        Self {
            slots: JoinSlots::new(policy),
            tasks: JoinSet::new(),
            cancels: HashMap::new(),
            task_joins: HashMap::new(),
            ice_tx,
            ice_rx,
            origin: Instant::now(),
        }
    }

    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.origin)
    }

    /// No join task left (also none given up and still closing).
    pub(super) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// When the next round may open (a seat being free).
    pub(super) fn round_opens_at(&self) -> Instant {
        self.origin + self.slots.round_opens_at(self.now())
    }

    /// Connects `answer_sdp` (from `name`) in the background; drops the
    /// oldest join without ICE progress when every slot is taken.
    pub(super) fn start(&mut self, offer: OpenOffer, answer_sdp: String, name: String) {
        let admitted = self.slots.admit(self.now());
        if let Some(dropped) = admitted.evicted {
            self.cancels.remove(&dropped);
            tracing::info!(
                "dropped a join that showed no ICE progress to make room for a newer answer"
            );
        }
        let (cancel_tx, cancel_rx) = oneshot::channel();
        self.cancels.insert(admitted.id, cancel_tx);
        let task = self.tasks.spawn(connect(
            admitted.id,
            offer,
            answer_sdp,
            name,
            cancel_rx,
            self.ice_tx.clone(),
        ));
        self.task_joins.insert(task.id(), admitted.id);
    }

    /// The next join that ended on its own; meanwhile applies ICE progress
    /// and deadlines. `None` once no join task is left. Cancel-safe.
    pub(super) async fn next(&mut self) -> Option<Joined> {
        loop {
            if self.tasks.is_empty() {
                return None;
            }
            let deadline = self.slots.next_deadline().map(|d| self.origin + d);
            tokio::select! {
                done = self.tasks.join_next_with_id() => match done? {
                    Ok((task, f)) => {
                        self.task_joins.remove(&task);
                        let in_flight = self.slots.finished(f.id);
                        self.cancels.remove(&f.id);
                        match f.link {
                            Some(link @ Ok(_)) => return Some(Joined { name: f.name, link }),
                            Some(link @ Err(_)) if in_flight => {
                                return Some(Joined { name: f.name, link });
                            }
                            // Given up: logged when it was dropped.
                            _ => {}
                        }
                    }
                    // Its connection went with the task; so does its slot.
                    Err(e) => {
                        if let Some(id) = self.task_joins.remove(&e.id()) {
                            self.slots.finished(id);
                            self.cancels.remove(&id);
                        }
                        tracing::warn!(error = %e, "a join task failed");
                    }
                },
                Some(id) = self.ice_rx.recv() => {
                    let now = self.now();
                    self.slots.ice_progress(id, now);
                }
                () = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let now = self.now();
                    for (id, why) in self.slots.expire(now) {
                        self.cancels.remove(&id);
                        tracing::info!(?why, "dropped a join that did not connect in time");
                    }
                }
            }
        }
    }
}

/// Connects one answer: applies it, reports the first ICE progress, and
/// waits for the channels to open, or for the word to give up.
async fn connect(
    id: JoinId,
    offer: OpenOffer,
    answer_sdp: String,
    name: String,
    mut cancel: oneshot::Receiver<()>,
    ice: mpsc::UnboundedSender<JoinId>,
) -> Finished {
    let done = |link| Finished {
        id,
        name: name.clone(),
        link,
    };
    let answered = tokio::select! {
        a = offer.apply_answer(&answer_sdp) => match a {
            Ok(a) => a,
            Err(e) => return done(Some(Err(e))),
        },
        // Dropping the offer closes its connection.
        _ = &mut cancel => return done(None),
    };
    let mut told = false;
    let opened = loop {
        tokio::select! {
            _ = &mut cancel => break None,
            () = answered.ice_connected(), if !told => {
                told = true;
                let _ = ice.send(id);
            }
            r = answered.opened() => break Some(r),
        }
    };
    match opened {
        Some(Ok(())) => done(Some(Ok(answered.into_link()))),
        Some(Err(e)) => {
            answered.close().await;
            done(Some(Err(e)))
        }
        None => {
            answered.close().await;
            done(None)
        }
    }
}
