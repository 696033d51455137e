//! A second game end to end (issue 47): tag, a game that is not the
//! raycaster, played by `host-daemon host --game tag` and `relay --game
//! tag` with `join --game tag --bot` guests over real WebRTC, through the
//! same netcode, relay, protocol, lobby and daemon. In host mode a guest
//! joins the running round late, a spectator watches it, a guest killed
//! mid-round comes back with its resume file as the same player, every
//! guest ends on the host's final world hash with no desync, and the
//! round's replay re-simulates to it. In relay mode two bots play from
//! the start, a third joins late from the relay's log and one killed
//! mid-round resumes its player; the relay's replay matches too.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::daemon::{self, replay_file_with};
use common::{
    Lobby, Site, folder, guest_rows, join_cmd, next_line, outputs_of, stage, successful_report,
    wait_for_token,
};

/// A tag guest.
fn tag_join(here: &Site, url: &str, code: &str, name: &str) -> std::process::Command {
    let mut cmd = join_cmd(here, url, code, name);
    cmd.args(["--game", "tag"]);
    cmd
}

/// A completed round with no desync and some ticks.
fn assert_completed(report: &serde_json::Value) {
    assert_eq!(report["endReason"], "completed", "{report}");
    assert_eq!(report["desyncs"], 0, "{report}");
    assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
}

#[test]
fn tag_is_hosted_with_a_late_joiner_a_spectator_a_rejoin_and_a_replay() {
    let (stage, mut children, here, lobby) = stage();
    let (records, Lobby { url, .. }) = (folder(&stage), lobby);
    let host = daemon::host(&here, &url)
        .args(["--game", "tag", "--round-ticks", "900", "--bots", "1"])
        .one_level(1)
        .record(records.path())
        .metrics()
        .spawn(&mut children);
    let code = host.session_code();
    let resume = records.path().join("phoenix.rejoin");
    let resume_arg = resume.to_str().expect("a UTF-8 path").to_owned();

    let first = children.push(
        tag_join(&here, &url, &code, "phoenix")
            .args(["--resume-file", &resume_arg])
            .spawn()
            .expect("spawn the first guest"),
    );
    wait_for_token(&resume);
    // A guest of another game (the default, the raycaster) hears the
    // session's game in the host's hello and ends at once.
    let lost = children.push(
        join_cmd(&here, &url, &code, "lost")
            .spawn()
            .expect("spawn the raycaster guest"),
    );
    let out = &outputs_of(
        &mut children,
        &[lost],
        Duration::from_secs(60),
        "the raycaster guest",
    )[0];
    let stderr = String::from_utf8_lossy(&out.out.stderr);
    assert_eq!(out.out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("setup failed: the session plays \"tag\""),
        "{stderr}"
    );
    host.wait_ticks(150, Duration::from_secs(60));
    let late = children.push(
        tag_join(&here, &url, &code, "late")
            .spawn()
            .expect("spawn the late joiner"),
    );
    let watcher = children.push(
        tag_join(&here, &url, &code, "watcher")
            .arg("--spectate")
            .spawn()
            .expect("spawn the spectator"),
    );
    host.log
        .wait_for(Duration::from_secs(60), "the roster add", |l| {
            l.contains("late joiner entered the level")
        });
    children.kill(first, "the first guest");
    let again = children.push(
        tag_join(&here, &url, &code, "phoenix")
            .args(["--resume-file", &resume_arg])
            .spawn()
            .expect("spawn the first guest again"),
    );
    host.log
        .wait_for(Duration::from_secs(60), "the rejoin", |l| {
            l.contains("player resumed on a fresh connection") && l.contains("player=guest-1")
        });

    let outs = outputs_of(
        &mut children,
        &[late, watcher, again],
        Duration::from_secs(180),
        "the tag guests",
    );
    let joiner = successful_report(&outs[0], "the late joiner");
    let spectator = successful_report(&outs[1], "the spectator");
    let resumed = successful_report(&outs[2], "the resumed guest");
    assert_completed(&joiner);
    assert_completed(&resumed);
    assert!(joiner["stateTick"].as_u64().unwrap_or(0) >= 150, "{joiner}");
    assert_eq!(resumed["playerId"], "guest-1", "{resumed}");
    assert_eq!(resumed["resumed"], true, "{resumed}");
    assert_eq!(spectator["spectator"], true, "{spectator}");

    let line = next_line(&host.lines, Duration::from_secs(30), "the session report");
    let report: serde_json::Value = serde_json::from_str(&line).expect("a JSON report line");
    let final_hash = report["finalWorldHash"].as_str().expect("finalWorldHash");
    for guest in [&joiner, &spectator, &resumed] {
        assert_eq!(guest["finalWorldHash"], final_hash, "{guest}");
    }
    let guests = guest_rows(&report);
    assert_eq!(guests.len(), 2, "phoenix and late: {line}");
    for g in &guests {
        assert!(g["hashReports"].as_u64().unwrap_or(0) > 0, "{line}");
        assert_eq!(g["desyncs"], 0, "{line}");
    }

    let file = records.path().join(format!("{code}-level-1.replay"));
    let (ok, replayed) = replay_file_with(&file, &["--game", "tag"]);
    assert!(ok, "replay: {replayed}");
    assert_eq!(replayed["matches"], true, "{replayed}");
    assert_eq!(replayed["finalWorldHash"], final_hash, "{replayed}");
}

