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

use crate::replay_files::ReplayFiles;
use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

use engine::RaycasterEngine;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use netcode::guest::{GuestEvent, GuestSession};
use netcode::host::{HostEvent, HostOutput, HostSession};
use netcode::link::ConnectionState;
use netcode::stats::GuestSlot;
use protocol::peer::{Channel, HostMessage};
use protocol::wire::WireFormat;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::metrics::SessionMetrics;
use crate::transport::{PeerEvent, PeerLink, PeerReceiver, PeerSender};

/// Messages queued for one peer before it counts as not keeping up.
pub const WRITER_QUEUE_MESSAGES: usize = 4096;
/// Events queued from all of a session's peers before readers wait.
pub const READER_QUEUE_EVENTS: usize = 1024;
/// Events a host session takes from its queue before it polls again.
const EVENT_BATCH: usize = 64;
/// Warnings logged per second per session; the rest are counted.
const WARNINGS_PER_SECOND: u32 = 5;

/// The daemon's sessions, over its one engine.
pub type Host = HostSession<RaycasterEngine>;
/// A guest session over the daemon's engine.
pub type Guest = GuestSession<RaycasterEngine>;

enum WriterCommand {
    Send(Channel, String),
    Close,
}

struct Writer {
    queue: mpsc::Sender<WriterCommand>,
    /// Closes the connection at once, dropping what is queued.
    abort: Option<oneshot::Sender<()>>,
}

fn spawn_writer<S: PeerSender>(
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

fn spawn_reader<R: PeerReceiver, T: Send + Copy + 'static>(
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

/// Logs warnings at a bounded rate, counting what it suppressed.
struct Warnings {
    limiter: DefaultDirectRateLimiter,
    suppressed: u64,
}

impl Warnings {
    fn new() -> Self {
        let per_second = NonZeroU32::new(WARNINGS_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
            suppressed: 0,
        }
    }

    /// Whether to log now; when it says yes after a quiet spell, the
    /// caller's line carries how many were suppressed.
    fn allow(&mut self) -> Option<u64> {
        if self.limiter.check().is_ok() {
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

fn log_host_event(event: &HostEvent, warnings: &mut Warnings, metrics: Option<&SessionMetrics>) {
    if let Some(m) = metrics {
        m.record(event);
    }
    match event {
        HostEvent::Ticked { .. }
        | HostEvent::GuestsPresent(_)
        | HostEvent::RoundTrip { .. }
        | HostEvent::Replay(_) => {}
        HostEvent::GuestLost(slot, state) => tracing::info!(slot, ?state, "guest transport lost"),
        HostEvent::Refused(slot, reason) => tracing::info!(slot, ?reason, "join refused"),
        HostEvent::PlayerRemoved(epoch, tick, player) => {
            tracing::info!(level_epoch = epoch, tick, %player, "player removed from the roster");
        }
        HostEvent::PlayerJoined(epoch, tick, player) => {
            tracing::info!(level_epoch = epoch, tick, %player, "late joiner entered the level");
        }
        HostEvent::SpectatorAdmitted(slot, spectator) => {
            tracing::info!(slot, %spectator, "spectator admitted");
        }
        HostEvent::PlayerResumed(slot, player) => {
            tracing::info!(slot, %player, "player resumed on a fresh connection (rejoin)");
        }
        HostEvent::JoinFailed(player, why) => {
            tracing::error!(%player, %why, "late joiner's state could not be sent; removing it");
        }
        HostEvent::TransitionDropped(player) => {
            tracing::warn!(%player, "guest never acked the transition; dropping it");
        }
        HostEvent::LevelFailed(why) => tracing::error!(%why, "level failed; ending the session"),
        HostEvent::Ended(reason) => tracing::info!(?reason, "host session ended"),
        HostEvent::OverBudget(slot) => tracing::warn!(
            slot,
            "guest sent more than its budget of messages or bytes: disconnected"
        ),
        HostEvent::BadMessage(slot, error) => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(slot, %error, suppressed, "unparsable guest message");
            }
        }
        HostEvent::Desync {
            player,
            level_epoch,
            tick,
            persistent,
        } => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(%player, level_epoch, tick, persistent, suppressed, "desync: guest hash differs from host");
            }
        }
    }
}

fn log_guest_event(event: &GuestEvent, warnings: &mut Warnings) {
    match event {
        GuestEvent::Ended(end) => tracing::info!(?end, "guest session ended"),
        GuestEvent::Admitted { player, .. } => tracing::info!(%player, "admitted"),
        GuestEvent::HostBuildDiffers(build) => tracing::warn!(%build, "host runs another build"),
        GuestEvent::TransitionRejected(why) => {
            tracing::warn!(%why, "level transition payload rejected; waiting for a resend");
        }
        other => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(event = ?other, suppressed, "guest session");
            }
        }
    }
}

