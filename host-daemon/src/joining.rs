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
use protocol::BUILD_VERSION;
use protocol::join;

use crate::driver::run_guest_until;
use crate::game::GameName;
use crate::lobby_client::{LobbyClient, SignalingError};
use crate::transport::webrtc::{Endpoint, GuestAnswer, WebRtcLink, WebRtcOptions};
use engine::RaycasterEngine;
use game_api::Game;
use tag::TagWorld;

/// How long a joiner keeps trying for a round (lost races, the gap
/// between rounds): the policy of `protocol::join`.
const ROUND_WAIT: Duration = Duration::from_millis(join::ROUND_WAIT_MS);
/// How long a joiner waits for a round of an unlisted session with room.
const UNLISTED_ROUND_WAIT: Duration = Duration::from_millis(join::UNLISTED_ROUND_WAIT_MS);
/// Extra whole tries after a connection that failed to open.
const CONNECT_RETRIES: u32 = 2;
/// Pause between tries.
const RETRY_PAUSE: Duration = Duration::from_millis(join::RETRY_PAUSE_MS);

/// Why a join failed.
#[derive(Debug, Error)]
pub enum JoinError {
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
        SignalingError::FullOrStarted(_) => JoinError::FullOrStarted(code.to_owned()),
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

/// Takes a round of the session in the lobby and connects to its host
/// (on an endpoint of its own), retrying lost races and failed handshakes
/// a bounded number of times.
pub async fn connect(config: &JoinConfig) -> Result<WebRtcLink, JoinError> {
    let code = config.code.trim().to_owned();
    let client = LobbyClient::new(&config.server).map_err(|e| lobby_err(&code, e))?;
    // Racing joiners: the loser of a round retries on the next one; between
    // rounds (the host is connecting the previous joiner) a listed session
    // with room shows no round for a moment. Bounded in count and time.
    let began = tokio::time::Instant::now();
    let mut deadline = began + ROUND_WAIT;
    let mut lost_rounds = 0u32;
    let mut connect_retries = 0u32;
    loop {
        let retry_ok =
            lost_rounds < join::MAX_LOST_ROUNDS && tokio::time::Instant::now() < deadline;
        let open = match client.join_offer(&code).await {
            Ok(open) => open,
            Err(SignalingError::FullOrStarted(_)) if retry_ok => {
                let view = client
                    .get_session(&code)
                    .await
                    .map_err(|e| lobby_err(&code, e))?;
                // A spectator needs no seat: the host opens rounds while
                // it has spectator places.
                let room =
                    config.spectate || view.entry.summary.players < view.entry.summary.max_players;
                let wait = view.public || began.elapsed() < UNLISTED_ROUND_WAIT;
                if room && wait {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
                return Err(JoinError::FullOrStarted(code));
            }
            Err(e) => return Err(lobby_err(&code, e)),
        };
        if open.view.entry.summary.build != BUILD_VERSION {
            return Err(JoinError::VersionMismatch {
                code,
                detail: format!(
                    "host runs {}, this guest runs {}",
                    open.view.entry.summary.build, BUILD_VERSION
                ),
            });
        }
        let connect_err = |detail: String| JoinError::Connect {
            code: code.clone(),
            timeout: config.webrtc.connect_timeout,
            detail,
        };
        let endpoint = Endpoint::bind(&config.webrtc)
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        let answer = GuestAnswer::new(&endpoint, &open.offer)
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        match client
            .post_answer(
                &code,
                open.round,
                answer.answer_sdp().to_owned(),
                Some(config.name.clone()),
            )
            .await
        {
            Ok(_) => {}
            Err(SignalingError::RoundTaken { .. }) if retry_ok => {
                lost_rounds += 1;
                answer.close().await;
                tokio::time::sleep(RETRY_PAUSE).await;
                continue;
            }
            Err(e) => {
                answer.close().await;
                return Err(lobby_err(&code, e));
            }
        }
        match answer.connect().await {
            Ok(link) => return Ok(link),
            // A handshake can fail on a lossy path (the host then drops that
            // round and opens a fresh one): try again, a bounded number of
            // times, before reporting the failure.
            Err(e) if connect_retries < CONNECT_RETRIES => {
                connect_retries += 1;
                tracing::warn!(error = %e, try = connect_retries, "connection failed; joining again");
                tokio::time::sleep(RETRY_PAUSE).await;
                // The round wait starts again for the new try.
                deadline = tokio::time::Instant::now() + ROUND_WAIT;
            }
            Err(e) => return Err(connect_err(e.to_string())),
        }
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
    })
}
