//! The hosting machine, rule by rule.

use super::*;

const S: Duration = Duration::from_secs(1);

fn policy(late_join: bool, max_spectators: usize) -> RoundPolicy {
    RoundPolicy {
        guest_seats: 3,
        start_when: 3,
        late_join,
        max_spectators,
    }
}

fn seats(started: bool, taken: usize) -> HostingEvent {
    HostingEvent::Seats {
        started,
        taken,
        spectators: 0,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A machine whose round `round` is open and being polled, at `now`.
fn polling(h: &mut Hosting, round: u32, now: Duration) {
    assert_eq!(
        h.on(HostingEvent::OfferMade, now),
        Ok(vec![HostingCommand::PublishRound {
            players: h.players()
        }])
    );
    assert_eq!(
        h.on(HostingEvent::RoundPublished { round }, now),
        Ok(vec![HostingCommand::PollAnswer { round }])
    );
}

fn lobby() -> Hosting {
    let mut h = Hosting::new(policy(true, 0), JoinPolicy::default(), 1, Some(1));
    assert_eq!(h.start(Duration::ZERO), vec![HostingCommand::MakeOffer]);
    h
}

#[test]
fn a_round_is_offered_published_polled_and_its_answer_connected() {
    let mut h = lobby();
    polling(&mut h, 1, ms(10));
    // Nothing yet: the poll goes on.
    assert_eq!(
        h.on(HostingEvent::PollEmpty { round: 1 }, ms(20_000)),
        Ok(vec![HostingCommand::PollAnswer { round: 1 }])
    );
    // An answer: connected as join 1, and the next round opens at once.
    assert_eq!(
        h.on(HostingEvent::Answered { round: 1 }, ms(20_100)),
        Ok(vec![
            HostingCommand::Connect { join: 1 },
            HostingCommand::MakeOffer
        ])
    );
    assert_eq!(h.in_flight(), 1);
    // The join opened: the session seats it, and the lobby hears of it.
    assert_eq!(
        h.on(HostingEvent::JoinEnded { join: 1 }, ms(20_500)),
        Ok(vec![])
    );
    assert_eq!(
        h.on(seats(false, 1), ms(20_600)),
        Ok(vec![]),
        "players waits for the round being made"
    );
    assert_eq!(
        h.on(HostingEvent::OfferMade, ms(20_700)),
        Ok(vec![HostingCommand::PublishRound { players: 2 }])
    );
}

#[test]
fn players_follow_the_seats_while_a_round_is_polled_one_update_at_a_time() {
    let mut h = lobby();
    polling(&mut h, 1, ms(0));
    assert_eq!(
        h.on(seats(false, 1), ms(100)),
        Ok(vec![HostingCommand::PublishPlayers { players: 2 }])
    );
    // Another change meanwhile waits for the update in flight.
    assert_eq!(h.on(seats(false, 2), ms(150)), Ok(vec![]));
    assert_eq!(
        h.on(HostingEvent::PlayersPublished { players: 2 }, ms(200)),
        Ok(vec![HostingCommand::PublishPlayers { players: 3 }])
    );
    assert_eq!(
        h.on(HostingEvent::PlayersPublished { players: 3 }, ms(250)),
        Ok(vec![])
    );
}

#[test]
fn a_failed_players_update_is_retried_after_a_pause_that_doubles() {
    let mut h = lobby();
    polling(&mut h, 1, ms(0));
    h.on(seats(false, 1), ms(0)).expect("in turn");
    let mut now = ms(0);
    for pause in [1, 2, 4, 8, 16, 30, 30] {
        let failed = HostingEvent::LobbyFailed {
            call: LobbyCall::PublishPlayers,
            code: Some(ErrorCode::Unavailable),
        };
        assert_eq!(h.on(failed, now), Ok(vec![]));
        let due = now + Duration::from_secs(pause);
        assert_eq!(h.next_wake(now), Some(due));
        assert_eq!(h.on(HostingEvent::Clock, due - ms(1)), Ok(vec![]));
        assert_eq!(
            h.on(HostingEvent::Clock, due),
            Ok(vec![HostingCommand::PublishPlayers { players: 2 }])
        );
        now = due;
    }
}

#[test]
fn answers_that_never_connect_cost_a_round_each_not_the_connect_timeout() {
    let mut h = lobby();
    let mut now = ms(0);
    for round in 1..=3 {
        polling(&mut h, round, now);
        let cmds = h
            .on(HostingEvent::Answered { round }, now)
            .expect("in turn");
        let join = u64::from(round);
        assert_eq!(
            cmds,
            vec![HostingCommand::Connect { join }, HostingCommand::MakeOffer]
        );
        now += ms(10);
    }
    // The fourth answer takes the last slot: the next round opens when the
    // oldest join without ICE progress may be dropped (1 s after it came),
    // not when it times out (20 s).
    polling(&mut h, 4, now);
    let cmds = h
        .on(HostingEvent::Answered { round: 4 }, now)
        .expect("in turn");
    assert_eq!(cmds, vec![HostingCommand::Connect { join: 4 }]);
    assert_eq!(h.next_wake(now), Some(S));
    assert_eq!(
        h.on(HostingEvent::Clock, S),
        Ok(vec![HostingCommand::MakeOffer])
    );
    polling(&mut h, 5, S);
    assert_eq!(
        h.on(HostingEvent::Answered { round: 5 }, S),
        Ok(vec![
            HostingCommand::DropJoin {
                join: 1,
                why: DropReason::Evicted
            },
            HostingCommand::Connect { join: 5 },
        ])
    );
    // A join that showed ICE progress is never dropped for a newcomer.
    for join in 2..=5 {
        h.on(HostingEvent::IceProgress { join }, S)
            .expect("in turn");
    }
    assert_eq!(
        h.on(HostingEvent::Clock, ms(1_010)),
        Ok(vec![]),
        "every slot is busy connecting"
    );
    assert_eq!(h.in_flight(), 4);
}

#[test]
fn a_join_without_ice_progress_expires() {
    let mut h = lobby();
    polling(&mut h, 1, ms(0));
    h.on(HostingEvent::Answered { round: 1 }, ms(0))
        .expect("in turn");
    h.on(HostingEvent::OfferFailed, ms(0)).expect("in turn");
    assert_eq!(
        h.next_wake(ms(0)),
        Some(S),
        "the offer is tried again in a second"
    );
    h.on(HostingEvent::Clock, S).expect("in turn");
    h.on(HostingEvent::OfferFailed, S).expect("in turn");
    // ICE progress keeps a join; none within 5 s drops it.
    let cmds = h.on(HostingEvent::Clock, 5 * S).expect("in turn");
    assert!(
        cmds.contains(&HostingCommand::DropJoin {
            join: 1,
            why: DropReason::NoIceProgress
        }),
        "{cmds:?}"
    );
    assert_eq!(h.in_flight(), 0);
}

#[test]
fn a_full_session_opens_no_round_until_a_seat_frees() {
    let mut h = lobby();
    polling(&mut h, 1, ms(0));
    h.on(HostingEvent::Answered { round: 1 }, ms(0))
        .expect("in turn");
    h.on(HostingEvent::OfferFailed, ms(0)).expect("in turn");
    h.on(HostingEvent::JoinEnded { join: 1 }, ms(100))
        .expect("in turn");
    assert_eq!(
        h.on(seats(false, 3), ms(200)),
        Ok(vec![HostingCommand::PublishPlayers { players: 4 }])
    );
    assert_eq!(
        h.on(HostingEvent::PlayersPublished { players: 4 }, ms(300)),
        Ok(vec![])
    );
    assert_eq!(h.next_wake(ms(300)), None, "nothing to wait for");
    assert_eq!(h.on(HostingEvent::Clock, 10 * S), Ok(vec![]));
    // A guest left: a round opens, carrying the new count.
    assert_eq!(
        h.on(seats(false, 2), 11 * S),
        Ok(vec![HostingCommand::MakeOffer])
    );
    assert_eq!(
        h.on(HostingEvent::OfferMade, 11 * S),
        Ok(vec![HostingCommand::PublishRound { players: 3 }])
    );
}

#[test]
fn without_late_join_the_start_closes_the_round_and_stops_once_joins_are_done() {
    let mut h = Hosting::new(policy(false, 0), JoinPolicy::default(), 1, Some(1));
    h.start(ms(0));
    polling(&mut h, 1, ms(0));
    h.on(HostingEvent::Answered { round: 1 }, ms(0))
        .expect("in turn");
    h.on(HostingEvent::OfferMade, ms(0)).expect("in turn");
    h.on(HostingEvent::RoundPublished { round: 2 }, ms(0))
        .expect("in turn");
    // The session starts while round 2 is polled: its answer, if one
    // comes, is still connected (the session refuses it with a reason).
    assert_eq!(h.on(seats(true, 0), ms(100)), Ok(vec![]));
    assert_eq!(
        h.on(HostingEvent::Answered { round: 2 }, ms(200)),
        Ok(vec![HostingCommand::Connect { join: 2 }])
    );
    assert_eq!(
        h.on(HostingEvent::JoinEnded { join: 1 }, ms(300)),
        Ok(vec![])
    );
    assert_eq!(
        h.on(HostingEvent::JoinEnded { join: 2 }, ms(400)),
        Ok(vec![HostingCommand::Stop {
            why: StopReason::NoMoreJoiners
        }])
    );
    assert!(h.stopped());
    assert_eq!(
        h.on(seats(false, 0), ms(500)),
        Ok(vec![]),
        "stopped for good"
    );
}

#[test]
fn an_empty_poll_after_the_start_closes_the_round() {
    let mut h = Hosting::new(policy(false, 0), JoinPolicy::default(), 1, Some(1));
    h.start(ms(0));
    polling(&mut h, 1, ms(0));
    h.on(seats(true, 0), ms(100)).expect("in turn");
    assert_eq!(
        h.on(HostingEvent::PollEmpty { round: 1 }, ms(200)),
        Ok(vec![
            HostingCommand::CloseOffer,
            HostingCommand::Stop {
                why: StopReason::NoMoreJoiners
            }
        ])
    );
}

#[test]
fn spectator_places_keep_rounds_open_after_the_start() {
    let mut h = Hosting::new(policy(false, 2), JoinPolicy::default(), 1, Some(1));
    h.start(ms(0));
    h.on(HostingEvent::OfferFailed, ms(0)).expect("in turn");
    h.on(seats(true, 3), ms(0)).expect("in turn");
    // A spectator place is free: a round opens, carrying the new count.
    assert_eq!(
        h.on(HostingEvent::Clock, S),
        Ok(vec![HostingCommand::MakeOffer])
    );
    assert_eq!(
        h.on(HostingEvent::OfferMade, S),
        Ok(vec![HostingCommand::PublishRound { players: 4 }])
    );
}

#[test]
fn a_lobby_entry_gone_stops_everything_other_failures_are_retried() {
    let mut h = lobby();
    polling(&mut h, 1, ms(0));
    let unavailable = HostingEvent::LobbyFailed {
        call: LobbyCall::PollAnswer,
        code: Some(ErrorCode::Unavailable),
    };
    assert_eq!(h.on(unavailable, ms(10)), Ok(vec![]));
    assert_eq!(h.next_wake(ms(10)), Some(ms(10) + S));
    assert_eq!(
        h.on(HostingEvent::Clock, ms(10) + S),
        Ok(vec![HostingCommand::PollAnswer { round: 1 }])
    );
    let gone = HostingEvent::LobbyFailed {
        call: LobbyCall::PollAnswer,
        code: Some(ErrorCode::SessionEnded),
    };
    assert_eq!(
        h.on(gone, 2 * S),
        Ok(vec![
            HostingCommand::CloseOffer,
            HostingCommand::Stop {
                why: StopReason::LobbyGone
            }
        ])
    );
    assert!(h.stopped());
    assert_eq!(h.next_wake(2 * S), None);
}

#[test]
fn a_published_round_refused_or_failed_closes_its_offer_and_tries_again() {
    let mut h = lobby();
    h.on(HostingEvent::OfferMade, ms(0)).expect("in turn");
    assert_eq!(
        h.on(HostingEvent::NoRound, ms(10)),
        Ok(vec![HostingCommand::CloseOffer])
    );
    assert_eq!(
        h.on(HostingEvent::Clock, ms(10) + S),
        Ok(vec![HostingCommand::MakeOffer])
    );
    h.on(HostingEvent::OfferMade, 2 * S).expect("in turn");
    let failed = HostingEvent::LobbyFailed {
        call: LobbyCall::PublishRound,
        code: None,
    };
    assert_eq!(h.on(failed, 2 * S), Ok(vec![HostingCommand::CloseOffer]));
    assert_eq!(h.next_wake(2 * S), Some(3 * S));
}

#[test]
fn events_out_of_turn_are_refused_and_change_nothing() {
    let mut h = lobby();
    let err = h
        .on(HostingEvent::RoundPublished { round: 1 }, ms(0))
        .expect_err("no offer published");
    assert_eq!(
        err.to_string(),
        "a host cannot take a published round while an offer is being made"
    );
    assert!(h.on(HostingEvent::Answered { round: 1 }, ms(0)).is_err());
    let stray = HostingEvent::LobbyFailed {
        call: LobbyCall::PublishPlayers,
        code: None,
    };
    assert!(h.on(stray, ms(0)).is_err());
    // Still making its offer.
    assert_eq!(
        h.on(HostingEvent::OfferMade, ms(0)),
        Ok(vec![HostingCommand::PublishRound { players: 1 }])
    );
    // An answer to another round than the one polled is refused.
    h.on(HostingEvent::RoundPublished { round: 7 }, ms(0))
        .expect("in turn");
    assert!(h.on(HostingEvent::Answered { round: 6 }, ms(0)).is_err());
    // ICE progress or an end of an unknown join changes nothing.
    assert_eq!(
        h.on(HostingEvent::IceProgress { join: 99 }, ms(0)),
        Ok(vec![])
    );
    assert_eq!(
        h.on(HostingEvent::JoinEnded { join: 99 }, ms(0)),
        Ok(vec![])
    );
}

#[test]
fn events_and_commands_have_the_browsers_json() {
    let e: HostingEvent = serde_json::from_str(
        r#"{"event":"lobbyFailed","call":"pollAnswer","code":"session_ended"}"#,
    )
    .expect("event");
    assert_eq!(
        e,
        HostingEvent::LobbyFailed {
            call: LobbyCall::PollAnswer,
            code: Some(ErrorCode::SessionEnded)
        }
    );
    // A client-side name (the lobby unreachable) is no API code.
    let e: HostingEvent = serde_json::from_str(
        r#"{"event":"lobbyFailed","call":"publishPlayers","code":"unreachable"}"#,
    )
    .expect("event");
    assert_eq!(
        e,
        HostingEvent::LobbyFailed {
            call: LobbyCall::PublishPlayers,
            code: None
        }
    );
    let e: HostingEvent =
        serde_json::from_str(r#"{"event":"seats","started":true,"taken":2,"spectators":1}"#)
            .expect("event");
    assert_eq!(
        e,
        HostingEvent::Seats {
            started: true,
            taken: 2,
            spectators: 1
        }
    );
    let c = serde_json::to_value(HostingCommand::DropJoin {
        join: 3,
        why: DropReason::NoIceProgress,
    })
    .expect("json");
    assert_eq!(
        c,
        serde_json::json!({"command": "dropJoin", "join": 3, "why": "noIceProgress"})
    );
}
