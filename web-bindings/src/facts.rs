//! The protocol facts every peer shares, and the sanitizers a page applies
//! to what a player types, exported so the browser never keeps its own
//! copies.

use protocol::chunk::{CHUNK_SIZE_BYTES, MAX_PAYLOAD_BYTES};
use protocol::input::{InputSnapshot, MAX_MOUSE_DELTA_X, WEAPON_SLOT_COUNT};
use protocol::name::{DISPLAY_NAME_MAX_CHARS, sanitize_display_name};
use protocol::peer::{Channel, PEER_PROTOCOL_VERSION, UNRELIABLE_CHANNEL_ID};
use protocol::tick::{
    CORRECTION_SMOOTH_MS, COUNTDOWN_TICKS, DISCONNECT_GRACE_MS, FIXED_DT,
    HASH_REPORT_INTERVAL_TICKS, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, SNAP_THRESHOLD_TILES,
    TICK_RATE_HZ,
};
use serde::Serialize;

/// The shared constants, named as `web/lib/constants.js` names them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[allow(non_snake_case)]
pub struct Facts {
    /// This module's build identifier.
    pub BUILD_VERSION: &'static str,
    /// Simulation ticks per second.
    pub TICK_RATE_HZ: u32,
    /// Seconds simulated by one tick.
    pub FIXED_DT: f64,
    /// Input delay in ticks.
    pub INPUT_DELAY_TICKS: u64,
    /// Ticks between reconciliation snapshots.
    pub RECONCILE_INTERVAL_TICKS: u64,
    /// Ticks of the exit countdown.
    pub COUNTDOWN_TICKS: u32,
    /// Grace before a lost peer is removed.
    pub DISCONNECT_GRACE_MS: u64,
    /// Corrections at or above this snap in rendering.
    pub SNAP_THRESHOLD_TILES: f64,
    /// Window over which a small correction is smoothed away.
    pub CORRECTION_SMOOTH_MS: u64,
    /// Peer protocol version.
    pub PEER_PROTOCOL_VERSION: u32,
    /// Largest chunk payload in bytes.
    pub CHUNK_SIZE_BYTES: usize,
    /// Largest reassembled payload.
    pub MAX_PAYLOAD_BYTES: usize,
    /// Ticks between world-hash reports.
    pub HASH_REPORT_INTERVAL_TICKS: u64,
    /// Largest mouse movement one tick may carry.
    pub MAX_MOUSE_DELTA_X: f64,
    /// Weapon slots.
    pub WEAPON_SLOT_COUNT: u8,
    /// Longest display name, in characters.
    pub DISPLAY_NAME_MAX_CHARS: usize,
    /// The all-neutral input.
    pub NEUTRAL_INPUT: InputSnapshot,
    /// The data channels' labels, in the order the host creates them.
    pub CHANNELS: Vec<&'static str>,
    /// The labels of the channels that are unordered and never retransmit.
    pub UNRELIABLE_CHANNELS: Vec<&'static str>,
    /// The stream id both sides give the negotiated unreliable channel.
    pub UNRELIABLE_CHANNEL_ID: u16,
}

/// The facts of this build.
pub fn facts() -> Facts {
    Facts {
        BUILD_VERSION: protocol::BUILD_VERSION,
        TICK_RATE_HZ,
        FIXED_DT,
        INPUT_DELAY_TICKS,
        RECONCILE_INTERVAL_TICKS,
        COUNTDOWN_TICKS,
        DISCONNECT_GRACE_MS,
        SNAP_THRESHOLD_TILES,
        CORRECTION_SMOOTH_MS,
        PEER_PROTOCOL_VERSION,
        CHUNK_SIZE_BYTES,
        MAX_PAYLOAD_BYTES,
        HASH_REPORT_INTERVAL_TICKS,
        MAX_MOUSE_DELTA_X,
        WEAPON_SLOT_COUNT,
        DISPLAY_NAME_MAX_CHARS,
        NEUTRAL_INPUT: InputSnapshot::NEUTRAL,
        CHANNELS: Channel::ALL.iter().map(|c| c.label()).collect(),
        UNRELIABLE_CHANNELS: Channel::ALL
            .iter()
            .filter(|c| !c.reliable())
            .map(|c| c.label())
            .collect(),
        UNRELIABLE_CHANNEL_ID,
    }
}

/// An input as the shared stream may carry it (JSON in, JSON out).
pub fn sanitize_input(input_json: &str) -> Result<String, String> {
    let input: InputSnapshot =
        serde_json::from_str(input_json).map_err(|e| format!("input: {e}"))?;
    serde_json::to_string(&input.sanitized()).map_err(|e| e.to_string())
}

/// A display name as every peer shows it.
pub fn sanitize_name(raw: &str) -> String {
    sanitize_display_name(raw)
}
