//! A host's side of the lobby as a state machine with no I/O: the offer
//! rounds, the answers being connected, and the `players` count the lobby
//! shows. The daemon's round loop and the browser host are meant to drive
//! it (plan 47, section 9.2): the driver does each [`HostingCommand`],
//! reports how it went as a [`HostingEvent`] with the time since an origin
//! of its choosing, and calls [`Hosting::next_wake`] to learn when to
//! report [`HostingEvent::Clock`] if nothing else happens.
//!
//! The rules, on top of [`RoundPolicy`] (whether a round should be open)
//! and [`JoinSlots`] (the answers in flight and when the next round may
//! open):
//!
//! - one round at a time: an offer is made, published with the current
//!   `players`, and its answer long-polled; an answer is connected in the
//!   background (the offer goes with it) and the next round opens as soon
//!   as the seats and the join slots allow;
//! - an answer is always connected, also when the seats filled or the
//!   session started meanwhile: the session then refuses the joiner with a
//!   reason instead of leaving it to time out;
//! - the lobby's `players` follows the seats at every change, one update
//!   at a time; a failed update is tried again after a pause that doubles
//!   (at most [`MAX_PUBLISH_BACKOFF`]);
//! - a lobby call that says the entry is gone (unknown, ended by a
//!   moderator, the token refused) stops everything; any other failure is
//!   tried again after [`RETRY_PAUSE_MS`];
//! - once the session takes no joiners (started without late join and
//!   without spectator places), the round in hand is closed and the
//!   machine stops when no join is in flight.

mod steps;

pub use steps::{DropReason, HostingCommand, HostingEvent, LobbyCall, OutOfTurn, StopReason};

use std::time::Duration;

use protocol::api::ErrorCode;

use super::join_slots::{Expiry, JoinId, JoinPolicy, JoinSlots};
use super::rounds::{RETRY_PAUSE_MS, RoundPolicy, Seats};
use steps::event_name;

/// Pause after a failed lobby call or offer.
const RETRY_PAUSE: Duration = Duration::from_millis(RETRY_PAUSE_MS);

/// Longest pause between two tries of a failed `players` update.
pub const MAX_PUBLISH_BACKOFF: Duration = Duration::from_secs(30);

/// The round in hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Round {
    /// No offer in hand.
    Closed,
    /// An offer is being made.
    Offering,
    /// The offer is being published with this `players`.
    Publishing { players: u32 },
    /// Round `round` is open; its answer is being polled or not.
    Open { round: u32, polling: bool },
}

/// One session's rounds. See the module documentation.
#[derive(Clone, Debug)]
pub struct Hosting {
    rounds: RoundPolicy,
    joins: JoinSlots,
    /// Players the host brings itself (its own, its bots).
    local_players: u32,
    seats: Seats,
    round: Round,
    /// No offer before this (after a failure).
    offer_retry_at: Duration,
    /// No poll before this (after a failed poll).
    poll_retry_at: Duration,
    published: Option<u32>,
    publishing: bool,
    publish_retry_at: Duration,
    publish_backoff: Duration,
    stopped: bool,
}

impl Hosting {
    /// A session whose lobby entry was created showing `published`
    /// players, with `local_players` of the host's own.
    pub fn new(
        rounds: RoundPolicy,
        joins: JoinPolicy,
        local_players: u32,
        published: Option<u32>,
    ) -> Self {
        Self {
            rounds,
            joins: JoinSlots::new(joins),
            local_players,
            seats: Seats::default(),
            round: Round::Closed,
            offer_retry_at: Duration::ZERO,
            poll_retry_at: Duration::ZERO,
            published,
            publishing: false,
            publish_retry_at: Duration::ZERO,
            publish_backoff: RETRY_PAUSE,
            stopped: false,
        }
    }

    /// What to do first.
    pub fn start(&mut self, now: Duration) -> Vec<HostingCommand> {
        let mut out = Vec::new();
        self.drive(now, &mut out);
        out
    }

    /// Whether the machine stopped.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Joins being connected.
    pub fn in_flight(&self) -> usize {
        self.joins.in_flight()
    }

