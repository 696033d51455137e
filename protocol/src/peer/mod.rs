//! Peer protocol messages on the `input` and `reconciliation` data channels
//! (the netcode spec, mapped in `design/peer-protocol.md`).
//!
//! Messages are named by direction: a [`HostMessage`] travels from the host
//! to a guest, a [`GuestMessage`] from a guest to the host. Both are JSON
//! objects with a kebab-case `type` tag and camelCase fields, so a browser
//! peer needs no custom codec. [`HostMessage::channel`] and
//! [`GuestMessage::channel`] say which data channel each message rides:
//! per-tick input on `input`, everything else on `reconciliation`, and the
//! issue-15 extensions' round-trip probes and redundant inputs on
//! `input-unreliable`.
//!
//! Large payloads (the level-1 map at setup, a level-transition payload)
//! travel chunked; see [`crate::chunk`].
//!
//! campfire extends the spec with late join (issue 25): a guest admitted
//! after the start gets a [`SessionInit`] whose `join` names the running
//! level and tick, followed by map chunks that carry a [`JoinPayload`] (the
//! map plus the engine's exact state); every other peer learns of it from
//! the `rosterAdd` of the bundle of the tick it entered. A host that caps
//! its seats refuses a hello beyond them with `session-full`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use game_api::GameWire;

use crate::chunk::{Chunk, ChunkEnd};
use game_api::PlayerId;

pub mod admission;
mod channel;
mod features;
mod outcome;
mod payloads;

pub use admission::GuestHello;
pub use channel::{Channel, UNRELIABLE_CHANNEL_ID};
pub use features::{
    DELTA_BASES, FEATURE_BINARY, FEATURE_COMPACT, FEATURE_DELTA_SNAPSHOTS, FEATURE_FOLDED_REPORTS,
    FEATURE_INPUT_DELAY, FEATURE_INPUT_RUNS, FEATURE_PING, FEATURE_PLACED_BUNDLES,
    FEATURE_REDUNDANT_INPUTS, FEATURE_RELAY, FEATURE_RESYNC, FEATURE_ROUND_TRIP,
    FEATURE_SPECTATORS, FEATURE_WAITING_ROOM, FOLDED_COPIES, Feature, Features, INPUT_RUN_COPIES,
    INPUT_RUN_KEEP_ALIVE_TICKS, INPUT_RUN_OVERDUE_TICKS, REDUNDANT_INPUTS,
};
pub use game_api::WorldHash;
pub use outcome::{EndReason, LinkHealth, RefusalReason, ScoreRow};
pub use payloads::{
    FoldedHash, JoinPayload, JoinPoint, PlacedBundle, ReconciliationSnapshotMessage, RelayLevel,
    RosterAdd, RoundTripReport, SessionInit, SnapshotDelta, TickInput, TickInputBundle, TickInputs,
    TransitionPayload, state_to_base64,
};

/// Version of this peer protocol; peers with different versions refuse each
/// other at the handshake.
pub const PEER_PROTOCOL_VERSION: u32 = 1;

