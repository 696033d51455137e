//! One host and its guests over a simulated network on a virtual clock:
//! the netcode's tests, `host-daemon simulate` and anyone who wants a whole
//! session in one call, deterministic and as fast as the CPU allows.
//!
//! A [`Scenario`] lists the host's configuration, one guest configuration
//! and link per guest, and network events keyed by the host's tick count
//! (stall a guest, cut a guest, lose the host, connect a latecomer).
//! [`run`] plays it and returns every finished session; [`Summary`] is the
//! one-line JSON report.

mod impairment;
mod late_join;
mod network;
mod summary;

use std::time::Duration;

use game_api::Game;
pub use impairment::{Fate, Impairment, LinkConfig, Tamper, on_text};
pub use late_join::{LateJoinFigures, measure_late_join};
pub use network::{Delivery, End, Network, stream};
pub use summary::{GuestSummary, Summary, describe_end, final_hash_matches};

use crate::guest::{GuestConfig, GuestSession};
use crate::host::{HostConfig, HostEvent, HostOutput, HostSession};
use crate::replay::ReplayRecord;
use crate::stats::GuestSlot;

/// Virtual time after which a run stops whatever state it is in (a
/// session that never ends is a bug the caller sees as unfinished guests).
const MAX_VIRTUAL_TIME: Duration = Duration::from_secs(4 * 3600);

/// What happens to the network, and when.
#[derive(Clone, Debug)]
pub enum NetAction {
    /// Pause guest `n`'s link (0-based) for a while, both ways.
    Stall(usize, Duration),
    /// Cut guest `n`'s link.
    Disconnect(usize),
    /// The host vanishes: every link is cut and the host stops.
    HostLoss,
    /// A new guest connects (after the start: it joins the running level,
    /// or is refused when the host has late join off).
    LateJoin(GuestConfig, LinkConfig),
    /// Guest `n` (0-based, of the scenario's) comes back on a fresh
    /// connection presenting its rejoin token; it counts as a latecomer.
    Rejoin(usize, GuestConfig, LinkConfig),
}

/// A network event at a host tick count (ticks simulated, all levels).
#[derive(Clone, Debug)]
pub struct NetEvent {
    /// When: once the host has simulated this many ticks.
    pub at_tick: u64,
    /// What.
    pub action: NetAction,
}

/// A whole run of game `G`.
pub struct Scenario<G: Game> {
    /// The host.
    pub host: HostConfig<G>,
    /// One guest configuration and link per guest.
    pub guests: Vec<(GuestConfig, LinkConfig)>,
    /// Network events.
    pub events: Vec<NetEvent>,
}

