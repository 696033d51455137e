//! The bounded queues between a driver's loop and its transports: one
//! writer task per peer, which awaits the transport's backpressure so a
//! slow peer delays only its own queue, and reader tasks that feed the
//! peers' events to the loop (waiting when its queue is full).

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use netcode::stats::GuestSlot;
use protocol::peer::Channel;

use super::events::Warnings;
use crate::metrics::SessionMetrics;
use crate::transport::{Payload, PeerEvent, PeerReceiver, PeerSender};

/// Messages queued for one peer before it counts as not keeping up.
pub const WRITER_QUEUE_MESSAGES: usize = 4096;
/// Events queued from all of a session's peers before readers wait.
pub const READER_QUEUE_EVENTS: usize = 1024;

/// What a writer task is asked to do.
pub(super) enum WriterCommand {
    /// Send this message on this channel.
    Send(Channel, Payload),
    /// Send what is queued, then close the link.
    Close,
}

/// One peer's writer task, as its loop holds it.
pub(super) struct Writer {
    /// What to send, bounded by [`WRITER_QUEUE_MESSAGES`].
    pub(super) queue: mpsc::Sender<WriterCommand>,
    /// Closes the connection at once, dropping what is queued.
    pub(super) abort: Option<oneshot::Sender<()>>,
}

/// Starts the writer task of one peer: it sends what is queued, in order,
/// until told to close, aborted, or its queue is dropped.
pub(super) fn spawn_writer<S: PeerSender>(
    sender: S,
    metrics: Option<SessionMetrics>,
) -> (Writer, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel(WRITER_QUEUE_MESSAGES);
    let (abort_tx, mut abort_rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        // The abort handle dropped (the session let go of this writer) is
        // not an abort: what is queued is still sent, then the link closes.
        let mut abort_live = true;
        loop {
            let cmd = tokio::select! {
                biased;
                res = &mut abort_rx, if abort_live => match res {
                    Ok(()) => {
                        sender.close();
                        return;
                    }
                    Err(_) => {
                        abort_live = false;
                        continue;
                    }
                },
                cmd = rx.recv() => cmd,
            };
            match cmd {
                Some(WriterCommand::Send(channel, text)) => {
                    let len = text.len();
                    match sender.send(channel, text).await {
                        Ok(()) => {
                            if let Some(m) = &metrics {
                                m.bytes_sent(len);
                            }
                        }
                        Err(e) => tracing::debug!(error = %e, "send failed"),
                    }
                }
                Some(WriterCommand::Close) => {
                    sender.close();
                    return;
                }
                None => return,
            }
        }
    });
    let writer = Writer {
        queue: tx,
        abort: Some(abort_tx),
    };
    (writer, handle)
}

/// Starts a reader task: each event of `receiver`, tagged, goes to `out`
/// (waiting while it is full), until either side is gone.
pub(super) fn spawn_reader<R: PeerReceiver, T: Send + Copy + 'static>(
    mut receiver: R,
    tag: T,
    out: mpsc::Sender<(T, PeerEvent)>,
) {
    tokio::spawn(async move {
        while let Some(ev) = receiver.recv().await {
            if out.send((tag, ev)).await.is_err() {
                return;
            }
        }
    });
}

/// A served session's writers, one per guest slot.
pub(super) struct Writers {
    /// Each slot's writer, while it takes more.
    pub(super) by_slot: Vec<Option<Writer>>,
    /// The writer tasks still to be awaited.
    pub(super) handles: Vec<JoinHandle<()>>,
}

impl Writers {
    /// Queues `cmd` for `slot`; a guest whose queue is full is not keeping
    /// up and is closed (the session then sees its connection go).
    pub(super) fn queue(
        &mut self,
        slot: GuestSlot,
        send: Option<&(Channel, Payload)>,
        warnings: &mut Warnings,
    ) {
        let Some(Some(w)) = self.by_slot.get_mut(slot) else {
            return;
        };
        let cmd = match send {
            Some((channel, text)) => WriterCommand::Send(*channel, text.clone()),
            None => WriterCommand::Close,
        };
        let closing = matches!(cmd, WriterCommand::Close);
        match w.queue.try_send(cmd) {
            Ok(()) if !closing => return,
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                if let Some(suppressed) = warnings.allow() {
                    tracing::warn!(slot, suppressed, "guest is not keeping up; closing it");
                }
                if let Some(abort) = w.abort.take() {
                    let _ = abort.send(());
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
        // Gone, or closing: the writer drains what was queued and ends;
        // nothing more goes to this slot.
        self.by_slot[slot] = None;
    }
}
