//! Relay sessions end to end (issue 26): `host-daemon relay` serves a
//! session from the lobby with no engine; three `host-daemon join --bot`
//! processes play it over real WebRTC, the first of them as the authority.
//! Once the snapshot of tick 300 is verified the authority's process is
//! killed: authority passes to the next player at a tick boundary, and
//! the other two play on. A fourth bot then joins from the snapshot and
//! the log, and the three finish on the same final world hash with no
//! desync; the third bot, killed and restarted with its resume file, is
//! the same player again. The relay recorded the level (`--record`): `host-daemon replay`
//! re-simulates it to the authority's final hash.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::daemon::{self, replay_file};
use common::{Lobby, folder, join_cmd, listed, next_line, outputs_of, stage, successful_report};

#[test]
fn three_bots_survive_their_authority_and_a_fourth_joins_from_the_log() {
    let (stage, mut children, here, lobby) = stage();
    let (records, Lobby { url, addr }) = (folder(&stage), lobby);
    let relay = daemon::relay(&here, &url)
        .name("e2e relay")
        .one_level(3)
        .record(records.path())
        .args(["--seed", "11", "--difficulty", "easy"])
        .args(["--snapshot-every", "300"])
        .spawn(&mut children);
    let log = &relay.log;
    let code = relay.session_code();
    let entry: serde_json::Value =
        serde_json::from_str(&common::http_get(&addr, &format!("/session/{code}")))
            .expect("session JSON");
    assert_eq!(entry["hostKind"], "relay", "{entry}");

    // The first to connect is player-1, the first authority.
    let first = children.push(
        join_cmd(&here, &url, &code, "first")
            .spawn()
            .expect("spawn"),
    );
    log.wait_for(Duration::from_secs(60), "the first admission", |l| {
        l.contains("guest admitted") && l.contains("player-1")
    });
    let mut players = Vec::new();
    let resume_file = records.path().join("third.rejoin");
    players.push(
        children.push(
            join_cmd(&here, &url, &code, "second")
                .spawn()
                .expect("spawn"),
        ),
    );
    let third = || {
        join_cmd(&here, &url, &code, "third")
            .arg("--resume-file")
            .arg(&resume_file)
            .spawn()
            .expect("spawn")
    };
    players.push(children.push(third()));
    // "second" and "third" race to connect: which of them is player-2 is
    // read off the relay's log.
    let (_, admitted) = log.wait_for(Duration::from_secs(60), "the third's admission", |l| {
        l.contains("guest admitted") && l.contains("name=\"third\"")
    });
    let third_player = admitted
        .split_whitespace()
        .find_map(|w| w.strip_prefix("player="))
        .expect("the admission names the player")
        .to_owned();
    log.wait_for(Duration::from_secs(60), "the level start", |l| {
        l.contains("level started")
    });
    log.wait_for(Duration::from_secs(60), "the first authority", |l| {
        l.contains("authority") && l.contains("player-1")
    });
    // The snapshot of tick 300 (10 s in) verified: the log is anchored.
    log.wait_for(Duration::from_secs(60), "a verified snapshot", |l| {
        l.contains("snapshot verified") && l.contains("tick=300")
    });
    assert!(
        listed(&addr, &code),
        "a running relay session with seats free stays listed"
    );

    children.0[first]
        .kill()
        .expect("kill the authority's process");
    log.wait_for(Duration::from_secs(60), "the handover", |l| {
        l.contains("authority") && l.contains("player-2")
    });
    let late = children.push(join_cmd(&here, &url, &code, "late").spawn().expect("spawn"));
    let (_, entered) = log.wait_for(Duration::from_secs(60), "the late joiner's entry", |l| {
        l.contains("player entered the level")
    });
    players.push(late);
    // The third bot's process dies too; restarted with its resume file
    // within the grace, it is the same player again.
    children.0[players[1]].kill().expect("kill the third bot");
    // Away for real time on purpose (the grace is 10 s), not a wait.
    std::thread::sleep(Duration::from_secs(2));
    players[1] = children.push(third());
    log.wait_for(Duration::from_secs(60), "the rejoin", |l| {
        l.contains("guest admitted")
            && l.contains(&format!("player={third_player} "))
            && l.contains("slot=4")
    });

    let outs = outputs_of(
        &mut children,
        &players,
        Duration::from_secs(300),
        "the bots",
    );
    let reports: Vec<serde_json::Value> = outs
        .iter()
        .zip(["second", "third", "late"])
        .map(|(o, what)| successful_report(o, what))
        .collect();
    let end = reports[0]["endReason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        end == "completed" || end == "team-eliminated",
        "{}",
        reports[0]
    );
    for r in &reports {
        assert_eq!(r["endReason"], end.as_str(), "{r}");
        assert_eq!(r["finalWorldHash"], reports[0]["finalWorldHash"], "{r}");
        assert_eq!(r["desyncs"], 0, "{r}");
    }
    assert_eq!(reports[1]["resumed"], true, "{}", reports[1]);
    assert_eq!(
        reports[1]["playerId"],
        third_player.as_str(),
        "{}",
        reports[1]
    );
    let state_tick = reports[2]["stateTick"]
        .as_u64()
        .expect("the joiner's state tick");
    assert!(
        state_tick >= 300,
        "the joiner was rebuilt from a snapshot: {}",
        reports[2]
    );
    assert!(entered.contains("player-4"), "{entered}");

    let line = next_line(&relay.lines, Duration::from_secs(30), "the relay report");
    let report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report line");
    assert_eq!(report["type"], "relay-report", "{line}");
    assert_eq!(report["end"], "completed", "{line}");
    assert_eq!(report["stats"]["desyncs"], 0, "{line}");
    assert_eq!(report["stats"]["handovers"], 1, "{line}");
    // The three, the late joiner and the rejoined third bot.
    assert_eq!(report["connections"], 5, "{line}");
    assert!(
        report["stats"]["snapshotsVerified"].as_u64().unwrap_or(0) >= 1,
        "{line}"
    );
    let log_cap = 2 * 300 + 120;
    assert!(
        report["stats"]["logFramesMax"].as_u64().unwrap_or(u64::MAX) <= log_cap,
        "{line}"
    );

    // The recorded level, with its roster add and removal, replays to the
    // final world every bot reached.
    let file = records.path().join(format!("{code}-level-1.replay"));
    let (_, replay) = replay_file(&file);
    assert_eq!(replay["matches"], true, "{replay}");
    assert_eq!(
        replay["finalWorldHash"], reports[0]["finalWorldHash"],
        "{replay}"
    );
}
