//! Input runs (the `input-runs` hello feature, issue 48), on a virtual
//! clock: a guest sends its inputs only when they change, with two copies
//! and a keep-alive every eighth tick. The host plays its last input in
//! between as its own, so a player on runs is held no more than one
//! sending every tick, and a host without the feature still gets every
//! tick.

mod support;

use std::time::Duration;

use netcode::guest::GuestConfig;
use netcode::sim::LinkConfig;
use protocol::peer::FEATURE_INPUT_RUNS;
use support::Outcome;
use support::checks::{assert_lockstep, player};
use support::scenario::{guest, host, net, run, without_feature};

/// A player who never touches the keys: every input is the neutral one.
fn still(name: &str) -> GuestConfig {
    GuestConfig {
        bot: false,
        ..guest(name)
    }
}

fn bot(name: &str) -> GuestConfig {
    GuestConfig {
        bot: true,
        ..guest(name)
    }
}

fn lossy(loss: f64, seed: u64) -> LinkConfig {
    LinkConfig {
        loss,
        retransmit: Duration::from_millis(120),
        ..net(30, 5, seed)
    }
}

/// Guest `g`'s messages up a second.
fn up(o: &Outcome, g: usize) -> f64 {
    o.guests[g].meter().totals().messages_up as f64 / o.elapsed.as_secs_f64()
}

/// The inputs the host held for guest `g`'s player.
fn held(o: &Outcome, g: usize) -> u64 {
    let stats = o.host.stats();
    stats
        .held_per_player
        .get(&player(o, g))
        .copied()
        .unwrap_or(0)
}

#[test]
fn a_still_player_sends_keep_alives_only_and_is_never_held() {
    let o = run(
        host(1, 2, Some(900)),
        vec![
            (still("Runs"), lossy(0.05, 1)),
            (
                without_feature(FEATURE_INPUT_RUNS, still("Every")),
                lossy(0.05, 2),
            ),
        ],
    );
    for g in 0..2 {
        assert_lockstep(&o, g);
    }
    eprintln!(
        "messages up a second: on runs {:.1}, every tick {:.1}; held {} and {}",
        up(&o, 0),
        up(&o, 1),
        held(&o, 0),
        held(&o, 1)
    );
    // Keep-alives (3.75 a second), the first copies, pongs; against an
    // input every tick.
    assert!(up(&o, 0) < 8.0, "on runs: {:.1} a second", up(&o, 0));
    assert!(up(&o, 1) > 28.0, "every tick: {:.1} a second", up(&o, 1));
    // 5% loss never loses two keep-alives in a row here, and the assumed
    // input is always the right one.
    assert_eq!(held(&o, 0), 0);
    assert!(o.host.stats().desyncs.is_empty());
}

#[test]
fn bots_on_runs_are_held_no_more_than_bots_sending_every_tick() {
    let session = |runs: bool| {
        let config = |name: &str| {
            if runs {
                bot(name)
            } else {
                without_feature(FEATURE_INPUT_RUNS, bot(name))
            }
        };
        run(
            host(1, 2, Some(900)),
            vec![(config("A"), lossy(0.02, 3)), (config("B"), lossy(0.02, 4))],
        )
    };
    let (runs, every) = (session(true), session(false));
    for o in [&runs, &every] {
        assert_lockstep(o, 0);
        assert_lockstep(o, 1);
        assert!(o.host.stats().desyncs.is_empty());
    }
    let total = |o: &Outcome| held(o, 0) + held(o, 1);
    let ups = |o: &Outcome| up(o, 0) + up(o, 1);
    eprintln!(
        "held: on runs {}, every tick {}; messages up a second: {:.1} and {:.1}",
        total(&runs),
        total(&every),
        ups(&runs),
        ups(&every)
    );
    assert!(
        total(&runs) <= total(&every) + 2,
        "held on runs {}, every tick {}",
        total(&runs),
        total(&every)
    );
    // The engine's bots aim with the mouse nearly every tick: runs save
    // little for them, and never cost a message.
    assert!(ups(&runs) <= ups(&every));
}

#[test]
fn a_host_without_the_feature_gets_every_tick() {
    let mut older = host(1, 1, Some(600));
    older.features.retain(|f| f != FEATURE_INPUT_RUNS);
    let o = run(older, vec![(still("Still"), lossy(0.0, 5))]);
    assert_lockstep(&o, 0);
    assert!(up(&o, 0) > 28.0, "{:.1} a second", up(&o, 0));
    assert_eq!(held(&o, 0), 0);
}

#[test]
fn keep_alives_confirm_the_played_ticks_and_are_not_late() {
    // A keep-alive carries the ticks since the last message, most of them
    // already played with the input it repeats: confirmations, not late
    // inputs.
    let o = run(host(1, 1, Some(600)), vec![(still("Still"), net(30, 5, 6))]);
    assert_lockstep(&o, 0);
    assert!(up(&o, 0) < 8.0, "{:.1} a second", up(&o, 0));
    let stats = o.host.stats();
    assert_eq!(stats.late_inputs, 0);
    assert_eq!(held(&o, 0), 0);
}
