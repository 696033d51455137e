//! Late join end to end (issue 25): a daemon session's level is running
//! with one bot guest; ten seconds in, a second `host-daemon join --bot`
//! joins it over real WebRTC, enters the level as a roster add, plays it to
//! the end in lockstep (no desync, hash reports on both sides), and the
//! level's replay, which carries the roster add, re-simulates to the
//! recorded final hash. A spectator (`join --spectate`) that arrives with
//! the late joiner watches the rest of the level and ends on the host's
//! final world hash. A guest killed mid-level and restarted with its
//! resume file within the grace comes back as the same player.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::daemon::{self, replay_file};
use common::{
    Lobby, folder, guest_rows, http_get, join_cmd, listed, next_line, outputs_of, stage,
    successful_report, wait_for_token,
};
use engine::wire::HostMessage;

/// A normal end of a one-level run for a bot: the level completed, or
/// every player died.
fn assert_normal_end(report: &serde_json::Value) {
    let reason = report["endReason"].as_str().unwrap_or_default();
    assert!(
        reason == "completed" || reason == "team-eliminated",
        "{report}"
    );
    assert_eq!(report["desyncs"], 0, "{report}");
    assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
}

#[test]
fn a_bot_joins_a_running_level_ten_seconds_in_and_plays_it_to_the_end() {
    let (stage, mut children, here, lobby) = stage();
    let (records, Lobby { url, addr }) = (folder(&stage), lobby);
    let host = daemon::host(&here, &url)
        .args(["--bots", "1"])
        .one_level(1)
        .record(records.path())
        .spawn(&mut children);
    let code = host.session_code();

    let first = children.push(
        join_cmd(&here, &url, &code, "early")
            .spawn()
            .expect("spawn the first join"),
    );
    host.log
        .wait_for(Duration::from_secs(60), "early connected", |l| {
            l.contains("guest connected") && l.contains("name=early")
        });
    // The level runs for ten seconds: real processes on a real clock, so
    // the wait is real time. The started session, with seats free, stays
    // listed.
    std::thread::sleep(Duration::from_secs(10));
    assert!(
        listed(&addr, &code),
        "a started session with free seats stays listed"
    );
    let view: serde_json::Value =
        serde_json::from_str(&http_get(&addr, &format!("/session/{code}"))).expect("session JSON");
    assert_eq!(view["inProgress"], true, "{view}");
    assert!(
        view["round"].is_u64(),
        "a round is open for joiners: {view}"
    );
    let late = children.push(
        join_cmd(&here, &url, &code, "late")
            .spawn()
            .expect("spawn the late join"),
    );
    let watcher = children.push(
        join_cmd(&here, &url, &code, "watcher")
            .arg("--spectate")
            .spawn()
            .expect("spawn the spectator"),
    );
    let (_, entered) = host
        .log
        .wait_for(Duration::from_secs(60), "the roster add", |l| {
            l.contains("late joiner entered the level")
        });
    let tick: u64 = entered
        .split("tick=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tick in: {entered}"));
    assert!(tick >= 250, "joined at tick {tick}: {entered}");

    let outs = outputs_of(
        &mut children,
        &[first, late, watcher],
        Duration::from_secs(300),
        "the guests",
    );
    let early = successful_report(&outs[0], "the first guest");
    let joiner = successful_report(&outs[1], "the late joiner");
    let spectator = successful_report(&outs[2], "the spectator");
    assert_normal_end(&early);
    assert_normal_end(&joiner);
    assert_eq!(early["endReason"], joiner["endReason"]);
    // The joiner simulated from its join tick on, the first guest from 0.
    let (te, tj) = (
        early["ticks"].as_u64().unwrap_or(0),
        joiner["ticks"].as_u64().unwrap_or(0),
    );
    assert!(tj + tick <= te + 5 && tj + 100 < te, "ticks {te} and {tj}");

    // The daemon's report: both guests reported hashes, none differed.
    let line = next_line(&host.lines, Duration::from_secs(30), "the session report");
    let report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report line");
    assert_eq!(report["type"], "session-report", "{line}");
    let guests = guest_rows(&report);
    assert_eq!(guests.len(), 2, "{line}");
    for g in &guests {
        assert!(g["hashReports"].as_u64().unwrap_or(0) > 0, "{line}");
        assert_eq!(g["desyncs"], 0, "{line}");
    }
    let late_row = guests
        .iter()
        .find(|g| g["name"] == "late")
        .expect("the joiner's row");
    assert_eq!(late_row["joinedAtTick"], tick, "{line}");
    // The joiner's state is the world after the tick that added it.
    assert_eq!(joiner["stateTick"], tick + 1, "{joiner}");
    assert!(early.get("stateTick").is_none(), "{early}");
    // Both guests ended on the host's final world.
    let final_hash = report["finalWorldHash"].as_str().expect("finalWorldHash");
    assert_eq!(early["finalWorldHash"], final_hash, "{early}");
    assert_eq!(joiner["finalWorldHash"], final_hash, "{joiner}");

    // The spectator watched from the middle of the level to its end: no
    // seat, no input, and the host's final world.
    assert_eq!(spectator["spectator"], true, "{spectator}");
    assert_eq!(spectator["playerId"], "spectator-1", "{spectator}");
    assert_eq!(spectator["endReason"], early["endReason"], "{spectator}");
    assert!(
        spectator["stateTick"].as_u64().unwrap_or(0) >= 250,
        "{spectator}"
    );
    assert_eq!(spectator["finalWorldHash"], final_hash, "{spectator}");
    let watchers = report["spectators"].as_array().expect("spectators");
    assert_eq!(watchers.len(), 1, "{line}");
    assert_eq!(watchers[0]["name"], "watcher", "{line}");
    assert!(
        watchers[0]["hashReports"].as_u64().unwrap_or(0) > 0,
        "{line}"
    );
    assert_eq!(watchers[0]["desyncs"], 0, "{line}");

    // The replay carries the roster add and re-simulates to the end hash.
    let file = records.path().join(format!("{code}-level-1.replay"));
    let text = std::fs::read_to_string(&file).expect("the level's replay");
    let adds: Vec<u64> = text
        .lines()
        .filter_map(|l| match HostMessage::decode(l) {
            Ok(HostMessage::TickInputBundle(b)) => b.roster_add.map(|_| b.tick),
            _ => None,
        })
        .collect();
    assert_eq!(adds, vec![tick], "the replay's roster adds");
    let (ok, replayed) = replay_file(&file);
    assert!(ok, "replay: {replayed}");
    assert_eq!(replayed["matches"], true, "{replayed}");
}

