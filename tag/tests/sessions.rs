//! Tag through campfire's netcode, unchanged: a host session with a bot,
//! two guests, a late joiner and a rejoin over the simulated network, every
//! tick of every guest on the host's hash, and the recorded replay
//! re-simulating to the host's hashes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use game_api::Game;
use netcode::guest::{GuestConfig, GuestEnd, GuestSession};
use netcode::host::HostConfig;
use netcode::replay::{Replay, level_files};
use netcode::sim::{LinkConfig, NetAction, NetEvent, Outcome, Scenario, final_hash_matches};
use protocol::peer::EndReason;
use tag::TagWorld;
use tag::plan::Rounds;
use tag::wire::Tag;

fn guest(name: &str) -> GuestConfig {
    GuestConfig {
        display_name: name.into(),
        record_ticks: true,
        ..GuestConfig::default()
    }
}

fn net(latency_ms: u64, seed: u64) -> LinkConfig {
    LinkConfig {
        latency: Duration::from_millis(latency_ms),
        jitter: Duration::from_millis(5),
        seed,
        ..LinkConfig::default()
    }
}

fn at(at_tick: u64, action: NetAction) -> NetEvent {
    NetEvent { at_tick, action }
}

/// Two rounds of 300 ticks with a bot and two guests; a third guest joins
/// late, the first drops and rejoins.
fn session() -> Outcome<TagWorld> {
    netcode::sim::run::<TagWorld>(Scenario {
        host: HostConfig {
            plan: Arc::new(Rounds {
                seed: 7,
                rounds: 2,
                round_ticks: 300,
            }),
            bots: 1,
            expected_guests: 2,
            record_hashes: true,
            record_replay: true,
            rejoin_secret: Some([9; 32]),
            ..HostConfig::default()
        },
        guests: vec![(guest("Ann"), net(20, 1)), (guest("Bo"), net(35, 2))],
        events: vec![
            at(90, NetAction::LateJoin(guest("Cy"), net(25, 3))),
            at(150, NetAction::Disconnect(0)),
            at(180, NetAction::Rejoin(0, guest("Ann again"), net(20, 4))),
        ],
    })
}

/// Every tick `g` applied carries the host's hash for that tick.
fn assert_on_hosts_hashes(o: &Outcome<TagWorld>, g: &GuestSession<TagWorld>, who: &str) {
    let host: BTreeMap<(u32, u64), u64> = o
        .host
        .hash_log()
        .iter()
        .map(|(e, t, h)| ((*e, *t), *h))
        .collect();
    assert!(!g.applied().is_empty(), "{who} applied nothing");
    for a in g.applied() {
        assert_eq!(
            host.get(&(a.epoch, a.tick + 1)),
            Some(&a.hash),
            "{who} at epoch {} tick {}",
            a.epoch,
            a.tick
        );
    }
}

#[test]
fn tag_plays_through_host_late_join_rejoin_and_replay() {
    let o = session();
    assert_eq!(o.host.ended(), Some(EndReason::Completed));
    assert_eq!(o.host.stats().levels_completed, 2);
    let (bo, cy, ann_again) = (&o.guests[1], &o.late[0], &o.late[1]);
    for (g, who) in [(bo, "Bo"), (cy, "Cy"), (ann_again, "Ann again")] {
        assert_eq!(
            g.ended(),
            Some(&GuestEnd::Ended(EndReason::Completed)),
            "{who}"
        );
        assert_on_hosts_hashes(&o, g, who);
        assert!(
            final_hash_matches(&o.host, g),
            "{who} ended on another hash"
        );
    }
    assert!(
        o.host.stats().desyncs.is_empty(),
        "{:?}",
        o.host.stats().desyncs
    );
    let ann = o.guests[0].player_id().expect("Ann was admitted");
    assert_eq!(ann_again.player_id(), Some(ann), "the rejoin resumed Ann");
    assert!(ann_again.resumed());
    assert!(cy.joined_at().is_some(), "Cy joined a running round");
    // Somebody was tagged: the bots chase.
    let tags: u32 = o
        .host
        .engine()
        .expect("a world")
        .arena()
        .runners
        .values()
        .map(|r| r.tags)
        .sum();
    assert!(tags > 0, "no tag in a whole round");

    // Each round's replay re-simulates to the host's hashes.
    let files = level_files(&o.replay).expect("the records encode");
    assert_eq!(files.len(), 2, "one replay per round");
    for text in &files {
        let replay = Replay::<Tag>::parse(text).expect("parses");
        let outcome = replay.run::<TagWorld>().expect("runs");
        assert_eq!(outcome.matches, Some(true), "{outcome:?}");
        let (world, _) = replay.run_to::<TagWorld>(Some(100)).expect("runs");
        let host_hash = o
            .host
            .hash_log()
            .iter()
            .find(|(e, t, _)| (*e, *t) == (replay.header.level_epoch, 100));
        assert_eq!(Some(world.world_hash()), host_hash.map(|(_, _, h)| *h));
    }
}
