//! Replays end to end (issue 25): `host-daemon host --record DIR` plays a
//! level with a bot guest over real WebRTC and writes its replay; `host-daemon
//! replay FILE` re-simulates it to the recorded final world hash, and
//! exits 1 with `"matches": false` when the file's hash is not the one its
//! ticks lead to.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::binaries::binaries;
use common::{
    Children, Lobby, Site, host_cmd, join_cmd, lines_of, outputs_of, session_code, start_lobby,
    successful_report,
};

/// `host-daemon replay FILE`: its exit success and its JSON line.
fn replay(file: &std::path::Path) -> (bool, serde_json::Value) {
    let out = Command::new(&binaries().host_daemon)
        .arg("replay")
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .expect("run host-daemon replay");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().next().unwrap_or_else(|| {
        panic!(
            "replay printed nothing; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        out.status.success(),
        serde_json::from_str(line).expect("a JSON line"),
    )
}

#[test]
fn a_recorded_level_replays_to_the_recorded_final_hash() {
    let db = tempfile::tempdir().expect("tempdir");
    let records = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let here = Site::loopback();
    let Lobby { url, .. } = start_lobby(&mut children, db.path(), &here);
    let record_dir = records.path().to_str().expect("a UTF-8 path").to_owned();
    let mut host = host_cmd(&here, &url, &["--bots", "1", "--record", &record_dir])
        .args(["--start-when", "1", "--levels", "1", "--sessions", "1"])
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    children.0.push(host);
    let code = session_code(&host_lines);
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
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if text
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("{\"end\""))
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got its end record",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let (ok, line) = replay(&file);
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
    let (ok, line) = replay(&tampered);
    assert!(!ok, "a mismatch exits non-zero: {line}");
    assert_eq!(line["matches"], false, "{line}");
}
