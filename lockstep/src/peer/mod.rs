//! The relay speaking campfire's peer protocol: [`PeerRelay`].
//!
//! To every guest a relay session looks like a host (the same hello,
//! session init, map chunks, tick bundles, transitions and session end),
//! so the daemon's bot guests and the browser's wasm guest join it
//! unchanged. The guest that took up [`FEATURE_RELAY`] and is named the
//! authority also answers the relay's asks ([`HostMessage::RelayAskLevel`],
//! [`HostMessage::RelayAskSnapshot`]) and reports each level's end. The
//! relay reads the peer envelope, carries the game's parts (`W`, a
//! [`GameWire`]: its levels, settings and inputs) without looking inside
//! beyond [`GameWire::sanitize`], and never runs the game: see
//! [`crate::relay`].
//!
//! Here: the relay's configuration, outputs and events and the calls its
//! driver makes; `messages` handles what guests send, `delivery` what the
//! relay sends them (and a desynced guest's in-place rebuild), `probes`
//! the round trips and the input delays fitted to them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use game_api::PlayerId;
use game_api::{GameWire, PlayerScore};
use protocol::BUILD_VERSION;
use protocol::peer::{
    FEATURE_BINARY, FEATURE_COMPACT, FEATURE_INPUT_DELAY, FEATURE_PING, FEATURE_RELAY,
    FEATURE_RESYNC, FEATURE_ROUND_TRIP, Features, GuestMessage, HostMessage, PEER_PROTOCOL_VERSION,
    RefusalReason, RelayLevel, TickInputBundle, TransitionPayload,
};
use protocol::tick::INPUT_DELAY_TICKS;
use protocol::wire::{Payload, WireFormat};

use crate::budget::{GuestBudget, GuestBudgetPolicy};
use crate::rejoin::RejoinTokens;
mod delivery;
pub use delivery::MAX_RESYNCS;
mod messages;
mod probes;

use crate::relay::{Origin, Relay, RelayConfig, RelayEvent, Slot};

/// The largest message a guest may send a relay, bytes (an authority's
/// level carries a map and a state).
pub const MAX_GUEST_MESSAGE_BYTES: usize = 1024 * 1024;

/// What a campfire relay is configured with, for the game `W`.
#[derive(Clone, Debug)]
pub struct PeerRelayConfig<W: GameWire> {
    /// The relay session itself.
    pub relay: RelayConfig,
    /// Build identifier guests must match.
    pub build_version: String,
    /// What the authority builds every level from.
    pub campaign: W::Campaign,
    /// Levels in the campaign.
    pub levels: u32,
    /// The session's settings, in every level.
    pub settings: W::Settings,
    /// Every player's input delay, ticks, when fixed (other than the
    /// spec's, guests must take up `input-delay`); `None` fits each
    /// player's to its link, as a host does (see `probes`).
    pub input_delay: Option<u64>,
    /// How long a connection may take to say hello before it is closed.
    pub hello_timeout: Duration,
    /// Emit [`PeerEvent::Record`]s: each level's start, every bundle sent
    /// and its end, for a replay file.
    pub record: bool,
    /// What each guest may send; a guest over it is disconnected.
    pub guest_budget: GuestBudgetPolicy,
    /// The session's rejoin secret (`None`: no rejoin tokens): every player
    /// gets its token with its session init, and a hello presenting it
    /// resumes that player while it has a place (once: the resumed
    /// connection's init carries the next token).
    pub rejoin_secret: Option<[u8; 32]>,
}

impl<W: GameWire> Default for PeerRelayConfig<W>
where
    W::Campaign: Default,
    W::Settings: Default,
{
    fn default() -> Self {
        Self {
            relay: RelayConfig::default(),
            build_version: BUILD_VERSION.to_owned(),
            campaign: W::Campaign::default(),
            levels: 3,
            settings: W::Settings::default(),
            input_delay: None,
            hello_timeout: Duration::from_secs(5),
            record: false,
            rejoin_secret: None,
            guest_budget: GuestBudgetPolicy::default(),
        }
    }
}

impl<W: GameWire> PeerRelayConfig<W> {
    /// The same relay rules for game `V`, which builds its levels from
    /// `campaign` with `settings`: the rest is the network's, whatever the
    /// game.
    pub fn with_game<V: GameWire>(
        self,
        campaign: V::Campaign,
        settings: V::Settings,
    ) -> PeerRelayConfig<V> {
        PeerRelayConfig {
            relay: self.relay,
            build_version: self.build_version,
            campaign,
            levels: self.levels,
            settings,
            input_delay: self.input_delay,
            hello_timeout: self.hello_timeout,
            record: self.record,
            guest_budget: self.guest_budget,
            rejoin_secret: self.rejoin_secret,
        }
    }
}

/// What the driver should do. Messages go in the wire form given (the
/// compact one for connections that took up `compact`; it applies to tick
/// bundles only).
#[derive(Clone, Debug)]
pub enum PeerOutput<W: GameWire> {
    /// Send to one connection.
    Send(Slot, HostMessage<W>, WireFormat),
    /// Send the same message to several, all in one form.
    Broadcast(Vec<Slot>, HostMessage<W>, WireFormat),
    /// Close a connection.
    Close(Slot),
}

