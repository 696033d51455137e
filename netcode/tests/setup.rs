//! Setting a session up, on a virtual clock: the handshake (versions,
//! names, the level in chunks) and the lobby (seats, the start, the
//! waiting room, what comings and goings leave behind).

mod support;

use std::time::Duration;

use engine::wire::HostMessage;
use game_api::PlayerId;
use netcode::guest::{GuestConfig, GuestEnd};
use netcode::host::HostPhase;
use netcode::link::{ConnectionState, PeerEvent};
use netcode::sim::{LinkConfig, Tamper, final_hash_matches, on_text};
use protocol::peer::{Channel, FEATURE_INPUT_DELAY, FEATURE_WAITING_ROOM, RefusalReason};
use protocol::tick::DISCONNECT_GRACE_MS;
use support::HostSession;
use support::checks::{assert_in_lockstep, ended, player};
use support::guest_by_hand::{feed, host_hello};
use support::host_by_hand::{Hello, hello, lobby_host, seat, setup_ack};
use support::scenario::{REJOIN_SECRET, a_and_b, guest, host, net, rejoining_host, run};
use support::{HostConfig, HostOutput};

#[test]
fn setup_refuses_a_version_mismatch_with_a_reason() {
    let old = GuestConfig {
        build_version: "campfire-0.0.0-stale".into(),
        ..guest("Old")
    };
    let o = run(
        host(1, 2, Some(60)),
        vec![(old, net(0, 0, 1)), (guest("New"), net(0, 0, 2))],
    );
    match ended(&o, 0) {
        GuestEnd::Refused(RefusalReason::VersionMismatch, detail) => {
            assert!(detail.contains("campfire-0.0.0-stale"), "{detail}");
        }
        other => panic!("expected a version refusal, got {other:?}"),
    }
    assert_eq!(o.host.stats().refusals.len(), 1);
    assert_eq!(o.host.roster().len(), 3, "host, bot and the matching guest");
    assert!(o.guests[0].player_id().is_none());
    assert!(final_hash_matches(&o.host, &o.guests[1]));
}

#[test]
fn a_guest_ends_before_its_hello_when_the_host_plays_another_game() {
    let mut g = support::GuestSession::new(guest("Lost"));
    let mut hello = host_hello(&[]);
    if let HostMessage::HostHello { game, .. } = &mut hello {
        *game = Some("tag".into());
    }
    feed(&mut g, hello);
    match g.ended() {
        Some(GuestEnd::SetupFailed(why)) => assert_eq!(
            why,
            "the session plays \"tag\", this guest plays the spec's game"
        ),
        other => panic!("a guest joined a session of another game: {other:?}"),
    }
    assert!(g.drain_outbox().is_empty(), "no hello was sent");
    // The spec's hello, naming no game, is this guest's.
    let mut g = support::GuestSession::new(guest("Home"));
    feed(&mut g, host_hello(&[]));
    assert_eq!(g.ended(), None);
    assert!(!g.drain_outbox().is_empty(), "the guest said hello");
}

#[test]
fn a_second_player_with_a_taken_name_plays_under_a_distinct_one() {
    let o = run(
        host(1, 3, Some(30)),
        vec![
            (guest("Tester"), net(0, 0, 1)),
            (guest("tester"), net(0, 0, 2)),
            (guest("Bot 1"), net(0, 0, 3)),
        ],
    );
    let names = o.host.names().clone();
    let mut guest_names: Vec<&str> = (0..3).map(|g| names[&player(&o, g)].as_str()).collect();
    guest_names.sort();
    assert_eq!(guest_names, vec!["Bot 1 (2)", "Tester", "tester (2)"]);
    // Every guest knows every name, its own as the host gave it.
    for g in &o.guests {
        assert_eq!(g.names(), &names);
    }
}

