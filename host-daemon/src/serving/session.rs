//! One session from its creation in the lobby to its deletion: published,
//! served to the guests its rounds connect, its lobby entry kept current,
//! its report printed and (with a control API) filed.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context;
use protocol::api::{ErrorCode, HostKind, PutSessionRequest};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::rounds::round_loop;
use super::{REFRESH_EVERY, ServingConfig, SessionOutcome};
use crate::control::hub::{ControlHub, OpenRefused};
use crate::control::view::{OpenedBy, SessionFigures, SessionKind, SessionState, SessionView};
use crate::driver::{Observers, Served, ServedProgress, run_served};
use crate::game::{self, GameName};
use crate::lobby_client::{LobbyClient, PublishedSession, SignalingError};
use crate::metrics::DaemonMetrics;
use crate::relaying::RelaySession;
use crate::replay_files::ReplayFiles;
use crate::stdout;
use crate::transport::webrtc::{Endpoint, WebRtcLink};
use game_api::{Game, GameWire};
use lockstep::peer::PeerRelay;
use lockstep::peer::PeerRelayConfig;
use netcode::host::{HostConfig, HostSession};

/// Who opened a session and who hears of it: the control API's registry
/// (if there is one) and, for a tester's order, where its code goes.
#[derive(Debug)]
pub struct Ticket {
    opened_by: OpenedBy,
    hub: Option<ControlHub>,
    reply: Option<oneshot::Sender<Result<String, OpenRefused>>>,
}

impl Ticket {
    /// One of the sessions the daemon keeps open by itself.
    pub fn standing(hub: Option<ControlHub>) -> Self {
        Self {
            opened_by: OpenedBy::Flags,
            hub,
            reply: None,
        }
    }

    /// A tester's order, answered on `reply` once the lobby has it.
    pub fn ordered(
        hub: Option<ControlHub>,
        reply: oneshot::Sender<Result<String, OpenRefused>>,
    ) -> Self {
        Self {
            opened_by: OpenedBy::Control,
            hub,
            reply: Some(reply),
        }
    }
}

fn create_request(config: &ServingConfig) -> PutSessionRequest {
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
        // Difficulty is the raycaster's: other games list none.
        difficulty: (config.game == GameName::Raycaster)
            .then(|| serde_json::to_value(config.host.settings.difficulty).ok())
            .flatten()
            .and_then(|v| v.as_str().map(str::to_owned)),
        campaign: Some(config.campaign_name.clone()),
        host_kind: Some(if config.relay.is_some() {
            HostKind::Relay
        } else {
            HostKind::Daemon
        }),
        bots: Some(config.bots),
        // A host's start rule counts guests; the lobby counts players.
        start_at: u32::try_from(config.start_when)
            .ok()
            .map(|n| n + config.local_players())
            .map(|n| n.min(config.max_players)),
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
/// never publishes a refused name, and keeps serving. Returns the session
/// and the name it is listed under.
async fn create_session(
    client: &LobbyClient,
    config: &ServingConfig,
) -> Result<(PublishedSession, String), SignalingError> {
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
            let session = client.create_session(&neutral).await?;
            Ok((session, NEUTRAL_NAME.to_owned()))
        }
        other => other.map(|session| (session, config.name.clone())),
    }
}

