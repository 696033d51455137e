//! The end-to-end harness: the real `lobby-server` and `host-daemon`
//! binaries as child processes, at a [`Site`] (loopback, or a network
//! namespace the test created), with every wait bounded and every child
//! killed when the test ends, also on failure.
//!
//! # Layout
//! - [`binaries`]: where the binaries under test come from (cargo, once).
//! - [`netns`]: two network namespaces joined by a degraded link.
//! - [`daemon`]: the serving daemons (`host`, `relay`) and `replay`.
//! - [`log`]: a child's captured stderr and waits on it.
//! - this module: children, their output, bounded waits, the lobby and
//!   `join`.
#![allow(dead_code)] // each test binary uses part of the harness

pub mod binaries;
pub mod daemon;
pub mod log;
pub mod netns;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use binaries::binaries;

/// Kills every child still running when the test ends (or fails).
#[derive(Default)]
pub struct Children(pub Vec<Child>);

impl Children {
    /// Adopts `child`; its index.
    pub fn push(&mut self, child: Child) -> usize {
        self.0.push(child);
        self.0.len() - 1
    }

    /// SIGKILLs child `i` (a crash: no goodbye) and reaps it.
    pub fn kill(&mut self, i: usize, what: &str) {
        self.0[i]
            .kill()
            .unwrap_or_else(|e| panic!("SIGKILL {what}: {e}"));
        let _ = self.0[i].wait();
    }
}

/// A test's stage on this machine's loopback: a folder for its files (the
/// lobby's database among them), the children it starts (the lobby first),
/// the site they run at and the lobby's address. Bind them in this order:
/// the children are then killed before the folder goes.
pub fn stage() -> (tempfile::TempDir, Children, Site, Lobby) {
    let files = tempfile::tempdir().expect("tempdir");
    let mut children = Children::default();
    let here = Site::loopback();
    let lobby = start_lobby(&mut children, files.path(), &here);
    (files, children, here, lobby)
}

/// A fresh folder inside the stage's `files` (replay records, resume files).
pub fn folder(files: &tempfile::TempDir) -> tempfile::TempDir {
    tempfile::tempdir_in(files.path()).expect("a folder in the stage's files")
}

/// Waits until a guest's `--resume-file` holds its rejoin token: it was
/// admitted.
pub fn wait_for_token(file: &Path) {
    wait_until(Duration::from_secs(60), "the resume file", || {
        std::fs::read_to_string(file).is_ok_and(|t| !t.trim().is_empty())
    });
}

/// The guests' rows of a daemon's `session-report`.
pub fn guest_rows(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["players"]
        .as_array()
        .expect("players in the report")
        .iter()
        .filter(|p| p["kind"] == "guest")
        .collect()
}

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Where a process runs: the test's own network namespace, or one the test
/// created; and the one address its sockets bind there.
#[derive(Clone, Debug)]
pub struct Site {
    netns: Option<String>,
    /// The address every socket of a process at this site binds.
    pub ip: IpAddr,
}

impl Site {
    /// 127.0.0.1 in the test's own namespace.
    pub fn loopback() -> Self {
        Site {
            netns: None,
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }

    /// `ip` inside the namespace `netns`.
    pub fn in_netns(netns: &str, ip: IpAddr) -> Self {
        Site {
            netns: Some(netns.to_owned()),
            ip,
        }
    }

    /// A command running `program` at this site. In a namespace that is
    /// `ip netns exec NS program`, which execs `program` in place: the
    /// child's pid is the program's, so killing the child kills it.
    pub fn command(&self, program: &Path) -> Command {
        match &self.netns {
            None => Command::new(program),
            Some(ns) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", ns]).arg(program);
                cmd
            }
        }
    }
}

/// Forwards a child's stdout lines to a channel (a thread per child).
pub fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
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

/// The next line from `rx`, waiting at most `within`.
pub fn next_line(rx: &mpsc::Receiver<String>, within: Duration, what: &str) -> String {
    rx.recv_timeout(within)
        .unwrap_or_else(|e| panic!("no {what} line within {within:?}: {e}"))
}

