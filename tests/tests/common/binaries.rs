//! The binaries under test, built by cargo once per test binary.
//!
//! A package cannot use another package's `CARGO_BIN_EXE_*`, so the harness
//! asks cargo for them: `cargo test --workspace --all-targets --no-run
//! --message-format=json-render-diagnostics` in the target directory and
//! with the profile this test was built with, taking the `lobby-server` and
//! `host-daemon` executables from the artifact messages. That is the
//! suite's own command (`scripts/test`), so under it nothing is rebuilt and
//! the binaries keep the features `cargo test --workspace` resolved. A
//! narrower `cargo build --bin ...` would resolve other features (no
//! dev-dependency features, e.g. tokio's `test-util`) and rebuild most of
//! the dependency graph next to the first one. Under `cargo test -p
//! campfire-e2e` it builds whatever is stale, so a test never runs binaries
//! older than their sources.
//!
//! The variables cargo sets for a test process (`CARGO_MANIFEST_DIR`,
//! `CARGO_PKG_NAME`, ...) are removed from the nested cargo's environment:
//! build scripts such as ring's declare `rerun-if-env-changed` on them, and
//! cargo compares its own environment, so leaving them would rebuild half
//! the graph now and again on the next ordinary run.
//!
//! `CAMPFIRE_E2E_BIN_DIR=DIR` skips cargo and uses `DIR/lobby-server` and
//! `DIR/host-daemon` (e.g. release binaries).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Paths of the binaries under test.
#[derive(Debug)]
pub struct Binaries {
    /// The lobby and signaling server.
    pub lobby_server: PathBuf,
    /// The WebRTC host daemon (`host`, `join`).
    pub host_daemon: PathBuf,
}

const LOBBY_SERVER: &str = "lobby-server";
const HOST_DAEMON: &str = "host-daemon";

/// The binaries, built on first use (one cargo run per test binary).
pub fn binaries() -> &'static Binaries {
    static BINARIES: OnceLock<Binaries> = OnceLock::new();
    BINARIES.get_or_init(|| match std::env::var_os("CAMPFIRE_E2E_BIN_DIR") {
        Some(dir) => in_dir(Path::new(&dir)),
        None => built_by_cargo(),
    })
}

fn in_dir(dir: &Path) -> Binaries {
    let bin = |name: &str| {
        let path = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "CAMPFIRE_E2E_BIN_DIR: {} not found",
            path.display()
        );
        path
    };
    Binaries {
        lobby_server: bin(LOBBY_SERVER),
        host_daemon: bin(HOST_DAEMON),
    }
}

/// The cargo invocation that builds (or finds fresh) the binaries in this
/// test's target directory, profile and target triple.
fn cargo_command() -> Command {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let exe = canonical(&std::env::current_exe().expect("the test executable's path"));
    // <target>/[<triple>/]<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lies in <target>/<profile>/deps");
    let target_dir = canonical(
        Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("CARGO_TARGET_TMPDIR is <target>/tmp"),
    );
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the e2e package lies in the workspace root");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut cmd = Command::new(cargo);
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(set_by_cargo_for_tests) {
            cmd.env_remove(key);
        }
    }
    cmd.current_dir(workspace)
        .args(["test", "--workspace", "--all-targets", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .arg("--target-dir")
        .arg(&target_dir);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(profile) => {
            cmd.args(["--profile", profile]);
        }
        None => panic!("no profile directory in {}", exe.display()),
    }
    if let Some(triple_dir) = profile_dir.parent().filter(|d| *d != target_dir) {
        cmd.arg("--target")
            .arg(triple_dir.file_name().expect("a target triple"));
    }
    cmd
}

/// Whether cargo sets `key` for the test process (not in the caller's
/// environment, so not in the outer cargo's either).
fn set_by_cargo_for_tests(key: &str) -> bool {
    const EXACT: [&str; 9] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    EXACT.contains(&key) || key.starts_with("CARGO_PKG_") || key.starts_with("CARGO_BIN_EXE_")
}

fn built_by_cargo() -> Binaries {
    let mut cmd = cargo_command();
    eprintln!("e2e: building the binaries under test: {cmd:?}");
    let mut cargo = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("running cargo");
    let (mut lobby_server, mut host_daemon) = (None, None);
    let stdout = cargo.stdout.take().expect("piped stdout");
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let is_bin = msg["target"]["kind"]
            .as_array()
            .is_some_and(|kinds| kinds.iter().any(|k| k == "bin"));
        if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] == true || !is_bin {
            continue;
        }
        let exe = msg["executable"].as_str().map(PathBuf::from);
        match msg["target"]["name"].as_str() {
            Some(LOBBY_SERVER) => lobby_server = exe,
            Some(HOST_DAEMON) => host_daemon = exe,
            _ => {}
        }
    }
    let status = cargo.wait().expect("waiting for cargo");
    assert!(
        status.success(),
        "building the binaries under test: {status}"
    );
    let found = |exe: Option<PathBuf>, name: &str| {
        let exe = exe.unwrap_or_else(|| panic!("cargo reported no {name} executable"));
        assert!(exe.is_file(), "{} not found", exe.display());
        exe
    };
    Binaries {
        lobby_server: found(lobby_server, LOBBY_SERVER),
        host_daemon: found(host_daemon, HOST_DAEMON),
    }
}
