//! The joining machine, rule by rule.

use super::*;
use crate::join::{
    CONNECT_RETRIES, MAX_LOST_ROUNDS, RETRY_PAUSE_MS, ROUND_WAIT_MS, UNLISTED_ROUND_WAIT_MS,
};

const BUILD: &str = "campfire-test";
const NO_ROUND: PauseReason = PauseReason::NoRoundYet;

fn pause(why: PauseReason) -> JoinStep {
    JoinStep::Pause {
        ms: RETRY_PAUSE_MS,
        why,
    }
}

fn facts(round: Option<u32>, players: u32, public: bool) -> SessionFacts {
    SessionFacts {
        public,
        players,
        max_players: 4,
        build: BUILD.into(),
        round,
        offer: round.map(|r| format!("offer {r}")),
    }
}

fn joiner(spectate: bool) -> (Joining, SessionCode) {
    let mut j = Joining::new("abcd-efgh", spectate, BUILD, 0);
    let code = SessionCode::parse("ABCDEFGH").expect("code");
    assert_eq!(j.start(), JoinStep::ReadSession { code: code.clone() });
    (j, code)
}

fn session(j: &mut Joining, f: SessionFacts, now: u64) -> JoinStep {
    j.on(JoinEvent::Session(f), now).expect("in turn")
}

fn refused(code: ErrorCode, retry_after_ms: Option<u64>) -> JoinEvent {
    JoinEvent::Refused {
        code: Some(code),
        retry_after_ms,
    }
}