/// A minimal HTTP/1.0 GET (from the test's own namespace): the body.
pub fn http_get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the lobby");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read the response");
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.contains(" 200 "), "GET {path}: {head}");
    body.to_owned()
}

/// A minimal HTTP/1.0 request with an optional JSON body: the status and
/// the body.
pub fn http_request(addr: &str, method: &str, path: &str, json: Option<&str>) -> (u16, String) {
    let s = TcpStream::connect(addr).expect("connect to the lobby");
    exchange(s, addr, method, path, json, "")
}

/// [`http_request`] with an admin token (`Authorization: Bearer`).
pub fn admin_request(
    addr: &str,
    token: &str,
    method: &str,
    path: &str,
    json: Option<&str>,
) -> (u16, String) {
    let s = TcpStream::connect(addr).expect("connect to the lobby");
    let auth = format!("Authorization: Bearer {token}\r\n");
    exchange(s, addr, method, path, json, &auth)
}

/// [`http_request`] from the loopback address `source` (another client to
/// the lobby's per-address budgets).
pub fn http_request_from(
    source: IpAddr,
    addr: &str,
    method: &str,
    path: &str,
    json: Option<&str>,
) -> (u16, String) {
    let to: std::net::SocketAddr = addr.parse().expect("IP:PORT");
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(to),
        socket2::Type::STREAM,
        None,
    )
    .expect("a TCP socket");
    socket
        .bind(&std::net::SocketAddr::new(source, 0).into())
        .expect("bind the source address");
    socket.connect(&to.into()).expect("connect to the lobby");
    exchange(socket.into(), addr, method, path, json, "")
}

/// One HTTP/1.0 request on `s` (with `headers`, each line ending in
/// CRLF) and its response's status and body.
fn exchange(
    mut s: TcpStream,
    addr: &str,
    method: &str,
    path: &str,
    json: Option<&str>,
    headers: &str,
) -> (u16, String) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = json.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read the response");
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head}"));
    (status, body.to_owned())
}

/// Whether the public lobby at `addr` lists the session `code`.
pub fn listed(addr: &str, code: &str) -> bool {
    let page: serde_json::Value =
        serde_json::from_str(&http_get(addr, "/lobby")).expect("lobby JSON");
    page["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .any(|s| s["code"] == code)
}

/// Waits until the lobby no longer lists `code` (the session started).
pub fn wait_unlisted(addr: &str, code: &str) {
    let what = format!("{code} unlisted after the joins");
    wait_until(Duration::from_secs(60), &what, || !listed(addr, code));
}

/// Polls `f` every 100 ms until it holds, at most `within`; the instant
/// it was seen to hold.
pub fn wait_until(within: Duration, what: &str, f: impl FnMut() -> bool) -> Instant {
    wait_until_every(Duration::from_millis(100), within, what, f)
}

/// [`wait_until`], polling every `every` (finer where the wait is a
/// latency measurement).
pub fn wait_until_every(
    every: Duration,
    within: Duration,
    what: &str,
    mut f: impl FnMut() -> bool,
) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        if f() {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        // Processes and sockets on a real clock: nothing to be woken by.
        std::thread::sleep(every);
    }
}

