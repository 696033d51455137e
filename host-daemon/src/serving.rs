//! Serving sessions through the lobby, what `host-daemon host` and
//! `host-daemon relay` run: host sessions (the daemon plays, with its bots)
//! or, with [`ServingConfig::relay`], relay sessions ([`crate::relaying`]),
//! published through the lobby and played over real WebRTC.
//!
//! Each session is created in the lobby (`hostKind: daemon`, or `relay`)
//! and its code printed on stdout as one line `session CODE` (and, when it
//! is over, one JSON line `{"type":"session-report",...}`). A round loop
//! then keeps exactly one offer round open while the session waits in its
//! lobby and has a free seat: it gathers a complete offer (with the
//! daemon's own ICE servers, or else those the lobby hands out), publishes
//! it, long-polls its answer (each poll refreshes the TTL), connects it
//! over WebRTC in the background while the next round opens, and hands the
//! link to the served session's admission, keeping `players` current
//! (republished as soon as the session admits or loses a guest, round or no
//! round). A guest that leaves before the start frees its seat, and a round
//! opens again. Once the session has started, rounds go on while a seat is
//! free (late join: the session admits the joiner into the running level),
//! up to every guest seat; the session caps its guests itself, so two
//! joiners racing for the last seat cost the slower one a `session-full`.
//! With late join off (`--no-late-join`) no further round is published once
//! the session has started and it is PUT `public: false`; a round still
//! open then is still served, and the session refuses its joiner with
//! `session-started`. The lobby entry is deleted when the session ends.
//! With `sessions` K, K sessions run at once and a fresh one is opened
//! whenever one ends, until shutdown.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use engine::wire::raycaster::Raycaster;
use protocol::peer::EndReason;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use netcode::host::HostConfig;

use crate::control::hub::{ControlHub, OpenOrder, OpenRefused};
use crate::control::view::OpenedBy;
use crate::game::GameName;
use crate::lobby_client::LobbyClient;
use crate::metrics::DaemonMetrics;
use crate::transport::webrtc::{Endpoint, WebRtcOptions};
use lockstep::peer::PeerRelayConfig;

mod joins;
mod ordered;
mod rounds;
mod session;

pub use ordered::ordered_config;
pub use session::{NEUTRAL_HOST_NAME, NEUTRAL_NAME, Ticket, run_session};

/// How often a session's TTL is refreshed besides the answer polls.
const REFRESH_EVERY: Duration = Duration::from_millis(netcode::host::rounds::REFRESH_EVERY_MS);
/// Pause after a failed lobby call or handshake before the loop goes on.
const RETRY_PAUSE: Duration = Duration::from_millis(netcode::host::rounds::RETRY_PAUSE_MS);
/// Consecutive session failures after which the daemon gives up.
const MAX_CONSECUTIVE_FAILURES: u32 = 5;

/// What `host-daemon host` and `host-daemon relay` run (the flags they
/// share build it: `commands::serving`).
#[derive(Clone, Debug)]
pub struct ServingConfig {
    /// The lobby server's base URL.
    pub server: String,
    /// The session's name in the lobby.
    pub name: String,
    /// Listed in `GET /lobby` while waiting.
    pub public: bool,
    /// Bot players hosted in-process (besides the host's own bot player).
    pub bots: u32,
    /// Most players, host and bots included.
    pub max_players: u32,
    /// Start once this many guests are in.
    pub start_when: usize,
    /// After this long without `start_when` guests: start with whoever is
    /// in, or close the session (and open a fresh one) when nobody is.
    pub lobby_timeout: Option<Duration>,
    /// The netcode session's template (seed, levels, difficulty, bots).
    pub host: HostConfig<engine::RaycasterEngine>,
    /// Sessions kept open at once.
    pub sessions: usize,
    /// The WebRTC endpoint's options: every connection of the daemon, of
    /// every session, on its one UDP socket.
    pub webrtc: WebRtcOptions,
    /// The game its sessions play: the raycaster plays `host` (and
    /// `relay`) as they are; another game takes their session rules with
    /// its own plan and settings ([`crate::game`]).
    pub game: GameName,
    /// tag: ticks a round lasts.
    pub round_ticks: u32,
    /// The campaign's name in the lobby.
    pub campaign_name: String,
    /// The campaign seed (the plan's maps and gameplay seeds derive from it).
    pub seed: u32,
    /// `--campaign DIR`'s maps, when the plan plays a folder.
    pub campaign_maps: Option<Vec<engine::wire::map::GameMap>>,
    /// Where sessions report their metrics, if anywhere.
    pub metrics: Option<DaemonMetrics>,
    /// `--record DIR`: each level's replay file goes here (the host config
    /// then has `record_replay` set).
    pub record_dir: Option<std::path::PathBuf>,
    /// `host-daemon relay`: serve relay sessions with this configuration
    /// instead of host sessions (`host` above then only says whether
    /// late join is on; no host player, no bots).
    pub relay: Option<PeerRelayConfig<Raycaster>>,
}

impl ServingConfig {
    /// Guest seats: `max_players` minus the host's player and its bots.
    pub fn guest_seats(&self) -> usize {
        let local = self.bots + u32::from(self.host.host_player.is_some());
        self.max_players.saturating_sub(local) as usize
    }

    /// The host's own player and its bots.
    pub fn local_players(&self) -> u32 {
        self.bots + u32::from(self.host.host_player.is_some())
    }
}