fn encode_host(msg: &HostMessage, format: WireFormat) -> Option<(Channel, String)> {
    match msg.encode(format) {
        Ok(text) => Some((msg.channel(), text)),
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
    /// Spectators admitted and connected (they hold no seat).
    pub spectators: usize,
}

/// A session the daemon serves to guests over its transports: a host
/// session ([`Host`]) or a relay ([`crate::relaying`]). [`run_host`]
/// drives either.
pub trait Served: Send + 'static {
    /// A new guest connection at `now`: its slot.
    fn add_guest(&mut self, now: Duration) -> GuestSlot;
    /// Feeds one event from guest `slot`.
    fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration);
    /// Runs whatever is due.
    fn poll(&mut self, now: Duration);
    /// When it next needs a poll.
    fn next_wakeup(&self) -> Option<Duration>;
    /// Ends the session now.
    fn shutdown(&mut self);
    /// Whether the session is over.
    fn is_over(&self) -> bool;
    /// Where it stands.
    fn progress(&self) -> HostProgress;
    /// Takes what to send, logging and counting what happened.
    fn drain(&mut self, log: &mut EventLog) -> Vec<HostOutput>;
}

/// Where a session's events go: the rate-limited log, the metrics, the
/// replay files.
pub struct EventLog {
    warnings: Warnings,
    /// The session's metrics, if counted.
    pub metrics: Option<SessionMetrics>,
    /// The session's replay files, if recorded.
    pub replays: Option<ReplayFiles>,
}

impl EventLog {
    /// Logs a warning unless too many came this second.
    pub fn warn(&mut self, what: impl FnOnce(u64)) {
        if let Some(suppressed) = self.warnings.allow() {
            what(suppressed);
        }
    }
}

impl Served for Host {
    fn add_guest(&mut self, now: Duration) -> GuestSlot {
        HostSession::add_guest(self, now)
    }

    fn on_event(&mut self, slot: GuestSlot, event: PeerEvent, now: Duration) {
        HostSession::on_event(self, slot, event, now);
    }

    fn poll(&mut self, now: Duration) {
        HostSession::poll(self, now);
    }

    fn next_wakeup(&self) -> Option<Duration> {
        HostSession::next_wakeup(self)
    }

    fn shutdown(&mut self) {
        HostSession::shutdown(self);
    }

    fn is_over(&self) -> bool {
        self.ended().is_some()
    }

    fn progress(&self) -> HostProgress {
        HostProgress {
            ticks: self.stats().ticks,
            started: self.started(),
            seats_taken: self.seats_taken(),
            connections: self.connections(),
            spectators: self.spectators_present(),
        }
    }

    fn drain(&mut self, log: &mut EventLog) -> Vec<HostOutput> {
        for event in self.drain_events() {
            if let (HostEvent::Replay(record), Some(files)) = (&event, log.replays.as_mut()) {
                files.record(record);
            }
            log_host_event(&event, &mut log.warnings, log.metrics.as_ref());
        }
        self.drain_outbox()
    }
}

/// The host's writers, one per guest slot.
struct Writers {
    by_slot: Vec<Option<Writer>>,
    handles: Vec<JoinHandle<()>>,
}

impl Writers {
    /// Queues `cmd` for `slot`; a guest whose queue is full is not keeping
    /// up and is closed (the session then sees its connection go).
    fn queue(
        &mut self,
        slot: GuestSlot,
        send: Option<&(Channel, String)>,
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

/// Runs a host until its session ends or `shutdown` resolves. New guest
/// connections arrive on `incoming` at any time (late ones are refused by
/// the session). `progress`, if given, follows the session's
/// [`HostProgress`]; `metrics`, if given, counts its events; `replays`,
/// if given, writes its replay records. Returns the finished session,
/// after every writer drained.
pub async fn run_host<T: Served, S: PeerSender, R: PeerReceiver>(
    mut session: T,
    mut incoming: mpsc::Receiver<PeerLink<S, R>>,
    shutdown: impl Future<Output = ()>,
    progress: Option<watch::Sender<HostProgress>>,
    metrics: Option<SessionMetrics>,
    replays: Option<ReplayFiles>,
) -> T {
    let origin = Instant::now();
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
                writers.queue(slot, send.as_ref(), &mut log.warnings);
            }
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
                Some(PeerLink { sender, receiver }) => {
                    let slot = session.add_guest(origin.elapsed());
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
pub async fn run_guest<S: PeerSender, R: PeerReceiver>(
    session: Guest,
    link: PeerLink<S, R>,
) -> Guest {
    run_guest_until(session, link, std::future::pending(), |_| {}).await
}

/// Runs a guest over one link until its session ends or `leave` resolves
/// (the guest then closes its link, as a player closing the tab); every
/// session event goes to `on_event` too. Returns the session after its
/// writer drained.
pub async fn run_guest_until<S: PeerSender, R: PeerReceiver>(
    mut session: Guest,
    link: PeerLink<S, R>,
    leave: impl Future<Output = ()>,
    mut on_event: impl FnMut(&GuestEvent),
) -> Guest {
    let origin = Instant::now();
    tokio::pin!(leave);
    let PeerLink { sender, receiver } = link;
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
            let cmd = match msg.encode(format) {
                Ok(text) => WriterCommand::Send(msg.channel(), text),
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
