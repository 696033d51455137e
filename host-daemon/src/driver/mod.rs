//! The small async drivers that run a `netcode` session over transports.
//!
//! Each driver owns one session state machine. It forwards transport events
//! into it with the time since the driver started, sleeps until the
//! session's next wake-up, polls it, logs and counts its events, and hands
//! its outbox to one writer task per peer. The writer awaits the
//! transport's backpressure, so a slow guest delays only its own queue,
//! never the tick loop. Every queue is bounded: a guest whose writer queue
//! fills is closed, and a flooding peer's reader waits (backpressure to its
//! transport). Repeated warnings are rate-limited. All timing comes from
//! `tokio::time`, so paused-time tests drive it.
//!
//! # Layout
//!
//! - here: the loops, [`run_served`] and [`run_guest`] / [`run_guest_until`].
//! - `queues`: the bounded queues between a loop and its transports: one
//!   writer task per peer, and readers feeding the loop.
//! - `events`: where a session's events go: the rate-limited log, the
//!   metrics, the replay files ([`EventLog`]).
//! - `served`: what [`run_served`] drives ([`Served`]: a host session or a
//!   relay) and where it stands ([`ServedProgress`]).

mod events;
mod queues;
mod served;

use crate::replay_files::ReplayFiles;
use std::future::Future;
use std::time::Duration;

use engine::RaycasterEngine;
use game_api::{Game, GameWire};
use netcode::guest::{GuestEvent, GuestSession};
use netcode::host::{HostOutput, HostSession};
use netcode::link::ConnectionState;
use netcode::stats::GuestSlot;
use protocol::peer::Channel;
use protocol::peer::HostMessage;
use protocol::wire::WireFormat;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until};

use crate::control::view::SessionFigures;
use crate::metrics::SessionMetrics;
use crate::transport::{Payload, PeerEvent, PeerLink, PeerReceiver, PeerSender};
pub use events::EventLog;
use events::{Warnings, log_guest_event};
pub use queues::{READER_QUEUE_EVENTS, WRITER_QUEUE_MESSAGES};
use queues::{WriterCommand, Writers, spawn_reader, spawn_writer};
pub use served::{Served, ServedProgress};

/// Events a served session takes from its queue before it polls again.
const EVENT_BATCH: usize = 64;

/// The daemon's sessions, over its one engine.
pub type Host = HostSession<RaycasterEngine>;
/// A guest session over the daemon's engine.
pub type Guest = GuestSession<RaycasterEngine>;

/// A host message as a writer sends it, or `None` (logged) when it cannot
/// be encoded.
fn encode_host<W: GameWire>(
    msg: &HostMessage<W>,
    format: WireFormat,
) -> Option<(Channel, Payload)> {
    match msg.encode_payload(format) {
        Ok(text) => Some((msg.channel(), text)),
        Err(e) => {
            tracing::error!(error = %e, "could not encode a host message");
            None
        }
    }
}

/// How often a served session's [`SessionFigures`] are sampled for its
/// observers.
pub const FIGURES_EVERY: Duration = Duration::from_millis(500);

/// Who follows a served session; each is optional.
#[derive(Debug, Default)]
pub struct Observers {
    /// Follows the session's [`ServedProgress`].
    pub progress: Option<watch::Sender<ServedProgress>>,
    /// Counts its events.
    pub metrics: Option<SessionMetrics>,
    /// Writes its replay records.
    pub replays: Option<ReplayFiles>,
    /// Gets its figures every [`FIGURES_EVERY`] and at the end.
    pub figures: Option<watch::Sender<SessionFigures>>,
}

