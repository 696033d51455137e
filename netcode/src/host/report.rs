//! The per-session report a host gives its operator when a session is
//! over: levels, ticks, why it ended, and per player the hash reports,
//! desyncs and held inputs the audit counted. The daemon prints it as a
//! JSON line; a browser host shows it.

use std::time::Duration;

use game_api::PlayerId;
use game_api::{Bot, Game};
use protocol::peer::EndReason;
use serde::Serialize;

use super::HostSession;
use crate::netgraph::Flow;
use crate::stats::GuestSlot;

/// Who a player is, seen from the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlayerKind {
    /// The host's own player.
    Host,
    /// A bot the host drives.
    Bot,
    /// A guest over the network.
    Guest,
}

/// One player's line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerReport {
    /// Player id.
    pub player_id: PlayerId,
    /// Display name ("" when none).
    pub name: String,
    /// Host, bot or guest.
    pub kind: PlayerKind,
    /// World-hash reports received from this player (guests only).
    pub hash_reports: u32,
    /// Reports whose hash differed from the host's.
    pub desyncs: u32,
    /// Desyncs that outlived a reconciliation snapshot.
    pub persistent_desyncs: u32,
    /// Ticks simulated with this player's held (late or missing) input.
    pub held_inputs: u64,
    /// Smoothed round trip of its input channel, ms (guests that take up
    /// `ping`, once measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// The round trip's variation (jitter), ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_jitter_ms: Option<f64>,
    /// For a late joiner: the tick it entered the level at (of level
    /// epoch [`PlayerReport::joined_at_epoch`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_at_tick: Option<u64>,
    /// For a late joiner: the level epoch it entered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_at_epoch: Option<u32>,
    /// Times a fresh connection resumed this player (rejoins).
    pub rejoins: u32,
    /// Application bytes the host sent this player's connections (when
    /// its driver counts them; 0 otherwise).
    pub bytes_sent: u64,
    /// Messages the host sent this player's connections (as `bytes_sent`).
    pub messages_sent: u64,
    /// For a player who left and was not back by the end (or by now): the
    /// level epoch and tick it was removed from the roster at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_at: Option<LeftAt>,
}

/// Where a player left: the level epoch and the tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftAt {
    /// The level epoch.
    pub epoch: u32,
    /// The tick of that level.
    pub tick: u64,
}

/// One spectator's line of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SpectatorReport {
    /// Its id (`spectator-1`, ...), outside the roster.
    pub spectator_id: PlayerId,
    /// Display name ("" when none).
    pub name: String,
    /// The level epoch of the state it got (`None`: it left before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_at_epoch: Option<u32>,
    /// The tick of that state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joined_at_tick: Option<u64>,
    /// World-hash reports received from it.
    pub hash_reports: u32,
    /// Reports whose hash differed from the host's.
    pub desyncs: u32,
    /// Still connected.
    pub watching: bool,
}

/// A finished (or running) session's report.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionReport {
    /// Levels completed.
    pub levels_completed: u32,
    /// Ticks simulated over all levels.
    pub ticks: u64,
    /// Why it ended (`None` while running).
    pub end_reason: Option<EndReason>,
    /// Every player who was in a level, host first, then by id.
    pub players: Vec<PlayerReport>,
    /// The world hash of the current (at the end: the last) level's engine
    /// as it stands, 16 hex digits; what a guest that followed to the end
    /// reports too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_world_hash: Option<String>,
    /// Everyone who was admitted to watch, by id.
    pub spectators: Vec<SpectatorReport>,
}

impl<E: Game> HostSession<E> {
    /// The player (or spectator) connection `slot` carries, once its hello
    /// was admitted; `None` for a slot let go or never admitted.
    pub fn player_of(&self, slot: GuestSlot) -> Option<&PlayerId> {
        self.seats
            .get(slot)
            .filter(|s| s.admitted)
            .and_then(|s| s.player.as_ref())
    }

    /// Counts a message of `bytes` bytes the driver sent at `now` on
    /// connection `slot` to its player (nothing for a connection not
    /// admitted).
    pub fn count_sent(&mut self, slot: GuestSlot, bytes: usize, now: Duration) {
        if let Some(player) = self.player_of(slot).cloned() {
            self.stats
                .sent
                .entry(player)
                .or_default()
                .record(now, bytes);
        }
    }

