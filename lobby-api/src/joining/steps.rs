//! What a joiner and its driver say to each other: the session facts and
//! events the driver reports, the steps the machine answers, and why a
//! join failed. Serde gives each its JSON for the browser.

use serde::{Deserialize, Serialize, Serializer};

use crate::api::{ErrorCode, SessionView};
use crate::code::{CodeError, SessionCode};

/// What the joiner read of the session (`GET /session/{code}`): the
/// fields of a [`SessionView`] the joining rules look at. Deserializes
/// from the server's JSON as it is (other fields are ignored).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFacts {
    /// Listed in the public lobby.
    pub public: bool,
    /// Players in the session now, host included.
    pub players: u32,
    /// Most players the session admits.
    pub max_players: u32,
    /// The host's build.
    pub build: String,
    /// The open round, if any.
    pub round: Option<u32>,
    /// The open round's offer (present exactly when `round` is).
    pub offer: Option<String>,
}

impl From<&SessionView> for SessionFacts {
    fn from(view: &SessionView) -> Self {
        let s = &view.entry.summary;
        Self {
            public: view.public,
            players: s.players,
            max_players: s.max_players,
            build: s.build.clone(),
            round: view.round,
            offer: view.offer.clone(),
        }
    }
}

/// What the driver reports after doing a step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum JoinEvent {
    /// The session was read (after [`JoinStep::ReadSession`]).
    Session(SessionFacts),
    /// A lobby call failed (reading the session, or posting the answer):
    /// the API's error code when the lobby answered with one, and its
    /// `Retry-After`.
    #[serde(rename_all = "camelCase")]
    Refused {
        /// The API error code; `None` for an error that is not the
        /// lobby's answer (unreachable, unreadable) or a code this build
        /// does not know.
        #[serde(default, deserialize_with = "crate::api::known_code")]
        code: Option<ErrorCode>,
        /// The lobby's `Retry-After`, ms.
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    /// The pause is over (after [`JoinStep::Pause`]).
    Paused,
    /// The answer was made and the lobby took it (after
    /// [`JoinStep::Answer`]): the round is this joiner's.
    Answered,
    /// The connection to the host failed: making the answer (ICE
    /// gathering) or opening the channels.
    ConnectFailed,
    /// The channels to the host are open (after [`JoinStep::Connect`]).
    Connected,
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum JoinStep {
    /// Read the session (`GET /session/{code}`); report
    /// [`JoinEvent::Session`] or [`JoinEvent::Refused`].
    ReadSession {
        /// The canonical code.
        code: SessionCode,
    },
    /// Wait, then report [`JoinEvent::Paused`].
    Pause {
        /// How long, ms.
        ms: u64,
        /// Why (for the joiner's progress messages).
        why: PauseReason,
    },
    /// Make a complete answer to `offer` on a fresh connection and post it
    /// for `round`; report [`JoinEvent::Answered`],
    /// [`JoinEvent::Refused`] (close the connection) or
    /// [`JoinEvent::ConnectFailed`].
    Answer {
        /// The canonical code.
        code: SessionCode,
        /// The round answered.
        round: u32,
        /// The host's offer.
        offer: String,
    },
    /// The round is this joiner's: reach the host; report
    /// [`JoinEvent::Connected`] or [`JoinEvent::ConnectFailed`] (close the
    /// connection).
    Connect {
        /// The round whose connection this is.
        round: u32,
    },
    /// Joined: the channels are open. The machine is done.
    Joined,
    /// The join failed; the machine is done.
    Fail {
        /// Why.
        failure: JoinFailure,
    },
}

/// Why the joiner pauses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PauseReason {
    /// The session has room but no round for this joiner yet.
    NoRoundYet,
    /// Another joiner took the round first.
    RoundLost,
    /// The lobby said to wait (`429`).
    RateLimited,
    /// The connection failed: a fresh round is next.
    ConnectFailed,
}

/// Why a join failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JoinFailure {
    /// What was typed is not a session code.
    #[error("\"{typed}\" is not a session code: {error}")]
    InvalidCode {
        /// What was typed.
        typed: String,
        /// Why it is not a code.
        error: CodeError,
    },
    /// No such session (unknown, expired or ended by a moderator): the
    /// lobby's refusal the driver reported.
    #[error("no session has this code: it may have ended or expired")]
    NoSuchSession,
    /// The session has no open round and no room, or none opened in time.
    #[error("this session is full or has already started: nobody more can join it")]
    FullOrStarted,
    /// The host runs another build.
    #[error("version mismatch: the host runs build {host}, this client runs build {own}")]
    VersionMismatch {
        /// The host's build.
        host: String,
        /// This joiner's build.
        own: String,
    },
    /// Other joiners took every round this joiner answered, as many as
    /// the rules allow or until the round wait ran out.
    #[error("other players took the seat first {lost} times; try again")]
    RoundsLost {
        /// Rounds lost.
        lost: u32,
    },
    /// The lobby kept answering `429` past the round wait: the refusal the
    /// driver reported.
    #[error("too many requests from this address: wait a minute, then try again")]
    RateLimited,
    /// Any other lobby error: the one the driver reported.
    #[error("the lobby refused the join")]
    Lobby,
    /// The connection to the host failed on every try: the failure the
    /// driver reported last.
    #[error("the connection to the host failed on every try")]
    Connect,
}

impl JoinFailure {
    /// A stable machine-readable name (the browser's error codes).
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidCode { .. } => "invalid_code",
            Self::NoSuchSession => "no_such_session",
            Self::FullOrStarted => "no_open_round",
            Self::VersionMismatch { .. } => "version_mismatch",
            Self::RoundsLost { .. } => "round_taken",
            Self::RateLimited => "rate_limited",
            Self::Lobby => "lobby_error",
            Self::Connect => "connect_failed",
        }
    }

    /// Whether the failure is the error the driver reported last (a lobby
    /// refusal or a failed connection), which the driver then passes on
    /// as it is; otherwise the failure is the machine's own finding.
    pub fn is_reported(&self) -> bool {
        matches!(
            self,
            Self::NoSuchSession
                | Self::RoundsLost { .. }
                | Self::RateLimited
                | Self::Lobby
                | Self::Connect
        )
    }
}

impl Serialize for JoinFailure {
    /// `{"code": …, "message": …, "reported": …}`, and the host's build
    /// (`hostBuild`) on a version mismatch.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            code: &'a str,
            message: String,
            reported: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            host_build: Option<&'a str>,
        }
        Wire {
            code: self.code(),
            message: self.to_string(),
            reported: self.is_reported(),
            host_build: match self {
                Self::VersionMismatch { host, .. } => Some(host),
                _ => None,
            },
        }
        .serialize(s)
    }
}

/// An event that does not fit the step the machine is at (a driver bug):
/// refused, and nothing changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a joiner cannot take {event} while it {waiting_for}")]
pub struct OutOfTurn {
    /// The event's name.
    pub event: &'static str,
    /// What the machine waits for.
    pub waiting_for: &'static str,
}

pub(super) fn event_name(event: &JoinEvent) -> &'static str {
    match event {
        JoinEvent::Session(_) => "a session read",
        JoinEvent::Refused { .. } => "a lobby refusal",
        JoinEvent::Paused => "the end of a pause",
        JoinEvent::Answered => "an answer taken",
        JoinEvent::ConnectFailed => "a failed connection",
        JoinEvent::Connected => "an open connection",
    }
}
