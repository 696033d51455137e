//! End to end with real processes and real WebRTC on loopback: the
//! `lobby-server` binary, `host-daemon host` and two `host-daemon join --bot`
//! guests play a 2-level session; the lobby lists the session before the
//! start and not after; a third join after the start fails with "started";
//! SIGTERM shuts the daemon down cleanly and empties the lobby.
//!
//! Everything binds 127.0.0.1; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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

fn output_of(mut child: Child, within: Duration, what: &str) -> Output {
    // Drain both pipes on threads so a chatty child never blocks.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
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
    let deadline = Instant::now() + within;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

#[test]
fn two_bot_guests_play_two_levels_through_the_real_lobby() {
    let started = Instant::now();
    let lobby_bin = lobby_server_bin();
    let db = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();

    // The lobby server on an ephemeral loopback port.
    let mut lobby = Command::new(&lobby_bin)
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--database-url")
        .arg(format!("sqlite://{}", db.path().join("lobby.db").display()))
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

    // The daemon: one host bot, one extra bot, starts with two guests.
    let mut host = Command::new(HOST_BIN)
        .args(["host", "--server", &url, "--name", "e2e", "--bots", "1"])
        .args(["--start-when", "2", "--levels", "2", "--sessions", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn host-daemon host");
    let host_lines = lines_of(&mut host);
    children.0.push(host);
    let line = next_line(&host_lines, Duration::from_secs(30), "session");
    let code = line
        .strip_prefix("session ")
        .unwrap_or_else(|| panic!("unexpected host line: {line}"))
        .trim()
        .to_owned();
    assert!(
        listed(&addr, &code),
        "the lobby lists {code} before the start"
    );

    // Two bot guests, racing for the rounds.
    let g1 = join_cmd(&url, &code, "g1").spawn().expect("spawn join 1");
    let g2 = join_cmd(&url, &code, "g2").spawn().expect("spawn join 2");

    // Once started, the session leaves the lobby.
    let deadline = Instant::now() + Duration::from_secs(60);
    while listed(&addr, &code) {
        assert!(
            Instant::now() < deadline,
            "{code} still listed 60 s after the joins"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A third joiner after the start is turned away.
    let late = output_of(
        join_cmd(&url, &code, "late").spawn().expect("spawn join 3"),
        Duration::from_secs(60),
        "the late join",
    );
    let late_err = String::from_utf8_lossy(&late.stderr);
    assert!(!late.status.success(), "the late join must fail");
    assert!(late_err.contains("started"), "late join stderr: {late_err}");

    let timeout = Duration::from_secs(300);
    for (i, out) in [
        output_of(g1, timeout, "guest 1"),
        output_of(g2, timeout, "guest 2"),
    ]
    .into_iter()
    .enumerate()
    {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "guest {} failed: {}\n{stdout}",
            i + 1,
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "one JSON line: {stdout}");
        let report: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON report");
        eprintln!("guest {}: {report}", i + 1);
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
    let pid = children.0[1].id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(status.success());
    let status = wait_exit(
        &mut children.0[1],
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
