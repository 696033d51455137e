//! One host, its bot players and bot guests in one process over the
//! simulated network: the scenario runner behind `host-daemon simulate` and
//! the netcode tests.
//!
//! A [`Scenario`] lists the host's configuration, one guest configuration
//! and link per guest, and network events keyed by the host's tick count
//! (stall a guest, cut a guest, lose the host, connect a latecomer).
//! [`run`] plays it on the current tokio runtime and returns every
//! finished session; [`Summary`] is the one-line JSON report.

use std::time::Duration;

use protocol::peer::EndReason;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use crate::driver::{HostProgress, run_guest, run_host};
use crate::guest::{GuestConfig, GuestEnd, GuestSession};
use crate::host::{HostConfig, HostSession};
use crate::simnet::{LinkConfig, LinkControl, SimReceiver, SimSender, link};
use crate::transport::PeerLink;

/// What happens to the network, and when.
#[derive(Clone, Debug)]
pub enum NetAction {
    /// Pause guest `n`'s link (0-based) for a while, both ways.
    Stall(usize, Duration),
    /// Cut guest `n`'s link.
    Disconnect(usize),
    /// The host vanishes: every link is cut and the host stops.
    HostLoss,
    /// A new guest connects (after the level started: it must be refused).
    LateJoin(GuestConfig, LinkConfig),
}

/// A network event at a host tick count (ticks simulated, all levels).
#[derive(Clone, Debug)]
pub struct NetEvent {
    /// When: once the host has simulated this many ticks.
    pub at_tick: u64,
    /// What.
    pub action: NetAction,
}

/// A whole run.
#[derive(Clone, Debug, Default)]
pub struct Scenario {
    /// The host.
    pub host: HostConfig,
    /// One guest configuration and link per guest.
    pub guests: Vec<(GuestConfig, LinkConfig)>,
    /// Network events.
    pub events: Vec<NetEvent>,
}

/// Every finished session.
#[derive(Debug)]
pub struct Outcome {
    /// The host.
    pub host: HostSession,
    /// The guests, in scenario order.
    pub guests: Vec<GuestSession>,
    /// Guests that connected late.
    pub late: Vec<GuestSession>,
}

type SimLink = PeerLink<SimSender, SimReceiver>;

/// Plays a scenario on the current runtime (paused time works).
pub async fn run(scenario: Scenario) -> Outcome {
    let (link_tx, link_rx) = mpsc::channel::<SimLink>(64);
    let (progress_tx, mut progress_rx) = watch::channel(HostProgress::default());
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut controls: Vec<LinkControl> = Vec::new();
    let mut guest_tasks = Vec::new();
    for (config, link_config) in scenario.guests {
        let (host_end, guest_end, control) = link(link_config);
        controls.push(control);
        let _ = link_tx.send(host_end).await;
        guest_tasks.push(tokio::spawn(run_guest(
            GuestSession::new(config),
            guest_end,
        )));
    }
    let shutdown = async move {
        if stop_rx.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let host_task = tokio::spawn(run_host(
        HostSession::new(scenario.host),
        link_rx,
        shutdown,
        Some(progress_tx),
    ));
    let mut events = scenario.events;
    events.sort_by_key(|e| e.at_tick);
    let mut late_tasks = Vec::new();
    let mut stop_tx = Some(stop_tx);
    for ev in events {
        if progress_rx
            .wait_for(|p| p.ticks >= ev.at_tick)
            .await
            .is_err()
        {
            break;
        }
        match ev.action {
            NetAction::Stall(n, d) => {
                if let Some(c) = controls.get(n) {
                    c.stall(d);
                }
            }
            NetAction::Disconnect(n) => {
                if let Some(c) = controls.get(n) {
                    c.disconnect();
                }
            }
            NetAction::HostLoss => {
                controls.iter().for_each(LinkControl::disconnect);
                if let Some(tx) = stop_tx.take() {
                    let _ = tx.send(());
                }
            }
            NetAction::LateJoin(config, link_config) => {
                let (host_end, guest_end, control) = link(link_config);
                controls.push(control);
                let _ = link_tx.send(host_end).await;
                late_tasks.push(tokio::spawn(run_guest(
                    GuestSession::new(config),
                    guest_end,
                )));
            }
        }
    }
    drop(link_tx);
    let host = match host_task.await {
        Ok(h) => h,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    let mut guests = Vec::new();
    for t in guest_tasks {
        match t.await {
            Ok(g) => guests.push(g),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    let mut late = Vec::new();
    for t in late_tasks {
        match t.await {
            Ok(g) => late.push(g),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    drop(stop_tx);
    Outcome { host, guests, late }
}

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
    /// Per guest.
    pub guests: Vec<GuestSummary>,
}

/// Whether a guest ended on the host's final state.
pub fn final_hash_matches(host: &HostSession, guest: &GuestSession) -> bool {
    use engine::Engine;
    let Some(engine) = host.engine() else {
        return false;
    };
    guest.last_hash() == Some((host.level_epoch(), engine.tick(), engine.world_hash()))
}

impl Summary {
    /// Summarizes an outcome.
    pub fn of(outcome: &Outcome) -> Self {
        let s = outcome.host.stats();
        Summary {
            end_reason: outcome.host.ended(),
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
            guests: outcome
                .guests
                .iter()
                .enumerate()
                .map(|(i, g)| GuestSummary {
                    guest: i + 1,
                    player_id: g.player_id().map(|p| p.to_string()),
                    final_hash_matches_host: final_hash_matches(&outcome.host, g),
                    end: match g.ended() {
                        Some(GuestEnd::Ended(r)) => serde_json::to_value(r)
                            .map_or_else(|_| "?".into(), |v| v.as_str().unwrap_or("?").to_owned()),
                        Some(GuestEnd::Refused(r, _)) => format!("refused: {r:?}"),
                        Some(GuestEnd::SetupFailed(e)) => format!("setup failed: {e}"),
                        None => "running".into(),
                    },
                    bundles_applied: g.stats().bundles_applied,
                    snapshots_applied: g.stats().snapshots_applied,
                    held_inputs: g
                        .player_id()
                        .and_then(|p| s.held_per_player.get(p))
                        .copied()
                        .unwrap_or(0),
                    desyncs: g
                        .player_id()
                        .and_then(|p| s.desyncs.get(p))
                        .copied()
                        .unwrap_or(0),
                    avg_input_lead_ticks: g
                        .player_id()
                        .and_then(|p| s.input_lead.get(p))
                        .filter(|l| l.0 > 0)
                        .map_or(0.0, |l| l.1 as f64 / l.0 as f64),
                })
                .collect(),
        }
    }
}
