//! The small async drivers that run a session over transports.
//!
//! Each driver owns one session state machine. It forwards transport events
//! into it, sleeps until the session's next wake-up, polls it, and hands its
//! outbox to one writer task per peer. The writer awaits the transport's
//! backpressure, so a slow guest delays only its own queue, never the tick
//! loop. All timing comes from `tokio::time`, so paused-time tests drive it.

use std::future::Future;

use protocol::peer::{GuestMessage, HostMessage};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::guest::GuestSession;
use crate::host::{GuestSlot, HostOutput, HostSession};
use crate::metrics::SessionMetrics;
use crate::transport::{PeerLink, PeerReceiver, PeerSender, TransportEvent};

#[derive(Clone)]
enum WriterCommand {
    Send(protocol::peer::Channel, String),
    Close,
}

fn spawn_writer<S: PeerSender>(
    sender: S,
    metrics: Option<SessionMetrics>,
) -> (mpsc::UnboundedSender<WriterCommand>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(async move {
        while let Some(cmd) = rx.recv().await {
            match cmd {
                WriterCommand::Send(channel, text) => {
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
                WriterCommand::Close => {
                    sender.close();
                    break;
                }
            }
        }
    });
    (tx, handle)
}

fn spawn_reader<R: PeerReceiver, T: Send + Copy + 'static>(
    mut receiver: R,
    tag: T,
    out: mpsc::UnboundedSender<(T, TransportEvent)>,
) {
    tokio::spawn(async move {
        while let Some(ev) = receiver.recv().await {
            if out.send((tag, ev)).is_err() {
                return;
            }
        }
    });
}

fn encode_host(msg: &HostMessage) -> Option<WriterCommand> {
    match msg.to_json() {
        Ok(text) => Some(WriterCommand::Send(msg.channel(), text)),
        Err(e) => {
            tracing::error!(error = %e, "could not encode a host message");
            None
        }
    }
}

/// Where a running host session stands, for whoever publishes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostProgress {
    /// Ticks run, all levels.
    pub ticks: u64,
    /// Whether the session left its lobby (no more guests are admitted).
    pub started: bool,
    /// Seats taken: guests admitted and connected, plus connections still
    /// in their version handshake.
    pub seats_taken: usize,
    /// Guest connections handed to the session so far.
    pub connections: usize,
}

impl HostProgress {
    fn of(session: &HostSession) -> Self {
        Self {
            ticks: session.stats().ticks,
            started: session.started(),
            seats_taken: session.seats_taken(),
            connections: session.connections(),
        }
    }
}

/// Runs a host until its session ends or `shutdown` resolves. New guest
/// connections arrive on `incoming` at any time (late ones are refused by
/// the session). `progress`, if given, follows the session's
/// [`HostProgress`]. Returns the finished session, after every writer
/// drained.
pub async fn run_host<S: PeerSender, R: PeerReceiver>(
    mut session: HostSession,
    mut incoming: mpsc::Receiver<PeerLink<S, R>>,
    shutdown: impl Future<Output = ()>,
    progress: Option<watch::Sender<HostProgress>>,
) -> HostSession {
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<(GuestSlot, TransportEvent)>();
    let mut writers: Vec<Option<mpsc::UnboundedSender<WriterCommand>>> = Vec::new();
    let mut handles = Vec::new();
    let mut incoming_open = true;
    tokio::pin!(shutdown);
    loop {
        session.poll(Instant::now());
        for out in session.drain_outbox() {
            let (slots, cmd) = match out {
                HostOutput::Send(slot, msg) => (vec![slot], encode_host(&msg)),
                HostOutput::Broadcast(slots, msg) => (slots, encode_host(&msg)),
                HostOutput::Close(slot) => (vec![slot], Some(WriterCommand::Close)),
            };
            let Some(cmd) = cmd else { continue };
            let closing = matches!(cmd, WriterCommand::Close);
            for slot in slots {
                if let Some(Some(w)) = writers.get(slot)
                    && (w.send(cmd.clone()).is_err() || closing)
                {
                    // Gone, or closing: the writer drains what was queued
                    // and ends; nothing more goes to this slot.
                    writers[slot] = None;
                }
            }
        }
        if let Some(p) = &progress {
            p.send_if_modified(|t| {
                let now = HostProgress::of(&session);
                let changed = *t != now;
                *t = now;
                changed
            });
        }
        if session.ended().is_some() {
            break;
        }
        let wake = session.next_wakeup();
        tokio::select! {
            link = incoming.recv(), if incoming_open => match link {
                Some(PeerLink { sender, receiver }) => {
                    let slot = session.add_guest();
                    // An always-on lobby session sees many connections come
                    // and go: keep only the writers still running.
                    handles.retain(|h: &JoinHandle<()>| !h.is_finished());
                    let (w, h) = spawn_writer(sender, session.metrics().cloned());
                    writers.push(Some(w));
                    handles.push(h);
                    spawn_reader(receiver, slot, ev_tx.clone());
                }
                None => incoming_open = false,
            },
            Some((slot, ev)) = ev_rx.recv() => session.on_event(slot, ev, Instant::now()),
            _ = sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {},
            _ = &mut shutdown => session.shutdown(),
        }
    }
    drop(writers);
    for h in handles {
        let _ = h.await;
    }
    session
}

/// Runs a guest over one link until its session ends. Returns the finished
/// session after its writer drained.
pub async fn run_guest<S: PeerSender, R: PeerReceiver>(
    session: GuestSession,
    link: PeerLink<S, R>,
) -> GuestSession {
    run_guest_until(session, link, std::future::pending()).await
}

/// Runs a guest over one link until its session ends or `leave` resolves
/// (the guest then closes its link, as a player closing the tab). Returns
/// the session after its writer drained.
pub async fn run_guest_until<S: PeerSender, R: PeerReceiver>(
    mut session: GuestSession,
    link: PeerLink<S, R>,
    leave: impl Future<Output = ()>,
) -> GuestSession {
    tokio::pin!(leave);
    let PeerLink { sender, receiver } = link;
    let (w, handle) = spawn_writer(sender, None);
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<((), TransportEvent)>();
    spawn_reader(receiver, (), ev_tx);
    loop {
        session.poll(Instant::now());
        for msg in session.drain_outbox() {
            let cmd = match GuestMessage::to_json(&msg) {
                Ok(text) => WriterCommand::Send(msg.channel(), text),
                Err(e) => {
                    tracing::error!(error = %e, "could not encode a guest message");
                    continue;
                }
            };
            let _ = w.send(cmd);
        }
        if session.ended().is_some() {
            break;
        }
        if session.has_backlog() {
            tokio::task::yield_now().await;
            continue;
        }
        let wake = session.next_wakeup();
        tokio::select! {
            ev = ev_rx.recv() => match ev {
                Some(((), ev)) => session.on_event(ev, Instant::now()),
                None => {
                    // Transport gone without a state event: same as a loss.
                    session.on_event(
                        TransportEvent::State(crate::transport::ConnectionState::Failed),
                        Instant::now(),
                    );
                    if let Some(at) = session.next_wakeup() {
                        sleep_until(at).await;
                    }
                }
            },
            _ = sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {},
            () = &mut leave => break,
        }
    }
    let _ = w.send(WriterCommand::Close);
    drop(w);
    let _ = handle.await;
    session
}