/// A bot guest SIGKILLed mid-level and started again with the same
/// `--resume-file` within the disconnect grace resumes its player: the
/// same player id, no removal, the level played to the end in lockstep.
#[test]
fn a_killed_guest_restarted_with_its_resume_file_comes_back_as_the_same_player() {
    let (stage_files, mut children, here, lobby) = stage();
    let (files, Lobby { url, .. }) = (folder(&stage_files), lobby);
    let host = daemon::host(&here, &url)
        .args(["--bots", "1"])
        .one_level(1)
        .metrics()
        .spawn(&mut children);
    let code = host.session_code();
    let resume = files.path().join("resume");
    let resume_arg = resume.to_str().expect("a UTF-8 path").to_owned();

    let first = children.push(
        join_cmd(&here, &url, &code, "phoenix")
            .args(["--resume-file", &resume_arg])
            .spawn()
            .expect("spawn the guest"),
    );
    // Admitted: the token is on disk. Let the level run a few seconds
    // (150 ticks at 30 Hz).
    wait_for_token(&resume);
    host.wait_ticks(150, Duration::from_secs(60));
    children.kill(first, "the guest");

    let second = children.push(
        join_cmd(&here, &url, &code, "phoenix")
            .args(["--resume-file", &resume_arg])
            .spawn()
            .expect("spawn the guest again"),
    );
    let (_, resumed) = host
        .log
        .wait_for(Duration::from_secs(60), "the rejoin", |l| {
            l.contains("player resumed on a fresh connection")
        });
    assert!(resumed.contains("player=guest-1"), "{resumed}");

    let outs = outputs_of(
        &mut children,
        &[second],
        Duration::from_secs(300),
        "the resumed guest",
    );
    let report = successful_report(&outs[0], "the resumed guest");
    assert_normal_end(&report);
    assert_eq!(report["playerId"], "guest-1", "{report}");
    assert_eq!(report["resumed"], true, "{report}");

    let line = next_line(&host.lines, Duration::from_secs(30), "the session report");
    let host_report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report line");
    let guests = guest_rows(&host_report);
    assert_eq!(guests.len(), 1, "one guest, resumed: {line}");
    assert_eq!(guests[0]["rejoins"], 1, "{line}");
    assert_eq!(guests[0]["desyncs"], 0, "{line}");
    assert_eq!(
        report["finalWorldHash"], host_report["finalWorldHash"],
        "{line}"
    );
    assert_eq!(
        host.log
            .count(|l| l.contains("player removed from the roster")),
        0,
        "the player was removed"
    );
}
