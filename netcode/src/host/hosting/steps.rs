//! What a host's driver and the hosting machine say to each other: the
//! events the driver reports and the commands the machine answers, with
//! serde giving each its JSON for the browser.

use protocol::api::ErrorCode;
use serde::{Deserialize, Serialize};

/// The lobby calls a host makes for its rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LobbyCall {
    /// Publishing a round's offer.
    PublishRound,
    /// Long-polling a round's answer.
    PollAnswer,
    /// Updating the `players` count.
    PublishPlayers,
}

/// What the driver reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum HostingEvent {
    /// The session's seats or start changed.
    Seats {
        /// Started.
        started: bool,
        /// Guest seats taken.
        taken: usize,
        /// Spectators watching.
        spectators: usize,
    },
    /// The offer asked for is made.
    OfferMade,
    /// Making the offer failed.
    OfferFailed,
    /// The lobby opened round `round` for the offer.
    RoundPublished {
        /// The round.
        round: u32,
    },
    /// The lobby took the offer but opened no round.
    NoRound,
    /// Round `round` was answered (the driver keeps the answer).
    Answered {
        /// The round.
        round: u32,
    },
    /// The long-poll of round `round` ended without an answer.
    PollEmpty {
        /// The round.
        round: u32,
    },
    /// The lobby shows `players`.
    PlayersPublished {
        /// The count published.
        players: u32,
    },
    /// A lobby call failed: the API's error code, when the lobby answered
    /// with one.
    LobbyFailed {
        /// Which call.
        call: LobbyCall,
        /// The error code (`None`, or one this build does not know: not
        /// the lobby's answer).
        #[serde(default, deserialize_with = "protocol::api::known_code")]
        code: Option<ErrorCode>,
    },
    /// Join `join`'s ICE state reached connected.
    IceProgress {
        /// The join.
        join: u64,
    },
    /// Join `join` ended on its own: its channels opened (the driver hands
    /// the connection to the session) or its connection failed.
    JoinEnded {
        /// The join.
        join: u64,
    },
    /// The time [`Hosting::next_wake`](super::Hosting::next_wake) named came.
    Clock,
}

/// What the driver does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "command", rename_all = "camelCase")]
pub enum HostingCommand {
    /// Make a complete offer (report [`HostingEvent::OfferMade`] or
    /// [`HostingEvent::OfferFailed`]).
    MakeOffer,
    /// Publish the offer in hand as the next round, with `players`.
    PublishRound {
        /// The count the lobby shows.
        players: u32,
    },
    /// Long-poll round `round`'s answer.
    PollAnswer {
        /// The round.
        round: u32,
    },
    /// Connect the answer just reported with the offer in hand, as join
    /// `join`, in the background.
    Connect {
        /// The join's id.
        join: u64,
    },
    /// Give join `join` up: close its connection.
    DropJoin {
        /// The join.
        join: u64,
        /// Why.
        why: DropReason,
    },
    /// Close the offer in hand: no round will use it.
    CloseOffer,
    /// Update the lobby's `players`.
    PublishPlayers {
        /// The count.
        players: u32,
    },
    /// Serve no more rounds.
    Stop {
        /// Why.
        why: StopReason,
    },
}

/// Why a join is given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// A newer answer needed its slot and it had shown no ICE progress.
    Evicted,
    /// No ICE progress in time.
    NoIceProgress,
    /// ICE progressed, but the channels did not open in time.
    NotOpened,
}

/// Why the machine stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The lobby entry is gone (unknown or expired, ended by a moderator,
    /// or the host's token refused).
    LobbyGone,
    /// The session takes no more joiners and none is in flight.
    NoMoreJoiners,
}

/// An event that does not fit where the machine is (a driver bug):
/// refused, and nothing changes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a host cannot take {event} while {state}")]
pub struct OutOfTurn {
    /// The event.
    pub event: &'static str,
    /// Where the machine is.
    pub state: &'static str,
}

pub(super) fn event_name(event: &HostingEvent) -> &'static str {
    match event {
        HostingEvent::Seats { .. } => "a seat change",
        HostingEvent::OfferMade => "a made offer",
        HostingEvent::OfferFailed => "a failed offer",
        HostingEvent::RoundPublished { .. } => "a published round",
        HostingEvent::NoRound => "a refused round",
        HostingEvent::Answered { .. } => "an answer",
        HostingEvent::PollEmpty { .. } => "an empty poll",
        HostingEvent::PlayersPublished { .. } => "a published players count",
        HostingEvent::LobbyFailed { .. } => "a failed lobby call",
        HostingEvent::IceProgress { .. } => "ICE progress",
        HostingEvent::JoinEnded { .. } => "the end of a join",
        HostingEvent::Clock => "a wake-up",
    }
}
