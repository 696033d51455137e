//! `host-daemon host`: bot-hosted sessions published through the lobby and
//! played over real WebRTC.
//!
//! Each session: a complete offer is gathered, the session is created in the
//! lobby with it as round 1 (`hostKind: daemon`), and its code is printed on
//! stdout as one line `session CODE`. A round loop long-polls the open
//! round's answer (each poll refreshes the TTL), accepts it over WebRTC,
//! hands the link to the host session's admission, updates `players`, and
//! publishes the next round while the session is still in its lobby and has
//! room. Once the session has started (its first tick) no further round is
//! published and the session is PUT `public: false`; a round still open then
//! is still served, and the host session refuses its joiner with
//! `session-started`. The lobby entry is deleted when the session ends.
//! With `sessions` K, K sessions run at once and a fresh one is opened
//! whenever one ends, until shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use protocol::api::{HostKind, PutSessionRequest};
use protocol::peer::EndReason;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::driver::run_host;
use crate::host::{HostConfig, HostSession};
use crate::signaling::{HostedSession, LobbyClient, SignalingError};
use crate::webrtc::{HostOffer, WebRtcLink, WebRtcOptions};

/// How long one answer long-poll waits (the server caps it).
const ANSWER_POLL: Duration = Duration::from_secs(20);
/// How often a session's TTL is refreshed besides the answer polls.
const REFRESH_EVERY: Duration = Duration::from_secs(20);
/// Pause after a failed lobby call or handshake before the loop goes on.
const RETRY_PAUSE: Duration = Duration::from_secs(1);
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
    /// ICE options of every connection.
    pub webrtc: WebRtcOptions,
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

