//! Replay files (issue 25): a host records each level of a session over
//! the simulated network; every recorded level re-simulates to the
//! host's world hash at its end, and at every tick on the way.

mod support;

use engine::wire::Raycaster;
use engine::{Game, RaycasterEngine};
use netcode::guest::GuestConfig;
use netcode::replay::{ReplayError, level_files};
use support::HostConfig;

/// The raycaster's replays.
type Replay = netcode::replay::Replay<Raycaster>;
use support::Outcome;
use support::checks::host_hashes;
use support::scenario::{host, net, run};

/// A two-level campaign with one guest and one bot, recorded: the text of
/// each level's replay file.
fn recorded_session() -> (Vec<String>, Outcome) {
    let ada = GuestConfig {
        display_name: "Ada".into(),
        ..GuestConfig::default()
    };
    let outcome = run(
        HostConfig {
            record_replay: true,
            ..host(2, 1, None)
        },
        vec![(ada, net(40, 0, 0))],
    );
    let files = level_files(&outcome.replay).expect("the records encode");
    (files, outcome)
}

#[test]
fn every_recorded_level_replays_to_the_hosts_hashes() {
    let (files, outcome) = recorded_session();
    assert_eq!(files.len(), 2, "one file per level");
    let host_hashes = host_hashes(&outcome);
    for (i, text) in files.iter().enumerate() {
        let replay = Replay::parse(text).expect("the file parses");
        assert_eq!(replay.header.level_epoch, i as u32 + 1);
        assert_eq!(
            replay.header.names.values().filter(|n| *n == "Ada").count(),
            1
        );
        let end = replay.end.clone().expect("the level's end was recorded");
        let outcome = replay.run::<RaycasterEngine>().expect("it runs");
        assert_eq!(outcome.matches, Some(true), "level {}: {outcome:?}", i + 1);
        assert_eq!(outcome.ticks, end.ticks);
        eprintln!(
            "level {}: {} ticks, {} bytes, final hash {}",
            i + 1,
            outcome.ticks,
            text.len(),
            outcome.final_world_hash
        );
        // Stopping anywhere gives the host's world at that tick.
        for tick in [1, end.ticks / 2, end.ticks - 1] {
            let (engine, _) = replay.run_to::<RaycasterEngine>(Some(tick)).expect("runs");
            assert_eq!(engine.tick(), tick);
            assert_eq!(
                Some(&engine.world_hash()),
                host_hashes.get(&(replay.header.level_epoch, tick)),
                "level {} tick {tick}",
                i + 1
            );
        }
    }
}

#[test]
fn a_damaged_replay_is_refused_with_the_line() {
    let (files, _) = recorded_session();
    let text = &files[0];
    let lines: Vec<&str> = text.lines().collect();
    let without = |skip: usize| {
        lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| *l)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let line_of = |e: ReplayError| match e {
        ReplayError::Malformed { line, .. } => line,
        other => panic!("{other:?}"),
    };
    // A missing tick.
    assert_eq!(line_of(Replay::parse(&without(10)).unwrap_err()), 11);
    // Not a replay.
    assert_eq!(line_of(Replay::parse("hello\n").unwrap_err()), 1);
    assert_eq!(line_of(Replay::parse("").unwrap_err()), 1);
    // Another format.
    let other = text.replacen("\"format\":1", "\"format\":99", 1);
    assert_eq!(line_of(Replay::parse(&other).unwrap_err()), 1);
    // Junk in the middle, and a record after the end.
    let junk = text.replacen('\n', "\n~AAAA\n", 1);
    assert_eq!(line_of(Replay::parse(&junk).unwrap_err()), 2);
    let after = format!("{text}{}\n", lines[1]);
    assert_eq!(line_of(Replay::parse(&after).unwrap_err()), lines.len() + 1);
    // Issue 44: a header naming thousands of players (4 s to simulate at
    // 30,000) is refused before anything runs.
    let mut header: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON header");
    let many: Vec<String> = (0..65).map(|i| format!("p{i}")).collect();
    let replay = header
        .get_mut("replay")
        .and_then(|r| r.as_object_mut())
        .expect("the header record");
    replay.insert("roster".into(), serde_json::json!(many));
    let crowded = format!("{header}\n{}", lines[1..].join("\n"));
    let refused = Replay::parse(&crowded).unwrap_err();
    assert!(refused.to_string().contains("players"), "{refused}");
    assert_eq!(line_of(refused), 1);
    // A truncated file still replays, without a verdict.
    let cut = lines[..lines.len() / 2].join("\n");
    let outcome = Replay::parse(&cut)
        .expect("a truncated file parses")
        .run::<RaycasterEngine>()
        .expect("runs");
    assert_eq!(outcome.matches, None);
}
