//! Coming in after the start, on a virtual clock: late joiners (refused,
//! or loading the running level's exact state), rejoins with a token
//! within the grace or after it, and spectators.

mod support;

use engine::wire::raycaster::{LevelSeed, Settings};
use std::collections::BTreeMap;
use std::time::Duration;

use engine::wire::GuestMessage;
use engine::wire::input::InputSnapshot;
use engine::{Game, RaycasterEngine};
use game_api::PlayerId;
use netcode::guest::{GuestConfig, GuestEnd};
use netcode::host::HostPhase;
use netcode::link::PeerEvent;
use netcode::sim::{NetAction, Scenario, final_hash_matches};
use protocol::peer::{Channel, EndReason, FEATURE_INPUT_DELAY, RefusalReason};
use protocol::tick::{DISCONNECT_GRACE_MS, INPUT_DELAY_TICKS};
use support::HostConfig;
use support::HostSession;
use support::checks::{assert_in_lockstep, assert_late_lockstep, assert_lockstep, consecutive};
use support::guest_by_hand::{bundle, feed, feed_chunked, handshaken, session_init};
use support::host_by_hand::{Hello, hello, setup_ack};
use support::scenario::{a_and_b, at, guest, host, net, rejoining_host, run_with};

#[test]
fn late_join_turned_off_is_refused_and_never_enters_the_roster() {
    let o = run_with(
        HostConfig {
            late_join: false,
            ..host(1, 1, Some(120))
        },
        vec![(guest("Early"), net(0, 0, 1))],
        vec![at(30, NetAction::LateJoin(guest("Late"), net(0, 0, 9)))],
    );
    match o.late[0].ended() {
        Some(GuestEnd::Refused(RefusalReason::SessionStarted, _)) => {}
        other => panic!("expected a late-join refusal, got {other:?}"),
    }
    assert_eq!(o.host.roster().len(), 3);
    assert!(o.host.roster().iter().all(|p| p.as_str() != "guest-2"));
    assert!(final_hash_matches(&o.host, &o.guests[0]));
}

#[test]
fn a_late_joiner_enters_the_running_level_and_plays_it_in_lockstep() {
    // Ten seconds into the level a bot guest joins over a 75 ms link.
    let o = run_with(
        host(1, 2, Some(900)),
        a_and_b(),
        vec![at(300, NetAction::LateJoin(guest("Late"), net(75, 10, 9)))],
    );
    let late = &o.late[0];
    assert_eq!(
        late.ended(),
        Some(&GuestEnd::Ended(EndReason::HostShutdown))
    );
    let joiner = late.player_id().expect("the joiner was admitted").clone();
    let added = &o.host.stats().roster_added;
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0].2, joiner);
    assert!(added[0].1 >= 300, "added at tick {}", added[0].1);
    assert!(o.host.roster().contains(&joiner));
    // Its first applied tick is the one after the join; from there on
    // every tick matches the host's, and so do the others' (who applied
    // the roster add at the same tick).
    assert_eq!(late.applied()[0].tick, added[0].1 + 1);
    assert!(assert_late_lockstep(&o, 0) > 500);
    assert!(final_hash_matches(&o.host, late));
    for g in 0..2 {
        assert_lockstep(&o, g);
        consecutive(&o, g);
    }
    let s = o.host.stats();
    assert!(s.hash_matches.get(&joiner).copied().unwrap_or(0) > 50);
    assert_eq!(s.desyncs.get(&joiner), None);
    assert!(s.desyncs.is_empty(), "{:?}", s.desyncs);
    // It played: its inputs reached the host on time.
    let held = s.held_per_player.get(&joiner).copied().unwrap_or(0);
    assert!(held < 30, "{held} held inputs for the joiner");
    assert!(o.host.names().get(&joiner).is_some_and(|n| n == "Late"));
    // The others learned its name from the roster add.
    for g in &o.guests {
        assert_eq!(g.names().get(&joiner).map(String::as_str), Some("Late"));
    }
}

