//! The one way the tests start a serving daemon (`host-daemon host` or
//! `host-daemon relay`), and `host-daemon replay FILE`.
//!
//! Every daemon is started alike: stdin closed, its stdout lines (`session
//! CODE`, the JSON reports) on a channel, its stderr captured into
//! [`LogLines`] at one log filter, and none of the test environment's
//! `CAMPFIRE_*` variables: the daemon's flags read them (as `scripts/test`
//! says), so one set for an operator's daemon would change the daemons
//! under test.
//!
//! ```ignore
//! let host = daemon::host(&here, &url).args(["--bots", "1"]).one_level(2).spawn(&mut children);
//! let code = host.session_code();
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::binaries::binaries;
use super::log::{LogLines, capture_stderr};
use super::{Children, Site, http_get, lines_of, next_line, wait_until};

/// The name a test daemon publishes unless told otherwise.
pub const DAEMON_NAME: &str = "e2e";

/// The log filter of a daemon: its info lines, which the tests wait for.
pub const HOST_LOG: &str =
    "warn,host_daemon=info,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error";

/// The daemon's own default filter (warnings only), for a daemon whose info
/// lines nobody reads and which would log thousands of them.
pub const QUIET_LOG: &str = "warn,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error";

/// `host-daemon` at `site` (any command: host, relay, join, swarm), without
/// the `CAMPFIRE_*` variables of the test's environment.
pub fn host_daemon(site: &Site) -> Command {
    let mut cmd = site.command(&binaries().host_daemon);
    for (key, _) in std::env::vars_os() {
        if key.as_encoded_bytes().starts_with(b"CAMPFIRE_") {
            cmd.env_remove(key);
        }
    }
    cmd
}

/// `host-daemon host` at `site` against the lobby at `url`, named
/// [`DAEMON_NAME`], binding the site's address.
pub fn host(site: &Site, url: &str) -> DaemonCmd {
    DaemonCmd::new("host", site, url)
}

/// `host-daemon relay`, otherwise as [`host`].
pub fn relay(site: &Site, url: &str) -> DaemonCmd {
    DaemonCmd::new("relay", site, url)
}

/// A serving daemon about to start: [`host`] or [`relay`], its flags, then
/// [`DaemonCmd::spawn`].
#[must_use]
pub struct DaemonCmd {
    command: &'static str,
    site: Site,
    url: String,
    name: String,
    args: Vec<OsString>,
    metrics: bool,
    filter: &'static str,
}

impl DaemonCmd {
    fn new(command: &'static str, site: &Site, url: &str) -> Self {
        DaemonCmd {
            command,
            site: site.clone(),
            url: url.to_owned(),
            name: DAEMON_NAME.to_owned(),
            args: Vec::new(),
            metrics: false,
            filter: HOST_LOG,
        }
    }

    /// `--name NAME` instead of [`DAEMON_NAME`].
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.name);
        self
    }

    /// More flags.
    pub fn args<S: Into<OsString>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// One session of one level, starting once `start_when` players are in:
    /// `--start-when N --levels 1 --sessions 1`.
    pub fn one_level(self, start_when: usize) -> Self {
        let start_when = start_when.to_string();
        self.args(["--start-when", &start_when, "--levels", "1"])
            .args(["--sessions", "1"])
    }

    /// `--record DIR`: each level's replay written into `dir`.
    pub fn record(self, dir: &Path) -> Self {
        self.args([OsString::from("--record"), dir.into()])
    }

    /// `--metrics-listen IP:0` at the site's address, for
    /// [`Daemon::metric`] (reachable from the test at a loopback site).
    pub fn metrics(mut self) -> Self {
        self.metrics = true;
        self
    }

    /// Logs at [`QUIET_LOG`] instead of [`HOST_LOG`].
    pub fn quiet(mut self) -> Self {
        self.filter = QUIET_LOG;
        self
    }

    /// Starts the daemon into `children` (killed when the test ends).
    pub fn spawn(self, children: &mut Children) -> Daemon {
        let mut cmd = host_daemon(&self.site);
        cmd.args([self.command, "--server", &self.url, "--name", &self.name])
            .arg("--bind-ip")
            .arg(self.site.ip.to_string())
            .args(&self.args);
        if self.metrics {
            cmd.arg("--metrics-listen")
                .arg(format!("{}:0", self.site.ip));
        }
        let mut child = cmd
            .env("RUST_LOG", self.filter)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn host-daemon {}: {e}", self.command));
        let pid = child.id();
        let lines = lines_of(&mut child);
        let log = capture_stderr(&mut child, self.command);
        let idx = children.push(child);
        let metrics = self.metrics.then(|| metrics_address(&log));
        Daemon {
            idx,
            pid,
            lines,
            log,
            metrics,
        }
    }
}

/// The bound address the daemon logs (`metrics on http://ADDR/metrics`),
/// wherever the line comes in its log.
fn metrics_address(log: &LogLines) -> String {
    const MARK: &str = "metrics on http://";
    let (_, line) = log.wait_for(Duration::from_secs(30), "metrics address", |l| {
        l.contains(MARK)
    });
    line.split(MARK)
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected metrics line: {line}"))
        .to_owned()
}

/// A running serving daemon (the process itself is in the test's
/// [`Children`]).
pub struct Daemon {
    /// Its index in the [`Children`], to signal, kill or wait for it.
    pub idx: usize,
    /// Its process id.
    pub pid: u32,
    /// Its stdout lines: `session CODE`, then the JSON reports.
    pub lines: mpsc::Receiver<String>,
    /// Its stderr.
    pub log: LogLines,
    metrics: Option<String>,
}

impl Daemon {
    /// The code of the next `session CODE` line, waiting at most 30 s.
    pub fn session_code(&self) -> String {
        let line = next_line(&self.lines, Duration::from_secs(30), "session");
        line.strip_prefix("session ")
            .unwrap_or_else(|| panic!("unexpected daemon line: {line}"))
            .trim()
            .to_owned()
    }

    /// The codes of the next `n` sessions.
    pub fn session_codes(&self, n: usize) -> Vec<String> {
        (0..n).map(|_| self.session_code()).collect()
    }

    /// One unlabelled series' value from its metrics (started with
    /// [`DaemonCmd::metrics`]).
    pub fn metric(&self, name: &str) -> f64 {
        let addr = self.metrics.as_deref().expect("a daemon with .metrics()");
        let text = http_get(addr, "/metrics");
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from:\n{text}"))
    }

    /// Waits until the daemon has run `ticks` simulation ticks (all its
    /// sessions together), at most `within`: "the level has run a few
    /// seconds", counted in the level's own time.
    pub fn wait_ticks(&self, ticks: u64, within: Duration) {
        wait_until(within, &format!("{ticks} ticks run"), || {
            self.metric("campfire_daemon_ticks_total") >= ticks as f64
        });
    }
}

/// `host-daemon replay FILE`: its exit success and its JSON line.
pub fn replay_file(file: &Path) -> (bool, serde_json::Value) {
    replay_file_with(file, &[])
}

/// `host-daemon replay FILE ARGS...` (`--game tag`, say): its exit
/// success and its JSON line.
pub fn replay_file_with(file: &Path, args: &[&str]) -> (bool, serde_json::Value) {
    let out = host_daemon(&Site::loopback())
        .arg("replay")
        .arg(file)
        .args(args)
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