/// One session from creation to deletion.
pub async fn run_session(
    config: Arc<ServingConfig>,
    endpoint: Endpoint,
    client: LobbyClient,
    shutdown: watch::Receiver<bool>,
    mut ticket: Ticket,
) -> anyhow::Result<SessionOutcome> {
    let created = create_session(&client, &config).await;
    if let Some(reply) = ticket.reply.take() {
        let answer = match &created {
            Ok((session, _)) => Ok(session.code.clone()),
            Err(e) => Err(OpenRefused::Lobby(e.to_string())),
        };
        let _ = reply.send(answer);
    }
    let (session, name) = created.context("creating the session in the lobby")?;
    stdout::line(&format!("session {}", session.code));
    let (stop, _) = watch::channel(false);
    let filed = ticket.hub.as_ref().map(|hub| {
        let view = view_of(&config, &session.code, name, ticket.opened_by);
        hub.opened(view, stop.clone());
        follow_figures(hub.clone(), session.code.clone())
    });
    let (figures, figures_done) = match filed {
        Some((tx, done)) => (Some(tx), Some(done)),
        None => (None, None),
    };
    let control = SessionControl { stop, figures };
    let served = Serving {
        config: &config,
        client: &client,
        session: &session,
        endpoint: &endpoint,
        ticket: &ticket,
        figures_done,
    };
    if let Some(relay) = &config.relay {
        let mut relay = relay.clone();
        relay.relay.start_players = config.start_when;
        relay.relay.lobby_wait = config.lobby_timeout;
        relay.relay.max_players = config.guest_seats();
        // A fresh secret per session: its rejoin tokens resume nothing else.
        relay.rejoin_secret = Some(rand::random());
        return match config.game {
            GameName::Raycaster => served.relay(relay, shutdown, control).await,
            GameName::Tag => {
                let relay = game::tag_relay(relay, config.seed, config.round_ticks);
                served.relay(relay, shutdown, control).await
            }
        };
    }
    let mut host_config = config.host.clone();
    host_config.expected_guests = config.start_when;
    host_config.lobby_wait = config.lobby_timeout;
    host_config.max_guests = Some(config.guest_seats());
    // A fresh secret per session: its rejoin tokens resume nothing else.
    host_config.rejoin_secret = Some(rand::random());
    match config.game {
        GameName::Raycaster => served.host(host_config, shutdown, control).await,
        GameName::Tag => {
            let rounds = host_config.plan.level_count();
            let tag = game::tag_host(host_config, config.seed, rounds, config.round_ticks);
            served.host(tag, shutdown, control).await
        }
    }
}

/// One published session, served as a host or a relay session of
/// whichever game.
struct Serving<'a> {
    config: &'a Arc<ServingConfig>,
    client: &'a LobbyClient,
    session: &'a PublishedSession,
    endpoint: &'a Endpoint,
    ticket: &'a Ticket,
    figures_done: Option<tokio::task::JoinHandle<()>>,
}

impl Serving<'_> {
    /// Serves a relay session of game `W` to its end, reports and deletes
    /// it.
    async fn relay<W: GameWire>(
        self,
        relay: PeerRelayConfig<W>,
        shutdown: watch::Receiver<bool>,
        control: SessionControl,
    ) -> anyhow::Result<SessionOutcome> {
        let served = RelaySession::new(PeerRelay::new(relay));
        let served = self.serve(served, shutdown, control).await?;
        let report = served.report();
        stdout::relay_report(&self.session.code, &report);
        let code = self.finish(report.end_name(), &report).await;
        Ok(SessionOutcome {
            code,
            end: None,
            joined: served.relay().connections_ever(),
            levels_completed: served.relay().relay().epoch(),
        })
    }

    /// Serves a host session of game `G` to its end, reports and deletes
    /// it.
    async fn host<G>(
        self,
        host_config: HostConfig<G>,
        shutdown: watch::Receiver<bool>,
        control: SessionControl,
    ) -> anyhow::Result<SessionOutcome>
    where
        G: Game + 'static,
        HostSession<G>: Send,
    {
        let host = self
            .serve(HostSession::new(host_config), shutdown, control)
            .await?;
        let report = host.report();
        stdout::session_report(&self.session.code, &report);
        let code = self.finish(report.end_reason.map(end_name), &report).await;
        Ok(SessionOutcome {
            code,
            end: host.ended(),
            joined: host.connections(),
            levels_completed: host.stats().levels_completed,
        })
    }

    /// Serves `served` in this published session to its end.
    async fn serve<T: Served>(
        &self,
        served: T,
        shutdown: watch::Receiver<bool>,
        control: SessionControl,
    ) -> anyhow::Result<T> {
        serve(
            served,
            self.config,
            self.client,
            self.session,
            self.endpoint,
            shutdown,
            control,
        )
        .await
    }

    /// Deletes the lobby entry, then files the end-of-session report with
    /// the control hub (so whoever reads the report finds the entry gone);
    /// returns the session's code.
    async fn finish<R: serde::Serialize>(self, end: Option<String>, report: &R) -> String {
        delete(self.client, self.session).await;
        file_report(self.ticket, self.session, self.figures_done, end, report).await;
        self.session.code.clone()
    }
}