#[test]
fn setup_merges_sanitized_names_into_every_init() {
    let o = run(
        host(1, 2, Some(30)),
        vec![
            (guest("  Ada\u{7}\n  Lovelace "), net(5, 0, 1)),
            (guest("\u{202E}Bob"), net(0, 0, 2)),
        ],
    );
    let names = o.host.names().clone();
    assert_eq!(names.len(), 4);
    assert_eq!(names[&PlayerId::new("host")], "Host");
    assert_eq!(
        names[&PlayerId::new("bot-1")],
        "Bot 1",
        "bots are named as bots"
    );
    let mut guest_names: Vec<&str> = vec![&names[&player(&o, 0)], &names[&player(&o, 1)]];
    guest_names.sort();
    assert_eq!(guest_names, vec!["Ada Lovelace", "Bob"]);
    assert_eq!(names[&player(&o, 0)], "Ada Lovelace");
    for g in &o.guests {
        assert_eq!(g.names(), &names, "every guest gets every name");
    }
}

fn map_chunk_tamper(truncate: bool) -> Tamper {
    on_text(move |_c: Channel, text: &str| {
        let Ok(HostMessage::MapChunk(mut chunk)) = HostMessage::from_json(text) else {
            return text.to_owned();
        };
        if chunk.index == 0 {
            if truncate {
                chunk.data.truncate(chunk.data.len() / 2);
            } else {
                chunk.data = chunk.data.replacen("\"width\"", "\"widtH\"", 1);
            }
        }
        HostMessage::MapChunk(chunk).to_json().unwrap_or_default()
    })
}

#[test]
fn setup_rejects_corrupted_and_truncated_map_chunks_cleanly() {
    let grace_ticks = DISCONNECT_GRACE_MS * 30 / 1000;
    for (truncate, expect) in [(false, "checksum"), (true, "announces")] {
        let bad = LinkConfig {
            tamper_down: Some(map_chunk_tamper(truncate)),
            ..net(0, 0, 1)
        };
        let o = run(
            host(1, 2, Some(grace_ticks + 60)),
            vec![(guest("Bad"), bad), (guest("Good"), net(0, 0, 2))],
        );
        match ended(&o, 0) {
            GuestEnd::SetupFailed(e) => assert!(e.contains(expect), "{e}"),
            other => panic!("expected a setup failure, got {other:?}"),
        }
        assert!(o.guests[0].engine().is_none());
        // The host goes on; the failed seat leaves with a synchronized removal.
        let removed = &o.host.stats().roster_removed;
        assert_eq!(removed.len(), 1);
        assert_ne!(removed[0].2, player(&o, 1));
        assert_in_lockstep(&o, [1]);
    }
}

