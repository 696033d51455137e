//! What the messages carry: the session init and where a late joiner
//! enters, tick inputs and bundles, reconciliation snapshots, level
//! transitions, a relay session's levels.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use game_api::GameWire;
use serde::{Deserialize, Serialize};

use game_api::PlayerId;

#[allow(unused_imports)] // doc links
use super::{FEATURE_INPUT_DELAY, GuestMessage, HostMessage};
use crate::tick::FIXED_DT;

/// Phase B of setup: everything a guest needs before the map (spec
/// "Session setup", steps 2-6b).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct SessionInit<W: GameWire> {
    /// Every player id, sorted ascending.
    pub roster: Vec<PlayerId>,
    /// The receiving guest's own id.
    pub your_player_id: PlayerId,
    /// Simulation ticks per second.
    pub tick_rate_hz: u32,
    /// Seconds per tick.
    pub fixed_dt: f64,
    /// This guest's input delay in ticks (the spec's fixed
    /// `INPUT_DELAY_TICKS` unless [`FEATURE_INPUT_DELAY`] is in use).
    pub input_delay_ticks: u64,
    /// Ticks between reconciliation snapshots.
    pub reconcile_interval_ticks: u64,
    /// The first level's head (the raycaster's: its gameplay seed).
    #[serde(flatten)]
    pub head: W::LevelHead,
    /// The session's settings (the raycaster's: its difficulty).
    #[serde(flatten)]
    pub settings: W::Settings,
    /// The number of players the level was built for (the raycaster
    /// scales its elites by it).
    pub player_count: u32,
    /// Every player's sanitized display name ("" for none).
    pub player_names: BTreeMap<PlayerId, String>,
    /// Every player's input delay for level 1, when the session fits
    /// delays to links ([`FEATURE_INPUT_DELAY`]); absent otherwise, and
    /// then every player's delay is `input_delay_ticks`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_delays: BTreeMap<PlayerId, u64>,
    /// Present when the guest joins a level already running (a late
    /// joiner, a rejoiner): where it enters. The map chunks that follow
    /// then carry a [`JoinPayload`] instead of the bare map, and the
    /// roster, delays and names are the level's as of the join tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<JoinPoint>,
    /// This player's rejoin token, when the host takes rejoins: a fresh
    /// connection whose hello presents it (`resume`) within the disconnect
    /// grace resumes this player.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejoin_token: Option<String>,
    /// The receiver watches: `your_player_id` names the spectator (it is
    /// not in the roster), and it sends no input.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spectator: bool,
}

/// Where a guest enters a running level (campfire's extension of the
/// spec's setup: the spec admits guests only before the start).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinPoint {
    /// The running level's epoch.
    pub level_epoch: u32,
    /// The running level's index (0 is the first).
    pub level_index: u32,
    /// The engine tick of the transferred state: the first bundle the
    /// guest applies is this tick's.
    pub tick: u64,
    /// The guest resumes the player its hello's rejoin token named (its
    /// `your_player_id`), rather than entering as a new one. Its
    /// `rejoin_token` is then the next one: the presented token is spent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
}

/// What the map chunks carry for a guest joining a running level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct JoinPayload<W: GameWire> {
    /// The level's content, as a first level's would be sent (`map`).
    #[serde(rename = "map")]
    pub body: W::LevelBody,
    /// The engine's exact state at [`JoinPoint::tick`], base64 (standard
    /// alphabet, padded): everything the world hash covers.
    pub state: String,
}

impl<W: GameWire> RelayLevel<W> {
    /// The level from its payload and the engine's exact state bytes.
    pub fn new(payload: TransitionPayload<W>, state: &[u8]) -> Self {
        Self {
            payload,
            state: STANDARD.encode(state),
        }
    }
}

/// An engine's exact state as the relay messages carry it: base64.
pub fn state_to_base64(state: &[u8]) -> String {
    STANDARD.encode(state)
}

impl<W: GameWire> JoinPayload<W> {
    /// The payload for a level's content and the engine's exact state
    /// bytes.
    pub fn new(body: W::LevelBody, state: &[u8]) -> Self {
        Self {
            body,
            state: STANDARD.encode(state),
        }
    }

