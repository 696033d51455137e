//! `host-daemon join CODE`: a guest (a bot by default) that joins a session
//! through the lobby over real WebRTC and plays it to the end.
//!
//! It reads the session's open round, answers it with a complete answer,
//! connects, runs the guest session, and reports one [`JoinReport`]. Every
//! way of not getting in is a [`JoinError`] with a clear message.

use std::time::Duration;

use protocol::peer::{EndReason, RefusalReason};
use serde::{Serialize, Serializer};
use thiserror::Error;

use netcode::guest::{GuestConfig, GuestEnd, GuestEvent, GuestSession};
use netcode::netgraph::GuestTotals;
use protocol::BUILD_VERSION;
use protocol::joining::{JoinEvent, JoinFailure, JoinStep, Joining, PauseReason, SessionFacts};

use crate::driver::run_guest_until;
use crate::game::GameName;
use crate::lobby_client::{LobbyClient, SignalingError};
use crate::transport::webrtc::{Endpoint, GuestAnswer, WebRtcLink, WebRtcOptions};
use engine::RaycasterEngine;
use game_api::Game;
use tag::TagWorld;

/// Why a join failed.
#[derive(Debug, Error)]
pub enum JoinError {
    /// What was given is not a session code.
    #[error("cannot join: {0}")]
    InvalidCode(String),
    /// No such session (unknown or expired).
    #[error("cannot join {0}: no such session (unknown or expired)")]
    NoSuchSession(String),
    /// No open round: the session is full or has started.
    #[error("cannot join {0}: the session is full or has already started")]
    FullOrStarted(String),
    /// Another joiner took the round we answered.
    #[error("cannot join {0}: another player took the seat first; try again")]
    RoundTaken(String),
    /// The host runs another build.
    #[error("cannot join {code}: version mismatch: {detail}")]
    VersionMismatch {
        /// The session.
        code: String,
        /// Both sides' builds.
        detail: String,
    },
    /// The host refused the join: the session started.
    #[error("cannot join {code}: the session has already started ({detail})")]
    Started {
        /// The session.
        code: String,
        /// The host's detail.
        detail: String,
    },
    /// Refused for another reason.
    #[error("cannot join {code}: refused by the host ({reason:?}): {detail}")]
    Refused {
        /// The session.
        code: String,
        /// Why.
        reason: RefusalReason,
        /// The host's detail.
        detail: String,
    },
    /// The WebRTC connection did not come up in time.
    #[error(
        "cannot join {code}: the connection to the host failed (ICE/DTLS, timeout {timeout:?}): {detail}"
    )]
    Connect {
        /// The session.
        code: String,
        /// The connect timeout in force.
        timeout: Duration,
        /// What failed.
        detail: String,
    },
    /// The session could not be set up on this side.
    #[error("cannot join {code}: setup failed: {detail}")]
    SetupFailed {
        /// The session.
        code: String,
        /// What failed.
        detail: String,
    },
    /// This side could no longer follow the running session.
    #[error("session {code} failed on this side: {detail}")]
    Failed {
        /// The session.
        code: String,
        /// What failed.
        detail: String,
    },
    /// Any other lobby error.
    #[error("cannot join {code}: {source}")]
    Lobby {
        /// The session.
        code: String,
        /// The lobby error.
        #[source]
        source: SignalingError,
    },
}

/// How the guest's run ended: the session's end reason, or `left` when
/// the guest left on its own (`--leave-after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinEnd {
    /// The session ended (the host said why, or the host was lost).
    Session(EndReason),
    /// This guest left before the end.
    Left,
}

impl Serialize for JoinEnd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Session(r) => r.serialize(s),
            Self::Left => s.serialize_str("left"),
        }
    }
}

