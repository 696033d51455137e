//! The answers one served session is connecting, as tokio tasks: the
//! hosting machine (`netcode::host::hosting`) decides which to start and
//! which to give up; each task applies its answer, reports the first ICE
//! progress and ends with the link or why it did not open.

use std::collections::HashMap;

use netcode::host::join_slots::JoinId;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{self, JoinSet};

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

/// News of the joins in flight.
pub(super) enum JoinNews {
    /// The join's ICE state reached connected.
    IceProgress(JoinId),
    /// The join's task ended: with what it got, or `None` when it was
    /// given up (or its task failed).
    Ended(JoinId, Option<Joined>),
}

/// The join tasks of one session.
pub(super) struct Joins {
    tasks: JoinSet<Finished>,
    /// Dropping a join's sender tells its task to give up.
    cancels: HashMap<JoinId, oneshot::Sender<()>>,
    /// Each task's join, to report the end of a task that panicked.
    task_joins: HashMap<task::Id, JoinId>,
    ice_tx: mpsc::UnboundedSender<JoinId>,
    ice_rx: mpsc::UnboundedReceiver<JoinId>,
}

impl Joins {
    /// No joins yet.
    pub(super) fn new() -> Self {
        let (ice_tx, ice_rx) = mpsc::unbounded_channel();
        Self {
            tasks: JoinSet::new(),
            cancels: HashMap::new(),
            task_joins: HashMap::new(),
            ice_tx,
            ice_rx,
        }
    }

    /// No join task left (also none given up and still closing).
    pub(super) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Connects `answer_sdp` (from `name`) with `offer` as join `id`, in
    /// the background.
    pub(super) fn start(&mut self, id: JoinId, offer: OpenOffer, answer_sdp: String, name: String) {
        let (cancel_tx, cancel_rx) = oneshot::channel();
        self.cancels.insert(id, cancel_tx);
        let task = self.tasks.spawn(connect(
            id,
            offer,
            answer_sdp,
            name,
            cancel_rx,
            self.ice_tx.clone(),
        ));
        self.task_joins.insert(task.id(), id);
    }

    /// Tells join `id` to give up (its task closes the connection).
    pub(super) fn cancel(&mut self, id: JoinId) {
        self.cancels.remove(&id);
    }

    /// The next news of the joins; `None` once no join task is left.
    /// Cancel-safe.
    pub(super) async fn next(&mut self) -> Option<JoinNews> {
        if self.tasks.is_empty() {
            return None;
        }
        tokio::select! {
            done = self.tasks.join_next_with_id() => Some(match done? {
                Ok((task, f)) => {
                    self.task_joins.remove(&task);
                    self.cancels.remove(&f.id);
                    let joined = f.link.map(|link| Joined { name: f.name, link });
                    JoinNews::Ended(f.id, joined)
                }
                // Its connection went with the task.
                Err(e) => {
                    tracing::warn!(error = %e, "a join task failed");
                    let id = self.task_joins.remove(&e.id()).unwrap_or(JoinId(0));
                    self.cancels.remove(&id);
                    JoinNews::Ended(id, None)
                }
            }),
            Some(id) = self.ice_rx.recv() => Some(JoinNews::IceProgress(id)),
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