#[test]
fn tag_is_relayed_with_a_late_joiner_a_rejoin_and_a_replay() {
    let (stage, mut children, here, lobby) = stage();
    let (records, Lobby { url, .. }) = (folder(&stage), lobby);
    let relay = daemon::relay(&here, &url)
        .args(["--game", "tag", "--round-ticks", "900", "--seed", "5"])
        .args(["--snapshot-every", "150"])
        .one_level(2)
        .record(records.path())
        .spawn(&mut children);
    let code = relay.session_code();
    let resume = records.path().join("bo.rejoin");
    let bo = || {
        tag_join(&here, &url, &code, "bo")
            .arg("--resume-file")
            .arg(&resume)
            .spawn()
            .expect("spawn bo")
    };
    let ann = children.push(
        tag_join(&here, &url, &code, "ann")
            .spawn()
            .expect("spawn ann"),
    );
    let first_bo = children.push(bo());
    relay
        .log
        .wait_for(Duration::from_secs(60), "a verified snapshot", |l| {
            l.contains("snapshot verified")
        });
    let late = children.push(
        tag_join(&here, &url, &code, "cy")
            .spawn()
            .expect("spawn the late joiner"),
    );
    relay
        .log
        .wait_for(Duration::from_secs(60), "the late joiner's entry", |l| {
            l.contains("player entered the level")
        });
    // Bo's process dies and comes back with its resume file, within the
    // grace: the same player again.
    wait_for_token(&resume);
    children.kill(first_bo, "bo");
    let bo_again = children.push(bo());
    let outs = outputs_of(
        &mut children,
        &[ann, bo_again, late],
        Duration::from_secs(180),
        "the relayed tag guests",
    );
    let reports: Vec<serde_json::Value> = outs
        .iter()
        .map(|o| successful_report(o, "a relayed tag guest"))
        .collect();
    for r in &reports {
        assert_completed(r);
    }
    assert!(
        reports[2]["stateTick"].as_u64().unwrap_or(0) > 0,
        "{}",
        reports[2]
    );
    let final_hash = &reports[0]["finalWorldHash"];
    assert!(final_hash.is_string(), "{}", reports[0]);
    for r in &reports[1..] {
        assert_eq!(&r["finalWorldHash"], final_hash, "{r}");
    }

    let file = records.path().join(format!("{code}-level-1.replay"));
    let (ok, replayed) = replay_file_with(&file, &["--game", "tag"]);
    assert!(ok, "replay: {replayed}");
    assert_eq!(replayed["matches"], true, "{replayed}");
    assert_eq!(&replayed["finalWorldHash"], final_hash, "{replayed}");
}