/// The one-line JSON report printed at the end.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinReport {
    /// The session joined.
    pub code: String,
    /// This guest's player id.
    pub player_id: Option<String>,
    /// Why the run ended.
    pub end_reason: JoinEnd,
    /// Levels completed (transitions followed, plus the last one on `completed`).
    pub levels_completed: u32,
    /// Ticks applied (bundles), all levels.
    pub ticks: u64,
    /// Hash reports of this guest that disagreed with the host, as counted
    /// by the host (its end-of-run table); `None` when the host sent no
    /// table (lost host, or this guest left).
    pub desyncs: Option<u32>,
    /// Of those, mismatches a reconciliation snapshot did not clear.
    pub persistent_desyncs: Option<u32>,
    /// Ticks on which the host used this guest's held input (its real
    /// input arrived too late), as counted by the host.
    pub held_inputs: Option<u64>,
    /// Reconciliation snapshots that changed this guest's world hash (its
    /// own count: what the snapshots corrected).
    pub snapshot_corrections: u64,
    /// Snapshots applied.
    pub snapshots_applied: u64,
    /// Times a relay rebuilt this guest in place after it desynced.
    pub resyncs: u64,
    /// This guest's kill score over the run, from the host's end table.
    pub kill_score: Option<u32>,
    /// This guest's input delay in the last level it played, ticks (fitted
    /// to its link when the host offers `input-delay`).
    pub input_delay_ticks: u64,
    /// For a late joiner or a rejoiner: the tick of the world state the
    /// host handed it (it simulated from there; a late joiner entered the
    /// roster the tick before, the host report's `joinedAtTick`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_tick: Option<u64>,
    /// This run resumed a player with the token of `--resume-file`.
    pub resumed: bool,
    /// This guest watched (`--spectate`): `playerId` is its spectator id.
    pub spectator: bool,
    /// This guest's world hash at its last applied tick, 16 hex digits:
    /// the host's `finalWorldHash` when it followed the session to the
    /// end.
    pub final_world_hash: Option<String>,
    /// What crossed the link each way and what the snapshots corrected
    /// (the netgraph's figures, for the whole run).
    pub traffic: GuestTotals,
}

/// What `join` needs.
#[derive(Clone, Debug)]
pub struct JoinConfig {
    /// Lobby base URL.
    pub server: String,
    /// Session code.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Drive the player with the bot.
    pub bot: bool,
    /// The WebRTC options (each join attempt binds an endpoint of its
    /// own: a connection per socket, so a rejoin never shares an address
    /// pair with the connection it replaces).
    pub webrtc: WebRtcOptions,
    /// Leave this long after connecting (soak tests).
    pub leave_after: Option<Duration>,
    /// `--resume-file`: where the host's rejoin token is written once the
    /// session admits this guest; when the file exists at the start, its
    /// token goes with the hello, so a restarted guest resumes its player.
    pub resume_file: Option<std::path::PathBuf>,
    /// Watch instead of play (`--spectate`).
    pub spectate: bool,
    /// The game the session plays (`--game`).
    pub game: GameName,
}

fn lobby_err(code: &str, e: SignalingError) -> JoinError {
    match e {
        SignalingError::NoSuchSession(_) | SignalingError::EndedByModerator(_) => {
            JoinError::NoSuchSession(code.to_owned())
        }
        SignalingError::RoundTaken { .. } => JoinError::RoundTaken(code.to_owned()),
        source => JoinError::Lobby {
            code: code.to_owned(),
            source,
        },
    }
}

/// The token a resume file holds, if it exists and holds one.
fn read_token(file: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    let token = text.trim();
    (!token.is_empty() && token.len() <= 128).then(|| token.to_owned())
}

/// What the joining machine hears of a failed lobby call (the HTTP client
/// already waited out the lobby's Retry-After a few times before giving
/// up on a 429).
fn refusal(e: &SignalingError) -> JoinEvent {
    JoinEvent::Refused {
        code: e.api_code(),
        retry_after_ms: None,
    }
}

