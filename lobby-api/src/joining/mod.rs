//! Joining a session by code, as a state machine with no I/O: the one
//! joining loop of every campfire client. `host-daemon join` drives it on
//! tokio; the browser drives it through the wasm module (web-bindings'
//! `WebJoining`), keeping only fetch, WebRTC and timers.
//!
//! The driver starts a [`Joining`] with what the joiner typed, does what
//! each [`JoinStep`] says, and reports how it went as a [`JoinEvent`], with
//! the time in milliseconds since an origin of its choosing:
//!
//! ```text
//! ReadSession ─ session with an open round ─▶ Answer ─ answered ─▶ Connect ─ connected ─▶ Joined
//!      ▲  no round yet, room, patient │            │ round taken / 429        │ failed (retries left)
//!      └────────── Pause ◀────────────┴────────────┴──────────────────────────┘
//! ```
//!
//! The rules ([`crate::join`] holds the numbers):
//! - the code is parsed as the lobby parses it ([`SessionCode::parse`]);
//! - a session with no open round is read again every
//!   [`RETRY_PAUSE_MS`] while it has room (a spectator needs no seat: the
//!   host opens rounds while it has places to watch from), for up to
//!   [`ROUND_WAIT_MS`] when it is listed and [`UNLISTED_ROUND_WAIT_MS`]
//!   when it is not;
//! - a host of another build is refused before an answer is made;
//! - a round another joiner won is followed by the next one, at most
//!   [`MAX_LOST_ROUNDS`] times, within the round wait;
//! - a `429` is waited out as the lobby says (at least [`RETRY_PAUSE_MS`])
//!   when that fits in the round wait, then the session is read again;
//! - a connection that failed is tried again on a fresh round, at most
//!   [`CONNECT_RETRIES`] times, each with a round wait of its own.

mod steps;

pub use steps::{JoinEvent, JoinFailure, JoinStep, OutOfTurn, PauseReason, SessionFacts};

use crate::api::ErrorCode;
use crate::code::SessionCode;
use crate::join::{
    CONNECT_RETRIES, MAX_LOST_ROUNDS, RETRY_PAUSE_MS, ROUND_WAIT_MS, UNLISTED_ROUND_WAIT_MS,
};
use steps::event_name;

/// Where the machine is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Reading,
    Pausing,
    Answering { round: u32 },
    Connecting { round: u32 },
    Done,
}

/// One joiner's way into a session. See the module docs.
#[derive(Clone, Debug)]
pub struct Joining {
    code: Result<SessionCode, JoinFailure>,
    spectate: bool,
    build: String,
    /// When the current try began (the start, or a connection retry).
    try_began: u64,
    /// The current try's round wait ends here.
    deadline: u64,
    lost_rounds: u32,
    connect_retries: u32,
    /// Rounds up to this one are not answered again (lost or used).
    used_round: u32,
    phase: Phase,
}

impl Joining {
    /// A joiner of the session `typed` names, running build `build`, to
    /// play or (`spectate`) to watch, starting at `now_ms`.
    pub fn new(typed: &str, spectate: bool, build: &str, now_ms: u64) -> Self {
        let code = SessionCode::parse(typed).map_err(|error| JoinFailure::InvalidCode {
            typed: typed.trim().chars().take(64).collect(),
            error,
        });
        Self {
            code,
            spectate,
            build: build.to_owned(),
            try_began: now_ms,
            deadline: now_ms.saturating_add(ROUND_WAIT_MS),
            lost_rounds: 0,
            connect_retries: 0,
            used_round: 0,
            phase: Phase::Reading,
        }
    }

    /// The first step: read the session, or fail at once on a bad code.
    pub fn start(&mut self) -> JoinStep {
        match &self.code {
            Ok(_) => self.read(),
            Err(failure) => self.fail(failure.clone()),
        }
    }

    /// The session's canonical code, when what was typed is one.
    pub fn code(&self) -> Option<&SessionCode> {
        self.code.as_ref().ok()
    }

    /// Connections that failed and were tried again so far.
    pub fn connect_retries(&self) -> u32 {
        self.connect_retries
    }