/// How one session went (for the log; the operator's report is
/// [`netcode::host::SessionReport`], printed as a `session-report` line).
#[derive(Clone, Debug)]
pub struct SessionOutcome {
    /// Its lobby code.
    pub code: String,
    /// Why it ended.
    pub end: Option<EndReason>,
    /// Guests whose link was handed to the session.
    pub joined: usize,
    /// Levels completed.
    pub levels_completed: u32,
}

/// What the control API hands the serving loop: where it files what the
/// sessions do, its open orders, and how many of those may run at once.
#[derive(Debug)]
pub struct ControlDesk {
    /// The registry the API reads.
    pub hub: ControlHub,
    /// Testers' orders to open a session.
    pub orders: mpsc::Receiver<OpenOrder>,
    /// Ordered sessions running at once, at most.
    pub max_sessions: usize,
}

/// Runs sessions until `shutdown` turns true; then every running session
/// ends with `host-shutdown` and its lobby entry is deleted. With a
/// `desk`, it also opens the sessions testers order (besides the
/// `sessions` it keeps open itself, which may then be none) and files
/// every session in the control API's registry.
pub async fn run(
    config: ServingConfig,
    shutdown: watch::Receiver<bool>,
    desk: Option<ControlDesk>,
) -> anyhow::Result<()> {
    let client = LobbyClient::new(&config.server).context("lobby client")?;
    let endpoint = Endpoint::bind(&config.webrtc)
        .await
        .context("binding the WebRTC endpoint")?;
    tracing::info!(
        local = %endpoint.local_addr(),
        advertised = %endpoint.advertised_addr(),
        "WebRTC on one UDP socket"
    );
    if let Some(metrics) = config.metrics.clone() {
        // The endpoint's connection count, sampled for the scrapes.
        let (endpoint, mut stop) = (endpoint.clone(), shutdown.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = every.tick() => metrics.set_webrtc_connections(endpoint.connections()),
                    _ = stop.wait_for(|s| *s) => break,
                }
            }
        });
    }
    let (hub, mut orders, max_ordered) = match desk {
        Some(d) => (Some(d.hub), Some(d.orders), d.max_sessions),
        None => (None, None, 0),
    };
    // Without a control API a daemon keeps at least one session open.
    let standing = if hub.is_some() {
        config.sessions
    } else {
        config.sessions.max(1)
    };
    let config = Arc::new(config);
    let start = |ticket: Ticket| {
        run_session(
            config.clone(),
            endpoint.clone(),
            client.clone(),
            shutdown.clone(),
            ticket,
        )
    };
    let mut running: JoinSet<(OpenedBy, anyhow::Result<SessionOutcome>)> = JoinSet::new();
    let mut standing_running = 0usize;
    let mut ordered_running = 0usize;
    let mut failures = 0u32;
    let mut shutdown_rx = shutdown.clone();
    loop {
        while !*shutdown.borrow() && standing_running < standing {
            standing_running += 1;
            let ticket = Ticket::standing(hub.clone());
            let session = start(ticket);
            running.spawn(async move { (OpenedBy::Flags, session.await) });
        }
        tokio::select! {
            order = async {
                match orders.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            }, if !*shutdown.borrow() => {
                let Some(OpenOrder { request, reply }) = order else {
                    orders = None;
                    continue;
                };
                if ordered_running >= max_ordered {
                    let _ = reply.send(Err(OpenRefused::TooMany(max_ordered)));
                    continue;
                }
                match ordered_config(&config, &request) {
                    Err(why) => {
                        let _ = reply.send(Err(OpenRefused::Invalid(why)));
                    }
                    Ok(ordered) => {
                        ordered_running += 1;
                        let ticket = Ticket::ordered(hub.clone(), reply);
                        let session = run_session(
                            Arc::new(ordered),
                            endpoint.clone(),
                            client.clone(),
                            shutdown.clone(),
                            ticket,
                        );
                        running.spawn(async move { (OpenedBy::Control, session.await) });
                    }
                }
            }
            done = running.join_next(), if !running.is_empty() => match done {
                Some(Ok((by, outcome))) => {
                    match by {
                        OpenedBy::Flags => standing_running -= 1,
                        OpenedBy::Control => ordered_running -= 1,
                    }
                    match outcome {
                        Ok(report) => {
                            failures = 0;
                            tracing::info!(code = %report.code, end = ?report.end, joined = report.joined,
                                levels = report.levels_completed, "session over");
                        }
                        // A tester's order that failed was answered; it
                        // says nothing of the daemon's health.
                        Err(e) if by == OpenedBy::Control => {
                            eprintln!("host-daemon: an ordered session failed: {e:#}");
                        }
                        Err(e) => {
                            failures += 1;
                            eprintln!("host-daemon: session failed: {e:#}");
                            if failures >= MAX_CONSECUTIVE_FAILURES {
                                running.shutdown().await;
                                anyhow::bail!("{failures} sessions failed in a row; last: {e:#}");
                            }
                            tokio::time::sleep(RETRY_PAUSE).await;
                        }
                    }
                }
                Some(Err(e)) => anyhow::bail!("a session task panicked: {e}"),
                None => {}
            },
            _ = shutdown_rx.changed(), if !*shutdown_rx.borrow() => {}
            // Shut down with nothing running.
            else => return Ok(()),
        }
        if *shutdown.borrow() && running.is_empty() {
            return Ok(());
        }
    }
}