/// What happened, for the driver's log and counters.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerEvent<W: GameWire> {
    /// A connection was let in: its player (`None`: a spectator) and name.
    Admitted(Slot, Option<PlayerId>, String),
    /// The relay session's own event.
    Relay(RelayEvent),
    /// A connection was refused.
    Refused(Slot, RefusalReason),
    /// A message could not be read, or was not the guest's to send.
    BadMessage(Slot, String),
    /// A guest sent more than its budget: disconnected.
    OverBudget(Slot),
    /// What a replay file records (with [`PeerRelayConfig::record`]).
    Record(LevelRecord<W>),
}

/// One record of a relayed level, for a replay file.
#[derive(Clone, Debug, PartialEq)]
pub enum LevelRecord<W: GameWire> {
    /// A level starts, as its authority built it.
    Begin {
        /// The level's epoch.
        epoch: u32,
        /// The level.
        level: Box<TransitionPayload<W>>,
        /// Display names by player.
        names: BTreeMap<PlayerId, String>,
        /// The session's settings.
        settings: W::Settings,
        /// The relay's build.
        build: String,
    },
    /// One tick's bundle, as sent (a level's last ones may follow its end
    /// tick: every peer stops at the end).
    Bundle(TickInputBundle<W>),
    /// The authority ended the level at `tick` with this world hash.
    End {
        /// The tick.
        tick: u64,
        /// The authority's world hash there, 16 hex digits.
        final_hash: String,
    },
}

#[derive(Debug)]
struct Connection {
    /// The features its hello took up (none before it).
    features: Features,
    /// `None` until its hello was admitted; then its player (`None` for
    /// a spectator).
    admitted: Option<Option<PlayerId>>,
    name: String,
    /// The level epoch it was last sent (0: none).
    has_epoch: u32,
    /// When it opened.
    opened_at: Duration,
    /// What it may still send.
    budget: GuestBudget,
    /// Its round trip, for a fitted delay.
    probe: probes::Probe,
    /// A new player's hello waiting for its link to be measured: its name
    /// and when it came.
    warming: Option<(String, Duration)>,
    /// Times it was rebuilt in place after a desync.
    resyncs: u32,
    /// Where it connects from, as the driver said.
    origin: Origin,
    /// It resumed a player with that player's rejoin token.
    resumed: bool,
}

/// A relay session for campfire's peers, playing the game `W` (whose
/// inputs it orders and whose levels it carries, unread).
#[derive(Debug)]
pub struct PeerRelay<W: GameWire> {
    config: PeerRelayConfig<W>,
    relay: Relay<W::Input>,
    connections: BTreeMap<Slot, Connection>,
    /// The current level as its authority built it.
    level: Option<(u32, RelayLevel<W>)>,
    /// Run totals per player: `(kill score, kills)` of levels ended.
    run_scores: BTreeMap<PlayerId, PlayerScore>,
    /// Times each player was rebuilt in place this level, whatever
    /// connection it came back on (a rejoin does not start the count
    /// again).
    player_resyncs: BTreeMap<PlayerId, u32>,
    /// The latest level end: `(epoch, tick, team eliminated)`.
    last_end: Option<(u32, u64, bool)>,
    outbox: Vec<PeerOutput<W>>,
    events: Vec<PeerEvent<W>>,
    /// Connections handed to the relay so far.
    connections_ever: usize,
    /// The players' rejoin tokens, when the relay takes rejoins.
    rejoins: Option<RejoinTokens>,
    /// Desynced connections rebuilt in place since the last pump.
    resyncing: BTreeSet<Slot>,
}

impl<W: GameWire> PeerRelay<W> {
    /// A relay waiting for guests.
    pub fn new(config: PeerRelayConfig<W>) -> Self {
        let rejoins = config.rejoin_secret.map(RejoinTokens::new);
        Self {
            relay: Relay::new(config.relay.clone()),
            config,
            connections: BTreeMap::new(),
            level: None,
            run_scores: BTreeMap::new(),
            player_resyncs: BTreeMap::new(),
            last_end: None,
            outbox: Vec::new(),
            events: Vec::new(),
            connections_ever: 0,
            rejoins,
            resyncing: BTreeSet::new(),
        }
    }

    /// Seats taken: connected players, and connections still in their
    /// hello (a spectator takes none).
    pub fn seats_taken(&self) -> usize {
        self.connections
            .values()
            .filter(|c| !matches!(c.admitted, Some(None)))
            .count()
    }

    /// Spectators connected.
    pub fn spectators(&self) -> usize {
        self.connections
            .values()
            .filter(|c| matches!(c.admitted, Some(None)))
            .count()
    }

    /// Connections handed to the relay so far.
    pub fn connections_ever(&self) -> usize {
        self.connections_ever
    }

    /// The relay session underneath.
    pub fn relay(&self) -> &Relay<W::Input> {
        &self.relay
    }