/// Waits for a child to exit, at most `within`.
pub fn wait_exit(child: &mut Child, within: Duration, what: &str) -> ExitStatus {
    let mut status = None;
    wait_until(within, &format!("{what} exiting"), || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    status.expect("exited")
}

/// What a child printed, its status and when it was seen to exit.
pub struct Exited {
    /// Status, stdout and stderr.
    pub out: Output,
    /// When the exit was observed (polled every 50 ms).
    pub at: Instant,
}

/// Waits for the children at `idx` (still owned by the guard, so they are
/// killed if this panics) to exit, draining their pipes; at most `within`.
pub fn outputs_of(
    children: &mut Children,
    idx: &[usize],
    within: Duration,
    what: &str,
) -> Vec<Exited> {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    };
    let drains: Vec<_> = idx
        .iter()
        .map(|&i| {
            let c = &mut children.0[i];
            let out = c.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>);
            let err = c.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>);
            (drain(out), drain(err))
        })
        .collect();
    let deadline = Instant::now() + within;
    let mut done: Vec<Option<(ExitStatus, Instant)>> = vec![None; idx.len()];
    while done.iter().any(Option::is_none) {
        for (k, &i) in idx.iter().enumerate() {
            if done[k].is_none()
                && let Some(s) = children.0[i].try_wait().expect("try_wait")
            {
                done[k] = Some((s, Instant::now()));
            }
        }
        if Instant::now() >= deadline && done.iter().any(Option::is_none) {
            // Kill the ones still running and show what they said.
            let mut said = String::new();
            for ((k, &i), (_, err)) in idx.iter().enumerate().zip(drains) {
                if done[k].is_none() {
                    let _ = children.0[i].kill();
                    let err = err.join().unwrap_or_default();
                    said.push_str(&format!(
                        "\n--- {what} #{k} (still running) said:\n{}",
                        String::from_utf8_lossy(&err)
                    ));
                }
            }
            panic!("{what} still running after {within:?}{said}");
        }
        // std has no timed wait for a child: poll.
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
pub fn report_of(e: &Exited, what: &str) -> serde_json::Value {
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

/// Asserts that a guest exited 0 and returns its [`report_of`].
pub fn successful_report(e: &Exited, what: &str) -> serde_json::Value {
    assert!(
        e.out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&e.out.stderr),
        String::from_utf8_lossy(&e.out.stdout)
    );
    report_of(e, what)
}

/// A running lobby server.
pub struct Lobby {
    /// Base URL, `http://IP:PORT`.
    pub url: String,
    /// `IP:PORT`.
    pub addr: String,
}

/// Starts the lobby server at `site` on an ephemeral port of its address.
pub fn start_lobby(children: &mut Children, db: &Path, site: &Site) -> Lobby {
    start_lobby_with(children, db, site, &[])
}

/// [`start_lobby`] with extra command-line arguments.
pub fn start_lobby_with(children: &mut Children, db: &Path, site: &Site, extra: &[&str]) -> Lobby {
    let mut lobby = site
        .command(&binaries().lobby_server)
        .args(extra)
        .arg("--listen")
        .arg(format!("{}:0", site.ip))
        .args(["--log-format", "json"])
        .arg("--database-url")
        .arg(format!("sqlite://{}", db.join("lobby.db").display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lobby-server");
    let lobby_lines = lines_of(&mut lobby);
    children.push(lobby);
    // A log line names the bound address: "listening on http://IP:PORT"
    // (the first at the default level; a shell's RUST_LOG may put others
    // before it).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut skipped = Vec::new();
    let url = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = lobby_lines.recv_timeout(left) else {
            panic!(
                "no \"listening on\" line within 30 s; the lobby said:\n{}",
                skipped.join("\n")
            );
        };
        if let Some(url) = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split('"').next())
        {
            break url.to_owned();
        }
        skipped.push(line);
    };
    let addr = url.trim_start_matches("http://").to_owned();
    assert!(addr.starts_with(&format!("{}:", site.ip)), "{addr}");
    Lobby { url, addr }
}

/// `host-daemon join CODE --bot` at `site`; stdout and stderr piped.
pub fn join_cmd(site: &Site, url: &str, code: &str, name: &str) -> Command {
    let mut cmd = daemon::host_daemon(site);
    cmd.args([
        "join",
        code,
        "--server",
        url,
        "--bot",
        "--name",
        name,
        "--bind-ip",
    ])
    .arg(site.ip.to_string())
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // Debugging: `CAMPFIRE_JOIN_LOG=host_daemon=debug` sets the guests' log
    // filter (shown when a guest outlives its wait).
    if let Ok(filter) = std::env::var("CAMPFIRE_JOIN_LOG") {
        cmd.env("RUST_LOG", filter).env("NO_COLOR", "1");
    }
    cmd
}