/// Takes a round of the session in the lobby and connects to its host
/// (on an endpoint of its own), as the joining machine says
/// (`protocol::joining`, which the browser follows too): lost races, the
/// gap between rounds, 429s and failed handshakes are retried a bounded
/// number of times; this function only does the steps.
pub async fn connect(config: &JoinConfig) -> Result<WebRtcLink, JoinError> {
    let typed = config.code.trim();
    let client = LobbyClient::new(&config.server).map_err(|e| lobby_err(typed, e))?;
    let origin = tokio::time::Instant::now();
    let now = || u64::try_from(origin.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut joining = Joining::new(typed, config.spectate, BUILD_VERSION, now());
    let mut step = joining.start();
    // The error behind the last step that failed: what a failure the
    // machine reports as "reported" is.
    let mut last: Option<JoinError> = None;
    let mut answer: Option<GuestAnswer> = None;
    let mut joined: Option<WebRtcLink> = None;
    // For messages: the canonical code, or what was typed when it is none.
    let code = joining
        .code()
        .map_or_else(|| typed.to_owned(), |c| c.as_str().to_owned());
    loop {
        let event = match step {
            JoinStep::ReadSession { code } => match client.get_session(code.as_str()).await {
                Ok(view) => JoinEvent::Session(SessionFacts::from(&view)),
                Err(e) => {
                    let event = refusal(&e);
                    last = Some(lobby_err(code.as_str(), e));
                    event
                }
            },
            JoinStep::Pause { ms, why } => {
                if why == PauseReason::ConnectFailed {
                    tracing::warn!("connection failed; joining again");
                }
                tokio::time::sleep(Duration::from_millis(ms)).await;
                JoinEvent::Paused
            }
            JoinStep::Answer { code, round, offer } => {
                match answer_round(config, &client, code.as_str(), round, &offer).await {
                    Ok(made) => {
                        answer = Some(made);
                        JoinEvent::Answered
                    }
                    Err((event, error)) => {
                        last = Some(error);
                        event
                    }
                }
            }
            JoinStep::Connect { round } => match answer.take() {
                Some(made) => match made.connect().await {
                    Ok(link) => {
                        joined = Some(link);
                        JoinEvent::Connected
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, round, "connection to the host failed");
                        last = Some(connect_error(config, &code, e.to_string()));
                        JoinEvent::ConnectFailed
                    }
                },
                None => JoinEvent::ConnectFailed,
            },
            JoinStep::Joined => {
                return joined.ok_or_else(|| JoinError::Failed {
                    code: code.clone(),
                    detail: "joined without a connection".into(),
                });
            }
            JoinStep::Fail { failure } => return Err(join_failure(failure, last, &code)),
        };
        step = joining.on(event, now()).map_err(|e| JoinError::Failed {
            code: code.clone(),
            detail: e.to_string(),
        })?;
    }
}

/// Makes a complete answer to `offer` on an endpoint of its own and posts
/// it for `round`: the answer, ready to connect, or what to tell the
/// machine and the error behind it.
async fn answer_round(
    config: &JoinConfig,
    client: &LobbyClient,
    code: &str,
    round: u32,
    offer: &str,
) -> Result<GuestAnswer, (JoinEvent, JoinError)> {
    let made = async {
        let endpoint = Endpoint::bind(&config.webrtc).await?;
        GuestAnswer::new(&endpoint, offer).await
    };
    let made = made.await.map_err(|e| {
        let error = connect_error(config, code, e.to_string());
        (JoinEvent::ConnectFailed, error)
    })?;
    let sdp = made.answer_sdp().to_owned();
    match client
        .post_answer(code, round, sdp, Some(config.name.clone()))
        .await
    {
        Ok(_) => Ok(made),
        Err(e) => {
            made.close().await;
            Err((refusal(&e), lobby_err(code, e)))
        }
    }
}

fn connect_error(config: &JoinConfig, code: &str, detail: String) -> JoinError {
    JoinError::Connect {
        code: code.to_owned(),
        timeout: config.webrtc.connect_timeout,
        detail,
    }
}

/// The machine's failure as this command reports it: the error behind
/// the last failed step when the failure is that error, else the
/// machine's own finding.
fn join_failure(failure: JoinFailure, last: Option<JoinError>, code: &str) -> JoinError {
    let code = code.to_owned();
    match (failure, last) {
        (f, Some(last)) if f.is_reported() => last,
        (f @ JoinFailure::InvalidCode { .. }, _) => JoinError::InvalidCode(f.to_string()),
        (JoinFailure::VersionMismatch { host, own }, _) => JoinError::VersionMismatch {
            code,
            detail: format!("host runs {host}, this guest runs {own}"),
        },
        (JoinFailure::NoSuchSession, _) => JoinError::NoSuchSession(code),
        (JoinFailure::RoundsLost { .. }, _) => JoinError::RoundTaken(code),
        (_, _) => JoinError::FullOrStarted(code),
    }
}