    /// Takes what should be sent.
    pub fn drain_outbox(&mut self) -> Vec<PeerOutput<W>> {
        self.pump();
        std::mem::take(&mut self.outbox)
    }

    /// Takes what happened.
    pub fn drain_events(&mut self) -> Vec<PeerEvent<W>> {
        self.pump();
        std::mem::take(&mut self.events)
    }

    /// When the relay next needs [`PeerRelay::poll`].
    pub fn next_wakeup(&self) -> Option<Duration> {
        let hello = self
            .connections
            .values()
            .filter(|c| c.admitted.is_none() && c.warming.is_none())
            .map(|c| c.opened_at + self.config.hello_timeout)
            .min();
        let wakeups = [
            self.relay.next_wakeup(),
            hello,
            self.next_ping_due(),
            self.next_warm_up_limit(),
        ];
        wakeups.into_iter().flatten().min()
    }

    /// Runs whatever is due: connections silent past the hello timeout
    /// are closed, then the relay session runs.
    pub fn poll(&mut self, now: Duration) {
        let silent: Vec<Slot> = self
            .connections
            .iter()
            .filter(|(_, c)| c.admitted.is_none() && c.warming.is_none())
            .filter(|(_, c)| now >= c.opened_at + self.config.hello_timeout)
            .map(|(s, _)| *s)
            .collect();
        for slot in silent {
            let detail = format!(
                "no hello within {} ms",
                self.config.hello_timeout.as_millis()
            );
            self.refuse(slot, RefusalReason::BadHandshake, detail);
        }
        self.admit_warmed(now);
        self.send_pings(now);
        self.relay.poll(now);
        self.pump();
    }

    /// Ends the session now.
    pub fn shutdown(&mut self) {
        self.relay.shutdown();
        self.pump();
    }

    /// The hello features this relay offers: a guest's hello takes up
    /// those it names, and only those.
    pub(super) fn offered_features(&self) -> Vec<String> {
        let mut features = vec![
            FEATURE_RELAY.to_owned(),
            FEATURE_COMPACT.to_owned(),
            FEATURE_BINARY.to_owned(),
            FEATURE_RESYNC.to_owned(),
        ];
        if self.fits_delays() {
            features.push(FEATURE_PING.to_owned());
            features.push(FEATURE_ROUND_TRIP.to_owned());
            features.push(FEATURE_INPUT_DELAY.to_owned());
        } else if self.fallback_delay() != INPUT_DELAY_TICKS {
            features.push(FEATURE_INPUT_DELAY.to_owned());
        }
        features
    }

    /// A connection opened at `now` from `origin` (where the driver knows
    /// it: its seats are capped and vote once): the relay says hello.
    pub fn connected(&mut self, slot: Slot, origin: Option<Origin>, now: Duration) {
        self.connections_ever += 1;
        let features = self.offered_features();
        self.connections.insert(
            slot,
            Connection {
                features: Features::default(),
                admitted: None,
                name: String::new(),
                has_epoch: 0,
                opened_at: now,
                budget: GuestBudget::new(&self.config.guest_budget, now),
                probe: probes::Probe::default(),
                warming: None,
                resyncs: 0,
                origin: origin.unwrap_or(Origin::of_slot(slot)),
                resumed: false,
            },
        );
        self.send(
            slot,
            HostMessage::HostHello {
                build_version: self.config.build_version.clone(),
                protocol_version: PEER_PROTOCOL_VERSION,
                features,
                game: W::NAME.map(str::to_owned),
            },
        );
    }

    /// A connection was lost, perhaps for a moment: its player keeps its
    /// place for the grace (authority passes on at once).
    pub fn lost(&mut self, slot: Slot, now: Duration) {
        if self.connections.contains_key(&slot) {
            self.relay.leave(slot, now);
            self.pump();
        }
    }

    /// A lost connection is back.
    pub fn back(&mut self, slot: Slot) {
        if self.connections.contains_key(&slot) {
            self.relay.back(slot);
        }
    }

    /// A connection closed.
    pub fn closed(&mut self, slot: Slot, now: Duration) {
        if self.connections.remove(&slot).is_some() {
            self.relay.leave(slot, now);
            self.refit_delays();
            self.pump();
        }
    }

    /// A message from a connection.
    pub fn message(&mut self, slot: Slot, payload: &Payload, now: Duration) {
        let policy = self.config.guest_budget;
        let Some(conn) = self.connections.get_mut(&slot) else {
            return;
        };
        if !conn.budget.charge(&policy, payload.len(), now) {
            self.connections.remove(&slot);
            self.events.push(PeerEvent::OverBudget(slot));
            self.outbox.push(PeerOutput::Close(slot));
            self.relay.leave(slot, now);
            self.pump();
            return;
        }
        if payload.len() > MAX_GUEST_MESSAGE_BYTES {
            self.bad(slot, format!("a message of {} bytes", payload.len()));
            return;
        }
        match GuestMessage::<W>::decode_payload(payload) {
            Ok(msg) => self.on_message(slot, msg, now),
            Err(e) => self.bad(slot, e.to_string()),
        }
        self.pump();
    }
}