/// A message from the host to a guest, for game `W`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", bound = "")]
pub enum HostMessage<W: GameWire> {
    /// Phase A: the host's build and protocol version.
    #[serde(rename_all = "camelCase")]
    HostHello {
        /// Build identifier (must match exactly).
        build_version: String,
        /// [`PEER_PROTOCOL_VERSION`].
        protocol_version: u32,
        /// Extensions the host offers ([`FEATURE_PING`], ...); a guest
        /// uses only those it names back in its hello. Absent for peers
        /// that offer none, which the spec's fixed protocol is.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        features: Vec<String>,
        /// The game the session plays ([`GameWire::NAME`]); absent for
        /// the spec's own game. A guest of another game ends at once
        /// (campfire's extension).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        game: Option<String>,
    },
    /// The join is refused; the host closes the connection after this.
    #[serde(rename_all = "camelCase")]
    JoinRefused {
        /// Why.
        reason: RefusalReason,
        /// Human-readable detail.
        detail: String,
    },
    /// Phase B: roster, constants, the first level's head, the settings,
    /// names.
    SessionInit(SessionInit<W>),
    /// One chunk of the level-1 map.
    MapChunk(Chunk),
    /// The end marker of the level-1 map.
    MapEnd(ChunkEnd),
    /// The merged inputs of one tick.
    TickInputBundle(TickInputBundle<W>),
    /// The same, its players those of the last whole one
    /// ([`FEATURE_PLACED_BUNDLES`] only).
    PlacedBundle(PlacedBundle<W>),
    /// The periodic authoritative snapshot.
    ReconciliationSnapshot(ReconciliationSnapshotMessage<W>),
    /// The periodic snapshot as a delta ([`FEATURE_DELTA_SNAPSHOTS`]
    /// only).
    SnapshotDelta(SnapshotDelta),
    /// A level transition starts (a fresh attempt resets the guest's state).
    #[serde(rename_all = "camelCase")]
    LevelTransitionInit {
        /// The epoch of the level starting.
        level_epoch: u32,
        /// Index of the level starting.
        level_index: u32,
    },
    /// One chunk of the [`TransitionPayload`].
    #[serde(rename_all = "camelCase")]
    LevelTransitionChunk {
        /// The epoch of the level starting.
        level_epoch: u32,
        /// The chunk.
        #[serde(flatten)]
        chunk: Chunk,
    },
    /// The end marker of the [`TransitionPayload`].
    #[serde(rename_all = "camelCase")]
    LevelTransitionEnd {
        /// The epoch of the level starting.
        level_epoch: u32,
        /// The end marker.
        #[serde(flatten)]
        end: ChunkEnd,
    },
    /// RTT probe ([`FEATURE_PING`] only): the guest answers `pong` with
    /// the same `id` at once. Both ride [`Channel::Unreliable`], as
    /// redundant inputs do: a lost probe is given up and the next one
    /// measures.
    #[serde(rename_all = "camelCase")]
    Ping {
        /// Echoed back.
        id: u32,
        /// The round trip the host has measured to this guest so far
        /// ([`FEATURE_ROUND_TRIP`] only; absent before the first pong).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round_trip: Option<RoundTripReport>,
    },
    /// Who watches the session, by display name in arrival order: sent to
    /// every guest that took up [`FEATURE_SPECTATORS`] whenever it changes
    /// (campfire's extension).
    Spectators {
        /// Sanitized display names ("" for none).
        names: Vec<String>,
    },
    /// Who is in a session that has not started, and what its start waits
    /// for: sent to every guest that took up [`FEATURE_WAITING_ROOM`]
    /// whenever it changes, until the start (campfire's extension).
    #[serde(rename_all = "camelCase")]
    WaitingRoom {
        /// Sanitized display names of the players in: the host's own
        /// (its bots, then its player) first, then guests by arrival (""
        /// for none).
        players: Vec<String>,
        /// Most players the session takes, host included (absent: no cap).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_players: Option<u32>,
        /// More guests the start waits for (absent: it waits for the
        /// host's Start).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        guests_needed: Option<u32>,
        /// Which of `players` the receiving guest is (issue 46; absent
        /// from hosts before it, and in the room as a whole).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        you: Option<u32>,
    },
    /// A relay session's authority from `fromTick` on (issue 26): the
    /// guest named answers the relay's asks.
    #[serde(rename_all = "camelCase")]
    RelayAuthority {
        /// The level.
        level_epoch: u32,
        /// The authority's player.
        player_id: PlayerId,
        /// The first tick it answers for.
        from_tick: u64,
        /// The receiver is the authority (it may not know its player id
        /// before the first level).
        you: bool,
        /// Levels in the campaign (the authority says whether another
        /// level follows).
        levels: u32,
        /// Ticks between the snapshots the relay asks for: the authority
        /// keeps its exact state at those ticks to answer.
        snapshot_interval: u64,
    },
    /// To a relay session's authority: build this level and answer with
    /// [`GuestMessage::RelayLevel`].
    #[serde(rename_all = "camelCase")]
    RelayAskLevel {
        /// The level's epoch.
        level_epoch: u32,
        /// The level's index (0 is the first).
        level_index: u32,
        /// Every player, sorted, with its sanitized display name.
        roster: BTreeMap<PlayerId, String>,
        /// Every player's input delay, ticks.
        input_delays: BTreeMap<PlayerId, u64>,
        /// What the levels are built from (the raycaster's: the campaign
        /// seed maps and gameplay seeds derive from).
        #[serde(flatten)]
        campaign: W::Campaign,
        /// Levels in the campaign.
        levels: u32,
        /// The session's settings.
        #[serde(flatten)]
        settings: W::Settings,
    },
    /// To a relay session's authority: answer with the world at `tick`
    /// (before that tick's bundle), [`GuestMessage::RelaySnapshot`].
    #[serde(rename_all = "camelCase")]
    RelayAskSnapshot {
        /// The level.
        level_epoch: u32,
        /// The tick.
        tick: u64,
    },
    /// A relay rebuilds this desynced guest ([`FEATURE_RESYNC`] only).
    /// Rides [`Channel::Input`], so it marks where the bundle stream
    /// restarts: the bundles before it belong to the world being replaced
    /// and are dropped; the ones after it start at `tick` of `levelEpoch`
    /// and wait for the state, which comes as a session init with that
    /// join point on the other channel (in either order).
    #[serde(rename_all = "camelCase")]
    Resync {
        /// The level.
        level_epoch: u32,
        /// The tick the state is at and the next bundle is for.
        tick: u64,
    },
    /// The session is over. A guest first applies the bundles up to
    /// `finalTick` of `levelEpoch` (they ride the other channel and may
    /// still be in flight).
    #[serde(rename_all = "camelCase")]
    SessionEnd {
        /// Why.
        reason: EndReason,
        /// The end-of-run table.
        scores: Vec<ScoreRow>,
        /// The level epoch of the last tick.
        level_epoch: u32,
        /// The engine tick after the last bundle.
        final_tick: u64,
    },
}