/// Runs a served session (a host session or a relay) until it ends or
/// `shutdown` resolves. New guest connections arrive on `incoming` at any
/// time (late ones are refused by the session); `observers` follow it.
/// Returns the finished session, after every writer drained.
pub async fn run_served<T: Served, S: PeerSender, R: PeerReceiver>(
    mut session: T,
    mut incoming: mpsc::Receiver<PeerLink<S, R>>,
    shutdown: impl Future<Output = ()>,
    observers: Observers,
) -> T {
    let Observers {
        progress,
        metrics,
        replays,
        figures,
    } = observers;
    let origin = Instant::now();
    let mut next_figures = origin;
    let (ev_tx, mut ev_rx) = mpsc::channel::<(GuestSlot, PeerEvent)>(READER_QUEUE_EVENTS);
    let mut writers = Writers {
        by_slot: Vec::new(),
        handles: Vec::new(),
    };
    let mut log = EventLog {
        warnings: Warnings::new(),
        metrics: metrics.clone(),
        replays,
    };
    let mut incoming_open = true;
    tokio::pin!(shutdown);
    loop {
        session.poll(origin.elapsed());
        for out in session.drain(&mut log) {
            let (slots, send) = match out {
                HostOutput::Send(slot, msg, format) => (vec![slot], encode_host(&msg, format)),
                HostOutput::Broadcast(slots, msg, format) => (slots, encode_host(&msg, format)),
                HostOutput::Close(slot) => (vec![slot], None),
            };
            for slot in slots {
                if let Some((_, text)) = &send {
                    session.count_sent(slot, text.len(), origin.elapsed());
                }
                writers.queue(slot, send.as_ref(), &mut log.warnings);
            }
        }
        if let Some(f) = &figures
            && (Instant::now() >= next_figures || session.is_over())
        {
            next_figures = Instant::now() + FIGURES_EVERY;
            f.send_replace(session.figures(origin.elapsed()));
        }
        if let Some(p) = &progress {
            p.send_if_modified(|t| {
                let now = session.progress();
                let changed = *t != now;
                *t = now;
                changed
            });
        }
        if session.is_over() {
            break;
        }
        let wake = session.next_wakeup().map(|d| origin + d);
        tokio::select! {
            link = incoming.recv(), if incoming_open => match link {
                Some(PeerLink { sender, receiver, origin: from }) => {
                    let slot = session.add_guest(origin.elapsed(), from);
                    // An always-on lobby session sees many connections come
                    // and go: keep only the writers still running.
                    writers.handles.retain(|h| !h.is_finished());
                    let (w, h) = spawn_writer(sender, metrics.clone());
                    writers.by_slot.push(Some(w));
                    writers.handles.push(h);
                    spawn_reader(receiver, slot, ev_tx.clone());
                }
                None => incoming_open = false,
            },
            Some((slot, ev)) = ev_rx.recv() => {
                session.on_event(slot, ev, origin.elapsed());
                // Under load more are waiting: take them in one go, so a
                // busy session polls once per batch, not once per message.
                for _ in 1..EVENT_BATCH {
                    let Ok((slot, ev)) = ev_rx.try_recv() else { break };
                    session.on_event(slot, ev, origin.elapsed());
                }
            }
            _ = sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {},
            _ = &mut shutdown => session.shutdown(),
        }
    }
    let handles = std::mem::take(&mut writers.handles);
    drop(writers);
    for h in handles {
        let _ = h.await;
    }
    session
}

/// Runs a guest over one link until its session ends. Returns the finished
/// session after its writer drained.
pub async fn run_guest<E: Game, S: PeerSender, R: PeerReceiver>(
    session: GuestSession<E>,
    link: PeerLink<S, R>,
) -> GuestSession<E> {
    run_guest_until(session, link, std::future::pending(), |_| {}).await
}

/// Runs a guest over one link until its session ends or `leave` resolves
/// (the guest then closes its link, as a player closing the tab); every
/// session event goes to `on_event` too. Returns the session after its
/// writer drained.
pub async fn run_guest_until<E: Game, S: PeerSender, R: PeerReceiver>(
    mut session: GuestSession<E>,
    link: PeerLink<S, R>,
    leave: impl Future<Output = ()>,
    mut on_event: impl FnMut(&GuestEvent),
) -> GuestSession<E> {
    let origin = Instant::now();
    tokio::pin!(leave);
    let PeerLink {
        sender, receiver, ..
    } = link;
    let (mut w, handle) = spawn_writer(sender, None);
    let (ev_tx, mut ev_rx) = mpsc::channel::<((), PeerEvent)>(READER_QUEUE_EVENTS);
    spawn_reader(receiver, (), ev_tx);
    let mut warnings = Warnings::new();
    loop {
        session.poll(origin.elapsed());
        for event in session.drain_events() {
            on_event(&event);
            log_guest_event(&event, &mut warnings);
        }
        let format = session.wire_format();
        for msg in session.drain_outbox() {
            let cmd = match msg.encode_payload(format) {
                Ok(text) => {
                    session.count_sent(text.len(), origin.elapsed());
                    WriterCommand::Send(msg.channel(), text)
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not encode a guest message");
                    continue;
                }
            };
            // A guest sends a few messages a tick; a full queue means the
            // link is hopeless: close it, and the session hears so.
            if let Err(mpsc::error::TrySendError::Full(_)) = w.queue.try_send(cmd)
                && let Some(abort) = w.abort.take()
            {
                tracing::warn!("the host is not reading; closing the link");
                let _ = abort.send(());
            }
        }
        if session.ended().is_some() {
            break;
        }
        if session.has_backlog() {
            tokio::task::yield_now().await;
            continue;
        }
        let wake = session.next_wakeup().map(|d| origin + d);
        tokio::select! {
            ev = ev_rx.recv() => match ev {
                Some(((), ev)) => session.on_event(ev, origin.elapsed()),
                None => {
                    // Transport gone without a state event: same as a loss.
                    session.on_event(PeerEvent::State(ConnectionState::Failed), origin.elapsed());
                    if let Some(at) = session.next_wakeup() {
                        sleep_until(origin + at).await;
                    }
                }
            },
            _ = sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {},
            () = &mut leave => break,
        }
    }
    let _ = w.queue.send(WriterCommand::Close).await;
    drop(w);
    let _ = handle.await;
    session
}