    /// The exact state's bytes.
    ///
    /// # Errors
    ///
    /// The state is not valid base64.
    pub fn state_bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        STANDARD.decode(&self.state)
    }
}

/// A player's input tagged with the tick it applies at (`sampled + INPUT_DELAY_TICKS`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct TickInput<W: GameWire> {
    /// The tick this input applies at.
    pub tick: u64,
    /// Whose input it is.
    pub player_id: PlayerId,
    /// The input itself.
    pub input: W::Input,
}

/// One player's inputs for the consecutive ticks `first_tick..`, sent again
/// with each newer one ([`GuestMessage::TickInputs`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct TickInputs<W: GameWire> {
    /// Whose inputs they are.
    pub player_id: PlayerId,
    /// The level they belong to (unordered delivery can carry one across a
    /// transition).
    pub level_epoch: u32,
    /// The tick the first input applies at.
    pub first_tick: u64,
    /// Oldest first; the last is the newest input.
    pub inputs: Vec<W::Input>,
    /// The guest's newest world hash report of this level, carried again
    /// by its next few input messages instead of a message of its own
    /// ([`super::FEATURE_FOLDED_REPORTS`] only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_report: Option<FoldedHash>,
    /// The tick of the newest snapshot of this level the guest holds as a
    /// base for deltas, the same way ([`super::FEATURE_FOLDED_REPORTS`]
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_ack: Option<u64>,
}

/// A world hash report inside [`TickInputs`] (its level is the inputs').
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoldedHash {
    /// The engine tick after the advance.
    pub tick: u64,
    /// The world hash, 16 lowercase hex digits.
    pub hash: String,
}

/// What every peer advances from for one tick (spec §1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct TickInputBundle<W: GameWire> {
    /// The tick these inputs drive.
    pub tick: u64,
    /// Always `FIXED_DT`.
    pub dt: f64,
    /// The level epoch the bundle belongs to.
    pub level_epoch: u32,
    /// An input for every roster member.
    pub inputs: BTreeMap<PlayerId, W::Input>,
    /// Players whose input is their last one held over.
    pub held_input_fallback: Vec<PlayerId>,
    /// Players removed at the start of this tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roster_remove: Option<Vec<PlayerId>>,
    /// Players who join the level at the start of this tick (late
    /// joiners; the mirror of `rosterRemove`). They are in `inputs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roster_add: Option<BTreeMap<PlayerId, RosterAdd>>,
}

/// A late joiner, as a bundle's `rosterAdd` names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RosterAdd {
    /// Its input delay for the rest of the level, ticks (every engine
    /// needs it: lag compensation rewinds by it).
    pub input_delay: u64,
    /// Its display name, sanitized by the host ("" for none).
    #[serde(default)]
    pub name: String,
}

/// A reconciliation snapshot on the wire: the engine's payload plus the
/// level epoch (the `type` tag comes from [`HostMessage`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct ReconciliationSnapshotMessage<W: GameWire> {
    /// The level epoch it reflects.
    pub level_epoch: u32,
    /// The snapshot's fields.
    #[serde(flatten)]
    pub snapshot: W::Snapshot,
}

/// A tick bundle that names no player ([`super::FEATURE_PLACED_BUNDLES`]):
/// its inputs are in the order of the players of the last whole bundle the
/// same connection carried, which had the same players. A bundle that adds
/// or removes a player goes whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct PlacedBundle<W: GameWire> {
    /// The tick these inputs drive.
    pub tick: u64,
    /// The level epoch the bundle belongs to.
    pub level_epoch: u32,
    /// An input per player, in id order.
    pub inputs: Vec<W::Input>,
    /// Places in `inputs` of the players whose input is their last one
    /// held over.
    pub held: Vec<u16>,
}

