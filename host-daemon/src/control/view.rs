//! The control API's wire types: a session as testers see it (live or
//! finished), what opening one may set, and the answers. JSON in
//! camelCase, as the lobby's API.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Host session (the daemon plays, with its bots) or relay session (the
/// players play; the daemon relays).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    /// `host-daemon host`.
    Host,
    /// `host-daemon relay`.
    Relay,
}

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    /// In its lobby, waiting for players.
    Waiting,
    /// Playing.
    Running,
    /// Over (its report can be fetched).
    Ended,
}

/// Who opened a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpenedBy {
    /// One of the `--sessions` the daemon keeps open.
    Flags,
    /// A tester, through the control API.
    Control,
}

/// Who a player is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlayerKind {
    /// The host's own player (the daemon's). `"host"` on the wire.
    #[serde(rename = "host")]
    HostPlayer,
    /// A bot the daemon drives.
    Bot,
    /// A person (or a `join --bot`) over the network.
    Guest,
}

/// One player of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlayerView {
    /// Player id.
    pub id: String,
    /// Display name ("" when none).
    pub name: String,
    /// Host, bot or guest.
    pub kind: PlayerKind,
    /// Whether it is still in the level (false: it left).
    pub present: bool,
    /// Smoothed round trip, ms (guests, once measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// Ticks simulated with its held (late or missing) input.
    pub held_inputs: u64,
    /// World-hash reports that differed from the host's.
    pub desyncs: u32,
    /// Application bytes the daemon sent it.
    pub bytes_sent: u64,
    /// Messages the daemon sent it.
    #[serde(default)]
    pub messages_sent: u64,
    /// Application bytes per second the daemon sent it lately (the
    /// netgraph's window).
    #[serde(default)]
    pub bytes_per_s: f64,
}

/// A session the daemon runs or ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// Its lobby code.
    pub code: String,
    /// Host or relay.
    pub kind: SessionKind,
    /// Waiting, running or ended.
    pub state: SessionState,
    /// Its name in the lobby.
    pub name: String,
    /// The daemon's flags or a tester.
    pub opened_by: OpenedBy,
    /// When it was opened, ms since the Unix epoch.
    pub opened_at_ms: u64,
    /// The level being played (1-based; 0 before the first).
    pub level: u32,
    /// Levels in its campaign.
    pub levels: u32,
    /// easy, normal or hard.
    pub difficulty: String,
    /// Campaign seed.
    pub seed: u32,
    /// Ticks run, all levels.
    pub ticks: u64,
    /// Everyone who played, host and bots first.
    pub players: Vec<PlayerView>,
    /// Spectators watching now.
    pub spectators: usize,
    /// Application bytes sent to every connection.
    pub bytes_sent: u64,
    /// Why it ended (`completed`, `team-eliminated`, `host-shutdown`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    /// The levels whose replay file can be fetched (ended sessions of a
    /// daemon started with `--record DIR`).
    pub replays: Vec<u32>,
}

/// Every session the daemon runs, then those it finished, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    /// The sessions.
    pub sessions: Vec<SessionView>,
}

/// What a tester may set when opening a session; anything left out is the
/// daemon's own flag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenRequest {
    /// Bot players besides the host's own (host sessions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bots: Option<u32>,
    /// Levels in the generated campaign.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub levels: Option<u32>,
    /// easy, normal or hard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Campaign seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    /// Its name in the lobby.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Listed in the public lobby (false: join by code only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    /// The start rule: start once this many guests (relay: players) are in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_when: Option<usize>,
    /// Most players, host and bots included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_players: Option<u32>,
}

/// A session opened: its code (it is listed in the lobby, or joinable by
/// code, from now on).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Opened {
    /// Its lobby code.
    pub code: String,
}

/// What a running session's driver samples for the control API: the
/// figures of a [`SessionView`] that change while it plays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionFigures {
    /// Whether it left its lobby.
    pub started: bool,
    /// The level being played (1-based; 0 before the first).
    pub level: u32,
    /// Ticks run, all levels.
    pub ticks: u64,
    /// Everyone who played.
    pub players: Vec<PlayerView>,
    /// Spectators watching now.
    pub spectators: usize,
    /// Application bytes sent to every connection.
    pub bytes_sent: u64,
}

/// The daemon the control API belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonInfo {
    /// Host or relay sessions.
    pub kind: SessionKind,
    /// The lobby server it publishes in (its `/play?code=...` watches a
    /// session).
    pub lobby: String,
    /// Whether it writes replay files (`--record DIR`).
    pub recording: bool,
    /// Sessions it keeps open by itself (`--sessions`).
    pub standing_sessions: usize,
    /// Sessions testers may have open at once through this API.
    pub max_control_sessions: usize,
}

#[cfg(test)]
mod tests {
    use super::PlayerKind;

    #[test]
    fn player_kinds_keep_their_wire_names() {
        for (kind, wire) in [
            (PlayerKind::HostPlayer, "host"),
            (PlayerKind::Bot, "bot"),
            (PlayerKind::Guest, "guest"),
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), wire);
            assert_eq!(
                serde_json::from_value::<PlayerKind>(wire.into()).unwrap(),
                kind
            );
        }
    }
}