    /// Who `player` is.
    pub fn player_kind(&self, player: &PlayerId) -> PlayerKind {
        if self
            .config
            .host_player
            .as_ref()
            .is_some_and(|(id, _)| id == player)
        {
            PlayerKind::Host
        } else if self.bots.iter().any(|b| b.player_id() == player) {
            PlayerKind::Bot
        } else {
            PlayerKind::Guest
        }
    }

    /// Every player's line of the report now: who they are, how they
    /// joined and left, and their link's figures (host first).
    pub fn player_reports(&self) -> Vec<PlayerReport> {
        let stats = &self.stats;
        let mut ids: Vec<PlayerId> = self.names.keys().cloned().collect();
        let roster = self.roster();
        ids.extend(roster.iter().cloned());
        ids.extend(stats.roster_removed.iter().map(|(_, _, id)| id.clone()));
        ids.sort();
        ids.dedup();
        let count = |m: &std::collections::BTreeMap<PlayerId, u32>, id: &PlayerId| {
            m.get(id).copied().unwrap_or(0)
        };
        let rtt = &stats.rtt;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let mut players: Vec<PlayerReport> = ids
            .into_iter()
            .map(|id| {
                let desyncs = count(&stats.desyncs, &id);
                let joined = stats.roster_added.iter().find(|(_, _, p)| *p == id);
                PlayerReport {
                    joined_at_tick: joined.map(|j| j.1),
                    joined_at_epoch: joined.map(|j| j.0),
                    rejoins: count(&stats.rejoins, &id),
                    bytes_sent: stats.sent.get(&id).map_or(0, Flow::bytes),
                    messages_sent: stats.sent.get(&id).map_or(0, Flow::messages),
                    left_at: (!roster.contains(&id))
                        .then(|| stats.roster_removed.iter().rev().find(|(_, _, p)| *p == id))
                        .flatten()
                        .map(|&(epoch, tick, _)| LeftAt { epoch, tick }),
                    name: self.names.get(&id).cloned().unwrap_or_default(),
                    kind: self.player_kind(&id),
                    hash_reports: count(&stats.hash_matches, &id) + desyncs,
                    desyncs,
                    persistent_desyncs: count(&stats.persistent_desyncs, &id),
                    held_inputs: stats.held_per_player.get(&id).copied().unwrap_or(0),
                    rtt_ms: rtt.get(&id).and_then(|r| r.smoothed()).map(ms),
                    rtt_jitter_ms: rtt
                        .get(&id)
                        .filter(|r| r.samples() > 0)
                        .map(|r| ms(r.variation())),
                    player_id: id,
                }
            })
            .collect();
        players.sort_by_key(|p| p.kind != PlayerKind::Host);
        players
    }

    /// The session's report now (with the world's hash, which costs a pass
    /// over the world: live figures take [`HostSession::player_reports`]).
    pub fn report(&self) -> SessionReport {
        let stats = &self.stats;
        let players = self.player_reports();
        let count = |m: &std::collections::BTreeMap<PlayerId, u32>, id: &PlayerId| {
            m.get(id).copied().unwrap_or(0)
        };
        let watching: Vec<&PlayerId> = self
            .seats
            .iter()
            .filter(|s| s.spectator && s.admitted && s.connected && !s.closed)
            .filter_map(|s| s.player.as_ref())
            .collect();
        let spectators = self
            .spectator_names
            .iter()
            .map(|(id, name)| {
                let desyncs = count(&stats.desyncs, id);
                let joined = stats.spectators_joined.iter().find(|(_, _, p)| p == id);
                SpectatorReport {
                    spectator_id: id.clone(),
                    name: name.clone(),
                    joined_at_epoch: joined.map(|j| j.0),
                    joined_at_tick: joined.map(|j| j.1),
                    hash_reports: count(&stats.hash_matches, id) + desyncs,
                    desyncs,
                    watching: watching.contains(&id),
                }
            })
            .collect();
        SessionReport {
            spectators,
            levels_completed: stats.levels_completed,
            ticks: stats.ticks,
            end_reason: self.ended(),
            players,
            final_world_hash: self
                .engine
                .as_ref()
                .map(|e| game_api::WorldHash(e.world_hash()).to_string()),
        }
    }
}