/// Joins and plays a session to its end.
pub async fn join(config: JoinConfig) -> Result<JoinReport, JoinError> {
    let link = connect(&config).await?;
    match config.game {
        GameName::Raycaster => play::<RaycasterEngine>(&config, link).await,
        GameName::Tag => play::<TagWorld>(&config, link).await,
    }
}

/// Plays game `E` over `link` to the session's end.
async fn play<E: Game>(config: &JoinConfig, link: WebRtcLink) -> Result<JoinReport, JoinError> {
    let code = config.code.trim().to_owned();
    let closer = link.sender.clone();
    let leave = async {
        match config.leave_after {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    let resume_token = config.resume_file.as_deref().and_then(read_token);
    let resume_file = config.resume_file.clone();
    let session = run_guest_until(
        GuestSession::<E>::new(GuestConfig {
            display_name: config.name.clone(),
            bot: config.bot,
            resume_token,
            spectate: config.spectate,
            ..GuestConfig::default()
        }),
        link,
        leave,
        |event| {
            if let (
                GuestEvent::Admitted {
                    rejoin_token: Some(token),
                    ..
                },
                Some(file),
            ) = (event, &resume_file)
                && let Err(e) = std::fs::write(file, format!("{token}\n"))
            {
                tracing::warn!(error = %e, file = %file.display(), "could not write the resume file");
            }
        },
    )
    .await;
    // Close before the process exits, so the host sees the guest go at
    // once rather than after an ICE timeout.
    closer.close_and_wait().await;
    let end_reason = match session.ended() {
        Some(GuestEnd::Ended(r)) => JoinEnd::Session(*r),
        Some(GuestEnd::Refused(RefusalReason::SessionStarted, detail)) => {
            return Err(JoinError::Started {
                code,
                detail: detail.clone(),
            });
        }
        Some(GuestEnd::Refused(RefusalReason::VersionMismatch, detail)) => {
            return Err(JoinError::VersionMismatch {
                code,
                detail: detail.clone(),
            });
        }
        Some(GuestEnd::Refused(reason, detail)) => {
            return Err(JoinError::Refused {
                code,
                reason: *reason,
                detail: detail.clone(),
            });
        }
        Some(GuestEnd::SetupFailed(detail)) => {
            return Err(JoinError::SetupFailed {
                code,
                detail: detail.clone(),
            });
        }
        Some(GuestEnd::Failed(detail)) => {
            return Err(JoinError::Failed {
                code,
                detail: detail.clone(),
            });
        }
        // The driver returns before the session ended only when we left.
        None => JoinEnd::Left,
    };
    let stats = session.stats();
    let player_id = session.player_id().map(|p| p.to_string());
    let own_row = session
        .final_scores()
        .iter()
        .find(|r| Some(r.player_id.to_string()) == player_id);
    let kill_score = own_row.map(|r| r.kill_score);
    let link = own_row.map(|r| r.link);
    Ok(JoinReport {
        code,
        player_id,
        end_reason,
        levels_completed: stats.transitions
            + u32::from(end_reason == JoinEnd::Session(EndReason::Completed)),
        ticks: stats.bundles_applied,
        desyncs: link.map(|l| l.desyncs),
        persistent_desyncs: link.map(|l| l.persistent_desyncs),
        held_inputs: link.map(|l| l.held_inputs),
        snapshot_corrections: stats.snapshot_mismatches,
        snapshots_applied: stats.snapshots_applied,
        resyncs: stats.resyncs,
        kill_score,
        input_delay_ticks: session.input_delay(),
        state_tick: session.joined_at().map(|j| j.1),
        resumed: session.resumed(),
        spectator: session.is_spectator(),
        final_world_hash: session
            .last_hash()
            .map(|h| game_api::WorldHash(h.2).to_string()),
        traffic: session.meter().totals(),
    })
}