impl<W: GameWire> TickInputBundle<W> {
    /// This bundle without its players' ids, when it adds and removes
    /// nobody (`None` otherwise: it goes whole).
    pub fn placed(&self) -> Option<PlacedBundle<W>> {
        if self.roster_add.is_some() || self.roster_remove.is_some() || self.dt != FIXED_DT {
            return None;
        }
        let held = self
            .held_input_fallback
            .iter()
            .map(|p| self.inputs.keys().position(|id| id == p)?.try_into().ok())
            .collect::<Option<Vec<u16>>>()?;
        Some(PlacedBundle {
            tick: self.tick,
            level_epoch: self.level_epoch,
            inputs: self.inputs.values().cloned().collect(),
            held,
        })
    }
}

impl<W: GameWire> PlacedBundle<W> {
    /// The whole bundle, its players named by `ids` (those of the last
    /// whole bundle); `None` when they do not fit.
    pub fn named(self, ids: &[PlayerId]) -> Option<TickInputBundle<W>> {
        if ids.len() != self.inputs.len() {
            return None;
        }
        let held = self
            .held
            .iter()
            .map(|i| ids.get(usize::from(*i)).cloned())
            .collect::<Option<Vec<PlayerId>>>()?;
        Some(TickInputBundle {
            tick: self.tick,
            dt: FIXED_DT,
            level_epoch: self.level_epoch,
            inputs: ids.iter().cloned().zip(self.inputs).collect(),
            held_input_fallback: held,
            roster_remove: None,
            roster_add: None,
        })
    }
}

/// A reconciliation snapshot as a delta ([`super::FEATURE_DELTA_SNAPSHOTS`]):
/// its binary form ([`crate::delta`]) deflated with the binary form of the
/// snapshot of `base_tick` of the same level (one the guest acknowledged)
/// as the dictionary, or on its own when `base_tick` is absent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotDelta {
    /// The level epoch it reflects.
    pub level_epoch: u32,
    /// The tick it was taken at.
    pub tick: u64,
    /// The snapshot it is a delta against (absent: a whole one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_tick: Option<u64>,
    /// The deflate stream (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub delta: Vec<u8>,
}

/// Bytes as standard base64 text in JSON, as bytes in the compact form.
mod base64_bytes {
    use std::fmt;

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::de::{Error as _, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&STANDARD.encode(bytes))
        } else {
            s.serialize_bytes(bytes)
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        if d.is_human_readable() {
            let text = String::deserialize(d)?;
            return STANDARD.decode(text).map_err(D::Error::custom);
        }
        d.deserialize_byte_buf(Bytes)
    }

    struct Bytes;

    impl<'de> Visitor<'de> for Bytes {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("bytes")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::new();
            while let Some(b) = seq.next_element::<u8>()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

/// The chunked payload of a level transition (spec §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct TransitionPayload<W: GameWire> {
    /// Index of the level starting (0 is the first).
    pub level_index: u32,
    /// The level's head (the raycaster's: its fresh gameplay seed).
    #[serde(flatten)]
    pub head: W::LevelHead,
    /// The roster the level starts with, sorted.
    pub roster: Vec<PlayerId>,
    /// The number of players the level was built for.
    pub player_count: u32,
    /// Per-player carryovers (authoritative; guests discard their own).
    pub carryovers: BTreeMap<PlayerId, W::Carryover>,
    /// The next level's content (`map`).
    #[serde(rename = "map")]
    pub body: W::LevelBody,
    /// Every player's input delay for this level, refitted to the links
    /// ([`FEATURE_INPUT_DELAY`]); absent when delays are fixed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_delays: BTreeMap<PlayerId, u64>,
}

/// A relay session's level, as its authority built it (issue 26): the
/// transition payload every peer builds the level from, and the engine's
/// exact state at tick 0 (carryovers applied), from which a relay rebuilds
/// a peer that joins before the first verified snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct RelayLevel<W: GameWire> {
    /// The level, as a transition would carry it.
    pub payload: TransitionPayload<W>,
    /// The exact state at tick 0, base64 (as [`JoinPayload::state`]).
    pub state: String,
}

/// The round trip a host measures to one guest, smoothed as TCP does
/// (carried by [`super::HostMessage::Ping`] under
/// [`super::FEATURE_ROUND_TRIP`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundTripReport {
    /// The smoothed round trip, microseconds.
    pub rtt_us: u64,
    /// Its variation (mean deviation), microseconds.
    pub jitter_us: u64,
}