    /// The `players` count the lobby should show.
    pub fn players(&self) -> u32 {
        self.local_players
            .saturating_add(u32::try_from(self.seats.taken).unwrap_or(u32::MAX))
    }

    /// Takes what the driver reports at `now` and says what to do.
    pub fn on(
        &mut self,
        event: HostingEvent,
        now: Duration,
    ) -> Result<Vec<HostingCommand>, OutOfTurn> {
        let mut out = Vec::new();
        if self.stopped {
            return Ok(out);
        }
        self.take(event, now, &mut out)?;
        if !self.stopped {
            self.drive(now, &mut out);
        }
        Ok(out)
    }

    /// When to report [`HostingEvent::Clock`] if nothing else happens.
    pub fn next_wake(&self, now: Duration) -> Option<Duration> {
        if self.stopped {
            return None;
        }
        let mut wake = self.joins.next_deadline();
        let mut consider = |at: Duration| {
            if at > now {
                wake = Some(wake.map_or(at, |w| w.min(at)));
            }
        };
        match self.round {
            Round::Closed
                if self.rounds.takes_joiners(self.seats.started)
                    && self.rounds.wants_round(self.seats) =>
            {
                consider(self.offer_retry_at.max(self.joins.round_opens_at(now)));
            }
            Round::Open { polling: false, .. } => consider(self.poll_retry_at),
            _ => {}
        }
        if !self.publishing && self.published != Some(self.players()) {
            consider(self.publish_retry_at);
        }
        wake
    }