/// A message from a guest to the host, for game `W`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", bound = "")]
pub enum GuestMessage<W: GameWire> {
    /// Phase A reply: the guest's version, display name and features.
    GuestHello(GuestHello),
    /// The guest holds a validated level-1 map and is ready for tick 0.
    SetupAck,
    /// The answer to [`HostMessage::Ping`].
    Pong {
        /// The ping's `id`.
        id: u32,
    },
    /// One sampled input, tagged for its tick.
    TickInput(TickInput<W>),
    /// The newest inputs of this guest's player, for consecutive ticks
    /// ([`FEATURE_REDUNDANT_INPUTS`] only; at most [`REDUNDANT_INPUTS`]).
    TickInputs(TickInputs<W>),
    /// The guest has applied a level transition.
    #[serde(rename_all = "camelCase")]
    LevelTransitionAck {
        /// The epoch it now runs.
        level_epoch: u32,
    },
    /// The guest's world hash after advancing to `tick`.
    #[serde(rename_all = "camelCase")]
    HashReport {
        /// The engine tick after the advance.
        tick: u64,
        /// Its level epoch.
        level_epoch: u32,
        /// The world hash, 16 lowercase hex digits (a u64 does not fit a
        /// JavaScript number).
        hash: String,
    },
    /// The guest holds the snapshot of `tick` as a base for deltas
    /// ([`FEATURE_DELTA_SNAPSHOTS`] only).
    #[serde(rename_all = "camelCase")]
    SnapshotAck {
        /// Its level epoch.
        level_epoch: u32,
        /// Its tick.
        tick: u64,
    },
    /// The guest could not read the delta of `tick`: it asks for that
    /// snapshot whole ([`FEATURE_DELTA_SNAPSHOTS`] only).
    #[serde(rename_all = "camelCase")]
    SnapshotAsk {
        /// Its level epoch.
        level_epoch: u32,
        /// Its tick.
        tick: u64,
    },
    /// A relay session's authority answers [`HostMessage::RelayAskLevel`].
    #[serde(rename_all = "camelCase")]
    RelayLevel {
        /// The level's epoch.
        level_epoch: u32,
        /// The level (boxed: it holds a map).
        level: Box<RelayLevel<W>>,
    },
    /// A relay session's authority answers [`HostMessage::RelayAskSnapshot`].
    #[serde(rename_all = "camelCase")]
    RelaySnapshot {
        /// The level.
        level_epoch: u32,
        /// The tick.
        tick: u64,
        /// The world hash at that tick, 16 lowercase hex digits.
        hash: String,
        /// The engine's exact state at that tick, base64.
        state: String,
    },
    /// A relay session's authority: the level ended at `tick`.
    #[serde(rename_all = "camelCase")]
    RelayLevelEnd {
        /// The level.
        level_epoch: u32,
        /// The engine tick it ended at.
        tick: u64,
        /// Another level follows.
        more: bool,
        /// The end-of-run table so far.
        scores: Vec<ScoreRow>,
        /// The authority's world hash at `tick`, 16 lowercase hex digits
        /// (a relay's replay file ends with it).
        #[serde(default)]
        final_hash: String,
    },
}

