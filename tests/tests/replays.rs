//! Replays end to end (issue 25): `host-daemon host --record DIR` plays a
//! level with a bot guest over real WebRTC and writes its replay; `host-daemon
//! replay FILE` re-simulates it to the recorded final world hash, and
//! exits 1 with `"matches": false` when the file's hash is not the one its
//! ticks lead to.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::time::Duration;

use common::daemon::{self, replay_file};
use common::{Lobby, folder, join_cmd, outputs_of, stage, successful_report, wait_until};

#[test]
fn a_recorded_level_replays_to_the_recorded_final_hash() {
    let (stage, mut children, here, lobby) = stage();
    let (records, Lobby { url, .. }) = (folder(&stage), lobby);
    let host = daemon::host(&here, &url)
        .args(["--bots", "1"])
        .record(records.path())
        .one_level(1)
        .spawn(&mut children);
    let code = host.session_code();
    let joiner = children.push(
        join_cmd(&here, &url, &code, "Ada")
            .spawn()
            .expect("spawn join"),
    );
    let out = outputs_of(
        &mut children,
        &[joiner],
        Duration::from_secs(120),
        "the guest",
    );
    let report = successful_report(&out[0], "the guest");
    assert_eq!(report["endReason"], "completed", "{report}");

    // The level's file is complete once the session ended: its last line
    // is the end record.
    let file = records.path().join(format!("{code}-level-1.replay"));
    let mut text = String::new();
    let what = format!("{}'s end record", file.display());
    wait_until(Duration::from_secs(15), &what, || {
        text = std::fs::read_to_string(&file).unwrap_or_default();
        text.lines()
            .last()
            .is_some_and(|l| l.starts_with("{\"end\""))
    });
    let (ok, line) = replay_file(&file);
    assert!(ok, "{line}");
    assert_eq!(line["matches"], true, "{line}");
    assert_eq!(line["levelEpoch"], 1);
    assert!(line["ticks"].as_u64().unwrap_or(0) > 100, "{line}");
    assert_eq!(line["finalWorldHash"], line["recordedWorldHash"]);
    eprintln!(
        "replay of {} ticks, {} bytes: {line}",
        line["ticks"],
        text.len()
    );

    // A file whose recorded hash is not what its ticks lead to fails.
    let recorded = line["recordedWorldHash"]
        .as_str()
        .expect("a hash")
        .to_owned();
    let tampered = records.path().join("tampered.replay");
    std::fs::write(&tampered, text.replace(&recorded, "0123456789abcdef")).expect("write");
    let (ok, line) = replay_file(&tampered);
    assert!(!ok, "a mismatch exits non-zero: {line}");
    assert_eq!(line["matches"], false, "{line}");
}