    fn take(
        &mut self,
        event: HostingEvent,
        now: Duration,
        out: &mut Vec<HostingCommand>,
    ) -> Result<(), OutOfTurn> {
        let refuse = |event: &'static str, round: Round| OutOfTurn {
            event,
            state: match round {
                Round::Closed => "no offer is in hand",
                Round::Offering => "an offer is being made",
                Round::Publishing { .. } => "a round is being published",
                Round::Open { polling: true, .. } => "a round's answer is being polled",
                Round::Open { polling: false, .. } => "a round is open",
            },
        };
        match (event, self.round) {
            (
                HostingEvent::Seats {
                    started,
                    taken,
                    spectators,
                },
                _,
            ) => {
                self.seats = Seats {
                    started,
                    taken,
                    spectators,
                };
            }
            (HostingEvent::OfferMade, Round::Offering) => {
                let players = self.players();
                self.round = Round::Publishing { players };
                out.push(HostingCommand::PublishRound { players });
            }
            (HostingEvent::OfferFailed, Round::Offering) => {
                self.round = Round::Closed;
                self.offer_retry_at = now + RETRY_PAUSE;
            }
            (HostingEvent::RoundPublished { round }, Round::Publishing { players }) => {
                self.published = Some(players);
                self.round = Round::Open {
                    round,
                    polling: false,
                };
            }
            (HostingEvent::NoRound, Round::Publishing { .. }) => {
                out.push(HostingCommand::CloseOffer);
                self.round = Round::Closed;
                self.offer_retry_at = now + RETRY_PAUSE;
            }
            (
                HostingEvent::Answered { round },
                Round::Open {
                    round: open,
                    polling: true,
                },
            ) if round == open => {
                let admitted = self.joins.admit(now);
                if let Some(evicted) = admitted.evicted {
                    out.push(HostingCommand::DropJoin {
                        join: evicted.0,
                        why: DropReason::Evicted,
                    });
                }
                // The offer goes with the join.
                out.push(HostingCommand::Connect {
                    join: admitted.id.0,
                });
                self.round = Round::Closed;
            }
            (
                HostingEvent::PollEmpty { round },
                Round::Open {
                    round: open,
                    polling: true,
                },
            ) if round == open => {
                self.round = Round::Open {
                    round,
                    polling: false,
                };
            }
            (HostingEvent::PlayersPublished { players }, _) if self.publishing => {
                self.publishing = false;
                self.published = Some(players);
                self.publish_backoff = RETRY_PAUSE;
            }
            (HostingEvent::LobbyFailed { call, code }, round) => {
                self.on_lobby_failed(call, code, round, now, out)
                    .map_err(|()| refuse("a failed lobby call", round))?;
            }
            (HostingEvent::IceProgress { join }, _) => {
                self.joins.ice_progress(JoinId(join), now);
            }
            (HostingEvent::JoinEnded { join }, _) => {
                self.joins.finished(JoinId(join));
            }
            (HostingEvent::Clock, _) => {}
            (event, round) => return Err(refuse(event_name(&event), round)),
        }
        Ok(())
    }

    /// A failed lobby call; `Err` when no such call was under way.
    fn on_lobby_failed(
        &mut self,
        call: LobbyCall,
        code: Option<ErrorCode>,
        round: Round,
        now: Duration,
        out: &mut Vec<HostingCommand>,
    ) -> Result<(), ()> {
        let under_way = match call {
            LobbyCall::PublishRound => matches!(round, Round::Publishing { .. }),
            LobbyCall::PollAnswer => matches!(round, Round::Open { polling: true, .. }),
            LobbyCall::PublishPlayers => self.publishing,
        };
        if !under_way {
            return Err(());
        }
        let gone = matches!(
            code,
            Some(ErrorCode::NoSuchSession | ErrorCode::SessionEnded | ErrorCode::WrongToken)
        );
        if gone {
            if matches!(round, Round::Publishing { .. } | Round::Open { .. }) {
                out.push(HostingCommand::CloseOffer);
            }
            self.round = Round::Closed;
            self.publishing = false;
            self.stopped = true;
            out.push(HostingCommand::Stop {
                why: StopReason::LobbyGone,
            });
            return Ok(());
        }
        match call {
            LobbyCall::PublishRound => {
                out.push(HostingCommand::CloseOffer);
                self.round = Round::Closed;
                self.offer_retry_at = now + RETRY_PAUSE;
            }
            LobbyCall::PollAnswer => {
                if let Round::Open { round, .. } = round {
                    self.round = Round::Open {
                        round,
                        polling: false,
                    };
                }
                self.poll_retry_at = now + RETRY_PAUSE;
            }
            LobbyCall::PublishPlayers => {
                self.publishing = false;
                self.publish_retry_at = now + self.publish_backoff;
                self.publish_backoff = (self.publish_backoff * 2).min(MAX_PUBLISH_BACKOFF);
            }
        }
        Ok(())
    }

    /// What follows from where the machine is now.
    fn drive(&mut self, now: Duration, out: &mut Vec<HostingCommand>) {
        for (join, why) in self.joins.expire(now) {
            out.push(HostingCommand::DropJoin {
                join: join.0,
                why: match why {
                    Expiry::NoIceProgress => DropReason::NoIceProgress,
                    Expiry::NotOpened => DropReason::NotOpened,
                },
            });
        }
        let takes = self.rounds.takes_joiners(self.seats.started);
        match self.round {
            Round::Open { polling: false, .. } if !takes => {
                out.push(HostingCommand::CloseOffer);
                self.round = Round::Closed;
                self.stop_if_done(out);
            }
            Round::Open {
                round,
                polling: false,
            } if now >= self.poll_retry_at => {
                self.round = Round::Open {
                    round,
                    polling: true,
                };
                out.push(HostingCommand::PollAnswer { round });
            }
            Round::Closed if !takes => self.stop_if_done(out),
            Round::Closed
                if self.rounds.wants_round(self.seats)
                    && now >= self.offer_retry_at
                    && self.joins.round_opens_at(now) <= now =>
            {
                self.round = Round::Offering;
                out.push(HostingCommand::MakeOffer);
            }
            _ => {}
        }
        // The lobby's count follows the seats; a round being published
        // carries it already.
        let players = self.players();
        let publishing_round = matches!(self.round, Round::Offering | Round::Publishing { .. });
        if takes
            && !self.stopped
            && !publishing_round
            && !self.publishing
            && self.published != Some(players)
            && now >= self.publish_retry_at
        {
            self.publishing = true;
            out.push(HostingCommand::PublishPlayers { players });
        }
    }

    fn stop_if_done(&mut self, out: &mut Vec<HostingCommand>) {
        if self.joins.in_flight() == 0 && !self.publishing {
            self.stopped = true;
            out.push(HostingCommand::Stop {
                why: StopReason::NoMoreJoiners,
            });
        }
    }
}

#[cfg(test)]
mod tests;