#[test]
fn a_late_joiner_over_a_75_ms_link_is_live_within_two_seconds() {
    // A five-player level: host, bot, two guests and the joiner, who
    // connects ten seconds in over 75 ms each way (150 ms round trips).
    let scenario = Scenario {
        host: host(1, 2, Some(600)),
        guests: a_and_b(),
        ..Scenario::default()
    };
    let (figures, o) = netcode::sim::measure_late_join::<RaycasterEngine>(
        scenario,
        guest("Late"),
        net(75, 10, 9),
        300,
    );
    eprintln!("late join: {figures:?}");
    let catch_up = figures.catch_up.expect("the joiner went live");
    assert!(catch_up <= Duration::from_secs(2), "{catch_up:?}");
    assert!(figures.join_tick.is_some_and(|t| t >= 300));
    let state = figures.state_bytes.expect("a state was saved");
    assert!((100..64 * 1024).contains(&state), "{state} bytes of state");
    assert!(figures.bytes_to_joiner > state as u64);
    assert!(final_hash_matches(&o.host, &o.late[0]));
    assert_eq!(o.host.roster().len(), 5);
}

/// A late joiner driven by hand: bundles that outrun its state are held,
/// those already in the state dropped, and a state that does not load
/// fails the setup.
#[test]
fn a_joiner_loads_the_exact_state_and_applies_the_bundles_that_outran_it() {
    use engine::LevelSetup;
    use engine::level_gen::generate;
    use engine::wire::JoinPayload;
    use protocol::peer::JoinPoint;

    let me = PlayerId::new("guest-2");
    let host_id = PlayerId::new("host");
    let map = generate(3, 0, 2);
    let setup = LevelSetup {
        body: map.clone(),
        roster: vec![me.clone(), host_id.clone()],
        head: LevelSeed { gameplay_seed: 5 },
        settings: Settings {
            difficulty: engine::Difficulty::Normal,
        },
        player_count: 1,
        carryovers: BTreeMap::new(),
        input_delays: BTreeMap::new(),
    };
    // The host's world: alone for 40 ticks, then the joiner is added.
    let mut world = RaycasterEngine::new_level(LevelSetup {
        roster: vec![host_id.clone()],
        ..setup.clone()
    })
    .unwrap();
    let walk = InputSnapshot {
        move_forward: true,
        ..InputSnapshot::NEUTRAL
    };
    for _ in 0..39 {
        world.advance(&BTreeMap::from([(host_id.clone(), walk.clone())]), &[]);
    }
    world.add_player(&me, INPUT_DELAY_TICKS);
    let both = BTreeMap::from([(host_id.clone(), walk.clone()), (me.clone(), walk)]);
    world.advance(&both, &[]);
    let state = world.save_exact().unwrap();
    let init = session_init(
        &me,
        &setup.roster,
        1,
        Some(JoinPoint {
            level_epoch: 1,
            level_index: 0,
            tick: 40,
            resumed: false,
        }),
    );
    let join = |state: &[u8]| {
        let mut g = handshaken(guest("Late"), init.clone());
        // Bundles outrun the state: one already in it, two after it.
        for t in [39, 40, 41] {
            feed(&mut g, bundle(1, t, &both));
        }
        feed_chunked(&mut g, &JoinPayload::new(map.clone(), state));
        g
    };
    let g = join(&state);
    assert_eq!(g.ended(), None);
    assert_eq!(g.level_epoch(), 1);
    for _ in 0..2 {
        world.advance(&both, &[]);
    }
    let engine = g.engine().expect("the joiner built the level");
    assert_eq!(engine.tick(), 42, "ticks 40 and 41 applied, 39 dropped");
    assert_eq!(engine.world_hash(), world.world_hash());
    assert_eq!(g.stats().out_of_sequence, 0);

    let mut bad = state.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x55;
    let g = join(&bad);
    match g.ended() {
        Some(GuestEnd::SetupFailed(why)) => assert!(why.contains("join state"), "{why}"),
        other => panic!("a corrupt state was accepted: {other:?}"),
    }
    assert!(g.engine().is_none());
}

