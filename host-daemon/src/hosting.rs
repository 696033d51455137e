//! `host-daemon host`: bot-hosted sessions published through the lobby and
//! played over real WebRTC.
//!
//! Each session is created in the lobby (`hostKind: daemon`) and its code
//! printed on stdout as one line `session CODE` (and, when it is over, one
//! JSON line `{"type":"session-report",...}`). A round loop then keeps
//! exactly one offer round open while the session waits in its lobby and
//! has a free seat: it gathers a complete offer (with the daemon's own ICE
//! servers, or else those the lobby hands out), publishes it, long-polls
//! its answer (each poll refreshes the TTL), connects it over WebRTC in the
//! background while the next round opens, and hands the link to the host
//! session's admission, keeping `players` current (republished as soon as
//! the session admits or loses a guest, round or no round). A guest that
//! leaves before the start frees its seat, and a round opens again. Once
//! the session has started, rounds go on while a seat is free (late join:
//! the host session admits the joiner into the running level), up to
//! every guest seat; the session caps its guests itself, so two joiners
//! racing for the last seat cost the slower one a `session-full`. With
//! late join off (`--no-late-join`) no further round is published once
//! the session has started and it is PUT `public: false`; a round still
//! open then is still served, and the host session refuses its joiner
//! with `session-started`. The lobby entry is deleted when the session
//! ends.
//! With `sessions` K, K sessions run at once and a fresh one is opened
//! whenever one ends, until shutdown.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use protocol::api::{ErrorCode, HostKind, PutSessionRequest};
use protocol::peer::EndReason;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use netcode::host::HostConfig;

use crate::driver::{Host, HostProgress, Served, run_host};
use crate::lobby_client::{HostedSession, LobbyClient, SignalingError};
use crate::metrics::DaemonMetrics;
use crate::relaying::RelaySession;
use crate::replay_files::ReplayFiles;
use crate::stdout;
use crate::transport::webrtc::{Endpoint, WebRtcLink, WebRtcOptions};
use lockstep::peer::{PeerRelay, PeerRelayConfig};

mod joins;
mod rounds;

use rounds::round_loop;

/// How often a session's TTL is refreshed besides the answer polls.
const REFRESH_EVERY: Duration = Duration::from_millis(netcode::host::rounds::REFRESH_EVERY_MS);
/// Pause after a failed lobby call or handshake before the loop goes on.
const RETRY_PAUSE: Duration = Duration::from_millis(netcode::host::rounds::RETRY_PAUSE_MS);
/// Consecutive session failures after which the daemon gives up.
const MAX_CONSECUTIVE_FAILURES: u32 = 5;

/// What `host-daemon host` runs.
#[derive(Clone, Debug)]
pub struct HostingConfig {
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
    pub host: HostConfig,
    /// Sessions kept open at once.
    pub sessions: usize,
    /// The WebRTC endpoint's options: every connection of the daemon, of
    /// every session, on its one UDP socket.
    pub webrtc: WebRtcOptions,
    /// The campaign's name in the lobby.
    pub campaign_name: String,
    /// Where sessions report their metrics, if anywhere.
    pub metrics: Option<DaemonMetrics>,
    /// `--record DIR`: each level's replay file goes here (the host config
    /// then has `record_replay` set).
    pub record_dir: Option<std::path::PathBuf>,
    /// `host-daemon relay`: serve relay sessions with this configuration
    /// instead of host sessions (`host` above then only says whether
    /// late join is on; no host player, no bots).
    pub relay: Option<PeerRelayConfig>,
}

impl HostingConfig {
    /// Guest seats: `max_players` minus the host's player and its bots.
    pub fn guest_seats(&self) -> usize {
        let local = self.bots + u32::from(self.host.host_player.is_some());
        self.max_players.saturating_sub(local) as usize
    }