// By hand: derived, these would ask the game itself to be `Default` and
// `Clone`.
impl<G: Game> Default for Scenario<G> {
    fn default() -> Self {
        Self {
            host: HostConfig::default(),
            guests: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<G: Game> Clone for Scenario<G> {
    fn clone(&self) -> Self {
        Self {
            host: self.host.clone(),
            guests: self.guests.clone(),
            events: self.events.clone(),
        }
    }
}

/// Every finished session.
#[derive(Debug)]
pub struct Outcome<E: Game> {
    /// The host.
    pub host: HostSession<E>,
    /// The guests, in scenario order.
    pub guests: Vec<GuestSession<E>>,
    /// Guests that connected late.
    pub late: Vec<GuestSession<E>>,
    /// Virtual time the run took.
    pub elapsed: Duration,
    /// Bytes the host sent to each guest of `guests`.
    pub bytes_to_guests: Vec<u64>,
    /// The host's replay records, in order (with `record_replay` only).
    pub replay: Vec<ReplayRecord<E::Wire>>,
}

struct Guest<E: Game> {
    session: GuestSession<E>,
    link: usize,
    slot: GuestSlot,
    done: bool,
    late: bool,
}

struct Run<E: Game> {
    now: Duration,
    net: Network,
    host: HostSession<E>,
    host_alive: bool,
    guests: Vec<Guest<E>>,
    replay: Vec<ReplayRecord<E::Wire>>,
}

impl<E: Game> Run<E> {
    fn connect(&mut self, config: GuestConfig, link: LinkConfig, late: bool) {
        let link = self.net.add_link(link);
        let slot = self.host.add_guest(self.now);
        self.guests.push(Guest {
            session: GuestSession::new(config),
            link,
            slot,
            done: false,
            late,
        });
    }

    fn link_of(&self, slot: GuestSlot) -> Option<usize> {
        self.guests.iter().find(|g| g.slot == slot).map(|g| g.link)
    }

    /// Drops the host's events but its replay records (kept only when
    /// the host records them).
    fn keep_replay_records(&mut self) {
        for event in self.host.drain_events() {
            if let HostEvent::Replay(record) = event {
                self.replay.push(record);
            }
        }
    }

    fn step_host(&mut self) {
        if !self.host_alive {
            return;
        }
        self.host.poll(self.now);
        self.keep_replay_records();
        for out in self.host.drain_outbox() {
            let (slots, msg) = match out {
                HostOutput::Send(slot, msg, format) => (vec![slot], Some((msg, format))),
                HostOutput::Broadcast(slots, msg, format) => (slots, Some((msg, format))),
                HostOutput::Close(slot) => (vec![slot], None),
            };
            let payload = msg.as_ref().and_then(|(m, f)| m.encode_payload(*f).ok());
            let msg = msg.map(|(m, _)| m);
            for slot in slots {
                let Some(link) = self.link_of(slot) else {
                    continue;
                };
                match (&msg, &payload) {
                    (Some(m), Some(p)) => {
                        self.host.count_sent(slot, p.len(), self.now);
                        self.net
                            .send(link, End::Host, m.channel(), p.clone(), self.now);
                    }
                    _ => self.net.close(link, End::Host, self.now),
                }
            }
        }
        if self.host.ended().is_some() {
            self.host_alive = false;
        }
    }

    fn step_guests(&mut self) {
        for g in self.guests.iter_mut().filter(|g| !g.done) {
            loop {
                g.session.poll(self.now);
                g.session.drain_events();
                let format = g.session.wire_format();
                for msg in g.session.drain_outbox() {
                    if let Ok(payload) = msg.encode_payload(format) {
                        g.session.count_sent(payload.len(), self.now);
                        self.net
                            .send(g.link, End::Guest, msg.channel(), payload, self.now);
                    }
                }
                if g.session.ended().is_some() {
                    self.net.close(g.link, End::Guest, self.now);
                    g.done = true;
                    break;
                }
                if !g.session.has_backlog() {
                    break;
                }
            }
        }
    }

    fn apply(&mut self, action: NetAction) {
        let link = |n: usize| {
            self.guests
                .iter()
                .filter(|g| !g.late)
                .nth(n)
                .map(|g| g.link)
        };
        match action {
            NetAction::Stall(n, d) => {
                if let Some(l) = link(n) {
                    self.net.stall(l, d, self.now);
                }
            }
            NetAction::Disconnect(n) => {
                if let Some(l) = link(n) {
                    self.net.cut(l, self.now);
                }
            }
            NetAction::HostLoss => {
                for l in self.guests.iter().map(|g| g.link).collect::<Vec<_>>() {
                    self.net.cut(l, self.now);
                }
                self.host.shutdown();
                self.host.drain_outbox();
                self.keep_replay_records();
                self.host_alive = false;
            }
            NetAction::LateJoin(config, link) => self.connect(config, link, true),
            NetAction::Rejoin(n, mut config, link) => {
                let token = self
                    .guests
                    .iter()
                    .filter(|g| !g.late)
                    .nth(n)
                    .and_then(|g| g.session.rejoin_token().map(str::to_owned));
                config.resume_token = token;
                self.connect(config, link, true);
            }
        }
    }

    fn deliver_due(&mut self) {
        while let Some(d) = self.net.pop_due(self.now) {
            let Some(g) = self.guests.iter_mut().find(|g| g.link == d.link) else {
                continue;
            };
            match d.to {
                End::Host if self.host_alive => self.host.on_event(g.slot, d.event, self.now),
                End::Host => {}
                End::Guest if !g.done => g.session.on_event(d.event, self.now),
                End::Guest => {}
            }
        }
    }

    fn next_time(&self) -> Option<Duration> {
        let host = self.host_alive.then(|| self.host.next_wakeup()).flatten();
        let guests = self
            .guests
            .iter()
            .filter(|g| !g.done)
            .filter_map(|g| g.session.next_wakeup());
        host.into_iter()
            .chain(guests)
            .chain(self.net.next_due())
            .min()
    }
}

/// A scenario being played, one step at a time: a test can look at (and
/// drive) the sessions between steps. [`run`] plays one to the end.
pub struct Sim<E: Game> {
    run: Run<E>,
    /// Pending network events, the next one last.
    events: Vec<NetEvent>,
    /// Steps without the clock moving; a session that keeps asking for
    /// "now" would otherwise spin forever.
    stuck: u32,
    over: bool,
}

impl<E: Game> Sim<E> {
    /// Connects the scenario's guests at time zero.
    pub fn new(scenario: Scenario<E>) -> Self {
        let mut run = Run {
            now: Duration::ZERO,
            net: Network::default(),
            host: HostSession::new(scenario.host),
            host_alive: true,
            replay: Vec::new(),
            guests: Vec::new(),
        };
        for (config, link) in scenario.guests {
            run.connect(config, link, false);
        }
        let mut events = scenario.events;
        events.sort_by_key(|e| std::cmp::Reverse(e.at_tick));
        Self {
            run,
            events,
            stuck: 0,
            over: false,
        }
    }

    /// Runs every session at the current time, then moves the clock to the
    /// next thing due and delivers what arrives. `false` once nothing is
    /// left to happen (or the virtual time limit passed).
    pub fn step(&mut self) -> bool {
        if self.over {
            return false;
        }
        let run = &mut self.run;
        run.step_host();
        while self
            .events
            .last()
            .is_some_and(|e| run.host.stats().ticks >= e.at_tick)
        {
            if let Some(e) = self.events.pop() {
                run.apply(e.action);
            }
        }
        run.step_guests();
        let next = run.next_time().filter(|next| *next <= MAX_VIRTUAL_TIME);
        let Some(next) = next else {
            self.over = true;
            return false;
        };
        if next <= run.now && run.net.next_due().is_none_or(|d| d > run.now) {
            self.stuck += 1;
            if self.stuck > 10_000 {
                self.over = true;
                return false;
            }
        } else {
            self.stuck = 0;
        }
        run.now = run.now.max(next);
        run.deliver_due();
        true
    }

    /// The virtual time now.
    pub fn now(&self) -> Duration {
        self.run.now
    }

    /// The host.
    pub fn host(&self) -> &HostSession<E> {
        &self.run.host
    }

    /// The host, to drive (its local input, say).
    pub fn host_mut(&mut self) -> &mut HostSession<E> {
        &mut self.run.host
    }

    /// Guest `n` of the scenario (0-based; latecomers follow).
    pub fn guest(&self, n: usize) -> Option<&GuestSession<E>> {
        self.run.guests.get(n).map(|g| &g.session)
    }

    /// Guest `n`, to drive (its local input, say).
    pub fn guest_mut(&mut self, n: usize) -> Option<&mut GuestSession<E>> {
        self.run.guests.get_mut(n).map(|g| &mut g.session)
    }

    /// Bytes the host has sent guest `n` so far (0-based; latecomers
    /// follow).
    pub fn bytes_to_guest(&self, n: usize) -> u64 {
        self.run
            .guests
            .get(n)
            .map_or(0, |g| self.run.net.bytes_sent(g.link, End::Host))
    }

    /// Every session as it stands.
    pub fn finish(self) -> Outcome<E> {
        let run = self.run;
        let mut guests = Vec::new();
        let mut late = Vec::new();
        let mut bytes_to_guests = Vec::new();
        for g in run.guests {
            if g.late {
                late.push(g.session);
            } else {
                bytes_to_guests.push(run.net.bytes_sent(g.link, End::Host));
                guests.push(g.session);
            }
        }
        Outcome {
            host: run.host,
            guests,
            late,
            elapsed: run.now,
            bytes_to_guests,
            replay: run.replay,
        }
    }
}

/// Plays a scenario on a virtual clock and returns every session.
pub fn run<E: Game>(scenario: Scenario<E>) -> Outcome<E> {
    let mut sim = Sim::new(scenario);
    while sim.step() {}
    sim.finish()
}
