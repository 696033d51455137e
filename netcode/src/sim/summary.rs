//! The one-line JSON report of a simulated (or daemon-hosted) session.

use crate::netgraph::GuestTotals;
use game_api::Game;
use protocol::peer::EndReason;
use serde::Serialize;

use crate::guest::{GuestEnd, GuestSession};
use crate::host::HostSession;

/// One guest's line in the summary.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestSummary {
    /// 1-based guest number.
    pub guest: usize,
    /// Its player id.
    pub player_id: Option<String>,
    /// Its last applied tick's hash equals the host's final hash.
    pub final_hash_matches_host: bool,
    /// How its session ended.
    pub end: String,
    /// Bundles it applied.
    pub bundles_applied: u64,
    /// Snapshots it applied.
    pub snapshots_applied: u64,
    /// Ticks the host held this guest's last input for it.
    pub held_inputs: u64,
    /// Hash reports that disagreed with the host.
    pub desyncs: u32,
    /// Mean ticks ahead of the host's tick its inputs arrived.
    pub avg_input_lead_ticks: f64,
    /// `held_inputs` over the host's ticks: the share of ticks this guest's
    /// input arrived too late and was held.
    pub held_input_ratio: f64,
    /// Its input delay in the last level it played, ticks.
    pub input_delay_ticks: u64,
    /// The host's smoothed round trip to it, ms (once measured).
    pub rtt_ms: Option<f64>,
    /// Bytes the host sent it per second of the run (message text), when
    /// the network counted them.
    pub bytes_per_second: Option<f64>,
    /// What it received and sent in all, as its netgraph counted (the
    /// snapshots' share of the bytes among it).
    pub traffic: GuestTotals,
}

/// The `host-daemon simulate` report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Why the host's session ended.
    pub end_reason: Option<EndReason>,
    /// Levels whose countdown ran out.
    pub levels_completed: u32,
    /// Ticks simulated by the host.
    pub ticks: u64,
    /// Guest hash reports that disagreed with the host.
    pub desyncs: u32,
    /// Guest hash reports that agreed.
    pub hash_matches: u32,
    /// Held-input fallbacks (player-ticks).
    pub held_inputs: u64,
    /// Reconciliation snapshots sent.
    pub snapshots: u64,
    /// Players removed by `rosterRemove`.
    pub roster_removed: Vec<String>,
    /// Transition resends to laggards.
    pub transition_resends: u32,
    /// 99th percentile of tick lateness, microseconds.
    pub tick_lateness_p99_us: u32,
    /// Held guest inputs over guest-ticks (every guest's ticks together).
    pub held_input_ratio: f64,
    /// Per guest.
    pub guests: Vec<GuestSummary>,
}

/// Whether a guest ended on the host's final state.
pub fn final_hash_matches<E: Game>(host: &HostSession<E>, guest: &GuestSession<E>) -> bool {
    let Some(engine) = host.engine() else {
        return false;
    };
    guest.last_hash() == Some((host.level_epoch(), engine.tick(), engine.world_hash()))
}

/// How a guest's session ended, as one word or phrase.
pub fn describe_end(end: Option<&GuestEnd>) -> String {
    match end {
        Some(GuestEnd::Ended(r)) => serde_json::to_value(r)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "?".into()),
        Some(GuestEnd::Refused(r, _)) => format!("refused: {r:?}"),
        Some(GuestEnd::SetupFailed(e)) => format!("setup failed: {e}"),
        Some(GuestEnd::Failed(e)) => format!("failed: {e}"),
        None => "running".into(),
    }
}

impl Summary {
    /// Summarizes a host and its guests, once finished.
    pub fn of<E: Game>(host: &HostSession<E>, guests: &[GuestSession<E>]) -> Self {
        let s = host.stats();
        let per = |g: &GuestSession<E>| g.player_id().cloned();
        Summary {
            end_reason: host.ended(),
            levels_completed: s.levels_completed,
            ticks: s.ticks,
            desyncs: s.desyncs.values().sum(),
            hash_matches: s.hash_matches.values().sum(),
            held_inputs: s.held_inputs,
            snapshots: s.snapshots,
            roster_removed: s
                .roster_removed
                .iter()
                .map(|(_, _, p)| p.to_string())
                .collect(),
            transition_resends: s.transition_resends,
            tick_lateness_p99_us: u32::try_from(s.tick_lateness_us.percentile(99.0))
                .unwrap_or(u32::MAX),
            guests: guests
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let id = per(g);
                    GuestSummary {
                        guest: i + 1,
                        player_id: id.as_ref().map(|p| p.to_string()),
                        final_hash_matches_host: final_hash_matches(host, g),
                        end: describe_end(g.ended()),
                        bundles_applied: g.stats().bundles_applied,
                        snapshots_applied: g.stats().snapshots_applied,
                        held_inputs: id
                            .as_ref()
                            .and_then(|p| s.held_per_player.get(p))
                            .copied()
                            .unwrap_or(0),
                        desyncs: id
                            .as_ref()
                            .and_then(|p| s.desyncs.get(p))
                            .copied()
                            .unwrap_or(0),
                        avg_input_lead_ticks: id
                            .as_ref()
                            .and_then(|p| s.input_lead.get(p))
                            .filter(|l| l.0 > 0)
                            .map_or(0.0, |l| l.1 as f64 / l.0 as f64),
                        held_input_ratio: 0.0,
                        input_delay_ticks: g.input_delay(),
                        rtt_ms: id
                            .as_ref()
                            .and_then(|p| s.rtt.get(p))
                            .and_then(|r| r.smoothed())
                            .map(|d| d.as_secs_f64() * 1000.0),
                        bytes_per_second: None,
                        traffic: g.meter().totals(),
                    }
                })
                .collect(),
            held_input_ratio: 0.0,
        }
        .with_ratios()
    }

    fn with_ratios(mut self) -> Self {
        let ticks = self.ticks.max(1) as f64;
        for g in &mut self.guests {
            g.held_input_ratio = g.held_inputs as f64 / ticks;
        }
        let held: u64 = self.guests.iter().map(|g| g.held_inputs).sum();
        self.held_input_ratio = held as f64 / (ticks * self.guests.len().max(1) as f64);
        self
    }

    /// Adds what the host sent each guest (`bytes_to_guests[i]` for guest
    /// `i + 1`) over a run of `elapsed`.
    pub fn with_traffic(mut self, bytes_to_guests: &[u64], elapsed: std::time::Duration) -> Self {
        let seconds = elapsed.as_secs_f64();
        if seconds > 0.0 {
            for (g, bytes) in self.guests.iter_mut().zip(bytes_to_guests) {
                g.bytes_per_second = Some(*bytes as f64 / seconds);
            }
        }
        self
    }
}