#[test]
fn a_guest_that_drops_and_rejoins_within_the_grace_resumes_its_player() {
    // A's link is cut at tick 200; two seconds later it connects again
    // with its token.
    let o = run_with(
        rejoining_host(900),
        a_and_b(),
        vec![
            at(200, NetAction::Disconnect(0)),
            at(260, NetAction::Rejoin(0, guest("A again"), net(20, 5, 7))),
        ],
    );
    let (before, after) = (&o.guests[0], &o.late[0]);
    let me = before.player_id().expect("A was admitted").clone();
    assert!(before.rejoin_token().is_some());
    assert_eq!(after.player_id(), Some(&me), "the same player");
    assert!(after.resumed());
    assert!(after.rejoin_token().is_some());
    assert_ne!(
        after.rejoin_token(),
        before.rejoin_token(),
        "the resumed connection gets the next token: the one it presented is spent"
    );
    let s = o.host.stats();
    assert_eq!(s.rejoins.get(&me), Some(&1));
    assert!(s.roster_removed.is_empty(), "{:?}", s.roster_removed);
    assert!(s.roster_added.is_empty(), "a rejoin is no roster add");
    assert!(o.host.roster().contains(&me));
    assert_eq!(o.host.names().get(&me).map(String::as_str), Some("A"));
    let applied = assert_late_lockstep(&o, 0);
    assert!(applied > 400, "{applied} ticks after the rejoin");
    assert!(final_hash_matches(&o.host, after));
    assert!(s.desyncs.is_empty(), "{:?}", s.desyncs);
    assert_lockstep(&o, 1);
    // Its score carried on: the rejoined player kept its entity.
    let row = after
        .final_scores()
        .iter()
        .find(|r| r.player_id == me)
        .expect("A's row");
    assert!(!row.disconnected, "{row:?}");
}

#[test]
fn after_its_removal_a_token_resumes_nothing_and_the_guest_joins_anew() {
    let grace_ticks = DISCONNECT_GRACE_MS * 30 / 1000;
    let o = run_with(
        rejoining_host(900),
        a_and_b(),
        vec![
            at(100, NetAction::Disconnect(0)),
            at(
                100 + grace_ticks + 60,
                NetAction::Rejoin(0, guest("A again"), net(20, 5, 7)),
            ),
        ],
    );
    let old = o.guests[0].player_id().expect("A was admitted").clone();
    let new = o.late[0].player_id().expect("admitted again").clone();
    assert_ne!(old, new, "a removed player is not resumed");
    assert!(!o.late[0].resumed());
    let s = o.host.stats();
    assert_eq!(s.roster_removed.len(), 1);
    assert_eq!(s.roster_removed[0].2, old);
    assert_eq!(s.roster_added.len(), 1);
    assert_eq!(s.roster_added[0].2, new);
    assert!(s.rejoins.is_empty());
    assert!(final_hash_matches(&o.host, &o.late[0]));
}

#[test]
fn a_player_the_host_let_go_frees_its_name_and_one_still_playing_keeps_it() {
    let grace_ticks = DISCONNECT_GRACE_MS * 30 / 1000;
    let o = run_with(
        host(1, 2, Some(900)),
        a_and_b(),
        vec![
            at(100, NetAction::Disconnect(0)),
            at(
                100 + grace_ticks + 60,
                NetAction::LateJoin(guest("a"), net(20, 5, 7)),
            ),
            at(
                100 + grace_ticks + 90,
                NetAction::LateJoin(guest("B"), net(20, 5, 8)),
            ),
        ],
    );
    let names = o.host.names();
    let back = o.late[0].player_id().expect("A came back").clone();
    let twin = o.late[1].player_id().expect("a second B joined").clone();
    assert_eq!(names[&back], "a", "A was let go: its name is free");
    assert_eq!(names[&twin], "B (2)", "B still plays: its name is taken");
}

fn spectator(name: &str) -> GuestConfig {
    GuestConfig {
        spectate: true,
        ..guest(name)
    }
}