fn failure(step: JoinStep) -> JoinFailure {
    match step {
        JoinStep::Fail { failure } => failure,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn an_open_round_is_answered_connected_and_joined() {
    let (mut j, code) = joiner(false);
    let step = session(&mut j, facts(Some(3), 1, true), 10);
    assert_eq!(
        step,
        JoinStep::Answer {
            code,
            round: 3,
            offer: "offer 3".into()
        }
    );
    assert_eq!(
        j.on(JoinEvent::Answered, 20),
        Ok(JoinStep::Connect { round: 3 })
    );
    assert_eq!(j.on(JoinEvent::Connected, 30), Ok(JoinStep::Joined));
    // Done: nothing more is taken.
    assert!(j.on(JoinEvent::Paused, 40).is_err());
}

#[test]
fn a_bad_code_fails_at_once_with_the_lobbys_reason() {
    let mut j = Joining::new(" O0O0 ", false, BUILD, 0);
    let f = failure(j.start());
    assert_eq!(f.code(), "invalid_code");
    assert!(!f.is_reported());
    assert!(
        f.to_string().contains("\"O0O0\" is not a session code"),
        "{f}"
    );
    assert_eq!(j.code(), None);
}

#[test]
fn a_listed_session_without_a_round_is_waited_for_within_the_round_wait() {
    let (mut j, _) = joiner(false);
    let mut now = 0;
    while now < ROUND_WAIT_MS {
        assert_eq!(session(&mut j, facts(None, 2, true), now), pause(NO_ROUND));
        assert!(matches!(
            j.on(JoinEvent::Paused, now),
            Ok(JoinStep::ReadSession { .. })
        ));
        now += RETRY_PAUSE_MS;
    }
    assert_eq!(
        failure(session(&mut j, facts(None, 2, true), now)),
        JoinFailure::FullOrStarted
    );
}

#[test]
fn an_unlisted_session_without_a_round_is_waited_for_briefly() {
    let (mut j, _) = joiner(false);
    assert_eq!(
        session(&mut j, facts(None, 2, false), UNLISTED_ROUND_WAIT_MS - 1),
        pause(NO_ROUND)
    );
    j.on(JoinEvent::Paused, UNLISTED_ROUND_WAIT_MS)
        .expect("in turn");
    assert_eq!(
        failure(session(
            &mut j,
            facts(None, 2, false),
            UNLISTED_ROUND_WAIT_MS
        )),
        JoinFailure::FullOrStarted
    );
}

#[test]
fn a_full_session_fails_a_player_at_once_but_a_spectator_waits() {
    let (mut player, _) = joiner(false);
    assert_eq!(
        failure(session(&mut player, facts(None, 4, true), 0)),
        JoinFailure::FullOrStarted
    );
    let (mut spectator, _) = joiner(true);
    assert_eq!(
        session(&mut spectator, facts(None, 4, true), 0),
        pause(NO_ROUND)
    );
}

#[test]
fn a_host_of_another_build_is_refused_before_answering() {
    let (mut j, _) = joiner(false);
    let mut f = facts(Some(1), 1, true);
    f.build = "campfire-0.0.0-old".into();
    let failure = failure(session(&mut j, f, 0));
    assert_eq!(
        failure,
        JoinFailure::VersionMismatch {
            host: "campfire-0.0.0-old".into(),
            own: BUILD.into()
        }
    );
    assert!(!failure.is_reported());
}

#[test]
fn a_lost_round_is_followed_by_a_newer_one_only() {
    let (mut j, code) = joiner(false);
    session(&mut j, facts(Some(5), 1, true), 0);
    assert_eq!(
        j.on(refused(ErrorCode::RoundTaken, None), 10),
        Ok(pause(PauseReason::RoundLost))
    );
    j.on(JoinEvent::Paused, 260).expect("in turn");
    // Round 5 still shows (the lobby has not moved on): not answered again.
    assert_eq!(
        session(&mut j, facts(Some(5), 2, true), 270),
        pause(NO_ROUND)
    );
    j.on(JoinEvent::Paused, 520).expect("in turn");
    assert_eq!(
        session(&mut j, facts(Some(6), 2, true), 530),
        JoinStep::Answer {
            code,
            round: 6,
            offer: "offer 6".into()
        }
    );
}

#[test]
fn lost_rounds_are_bounded_in_count() {
    let (mut j, _) = joiner(false);
    let mut last = JoinStep::Joined;
    for round in 1..=MAX_LOST_ROUNDS {
        session(&mut j, facts(Some(round), 1, true), u64::from(round));
        last = j
            .on(refused(ErrorCode::RoundTaken, None), u64::from(round))
            .expect("in turn");
        if round < MAX_LOST_ROUNDS {
            j.on(JoinEvent::Paused, u64::from(round)).expect("in turn");
        }
    }
    let f = failure(last);
    assert_eq!(
        f,
        JoinFailure::RoundsLost {
            lost: MAX_LOST_ROUNDS
        }
    );
    assert!(f.is_reported());
}

#[test]
fn a_429_is_waited_out_within_the_round_wait_and_the_round_read_again() {
    let (mut j, code) = joiner(false);
    session(&mut j, facts(Some(2), 1, true), 0);
    // The answer was refused with Retry-After 2 s: wait, then read again;
    // the same round may still be open and is answered.
    assert_eq!(
        j.on(refused(ErrorCode::RateLimited, Some(2_000)), 100),
        Ok(JoinStep::Pause {
            ms: 2_000,
            why: PauseReason::RateLimited
        })
    );
    j.on(JoinEvent::Paused, 2_100).expect("in turn");
    assert_eq!(
        session(&mut j, facts(Some(2), 1, true), 2_110),
        JoinStep::Answer {
            code,
            round: 2,
            offer: "offer 2".into()
        }
    );
    // A read refused with a short Retry-After pauses at least the retry pause.
    let (mut k, _) = joiner(false);
    assert_eq!(
        k.on(refused(ErrorCode::RateLimited, Some(0)), 0),
        Ok(pause(PauseReason::RateLimited))
    );
    // One that does not fit in the wait fails.
    let (mut l, _) = joiner(false);
    assert_eq!(
        failure(
            l.on(refused(ErrorCode::RateLimited, Some(ROUND_WAIT_MS)), 0)
                .expect("in turn")
        ),
        JoinFailure::RateLimited
    );
}

#[test]
fn lobby_refusals_end_the_join() {
    for (code, want) in [
        (Some(ErrorCode::NoSuchSession), JoinFailure::NoSuchSession),
        (Some(ErrorCode::SessionEnded), JoinFailure::NoSuchSession),
        (Some(ErrorCode::Blocked), JoinFailure::Lobby),
        (None, JoinFailure::Lobby),
    ] {
        let (mut j, _) = joiner(false);
        let event = JoinEvent::Refused {
            code,
            retry_after_ms: None,
        };
        assert_eq!(failure(j.on(event, 0).expect("in turn")), want);
    }
}

#[test]
fn a_failed_connection_is_tried_again_on_a_fresh_round_a_bounded_number_of_times() {
    let (mut j, code) = joiner(false);
    let mut now = 0;
    let mut round = 1;
    for retry in 1..=CONNECT_RETRIES {
        session(&mut j, facts(Some(round), 1, false), now);
        j.on(JoinEvent::Answered, now).expect("in turn");
        now += 20_000;
        assert_eq!(
            j.on(JoinEvent::ConnectFailed, now),
            Ok(pause(PauseReason::ConnectFailed))
        );
        assert_eq!(j.connect_retries(), retry);
        j.on(JoinEvent::Paused, now).expect("in turn");
        // The failed round is not answered again; an unlisted session
        // gets a fresh (short) wait for the next one.
        assert_eq!(
            session(&mut j, facts(Some(round), 1, false), now),
            pause(NO_ROUND)
        );
        j.on(JoinEvent::Paused, now).expect("in turn");
        round += 1;
    }
    // Gathering can fail before the answer is posted, too.
    assert_eq!(
        session(&mut j, facts(Some(round), 1, false), now),
        JoinStep::Answer {
            code,
            round,
            offer: format!("offer {round}")
        }
    );
    assert_eq!(
        failure(j.on(JoinEvent::ConnectFailed, now).expect("in turn")),
        JoinFailure::Connect
    );
}

#[test]
fn events_out_of_turn_are_refused_and_change_nothing() {
    let (mut j, code) = joiner(false);
    let err = j.on(JoinEvent::Connected, 0).expect_err("out of turn");
    assert_eq!(
        err.to_string(),
        "a joiner cannot take an open connection while it reads the session"
    );
    assert_eq!(
        j.on(JoinEvent::Answered, 0).map(|_| ()),
        Err(OutOfTurn {
            event: "an answer taken",
            waiting_for: "reads the session"
        })
    );
    assert_eq!(
        session(&mut j, facts(Some(1), 1, true), 0),
        JoinStep::Answer {
            code,
            round: 1,
            offer: "offer 1".into()
        }
    );
}

#[test]
fn events_and_steps_have_the_browsers_json() {
    let e: JoinEvent =
        serde_json::from_str(r#"{"event":"refused","code":"rate_limited","retryAfterMs":3000}"#)
            .expect("refusal");
    assert_eq!(e, refused(ErrorCode::RateLimited, Some(3_000)));
    // A client-side name is no API code.
    let e: JoinEvent =
        serde_json::from_str(r#"{"event":"refused","code":"unreachable"}"#).expect("refusal");
    assert_eq!(
        e,
        JoinEvent::Refused {
            code: None,
            retry_after_ms: None
        }
    );
    // A session view with its other fields reads as facts.
    let e: JoinEvent = serde_json::from_str(
        r#"{"event":"session","code":"ABCDEFGH","name":"x","public":true,"players":1,"maxPlayers":4,"build":"b","round":2,"offer":"o","iceServers":[]}"#,
    )
    .expect("session");
    assert!(matches!(
        e,
        JoinEvent::Session(SessionFacts { round: Some(2), .. })
    ));
    let step = serde_json::to_value(JoinStep::Fail {
        failure: JoinFailure::FullOrStarted,
    })
    .expect("json");
    assert_eq!(step["step"], "fail");
    assert_eq!(step["failure"]["code"], "no_open_round");
    assert_eq!(step["failure"]["reported"], false);
    let step = serde_json::to_value(JoinStep::Pause {
        ms: 250,
        why: PauseReason::RoundLost,
    })
    .expect("json");
    assert_eq!(
        step,
        serde_json::json!({"step": "pause", "ms": 250, "why": "roundLost"})
    );
}
