//! How a join or a session ends: refusals, end reasons, the end-of-run
//! table and each guest's link health in it.

use serde::{Deserialize, Serialize};

use game_api::PlayerId;

/// Why the host refused a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalReason {
    /// The peers run different builds or protocol versions.
    VersionMismatch,
    /// The level has started; the roster is frozen (no late join).
    SessionStarted,
    /// The reply was not a valid handshake.
    BadHandshake,
    /// Every seat is taken (campfire's extension: a session that admits
    /// late joiners caps its guests itself).
    SessionFull,
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// The last level was completed.
    Completed,
    /// Every player died.
    TeamEliminated,
    /// The host's connection was lost for longer than the grace.
    HostDisconnected,
    /// This guest could not follow a level transition within the grace.
    LevelTransitionFailed,
    /// The host shut the session down.
    HostShutdown,
}

/// One row of the end-of-run comparison table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreRow {
    /// The player.
    pub player_id: PlayerId,
    /// Display name as chosen ("" when none).
    pub name: String,
    /// Kill score over the whole run.
    pub kill_score: u32,
    /// Kills over the whole run.
    pub kills: u32,
    /// Removed from the session after a disconnect.
    pub disconnected: bool,
    /// Link health as the host saw it for this player. Not in the netcode
    /// spec's table: a campfire extension, absent from older hosts.
    #[serde(default)]
    pub link: LinkHealth,
}

/// How a guest's link looked from the host over the whole run (the host
/// counts these; a guest cannot see them on its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkHealth {
    /// Hash reports from this guest that disagreed with the host.
    pub desyncs: u32,
    /// Mismatches still there at the next report although a
    /// reconciliation snapshot was applied in between.
    pub persistent_desyncs: u32,
    /// Ticks on which the host used this player's held (last known) input
    /// because the real one had not arrived in time.
    pub held_inputs: u64,
}