#[test]
fn a_spectator_joins_mid_level_watches_through_a_transition_and_ends_in_lockstep() {
    let o = run_with(
        host(2, 2, Some(5_000)),
        a_and_b(),
        vec![at(
            300,
            NetAction::LateJoin(spectator("Watcher"), net(75, 10, 9)),
        )],
    );
    let watcher = &o.late[0];
    assert_eq!(
        watcher.ended(),
        Some(&GuestEnd::Ended(EndReason::Completed))
    );
    assert!(watcher.is_spectator());
    let id = watcher.player_id().expect("admitted").clone();
    assert_eq!(id.as_str(), "spectator-1");
    // It never entered the roster and nobody was added for it.
    let s = o.host.stats();
    assert!(s.roster_added.is_empty(), "{:?}", s.roster_added);
    assert!(!o.host.roster().contains(&id));
    assert_eq!(o.host.roster().len(), 4);
    // It watched both levels tick for tick, and its hash reports matched.
    assert_eq!(watcher.stats().transitions, 1);
    assert!(assert_late_lockstep(&o, 0) > 500);
    assert!(final_hash_matches(&o.host, watcher));
    assert!(s.hash_matches.get(&id).copied().unwrap_or(0) > 20);
    assert!(s.desyncs.is_empty(), "{:?}", s.desyncs);
    // It sent no input: nothing was filed or held for it.
    assert!(!s.input_lead.contains_key(&id));
    assert!(!s.held_per_player.contains_key(&id));
    let report = o.host.report();
    assert!(report.players.iter().all(|p| p.player_id != id));
    assert_eq!(report.spectators.len(), 1);
    let line = &report.spectators[0];
    assert_eq!(line.name, "Watcher");
    assert!(line.joined_at_tick.is_some_and(|t| t > 300));
    assert_eq!(line.joined_at_epoch, Some(1));
    assert!(line.hash_reports > 20);
    // The players were told who watches.
    for g in &o.guests {
        assert_eq!(g.spectators(), ["Watcher".to_owned()]);
    }
    assert_in_lockstep(&o, 0..2);
}

#[test]
fn spectators_in_the_lobby_hold_no_seat_and_the_cap_refuses_one_too_many() {
    let o = run_with(
        HostConfig {
            max_spectators: 1,
            ..host(1, 1, Some(300))
        }, // The spectator comes first: the lobby still waits for its player.
        vec![
            (spectator("Early watcher"), net(10, 0, 3)),
            (guest("A"), net(20, 5, 1)),
        ],
        vec![at(
            60,
            NetAction::LateJoin(spectator("One too many"), net(10, 0, 4)),
        )],
    );
    let early = &o.guests[0];
    assert!(early.is_spectator());
    assert_eq!(early.joined_at().map(|j| j.0), Some(1));
    assert!(final_hash_matches(&o.host, early));
    assert!(final_hash_matches(&o.host, &o.guests[1]));
    assert_eq!(o.host.roster().len(), 3, "host, bot and A");
    match o.late[0].ended() {
        Some(GuestEnd::Refused(RefusalReason::SessionFull, why)) => {
            assert!(why.contains("spectator"), "{why}");
        }
        other => panic!("expected a full refusal, got {other:?}"),
    }
    assert_eq!(o.host.report().spectators.len(), 1);
}

#[test]
fn a_spectators_inputs_are_ignored() {
    let mut host: HostSession = HostSession::new(host(1, 1, Some(200)));
    let player_slot = host.add_guest(Duration::ZERO);
    let watcher_slot = host.add_guest(Duration::ZERO);
    // A spectator must take up the delays the host fits.
    let watcher = Hello::new("").taking(&[FEATURE_INPUT_DELAY]).watching();
    host.on_event(player_slot, hello(""), Duration::ZERO);
    host.on_event(watcher_slot, watcher.into(), Duration::ZERO);
    assert_eq!(host.guests_present(), 1);
    assert_eq!(host.seats_taken(), 1);
    assert_eq!(host.spectators_present(), 1);
    // The lobby starts with its one player; the spectator is not in the roster.
    let mut now = Duration::ZERO;
    while host.phase() != HostPhase::Running && now < Duration::from_secs(30) {
        now += Duration::from_millis(10);
        host.poll(now);
        host.on_event(player_slot, setup_ack(), now);
    }
    assert_eq!(host.phase(), HostPhase::Running);
    assert!(
        host.roster()
            .iter()
            .all(|p| !p.as_str().starts_with("spectator"))
    );
    // It tries to play as itself and as the player: both are dropped.
    for who in ["spectator-1", "guest-1"] {
        let input = GuestMessage::TickInput(engine::wire::TickInput {
            tick: 5,
            player_id: PlayerId::new(who),
            input: InputSnapshot {
                fire: true,
                ..InputSnapshot::NEUTRAL
            },
        });
        host.on_event(
            watcher_slot,
            PeerEvent::Message(Channel::Input, input.to_json().unwrap().into()),
            now,
        );
    }
    assert!(
        host.stats().input_lead.is_empty(),
        "{:?}",
        host.stats().input_lead
    );
}