/// How one session went.
#[derive(Clone, Debug)]
pub struct SessionReport {
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
    let config = Arc::new(config);
    let mut running = JoinSet::new();
    let mut failures = 0u32;
    let mut shutdown_rx = shutdown.clone();
    loop {
        while !*shutdown.borrow() && running.len() < config.sessions.max(1) {
            running.spawn(run_session(
                config.clone(),
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

fn create_request(config: &HostingConfig, offer: &str) -> PutSessionRequest {
    PutSessionRequest {
        offer: Some(offer.to_owned()),
        public: Some(config.public),
        name: Some(config.name.clone()),
        host_name: config.host.host_player.as_ref().map(|(_, n)| n.clone()),
        players: Some(config.local_players().max(1)),
        max_players: Some(config.max_players),
        build: Some(config.host.build_version.clone()),
        difficulty: serde_json::to_value(config.host.difficulty)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned)),
        campaign: Some("generated".into()),
        host_kind: Some(HostKind::Daemon),
        ..Default::default()
    }
}

/// One session from creation to deletion.
pub async fn run_session(
    config: Arc<HostingConfig>,
    client: LobbyClient,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<SessionReport> {
    let offer = HostOffer::new(&config.webrtc)
        .await
        .context("gathering the first offer")?;
    let session = client
        .create_session(&create_request(&config, offer.offer_sdp()))
        .await
        .context("creating the session in the lobby")?;
    let round = session
        .round
        .context("the lobby opened no round for the offer")?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "session {}", session.code);
        let _ = out.flush();
    }
    let mut host_config = config.host.clone();
    host_config.expected_guests = config.start_when;
    let (link_tx, link_rx) = mpsc::channel::<WebRtcLink>(8);
    let (progress_tx, progress_rx) = watch::channel(0u64);
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
    let mut host_task = tokio::spawn(run_host(
        HostSession::new(host_config),
        link_rx,
        host_shutdown,
        Some(progress_tx),
    ));
    let opened = Instant::now();
    let counter = Arc::new(AtomicUsize::new(0));
    let mut rounds = std::pin::pin!(round_loop(
        &config,
        &client,
        &session,
        (offer, round),
        link_tx,
        progress_rx.clone(),
        counter.clone(),
    ));
    let mut rounds_done = false;
    let mut joined = 0usize;
    let mut unlisted = false;
    let mut progress = progress_rx;
    let lobby_deadline = config.lobby_timeout.map(|t| opened + t);
    let mut lobby_timed_out = false;
    let mut refresh = tokio::time::interval_at(opened + REFRESH_EVERY, REFRESH_EVERY);
    refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let host = loop {
        tokio::select! {
            h = &mut host_task => break h.context("the host session task failed")?,
            n = &mut rounds, if !rounds_done => {
                rounds_done = true;
                joined = n;
            }
            _ = refresh.tick() => {
                // Answer polls refresh the TTL too; this covers the rest
                // (no round open, the session running).
                if let Err(e) = client.refresh(&session).await {
                    tracing::debug!(error = %e, "TTL refresh failed");
                }
            }
            changed = progress.changed(), if !unlisted => {
                if changed.is_err() {
                    unlisted = true;
                } else if *progress.borrow() > 0 {
                    unlisted = true;
                    if let Err(e) = client.set_public(&session, false).await {
                        tracing::warn!(error = %e, "could not unlist the started session");
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
                // Nobody came: close. (With at least one guest in, the
                // session's own deadline starts it without the others.)
                if *progress.borrow() == 0 && counter.load(Ordering::SeqCst) == 0 {
                    tracing::info!(code = %session.code, "lobby timeout with no guest: closing");
                    let _ = stop_tx.send(true);
                }
            }
        }
    };
    let joined = joined.max(counter.load(Ordering::SeqCst));
    if let Err(e) = client.delete(&session).await
        && !matches!(e, SignalingError::NoSuchSession(_))
    {
        tracing::warn!(error = %e, "could not delete the session from the lobby");
    }
    Ok(SessionReport {
        code: session.code.clone(),
        end: host.ended(),
        joined,
        levels_completed: host.stats().levels_completed,
    })
}

/// Serves offer rounds: waits for each answer, connects, hands the link to
/// the session, publishes the next round while the session is waiting and
/// has room. Returns the number of links handed over when it stops (the
/// session is gone, or rounds cannot be published any more).
async fn round_loop(
    config: &HostingConfig,
    client: &LobbyClient,
    session: &HostedSession,
    first: (HostOffer, u32),
    links: mpsc::Sender<WebRtcLink>,
    progress: watch::Receiver<u64>,
    counter: Arc<AtomicUsize>,
) -> usize {
    let (first_offer, first_round) = first;
    let mut offer = Some(first_offer);
    let mut round = Some(first_round);
    let mut joined = 0usize;
    let seats = config.guest_seats();
    loop {
        let (Some(current), Some(r)) = (offer.take(), round) else {
            // No round open (full or started): nothing left to serve.
            return joined;
        };
        let answer = match client.wait_answer(session, r, ANSWER_POLL).await {
            Ok(Some(a)) => a,
            Ok(None) => {
                offer = Some(current);
                continue;
            }
            Err(SignalingError::NoSuchSession(_) | SignalingError::Rejected(_)) => return joined,
            Err(e) => {
                tracing::warn!(error = %e, "answer poll failed; retrying");
                offer = Some(current);
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        match current.accept(&answer.answer).await {
            Ok(link) => {
                if links.send(link).await.is_err() {
                    return joined;
                }
                joined += 1;
                counter.store(joined, Ordering::SeqCst);
                tracing::info!(code = %session.code, name = %answer.name, guests = joined, "guest connected");
            }
            Err(e) => tracing::warn!(error = %e, "a joiner's connection failed"),
        }
        let started = *progress.borrow() > 0;
        let players = config.local_players() + joined as u32;
        // Publish the next round only while the session still waits for
        // guests; after the start nobody more is admitted.
        if started || joined >= seats || joined >= config.start_when {
            let _ = client
                .update(
                    session,
                    &PutSessionRequest {
                        players: Some(players),
                        ..Default::default()
                    },
                )
                .await;
            return joined;
        }
        let next = match HostOffer::new(&config.webrtc).await {
            Ok(o) => o,
            Err(e) => {
                tracing::warn!(error = %e, "gathering the next offer failed");
                return joined;
            }
        };
        match client
            .update(
                session,
                &PutSessionRequest {
                    offer: Some(next.offer_sdp().to_owned()),
                    players: Some(players),
                    ..Default::default()
                },
            )
            .await
        {
            Ok(resp) => {
                round = resp.round;
                offer = Some(next);
            }
            Err(e) => {
                tracing::warn!(error = %e, "publishing the next round failed");
                return joined;
            }
        }
    }
}