/// A message that could not be encoded or decoded.
#[derive(Debug, Error)]
pub enum PeerMessageError {
    /// Not the JSON of a peer message.
    #[error("peer message: {0}")]
    Json(#[from] serde_json::Error),
    /// Not a compact peer message ([`crate::wire`]).
    #[error("compact peer message: {0}")]
    Compact(String),
}

impl<W: GameWire> HostMessage<W> {
    /// The data channel this message rides.
    pub fn channel(&self) -> Channel {
        match self {
            HostMessage::TickInputBundle(_)
            | HostMessage::PlacedBundle(_)
            | HostMessage::Resync { .. } => Channel::Input,
            HostMessage::Ping { .. } => Channel::Unreliable,
            _ => Channel::Reconciliation,
        }
    }

    /// JSON text.
    pub fn to_json(&self) -> Result<String, PeerMessageError> {
        Ok(serde_json::to_string(self)?)
    }

    /// Parses JSON text. The per-tick bundle, when its `type` comes first
    /// (as this crate writes it), skips the buffering an internally tagged
    /// enum needs: it is most of the traffic.
    pub fn from_json(text: &str) -> Result<Self, PeerMessageError> {
        if text.starts_with(r#"{"type":"tick-input-bundle","#) {
            return Ok(HostMessage::TickInputBundle(serde_json::from_str(text)?));
        }
        Ok(serde_json::from_str(text)?)
    }
}

impl<W: GameWire> GuestMessage<W> {
    /// The data channel this message rides.
    pub fn channel(&self) -> Channel {
        match self {
            GuestMessage::TickInput(_) => Channel::Input,
            GuestMessage::TickInputs(_) | GuestMessage::Pong { .. } => Channel::Unreliable,
            _ => Channel::Reconciliation,
        }
    }

    /// JSON text.
    pub fn to_json(&self) -> Result<String, PeerMessageError> {
        Ok(serde_json::to_string(self)?)
    }

    /// Parses JSON text, with the same fast path as
    /// [`HostMessage::from_json`] for `tick-input`.
    pub fn from_json(text: &str) -> Result<Self, PeerMessageError> {
        if text.starts_with(r#"{"type":"tick-input","#) {
            return Ok(GuestMessage::TickInput(serde_json::from_str(text)?));
        }
        Ok(serde_json::from_str(text)?)
    }
}