    /// Takes what the driver reports and says what to do next.
    pub fn on(&mut self, event: JoinEvent, now_ms: u64) -> Result<JoinStep, OutOfTurn> {
        let out_of_turn = |event: &JoinEvent, phase: &Phase| OutOfTurn {
            event: event_name(event),
            waiting_for: match phase {
                Phase::Reading => "reads the session",
                Phase::Pausing => "pauses",
                Phase::Answering { .. } => "answers a round",
                Phase::Connecting { .. } => "connects",
                Phase::Done => "is done",
            },
        };
        let step = match (&self.phase, event) {
            (Phase::Reading, JoinEvent::Session(facts)) => self.on_session(facts, now_ms),
            (
                Phase::Reading,
                JoinEvent::Refused {
                    code,
                    retry_after_ms,
                },
            ) => self.on_refused(code, retry_after_ms, now_ms),
            (Phase::Pausing, JoinEvent::Paused) => self.read(),
            (Phase::Answering { round }, JoinEvent::Answered) => {
                let round = *round;
                self.phase = Phase::Connecting { round };
                JoinStep::Connect { round }
            }
            (
                Phase::Answering { round },
                JoinEvent::Refused {
                    code,
                    retry_after_ms,
                },
            ) => {
                let round = *round;
                if code == Some(ErrorCode::RoundTaken) {
                    self.on_round_lost(round, now_ms)
                } else {
                    self.on_refused(code, retry_after_ms, now_ms)
                }
            }
            (
                Phase::Answering { round } | Phase::Connecting { round },
                JoinEvent::ConnectFailed,
            ) => {
                let round = *round;
                self.on_connect_failed(round, now_ms)
            }
            (Phase::Connecting { .. }, JoinEvent::Connected) => {
                self.phase = Phase::Done;
                JoinStep::Joined
            }
            (phase, event) => return Err(out_of_turn(&event, phase)),
        };
        Ok(step)
    }

    fn read(&mut self) -> JoinStep {
        match &self.code {
            Ok(code) => {
                self.phase = Phase::Reading;
                JoinStep::ReadSession { code: code.clone() }
            }
            Err(failure) => self.fail(failure.clone()),
        }
    }

    fn pause(&mut self, ms: u64, why: PauseReason) -> JoinStep {
        self.phase = Phase::Pausing;
        JoinStep::Pause { ms, why }
    }

    fn fail(&mut self, failure: JoinFailure) -> JoinStep {
        self.phase = Phase::Done;
        JoinStep::Fail { failure }
    }

    fn on_session(&mut self, facts: SessionFacts, now: u64) -> JoinStep {
        if let (Some(round), Some(offer)) = (facts.round, facts.offer)
            && round > self.used_round
        {
            if facts.build != self.build {
                return self.fail(JoinFailure::VersionMismatch {
                    host: facts.build,
                    own: self.build.clone(),
                });
            }
            let Ok(code) = &self.code else {
                return self.read();
            };
            let code = code.clone();
            self.phase = Phase::Answering { round };
            return JoinStep::Answer { code, round, offer };
        }
        // No round for us yet. The host opens the next one shortly after
        // its previous joiner connected; a spectator needs no seat.
        let room = self.spectate || facts.players < facts.max_players;
        let patient = facts.public || now.saturating_sub(self.try_began) < UNLISTED_ROUND_WAIT_MS;
        if room && patient && self.in_time(now) {
            self.pause(RETRY_PAUSE_MS, PauseReason::NoRoundYet)
        } else {
            self.fail(JoinFailure::FullOrStarted)
        }
    }

    fn on_refused(
        &mut self,
        code: Option<ErrorCode>,
        retry_after_ms: Option<u64>,
        now: u64,
    ) -> JoinStep {
        match code {
            Some(ErrorCode::NoSuchSession | ErrorCode::SessionEnded) => {
                self.fail(JoinFailure::NoSuchSession)
            }
            Some(ErrorCode::RateLimited) => {
                // Reads and answers are budgeted per address (a shared
                // address may have spent them): wait as the lobby says,
                // within the round wait, then read the session again.
                let pause = retry_after_ms.unwrap_or(RETRY_PAUSE_MS).max(RETRY_PAUSE_MS);
                if now.saturating_add(pause) < self.deadline {
                    self.pause(pause, PauseReason::RateLimited)
                } else {
                    self.fail(JoinFailure::RateLimited)
                }
            }
            _ => self.fail(JoinFailure::Lobby),
        }
    }

    fn on_round_lost(&mut self, round: u32, now: u64) -> JoinStep {
        self.lost_rounds += 1;
        self.used_round = self.used_round.max(round);
        if self.lost_rounds < MAX_LOST_ROUNDS && self.in_time(now) {
            self.pause(RETRY_PAUSE_MS, PauseReason::RoundLost)
        } else {
            self.fail(JoinFailure::RoundsLost {
                lost: self.lost_rounds,
            })
        }
    }

    fn on_connect_failed(&mut self, round: u32, now: u64) -> JoinStep {
        // A handshake can fail on a lossy path (the host then drops that
        // round and opens a fresh one): a new try on the next round, with
        // a round wait of its own.
        self.used_round = self.used_round.max(round);
        if self.connect_retries < CONNECT_RETRIES {
            self.connect_retries += 1;
            self.try_began = now;
            self.deadline = now.saturating_add(ROUND_WAIT_MS);
            self.pause(RETRY_PAUSE_MS, PauseReason::ConnectFailed)
        } else {
            self.fail(JoinFailure::Connect)
        }
    }

    fn in_time(&self, now: u64) -> bool {
        now < self.deadline && self.lost_rounds < MAX_LOST_ROUNDS
    }
}

#[cfg(test)]
mod tests;
