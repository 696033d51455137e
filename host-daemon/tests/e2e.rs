//! End to end with real processes and real WebRTC on loopback: the
//! `lobby-server` binary, `host-daemon host` and two `host-daemon join --bot`
//! guests play a 2-level session; the lobby lists the session before the
//! start and not after; a third join after the start fails with "started";
//! SIGTERM shuts the daemon down cleanly and empties the lobby. A guest
//! SIGKILLed mid-level is dropped after the grace while the other plays on;
//! a daemon SIGKILLed mid-level leaves its guests to end with
//! `host-disconnected` after the grace.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use protocol::tick::DISCONNECT_GRACE_MS;

const HOST_BIN: &str = env!("CARGO_BIN_EXE_host-daemon");

/// Kills every child still running when the test ends (or fails).
#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The `lobby-server` binary in the same target directory as this test's
/// `host-daemon` binary. `cargo test --workspace` (the suite's command) has
/// already built it; when only this package is tested, build it here.
fn lobby_server_bin() -> PathBuf {
    let bin_dir = Path::new(HOST_BIN).parent().expect("bin dir");
    let bin = bin_dir.join(format!("lobby-server{}", std::env::consts::EXE_SUFFIX));
    if bin.exists() && std::env::var_os("E2E_REBUILD_LOBBY_SERVER").is_none() {
        return bin;
    }
    let target_dir = bin_dir.parent().expect("target dir");
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "lobby-server", "--target-dir"])
        .arg(target_dir);
    if bin_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("running cargo build -p lobby-server");
    assert!(status.success(), "cargo build -p lobby-server failed");
    assert!(bin.exists(), "{} not found", bin.display());
    bin
}

/// Forwards a child's stdout lines to a channel (a thread per child).
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn next_line(rx: &mpsc::Receiver<String>, within: Duration, what: &str) -> String {
    rx.recv_timeout(within)
        .unwrap_or_else(|e| panic!("no {what} line within {within:?}: {e}"))
}

/// A minimal HTTP/1.0 GET on loopback: the body.
fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the lobby");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read the response");
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.contains(" 200 "), "GET {path}: {head}");
    body.to_owned()
}