/// The session inits a host sent: to whom, and with what roster.
fn inits(out: &[HostOutput]) -> Vec<(usize, Vec<PlayerId>)> {
    out.iter()
        .filter_map(|o| match o {
            HostOutput::Send(slot, HostMessage::SessionInit(init), _) => {
                Some((*slot, init.roster.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_guest_who_leaves_the_lobby_frees_its_seat() {
    let t0 = Duration::ZERO;
    let mut h = lobby_host(host(1, 2, Some(60)));
    let first = seat(&mut h, hello("Leaver"), t0);
    assert_eq!(h.seats_taken(), 1);
    h.on_event(
        first,
        PeerEvent::State(ConnectionState::Closed),
        t0 + Duration::from_secs(1),
    );
    h.poll(t0 + Duration::from_secs(1));
    assert!(!h.started(), "one of two seats was taken, then freed");
    assert_eq!(h.seats_taken(), 0);
    assert!(h.drain_outbox().contains(&HostOutput::Close(first)));
    let b = h.add_guest(t0);
    let c = h.add_guest(t0);
    h.on_event(b, hello("B"), t0 + Duration::from_secs(2));
    h.poll(t0 + Duration::from_secs(2));
    assert!(
        !h.started(),
        "the leaver does not count toward --start-when"
    );
    h.on_event(c, hello("C"), t0 + Duration::from_secs(3));
    h.poll(t0 + Duration::from_secs(3));
    assert!(h.started());
    let sent = inits(&h.drain_outbox());
    assert_eq!(
        sent.iter().map(|(slot, _)| *slot).collect::<Vec<_>>(),
        vec![b, c],
        "only the guests present get the session init"
    );
    let roster = &sent[0].1;
    assert!(roster.contains(&PlayerId::new("guest-2")), "{roster:?}");
    assert!(roster.contains(&PlayerId::new("guest-3")), "{roster:?}");
    assert!(!roster.contains(&PlayerId::new("guest-1")), "{roster:?}");
}

#[test]
fn the_lobby_wait_starts_with_whoever_is_in_or_waits_without_one() {
    let t0 = Duration::ZERO;
    let mut waits = HostSession::new(HostConfig {
        lobby_wait: Some(Duration::from_secs(5)),
        ..host(1, 3, Some(60))
    });
    let mut patient = lobby_host(host(1, 3, Some(60)));
    for h in [&mut waits, &mut patient] {
        seat(h, hello("Only"), t0);
    }
    waits.poll(t0 + Duration::from_millis(4_999));
    assert!(!waits.started());
    waits.poll(t0 + Duration::from_secs(5));
    assert!(waits.started(), "started with one guest of three");
    patient.poll(t0 + Duration::from_secs(3_600));
    assert!(!patient.started(), "no lobby wait: waits for three guests");
}

#[test]
fn start_now_freezes_the_roster_with_whoever_is_in_and_refuses_later_joiners() {
    let t0 = Duration::ZERO;
    let mut h = lobby_host(HostConfig {
        late_join: false,
        ..host(1, 4, Some(60))
    });
    seat(&mut h, hello("A"), t0);
    h.poll(t0 + Duration::from_secs(1));
    assert_eq!(h.phase(), HostPhase::Lobby, "one guest of four: waiting");
    h.start_now(t0 + Duration::from_secs(2));
    assert_eq!(h.phase(), HostPhase::Setup);
    let sent = inits(&h.drain_outbox());
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.len(), 3, "host, bot and A: {:?}", sent[0].1);
    let late = seat(&mut h, hello("Late"), t0 + Duration::from_secs(3));
    assert_eq!(
        h.stats().refusals,
        vec![(late, RefusalReason::SessionStarted)]
    );
    h.start_now(t0 + Duration::from_secs(4));
    assert_eq!(h.roster().len(), 3, "a second start changes nothing");
}

#[test]
fn start_now_without_guests_runs_the_host_alone() {
    let t0 = Duration::ZERO;
    let mut h = lobby_host(host(1, 2, Some(30)));
    h.start_now(t0);
    h.poll(t0);
    assert_eq!(h.phase(), HostPhase::Running);
    h.poll(t0 + Duration::from_secs(2));
    assert!(h.stats().ticks >= 30, "ticks: {}", h.stats().ticks);
}

/// Issue 24: a guest that floods the host is disconnected once over its
/// budget (in the lobby its seat is freed), and nothing it sends after
/// that is heard; another guest at a normal pace stays.
#[test]
fn a_guest_over_its_budget_is_disconnected_and_heard_no_more() {
    use netcode::host::budget::GuestBudgetPolicy;
    use support::HostEvent;
    let t0 = Duration::ZERO;
    let policy = GuestBudgetPolicy::default();
    let mut h = lobby_host(host(1, 3, Some(60)));
    let flooder = h.add_guest(t0);
    let steady = h.add_guest(t0);
    h.on_event(flooder, hello("Flood"), t0);
    h.on_event(steady, hello("Steady"), t0);
    assert_eq!(h.seats_taken(), 2);
    h.drain_outbox();
    h.drain_events();
    // A second of garbage at 10,000 messages a second; the steady guest
    // sends a pong-sized message every 33 ms.
    let junk = || PeerEvent::Message(Channel::Input, "x".repeat(100).into());
    let mut over_at = None;
    for i in 0..10_000u64 {
        let now = t0 + Duration::from_micros(100 * i);
        h.on_event(flooder, junk(), now);
        if i % 330 == 0 {
            h.on_event(steady, junk(), now);
        }
        if over_at.is_none() && h.drain_events().contains(&HostEvent::OverBudget(flooder)) {
            over_at = Some(i);
        }
    }
    let over_at = over_at.expect("the flooder went over its budget");
    // The burst, plus what refilled meanwhile, and no more.
    assert!(
        (policy.message_burst as u64..policy.message_burst as u64 + 100).contains(&over_at),
        "over budget after {over_at} messages"
    );
    assert!(h.drain_outbox().contains(&HostOutput::Close(flooder)));
    assert_eq!(h.stats().over_budget, 1);
    assert_eq!(h.seats_taken(), 1, "the flooder's seat is free again");
    assert_eq!(h.guest_names(), vec!["Steady".to_owned()]);
    // Heard no more: not even a bad message counted, no second event.
    h.drain_events();
    let bad = h.stats().bad_messages;
    h.on_event(flooder, junk(), t0 + Duration::from_secs(5));
    assert_eq!(h.stats().bad_messages, bad);
    assert!(h.drain_events().is_empty());
}

/// The waiting rooms a host sent: to whom, and what.
fn waiting_rooms(out: &[HostOutput]) -> Vec<(Vec<usize>, HostMessage)> {
    out.iter()
        .filter_map(|o| match o {
            HostOutput::Broadcast(slots, m @ HostMessage::WaitingRoom { .. }, _) => {
                Some((slots.clone(), m.clone()))
            }
            HostOutput::Send(slot, m @ HostMessage::WaitingRoom { .. }, _) => {
                Some((vec![*slot], m.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn guests_in_the_lobby_hear_who_is_in_and_what_the_start_waits_for() {
    let t0 = Duration::ZERO;
    let mut h = lobby_host(HostConfig {
        max_guests: Some(3),
        host_player: Some((PlayerId::new("host"), "Hosty".into())),
        ..host(1, 3, Some(60))
    });
    let room = |players: &[&str], guests_needed: Option<u32>, you: u32| HostMessage::WaitingRoom {
        players: players.iter().map(|p| (*p).to_owned()).collect(),
        // The host's player and its bot, and three guests.
        max_players: Some(5),
        guests_needed,
        you: Some(you),
    };
    let a = seat(&mut h, Hello::new("A").taking(&[FEATURE_WAITING_ROOM]), t0);
    h.poll(t0);
    assert_eq!(
        waiting_rooms(&h.drain_outbox()),
        vec![(vec![a], room(&["Bot 1", "Hosty", "A"], Some(2), 2))],
        "the bot is named a bot; the start waits for two more guests; A is told which is its own"
    );
    // A guest that did not take it up hears nothing, and counts.
    let b = h.add_guest(t0);
    h.on_event(b, hello("B"), t0 + Duration::from_secs(1));
    h.poll(t0 + Duration::from_secs(1));
    assert_eq!(
        waiting_rooms(&h.drain_outbox()),
        vec![(vec![a], room(&["Bot 1", "Hosty", "A", "B"], Some(1), 2))]
    );
    // Nothing changed: nothing is sent.
    h.poll(t0 + Duration::from_secs(2));
    assert_eq!(waiting_rooms(&h.drain_outbox()), vec![]);
    // A leaves; B is told nothing (it did not ask), and after the start
    // nobody hears a waiting room again.
    h.on_event(
        a,
        PeerEvent::State(ConnectionState::Closed),
        t0 + Duration::from_secs(3),
    );
    h.start_now(t0 + Duration::from_secs(3));
    h.poll(t0 + Duration::from_secs(3));
    assert_eq!(waiting_rooms(&h.drain_outbox()), vec![]);
}

#[test]
fn a_guest_shows_the_waiting_room_its_host_sent() {
    let o = run(
        HostConfig {
            max_guests: Some(2),
            ..host(1, 2, Some(120))
        },
        a_and_b(),
    );
    // The last word before the start: both guests in, none needed.
    for (g, me) in o.guests.iter().zip(["A", "B"]) {
        let room = g.waiting_room().expect("heard the waiting room");
        assert_eq!(room.guests_needed, Some(0), "{room:?}");
        // The host's player and its bot, and two guests.
        assert_eq!(room.max_players, Some(4), "{room:?}");
        assert_eq!(
            room.players[2..],
            ["A".to_owned(), "B".to_owned()],
            "{room:?}"
        );
        // Each guest is told which of them it is.
        let you = room.you.expect("told which player it is") as usize;
        assert_eq!(room.players[you], me, "{room:?}");
    }
}

/// The hello of a connection that comes and goes. It takes up
/// `input-delay`: a spectator must take up the delays the host fits.
fn churn() -> Hello {
    Hello::new("Churn").taking(&[FEATURE_INPUT_DELAY])
}

#[test]
fn connections_that_come_and_go_leave_no_seats_behind() {
    // Issue 44: every connection ever made used to keep a seat that each
    // tick scanned. 2,000 strangers come and go (refused, silent, gone
    // before their hello, watching and leaving, a rejoin taking a player
    // over); the host keeps only the seats that can still matter.
    const KEPT_AT_MOST: usize = 8;
    let step = Duration::from_millis(5);
    let mut h = lobby_host(HostConfig {
        late_join: false,
        hello_timeout: 4 * step,
        ..rejoining_host(100_000)
    });
    let mut now = Duration::ZERO;
    let bounded = |h: &HostSession| {
        assert!(
            h.seats_kept() <= KEPT_AT_MOST,
            "kept {} seats of {} connections",
            h.seats_kept(),
            h.connections()
        );
    };
    let a = seat(&mut h, hello("A"), now);
    for _ in 0..250 {
        let leaver = seat(&mut h, hello("Leaver"), now);
        h.on_event(leaver, PeerEvent::State(ConnectionState::Closed), now);
        seat(&mut h, churn().build("campfire-0.0.0-stale"), now);
        h.poll(now);
        bounded(&h);
    }
    assert_eq!(h.phase(), HostPhase::Lobby, "only A stayed");
    h.start_now(now);
    let token = h
        .drain_outbox()
        .into_iter()
        .find_map(|o| match o {
            HostOutput::Send(slot, HostMessage::SessionInit(init), _) if slot == a => {
                init.rejoin_token
            }
            _ => None,
        })
        .expect("A's rejoin token");
    h.on_event(a, setup_ack(), now);
    h.poll(now);
    assert_eq!(h.phase(), HostPhase::Running);
    let me = PlayerId::new("guest-1");
    let mut watcher = None;
    for generation in 0..300 {
        now += step;
        if let Some(w) = watcher.take() {
            h.on_event(w, PeerEvent::State(ConnectionState::Closed), now);
        }
        let late = seat(&mut h, hello("Late"), now);
        watcher = Some(seat(&mut h, churn().watching(), now));
        let gone = h.add_guest(now);
        h.on_event(gone, PeerEvent::State(ConnectionState::Failed), now);
        // Each rejoin spends its token: the next presents the next one.
        let token = match generation {
            0 => token.clone(),
            _ => lockstep::rejoin::token(&REJOIN_SECRET, &me, generation).expect("a token"),
        };
        seat(&mut h, churn().resuming(token), now);
        h.add_guest(now); // silent: refused at the hello deadline
        h.poll(now);
        h.drain_outbox();
        h.drain_events();
        bounded(&h);
        // A spent seat hears nothing more, and a slot never handed out neither.
        for slot in [late, usize::MAX] {
            h.on_event(slot, hello("Again"), now);
            h.on_event(slot, PeerEvent::State(ConnectionState::Closed), now);
        }
        assert!(h.drain_outbox().is_empty());
    }
    assert_eq!(h.connections(), 2_001);
    now += 4 * step;
    h.poll(now);
    assert_eq!(
        h.seats_kept(),
        2,
        "A's last connection and the one watching"
    );
    // What the run's records need is kept apart from the seats.
    assert_eq!(h.phase(), HostPhase::Running);
    assert!(h.roster().contains(&me));
    assert_eq!(h.stats().rejoins.get(&me), Some(&300));
    assert!(h.stats().roster_removed.is_empty());
    let watched = h.report().spectators;
    assert_eq!(watched.len(), 300);
    assert_eq!(watched.iter().filter(|s| s.watching).count(), 1);
    assert_eq!(h.guests_present(), 1);
    assert_eq!(h.spectators_present(), 1);
    // A spent token (the first) takes nothing over.
    seat(&mut h, churn().resuming(token), now);
    h.poll(now);
    assert_eq!(h.stats().rejoins.get(&me), Some(&300));
}
