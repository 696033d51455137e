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
use protocol::api::{HostKind, PutSessionRequest};
use protocol::peer::EndReason;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use netcode::host::HostConfig;
use netcode::host::join_slots::JoinPolicy;

use crate::driver::{Host, HostProgress, Served, run_host};
use crate::lobby_client::{HostedSession, LobbyClient, SignalingError};
use crate::metrics::DaemonMetrics;
use crate::relaying::RelaySession;
use crate::replay_files::ReplayFiles;
use crate::stdout;
use crate::transport::webrtc::{Endpoint, HostOffer, WebRtcLink, WebRtcOptions};
use lockstep::peer::{PeerRelay, PeerRelayConfig};

mod joins;

use joins::{Joined, Joins};

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

/// One session from creation to deletion.
pub async fn run_session(
    config: Arc<HostingConfig>,
    endpoint: Endpoint,
    client: LobbyClient,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<SessionOutcome> {
    let session = client
        .create_session(&create_request(&config))
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
        && !matches!(e, SignalingError::NoSuchSession(_))
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

/// Publishes `players` in the lobby unless `published` says it already
/// shows that count; a failure is logged and tried again at the next call.
async fn publish_players(
    client: &LobbyClient,
    session: &HostedSession,
    players: u32,
    published: &mut Option<u32>,
) {
    if *published == Some(players) {
        return;
    }
    let update = PutSessionRequest {
        players: Some(players),
        ..Default::default()
    };
    match client.update(session, &update).await {
        Ok(_) => *published = Some(players),
        Err(e) => tracing::debug!(error = %e, "publishing players failed"),
    }
}

/// Serves offer rounds while the session waits in its lobby (and, with
/// late join, while it runs): keeps one round open whenever a seat is
/// free, connects each answer and hands the link to the session. Returns
/// once the session is gone, or has started with late join off.
///
/// An answer is connected in the background and the next round opens at
/// once, so a stranger who grabs a round with an answer that never
/// connects costs the real joiner one round, not the connect timeout (see
/// docs/decisions.md, "Round grabbing"). Answers being connected follow
/// `netcode`'s join policy ([`Joins`]): one that shows no ICE progress
/// within seconds is dropped, and joins in flight delay a round by at
/// most a second, never stop it. Joins in flight do not hold seats: the
/// session refuses a joiner beyond its seats at its hello.
async fn round_loop(
    config: &HostingConfig,
    endpoint: &Endpoint,
    client: &LobbyClient,
    session: &HostedSession,
    links: mpsc::Sender<WebRtcLink>,
    mut progress: watch::Receiver<HostProgress>,
) {
    let mut open: Option<(HostOffer, u32)> = None;
    let mut joins = Joins::new(JoinPolicy {
        connect_deadline: endpoint.options().connect_timeout,
        ..JoinPolicy::default()
    });
    let mut handed = 0usize;
    let mut published_players = None;
    let watchable = config.host.max_spectators > 0;
    loop {
        let p = *progress.borrow_and_update();
        if p.started && !config.host.late_join && !watchable {
            break;
        }
        // Before the start the lobby fills up to `start_when`; after it,
        // late joiners take every seat (none with late join off).
        let wanted = match (p.started, config.host.late_join) {
            (false, _) => config.guest_seats().min(config.start_when),
            (true, true) => config.guest_seats(),
            (true, false) => 0,
        };
        // Spectators hold no seat: a round stays open for them while the
        // seats are full.
        let spectator_place = p.spectators < config.host.max_spectators;
        let players = config.local_players() + u32::try_from(p.seats_taken).unwrap_or(u32::MAX);
        // The lobby follows admissions (and leaves) at once, with the round
        // left open; without a round the next one carries the count.
        if open.is_some() {
            publish_players(client, session, players, &mut published_players).await;
        }
        let Some((offer, round)) = open.take() else {
            let seat_free = p.seats_taken < wanted || spectator_place;
            let opens_at = joins.round_opens_at();
            if seat_free && opens_at <= Instant::now() {
                // A seat is free: open a round.
                let offer = match HostOffer::new(endpoint).await {
                    Ok(o) => o,
                    Err(e) => {
                        tracing::warn!(error = %e, "gathering an offer failed; retrying");
                        tokio::time::sleep(RETRY_PAUSE).await;
                        continue;
                    }
                };
                let update = PutSessionRequest {
                    offer: Some(offer.offer_sdp().to_owned()),
                    players: Some(players),
                    ..Default::default()
                };
                match client.update(session, &update).await {
                    Ok(resp) => match resp.round {
                        Some(r) => {
                            published_players = Some(players);
                            open = Some((offer, r));
                        }
                        None => {
                            tracing::warn!("the lobby opened no round for the offer");
                            offer.close().await;
                            tokio::time::sleep(RETRY_PAUSE).await;
                        }
                    },
                    Err(SignalingError::NoSuchSession(_) | SignalingError::Rejected(_)) => {
                        offer.close().await;
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "publishing a round failed; retrying");
                        offer.close().await;
                        tokio::time::sleep(RETRY_PAUSE).await;
                    }
                }
                continue;
            }
            // Full, or every join slot taken for a moment: keep `players`
            // current, wait for a seat to free up, a join to end, a slot
            // to come free, or the start.
            publish_players(client, session, players, &mut published_players).await;
            tokio::select! {
                changed = seats_changed(&mut progress, &p) => if changed.is_err() {
                    return;
                },
                Some(joined) = joins.next(), if !joins.is_empty() => {
                    if !hand_over(joined, &links, &mut progress, &mut handed).await {
                        return;
                    }
                }
                () = tokio::time::sleep_until(opens_at), if seat_free => {}
            }
            continue;
        };
        let answer = tokio::select! {
            a = client.wait_answer(session, round, ANSWER_POLL) => a,
            changed = seats_changed(&mut progress, &p) => {
                // Seat or start change: re-check with the round still open.
                if changed.is_err() {
                    offer.close().await;
                    return;
                }
                open = Some((offer, round));
                continue;
            }
            Some(joined) = joins.next(), if !joins.is_empty() => {
                open = Some((offer, round));
                if !hand_over(joined, &links, &mut progress, &mut handed).await {
                    return;
                }
                continue;
            }
        };
        let answer = match answer {
            Ok(Some(a)) => a,
            Ok(None) => {
                open = Some((offer, round));
                continue;
            }
            Err(SignalingError::NoSuchSession(_) | SignalingError::Rejected(_)) => {
                offer.close().await;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "answer poll failed; retrying");
                open = Some((offer, round));
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
        };
        joins.start(offer, answer.answer, answer.name);
    }
    // Started: joins still in flight are handed over all the same, so their
    // joiners hear `session-started` from the session instead of silence.
    while let Some(joined) = joins.next().await {
        if !hand_over(joined, &links, &mut progress, &mut handed).await {
            return;
        }
    }
}

/// Hands a connected joiner's link to the session and waits until the
/// session holds it (so the next seat count includes it); logs a failed
/// join. `false` when the session is gone.
/// What of a session's progress the round loop acts on: the start and the
/// seats, never the tick count (which changes 60 times a second).
fn seats_view(p: &HostProgress) -> (bool, usize, usize) {
    (p.started, p.seats_taken, p.spectators)
}

/// Waits until the start or the seats differ from `seen`'s (at once if they
/// already do); an error once the session is gone. A wait for this beside
/// an answer's long-poll ends the poll, so ticks must not end it: they
/// made every session drop and reopen its poll (and its connection to the
/// lobby) on every tick.
async fn seats_changed(
    progress: &mut watch::Receiver<HostProgress>,
    seen: &HostProgress,
) -> Result<(), watch::error::RecvError> {
    let seen = seats_view(seen);
    progress
        .wait_for(|p| seats_view(p) != seen)
        .await
        .map(|_| ())
}

async fn hand_over(
    joined: Joined,
    links: &mpsc::Sender<WebRtcLink>,
    progress: &mut watch::Receiver<HostProgress>,
    handed: &mut usize,
) -> bool {
    let Joined { name, link } = joined;
    let link = match link {
        Ok(link) => link,
        Err(e) => {
            tracing::warn!(error = %e, name = %name, "a joiner's connection failed");
            return true;
        }
    };
    if links.send(link).await.is_err() {
        return false;
    }
    *handed += 1;
    tracing::info!(name = %name, guests = *handed, "guest connected");
    // Bounded: the session may be gone.
    let want = *handed;
    let seen = tokio::time::timeout(
        Duration::from_secs(5),
        progress.wait_for(|p| p.connections >= want || p.started),
    )
    .await;
    matches!(seen, Ok(Ok(_)))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
        std::pin::Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn ticks_do_not_end_a_wait_for_the_seats_and_a_seat_change_does() {
        let (tx, mut rx) = watch::channel(HostProgress::default());
        let seen = *rx.borrow_and_update();
        let mut wait = Box::pin(seats_changed(&mut rx, &seen));
        for tick in 1..=120 {
            tx.send_modify(|p| {
                p.ticks = tick;
                p.connections = 1;
            });
            assert!(poll_once(&mut wait).is_pending(), "tick {tick} ended it");
        }
        tx.send_modify(|p| p.seats_taken = 1);
        assert!(matches!(poll_once(&mut wait), Poll::Ready(Ok(()))));
    }

    #[test]
    fn a_change_made_before_the_wait_ends_it_at_once() {
        let (tx, mut rx) = watch::channel(HostProgress::default());
        let seen = *rx.borrow_and_update();
        tx.send_modify(|p| p.started = true);
        let mut wait = Box::pin(seats_changed(&mut rx, &seen));
        assert!(matches!(poll_once(&mut wait), Poll::Ready(Ok(()))));
        drop(wait);
        drop(tx);
        let seen = *rx.borrow();
        let mut gone = Box::pin(seats_changed(&mut rx, &seen));
        assert!(matches!(poll_once(&mut gone), Poll::Ready(Err(_))));
    }
}