    fn local_players(&self) -> u32 {
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

/// Runs sessions until `shutdown` turns true; then every running session
/// ends with `host-shutdown` and its lobby entry is deleted.
pub async fn run(config: HostingConfig, shutdown: watch::Receiver<bool>) -> anyhow::Result<()> {
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
    let config = Arc::new(config);
    let mut running = JoinSet::new();
    let mut failures = 0u32;
    let mut shutdown_rx = shutdown.clone();
    loop {
        while !*shutdown.borrow() && running.len() < config.sessions.max(1) {
            running.spawn(run_session(
                config.clone(),
                endpoint.clone(),
                client.clone(),
                shutdown.clone(),
            ));
        }
        tokio::select! {
            done = running.join_next() => match done {
                Some(Ok(Ok(report))) => {
                    failures = 0;
                    tracing::info!(code = %report.code, end = ?report.end, joined = report.joined,
                        levels = report.levels_completed, "session over");
                }
                Some(Ok(Err(e))) => {
                    failures += 1;
                    eprintln!("host-daemon: session failed: {e:#}");
                    if failures >= MAX_CONSECUTIVE_FAILURES {
                        running.shutdown().await;
                        anyhow::bail!("{failures} sessions failed in a row; last: {e:#}");
                    }
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Some(Err(e)) => anyhow::bail!("a session task panicked: {e}"),
                None => {
                    if *shutdown.borrow() {
                        return Ok(());
                    }
                }
            },
            _ = shutdown_rx.changed(), if !*shutdown_rx.borrow() => {}
        }
        if *shutdown.borrow() && running.is_empty() {
            return Ok(());
        }
    }
}

fn create_request(config: &HostingConfig) -> PutSessionRequest {
    PutSessionRequest {
        public: Some(config.public),
        name: Some(config.name.clone()),
        host_name: match (&config.relay, &config.host.host_player) {
            (Some(_), _) => Some("relay".to_owned()),
            (None, player) => player.as_ref().map(|(_, n)| n.clone()),
        },
        // A relay has no player of its own; a host has at least its own.
        players: Some(if config.relay.is_some() {
            0
        } else {
            config.local_players().max(1)
        }),
        max_players: Some(config.max_players),
        build: Some(config.host.build_version.clone()),
        difficulty: serde_json::to_value(config.host.difficulty)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned)),
        campaign: Some(config.campaign_name.clone()),
        host_kind: Some(if config.relay.is_some() {
            HostKind::Relay
        } else {
            HostKind::Daemon
        }),
        ..Default::default()
    }
}

/// The name a session is published under when the lobby's word list
/// refuses the configured one.
pub const NEUTRAL_NAME: &str = "campfire session";

/// The host name published with [`NEUTRAL_NAME`].
pub const NEUTRAL_HOST_NAME: &str = "bots";

/// Creates the session in the lobby. When the lobby's word list refuses
/// its name or host name (`400 name_refused`), it is published under
/// [`NEUTRAL_NAME`] by [`NEUTRAL_HOST_NAME`] instead, with a warning: a daemon
/// never publishes a refused name, and keeps serving.
async fn create_session(
    client: &LobbyClient,
    config: &HostingConfig,
) -> Result<HostedSession, SignalingError> {
    let request = create_request(config);
    match client.create_session(&request).await {
        Err(SignalingError::Refused {
            code: Some(ErrorCode::NameRefused),
            message,
            ..
        }) => {
            tracing::warn!(
                %message,
                name = %config.name,
                "the lobby refuses this session's name; publishing it as {NEUTRAL_NAME:?}"
            );
            let neutral = PutSessionRequest {
                name: Some(NEUTRAL_NAME.to_owned()),
                host_name: Some(NEUTRAL_HOST_NAME.to_owned()),
                ..request
            };
            client.create_session(&neutral).await
        }
        other => other,
    }
}

/// One session from creation to deletion.
pub async fn run_session(
    config: Arc<HostingConfig>,
    endpoint: Endpoint,
    client: LobbyClient,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<SessionOutcome> {
    let session = create_session(&client, &config)
        .await
        .context("creating the session in the lobby")?;
    stdout::line(&format!("session {}", session.code));
    if let Some(relay) = &config.relay {
        let mut relay = relay.clone();
        relay.relay.start_players = config.start_when;
        relay.relay.lobby_wait = config.lobby_timeout;
        relay.relay.max_players = config.guest_seats();
        // A fresh secret per session: its rejoin tokens resume nothing else.
        relay.rejoin_secret = Some(rand::random());
        let served = RelaySession::new(PeerRelay::new(relay));
        let served = serve(served, &config, &client, &session, &endpoint, shutdown).await?;
        stdout::relay_report(&session.code, &served.report());
        delete(&client, &session).await;
        return Ok(SessionOutcome {
            code: session.code.clone(),
            end: None,
            joined: served.relay().connections_ever(),
            levels_completed: served.relay().relay().epoch(),
        });
    }
    let mut host_config = config.host.clone();
    host_config.expected_guests = config.start_when;
    host_config.lobby_wait = config.lobby_timeout;
    host_config.max_guests = Some(config.guest_seats());
    // A fresh secret per session: its rejoin tokens resume nothing else.
    host_config.rejoin_secret = Some(rand::random());
    let host = serve(
        Host::new(host_config),
        &config,
        &client,
        &session,
        &endpoint,
        shutdown,
    )
    .await?;
    stdout::session_report(&session.code, &host.report());
    delete(&client, &session).await;
    Ok(SessionOutcome {
        code: session.code.clone(),
        end: host.ended(),
        joined: host.connections(),
        levels_completed: host.stats().levels_completed,
    })
}

async fn delete(client: &LobbyClient, session: &HostedSession) {
    if let Err(e) = client.delete(session).await
        && !matches!(
            e,
            SignalingError::NoSuchSession(_) | SignalingError::EndedByModerator(_)
        )
    {
        tracing::warn!(error = %e, "could not delete the session from the lobby");
    }
}

/// Serves `served` to the guests the round loop connects, keeping its
/// lobby entry current, until it ends. Returns it, finished.
async fn serve<T: Served>(
    served: T,
    config: &Arc<HostingConfig>,
    client: &LobbyClient,
    session: &HostedSession,
    endpoint: &Endpoint,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<T> {
    let metrics = config.metrics.as_ref().map(DaemonMetrics::session);
    let (link_tx, link_rx) = mpsc::channel::<WebRtcLink>(8);
    let (progress_tx, progress_rx) = watch::channel(HostProgress::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let host_shutdown = {
        let mut a = shutdown.clone();
        let mut b = stop_rx.clone();
        async move {
            tokio::select! {
                _ = a.wait_for(|v| *v) => {}
                _ = b.wait_for(|v| *v) => {}
            }
        }
    };
    let replays = config
        .record_dir
        .as_deref()
        .map(|dir| ReplayFiles::new(dir, session.code.as_str()));
    let host_run = run_host(
        served,
        link_rx,
        host_shutdown,
        Some(progress_tx),
        metrics,
        replays,
    );
    let mut host_task = tokio::spawn(host_run);
    let opened = Instant::now();
    let mut rounds = std::pin::pin!(round_loop(
        config,
        endpoint,
        client,
        session,
        link_tx,
        progress_rx.clone(),
    ));
    let mut rounds_done = false;
    let mut unlisted = false;
    let mut progress = progress_rx;
    let lobby_deadline = config.lobby_timeout.map(|t| opened + t);
    let mut lobby_timed_out = false;
    let mut refresh = tokio::time::interval_at(opened + REFRESH_EVERY, REFRESH_EVERY);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let host = loop {
        tokio::select! {
            h = &mut host_task => break h.context("the host session task failed")?,
            () = &mut rounds, if !rounds_done => rounds_done = true,
            _ = refresh.tick() => {
                // Answer polls refresh the TTL too; this covers the rest
                // (no round open, the session running).
                if let Err(e) = client.refresh(session).await {
                    tracing::debug!(error = %e, "TTL refresh failed");
                }
            }
            changed = progress.changed(), if !unlisted => {
                if changed.is_err() {
                    unlisted = true;
                } else if progress.borrow().started {
                    // Late join: listed on, as in progress; else unlisted.
                    unlisted = true;
                    let update = if config.host.late_join {
                        PutSessionRequest { in_progress: Some(true), ..Default::default() }
                    } else {
                        PutSessionRequest { public: Some(false), ..Default::default() }
                    };
                    if let Err(e) = client.update(session, &update).await {
                        tracing::warn!(error = %e, "could not mark the started session in the lobby");
                    }
                }
            }
            _ = async {
                match lobby_deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            }, if !unlisted && !lobby_timed_out && lobby_deadline.is_some() => {
                lobby_timed_out = true;
                // Nobody came: close. (With a guest in, the session's own
                // lobby wait starts it without the others.)
                let p = *progress.borrow();
                if !p.started && p.seats_taken == 0 {
                    tracing::info!(code = %session.code, "lobby timeout with no guest: closing");
                    let _ = stop_tx.send(true);
                }
            }
        }
    };
    Ok(host)
}