async fn delete(client: &LobbyClient, session: &PublishedSession) {
    if let Err(e) = client.delete(session).await
        && !matches!(
            e,
            SignalingError::NoSuchSession(_) | SignalingError::EndedByModerator(_)
        )
    {
        tracing::warn!(error = %e, "could not delete the session from the lobby");
    }
}

/// How a session is stopped before its end, and where its figures go.
struct SessionControl {
    /// True: end it now (a tester's end, or a lobby timeout).
    stop: watch::Sender<bool>,
    /// Its figures, for the control API.
    figures: Option<watch::Sender<SessionFigures>>,
}

/// Serves `served` to the guests the round loop connects, keeping its
/// lobby entry current, until it ends. Returns it, finished.
async fn serve<T: Served>(
    served: T,
    config: &Arc<ServingConfig>,
    client: &LobbyClient,
    session: &PublishedSession,
    endpoint: &Endpoint,
    shutdown: watch::Receiver<bool>,
    control: SessionControl,
) -> anyhow::Result<T> {
    let metrics = config.metrics.as_ref().map(DaemonMetrics::session);
    let (link_tx, link_rx) = mpsc::channel::<WebRtcLink>(8);
    let (progress_tx, progress_rx) = watch::channel(ServedProgress::default());
    let SessionControl {
        stop: stop_tx,
        figures,
    } = control;
    let stop_rx = stop_tx.subscribe();
    let served_shutdown = {
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
    let served_run = run_served(
        served,
        link_rx,
        served_shutdown,
        Observers {
            progress: Some(progress_tx),
            metrics,
            replays,
            figures,
        },
    );
    let mut served_task = tokio::spawn(served_run);
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
    let finished = loop {
        tokio::select! {
            h = &mut served_task => break h.context("the served session task failed")?,
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
    Ok(finished)
}

/// The view of a session just opened.
fn view_of(config: &ServingConfig, code: &str, name: String, opened_by: OpenedBy) -> SessionView {
    let opened_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let (kind, levels, difficulty) = match &config.relay {
        Some(relay) => (SessionKind::Relay, relay.levels, relay.settings.difficulty),
        None => (
            SessionKind::Host,
            config.host.plan.level_count(),
            config.host.settings.difficulty,
        ),
    };
    SessionView {
        code: code.to_owned(),
        kind,
        state: SessionState::Waiting,
        name,
        opened_by,
        opened_at_ms,
        level: 0,
        levels,
        difficulty: difficulty.as_str().to_owned(),
        seed: config.seed,
        ticks: 0,
        players: Vec::new(),
        spectators: 0,
        bytes_sent: 0,
        end: None,
        replays: Vec::new(),
    }
}

/// A channel for session `code`'s figures, each filed with `hub` as it
/// comes; the task ends (the returned handle resolves) once the last
/// figures are filed and the sender is gone.
fn follow_figures(
    hub: ControlHub,
    code: String,
) -> (watch::Sender<SessionFigures>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = watch::channel(SessionFigures::default());
    let task = tokio::spawn(async move {
        while rx.changed().await.is_ok() {
            let figures = rx.borrow_and_update().clone();
            hub.update(&code, &figures);
        }
    });
    (tx, task)
}

/// Files a finished session's report with the control API, after its last
/// figures.
async fn file_report<R: serde::Serialize>(
    ticket: &Ticket,
    session: &PublishedSession,
    figures_done: Option<tokio::task::JoinHandle<()>>,
    end: Option<String>,
    report: &R,
) {
    let Some(hub) = &ticket.hub else {
        return;
    };
    if let Some(done) = figures_done {
        let _ = done.await;
    }
    let report = serde_json::to_value(report).unwrap_or_default();
    hub.finished(&session.code, end, report);
}

/// An end reason as the wire spells it (`completed`, `host-shutdown`, ...).
fn end_name(reason: protocol::peer::EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