fn listed(addr: &str, code: &str) -> bool {
    let page: serde_json::Value =
        serde_json::from_str(&http_get(addr, "/lobby")).expect("lobby JSON");
    page["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .any(|s| s["code"] == code)
}

/// Waits for a child to exit, at most `within`.
fn wait_exit(child: &mut Child, within: Duration, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "{what} still running after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn join_cmd(url: &str, code: &str, name: &str) -> Command {
    let mut cmd = Command::new(HOST_BIN);
    cmd.args(["join", code, "--server", url, "--bot", "--name", name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// What a child printed, its status and when it was seen to exit.
struct Exited {
    out: Output,
    at: Instant,
}

/// Waits for the children at `idx` (still owned by the guard, so they are
/// killed if this panics) to exit, draining their pipes; at most `within`.
/// Each exit time is recorded as it is observed (polled every 50 ms).
fn outputs_of(children: &mut Children, idx: &[usize], within: Duration, what: &str) -> Vec<Exited> {
    let drains: Vec<_> = idx
        .iter()
        .map(|&i| {
            let c = &mut children.0[i];
            let mut out = c.stdout.take().expect("stdout");
            let mut err = c.stderr.take().expect("stderr");
            let t_out = std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = out.read_to_end(&mut v);
                v
            });
            let t_err = std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = err.read_to_end(&mut v);
                v
            });
            (t_out, t_err)
        })
        .collect();
    let deadline = Instant::now() + within;
    let mut done: Vec<Option<(std::process::ExitStatus, Instant)>> = vec![None; idx.len()];
    while done.iter().any(Option::is_none) {
        for (k, &i) in idx.iter().enumerate() {
            if done[k].is_none()
                && let Some(s) = children.0[i].try_wait().expect("try_wait")
            {
                done[k] = Some((s, Instant::now()));
            }
        }
        assert!(
            Instant::now() < deadline || done.iter().all(Option::is_some),
            "{what} still running after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drains
        .into_iter()
        .zip(done)
        .map(|((t_out, t_err), d)| {
            let (status, at) = d.expect("exited");
            Exited {
                out: Output {
                    status,
                    stdout: t_out.join().unwrap_or_default(),
                    stderr: t_err.join().unwrap_or_default(),
                },
                at,
            }
        })
        .collect()
}

/// The one JSON report line a finished `join` printed.
fn report_of(e: &Exited, what: &str) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&e.out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{what}: one JSON line: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&e.out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON report");
    eprintln!("{what}: {report} ({})", e.out.status);
    report
}

/// Starts the lobby server on an ephemeral loopback port: its base URL and
/// `host:port`.
fn start_lobby(children: &mut Children, db: &Path) -> (String, String) {
    let mut lobby = Command::new(lobby_server_bin())
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--database-url")
        .arg(format!("sqlite://{}", db.join("lobby.db").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lobby-server");
    let lobby_lines = lines_of(&mut lobby);
    children.0.push(lobby);
    let first = next_line(&lobby_lines, Duration::from_secs(30), "lobby listening");
    let url = first
        .split("listening on ")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("unexpected first lobby line: {first}"))
        .to_owned();
    let addr = url.trim_start_matches("http://").to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    (url, addr)
}

/// `host-daemon host` against the lobby at `url` with `args`.
fn host_cmd(url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(HOST_BIN);
    cmd.args(["host", "--server", url, "--name", "e2e"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    cmd
}

/// The code of the next `session CODE` line the daemon prints.
fn session_code(host_lines: &mpsc::Receiver<String>) -> String {
    let line = next_line(host_lines, Duration::from_secs(30), "session");
    line.strip_prefix("session ")
        .unwrap_or_else(|| panic!("unexpected host line: {line}"))
        .trim()
        .to_owned()
}

/// Waits until the lobby no longer lists `code` (the session started).
fn wait_unlisted(addr: &str, code: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while listed(addr, code) {
        assert!(
            Instant::now() < deadline,
            "{code} still listed 60 s after the joins"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A child's stderr lines, ANSI colours stripped, each with the instant it
/// was read; echoed to the test's stderr.
type LogLines = Arc<Mutex<Vec<(Instant, String)>>>;

fn capture_stderr(child: &mut Child, tag: &'static str) -> LogLines {
    let err = child.stderr.take().expect("piped stderr");
    let log = LogLines::default();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let line = strip_ansi(&line);
            eprintln!("[{tag}] {line}");
            sink.lock().unwrap().push((Instant::now(), line));
        }
    });
    log
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The first logged line satisfying `pred`, waiting at most `within`.
fn wait_log(
    log: &LogLines,
    within: Duration,
    what: &str,
    pred: impl Fn(&str) -> bool,
) -> (Instant, String) {
    let deadline = Instant::now() + within;
    loop {
        if let Some(hit) = log.lock().unwrap().iter().find(|(_, l)| pred(l)) {
            return hit.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {what} log line within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The daemon's log filter for tests that read its info lines.
const HOST_LOG: &str = "warn,host_daemon=info,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error";

#[test]
fn two_bot_guests_play_two_levels_through_the_real_lobby() {
    let started = Instant::now();
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let (url, addr) = start_lobby(&mut children, db.path());

    // The daemon: one host bot, one extra bot, starts with two guests.
    let mut host = host_cmd(&url, &["--bots", "1"])
        .args(["--start-when", "2", "--levels", "2", "--sessions", "1"])
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    children.0.push(host);
    let host_idx = children.0.len() - 1;
    let code = session_code(&host_lines);
    assert!(
        listed(&addr, &code),
        "the lobby lists {code} before the start"
    );

    // Two bot guests, racing for the rounds.
    children
        .0
        .push(join_cmd(&url, &code, "g1").spawn().expect("spawn join 1"));
    children
        .0
        .push(join_cmd(&url, &code, "g2").spawn().expect("spawn join 2"));
    let guests = [children.0.len() - 2, children.0.len() - 1];

    // Once started, the session leaves the lobby.
    wait_unlisted(&addr, &code);

    // A third joiner after the start is turned away.
    children
        .0
        .push(join_cmd(&url, &code, "late").spawn().expect("spawn join 3"));
    let late_idx = children.0.len() - 1;
    let late = outputs_of(
        &mut children,
        &[late_idx],
        Duration::from_secs(60),
        "the late join",
    );
    let late = &late[0].out;
    let late_err = String::from_utf8_lossy(&late.stderr);
    assert!(!late.status.success(), "the late join must fail");
    assert!(late_err.contains("started"), "late join stderr: {late_err}");

    let outs = outputs_of(
        &mut children,
        &guests,
        Duration::from_secs(300),
        "the guests",
    );
    for (i, e) in outs.iter().enumerate() {
        let what = format!("guest {}", i + 1);
        assert!(
            e.out.status.success(),
            "{what} failed: {}\n{}",
            String::from_utf8_lossy(&e.out.stderr),
            String::from_utf8_lossy(&e.out.stdout)
        );
        let report = report_of(e, &what);
        assert_eq!(report["endReason"], "completed", "{report}");
        assert_eq!(report["desyncs"], 0, "{report}");
        assert!(
            report["levelsCompleted"].as_u64().unwrap_or(0) >= 2,
            "{report}"
        );
        assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
    }

    // The daemon opens a fresh session (--sessions 1), then shuts down
    // gracefully on SIGTERM: exit 0 and nothing left in the lobby.
    let next = next_line(&host_lines, Duration::from_secs(30), "next session");
    assert!(next.starts_with("session "), "{next}");
    let pid = children.0[host_idx].id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let status = wait_exit(
        &mut children.0[host_idx],
        Duration::from_secs(30),
        "the daemon after SIGTERM",
    );
    assert!(status.success(), "daemon exit after SIGTERM: {status}");
    let page = http_get(&addr, "/lobby");
    assert!(
        !page.contains(next.trim_start_matches("session ").trim()),
        "lobby after shutdown: {page}"
    );
    eprintln!("e2e took {:?}", started.elapsed());
}

/// Guest A is SIGKILLed a few seconds into the level. The daemon sees its
/// transport go, keeps the session running, and removes A after the grace;
/// guest B plays on to the normal end with no desync (a roster removal that
/// B applied differently from the host would show up as snapshot
/// mismatches), well past the grace.
#[test]
fn a_guest_killed_mid_level_is_removed_and_the_other_guest_finishes() {
    let started = Instant::now();
    let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let (url, addr) = start_lobby(&mut children, db.path());

    let mut host = host_cmd(&url, &["--bots", "1"])
        .args(["--start-when", "2", "--levels", "1", "--sessions", "1"])
        .env("RUST_LOG", HOST_LOG)
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    let host_log = capture_stderr(&mut host, "host");
    children.0.push(host);
    let code = session_code(&host_lines);

    children
        .0
        .push(join_cmd(&url, &code, "ga").spawn().expect("spawn join A"));
    let a = children.0.len() - 1;
    children
        .0
        .push(join_cmd(&url, &code, "gb").spawn().expect("spawn join B"));
    let b = children.0.len() - 1;

    // The level is running (the session left the lobby), for a few seconds.
    wait_unlisted(&addr, &code);
    std::thread::sleep(Duration::from_secs(3));
    // A's seat: guests are seated in connection order, slot = guests - 1.
    let (_, a_connected) = wait_log(&host_log, Duration::from_secs(5), "A connected", |l| {
        l.contains("guest connected") && l.contains("name=ga")
    });
    let a_guests: usize = a_connected
        .split("guests=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no guest count in: {a_connected}"));
    let a_slot = a_guests - 1;
    assert!(
        children.0[a].try_wait().expect("try_wait").is_none(),
        "guest A ended before it was killed"
    );
    let killed_at = Instant::now();
    children.0[a].kill().expect("SIGKILL guest A");
    let status = wait_exit(&mut children.0[a], Duration::from_secs(10), "guest A");
    assert_eq!(status.signal(), Some(9), "guest A: {status}");

    // The daemon notices A's transport is gone (ICE consent: ~5 s).
    let (lost_at, lost) = wait_log(&host_log, Duration::from_secs(40), "A lost", |l| {
        l.contains("guest transport lost") && l.contains(&format!("slot={a_slot} "))
    });
    eprintln!(
        "A killed; the daemon saw it lost {:?} later: {lost}",
        lost_at - killed_at
    );

    // B plays on to the end of the level.
    let outs = outputs_of(&mut children, &[b], Duration::from_secs(180), "guest B");
    let e = &outs[0];
    assert!(
        e.out.status.success(),
        "guest B failed: {}\n{}",
        String::from_utf8_lossy(&e.out.stderr),
        String::from_utf8_lossy(&e.out.stdout)
    );
    let report = report_of(e, "guest B");
    // A normal end of a 1-level run: the level completed, or (a legitimate
    // bot outcome) every remaining player died. host-shutdown would mean
    // the 20 000-tick safety stop or a SIGTERM, neither of which happens.
    let reason = report["endReason"].as_str().unwrap_or_default().to_owned();
    match reason.as_str() {
        "completed" => assert_eq!(report["levelsCompleted"], 1, "{report}"),
        "team-eliminated" => assert_eq!(report["levelsCompleted"], 0, "{report}"),
        other => panic!("guest B ended with {other}: {report}"),
    }
    assert_eq!(report["desyncs"], 0, "{report}");
    assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
    assert_ne!(report["playerId"], serde_json::Value::Null, "{report}");
    let b_err = String::from_utf8_lossy(&e.out.stderr);
    assert!(
        !b_err.contains("bundle lacks a roster member's input")
            && !b_err.contains("out of sequence"),
        "guest B's roster diverged from the host's: {b_err}"
    );
    // The session outlived A's grace: the daemon's removal tick (the first
    // tick after lost + grace) came before the end B saw.
    assert!(
        e.at >= lost_at + grace,
        "B ended {:?} after A was seen lost, within the {grace:?} grace",
        e.at - lost_at
    );

    // The daemon's own account: both guests had joined, the same end.
    let want = if reason == "completed" {
        "Completed"
    } else {
        "TeamEliminated"
    };
    let (_, over) = wait_log(&host_log, Duration::from_secs(30), "session over", |l| {
        l.contains("session over") && l.contains(&code)
    });
    assert!(over.contains(&format!("Some({want})")), "{over}");
    assert!(over.contains("joined=2"), "{over}");
    // The synchronized removal itself: exactly one player left the roster,
    // not B, no earlier than the grace after A's transport was seen lost.
    let removals: Vec<(Instant, String)> = host_log
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, l)| l.contains("player removed from the roster"))
        .cloned()
        .collect();
    assert_eq!(removals.len(), 1, "{removals:?}");
    let (removed_at, removed) = &removals[0];
    let b_id = report["playerId"].as_str().unwrap_or_default();
    assert!(removed.contains("player=guest-"), "{removed}");
    assert!(
        !removed.contains(&format!("player={b_id}")),
        "B was removed: {removed}"
    );
    assert!(
        *removed_at + Duration::from_secs(1) >= lost_at + grace,
        "removed {:?} after the loss, before the {grace:?} grace ran out",
        *removed_at - lost_at
    );
    // Only A's seat was lost while A's grace ran (B stayed connected).
    let lost_lines: Vec<String> = host_log
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, l)| *t <= lost_at + grace && l.contains("guest transport lost"))
        .map(|(_, l)| l.clone())
        .collect();
    assert_eq!(lost_lines.len(), 1, "{lost_lines:?}");
    eprintln!(
        "guest-killed e2e took {:?}; B ended {:?} after the kill",
        started.elapsed(),
        e.at - killed_at
    );
}

/// The daemon is SIGKILLed a few seconds into the level: both guests end
/// with `host-disconnected` (exit 3, the report still printed) once the
/// grace has run out, and within a bounded margin.
#[test]
fn when_the_host_is_killed_guests_end_with_host_disconnected() {
    let started = Instant::now();
    let grace = Duration::from_millis(DISCONNECT_GRACE_MS);
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let (url, addr) = start_lobby(&mut children, db.path());

    let mut host = host_cmd(&url, &["--start-when", "2", "--levels", "1"])
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    let _host_log = capture_stderr(&mut host, "host");
    children.0.push(host);
    let host_idx = children.0.len() - 1;
    let code = session_code(&host_lines);

    children
        .0
        .push(join_cmd(&url, &code, "g1").spawn().expect("spawn join 1"));
    children
        .0
        .push(join_cmd(&url, &code, "g2").spawn().expect("spawn join 2"));
    let guests = [children.0.len() - 2, children.0.len() - 1];

    wait_unlisted(&addr, &code);
    std::thread::sleep(Duration::from_secs(3));
    for &g in &guests {
        assert!(
            children.0[g].try_wait().expect("try_wait").is_none(),
            "a guest ended before the host was killed"
        );
    }
    let killed_at = Instant::now();
    children.0[host_idx].kill().expect("SIGKILL the daemon");
    let status = wait_exit(
        &mut children.0[host_idx],
        Duration::from_secs(10),
        "the daemon",
    );
    assert_eq!(status.signal(), Some(9), "daemon: {status}");

    let bound = Duration::from_secs(60);
    let outs = outputs_of(&mut children, &guests, bound, "the guests");
    for (i, e) in outs.iter().enumerate() {
        let what = format!("guest {}", i + 1);
        let took = e.at - killed_at;
        assert_eq!(
            e.out.status.code(),
            Some(3),
            "{what}: {} after {took:?}: {}",
            e.out.status,
            String::from_utf8_lossy(&e.out.stderr)
        );
        let report = report_of(e, &what);
        assert_eq!(report["endReason"], "host-disconnected", "{report}");
        assert_eq!(report["levelsCompleted"], 0, "{report}");
        // The host's counts come with its end table, which never came.
        assert!(report["desyncs"].is_null(), "{report}");
        assert_eq!(report["snapshotCorrections"], 0, "{report}");
        assert!(report["ticks"].as_u64().unwrap_or(0) > 0, "{report}");
        let err = String::from_utf8_lossy(&e.out.stderr);
        assert!(
            err.contains("ended abnormally") && err.contains("HostDisconnected"),
            "{what} stderr: {err}"
        );
        // Not before the grace ran out (the loss is noticed at the kill at
        // the earliest), and within the bound.
        assert!(took >= grace, "{what} ended {took:?} after the kill");
        assert!(took <= bound, "{what} ended {took:?} after the kill");
        eprintln!("{what} ended {took:?} after the daemon was killed");
    }
    eprintln!("host-killed e2e took {:?}", started.elapsed());
}
