//! Two network namespaces joined by a degraded point-to-point link, torn
//! down on drop, also when the test panics.
//!
//! Namespaces `campfire-e2e-PID-N-a` and `-b` (unique per run; those a dead
//! run left behind are deleted first) get one link between them, 10.79.0.1/24
//! in A and 10.79.0.2/24 in B, and `lo` up. Nothing else is routed, so
//! traffic can only go between A and B. The link is:
//!
//! - a veth pair with `tc netem delay D J loss L` on both ends, when the
//!   kernel has `sch_netem`;
//! - otherwise (the netem qdisc is "unknown", as on kernels built without
//!   it) two TUN devices joined by `netns/link-emulator.py`, which does the
//!   same in user space: a delay with uniform jitter and independent random
//!   loss per packet and direction.
//!
//! Needs root and iproute2 (`ip`, `tc`); without them setup panics: the
//! test fails rather than skips.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Site, lines_of};

const PREFIX: &str = "campfire-e2e-";
const IP_A: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 1);
const IP_B: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 2);
/// The emulator's own safety stop, should the test never stop it.
const EMULATOR_MAX_SECONDS: u32 = 900;

/// What the link does to every packet, each way.
#[derive(Clone, Copy, Debug)]
pub struct Impairment {
    /// One-way delay.
    pub delay_ms: u32,
    /// Each packet's delay varies by up to this much either way (uniform,
    /// so packets may overtake each other, as with netem).
    pub jitter_ms: u32,
    /// Independent loss probability per packet, percent.
    pub loss_percent: f64,
}

/// How the impairment is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// veth pair, `tc netem` on both ends.
    Netem,
    /// TUN pair, `link-emulator.py` between them.
    Emulated,
}

/// The link emulator process and its stderr (per-direction counts).
struct Emulator {
    child: Child,
    stderr: Option<JoinHandle<String>>,
}

/// Namespaces A and B and the degraded link between them.
pub struct DegradedLink {
    /// Namespace A (the lobby and the daemon in the e2e test).
    pub a: String,
    /// Namespace B (the guests).
    pub b: String,
    dev_a: String,
    dev_b: String,
    /// How the impairment is applied on this machine.
    pub kind: LinkKind,
    emulator: Option<Emulator>,
}

impl DegradedLink {
    /// Creates the namespaces and the link (panics if that is impossible).
    pub fn up(impairment: Impairment) -> Self {
        require_root_and_iproute2();
        remove_stale_namespaces();
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let (pid, n) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let mut link = DegradedLink {
            a: format!("{PREFIX}{pid}-{n}-a"),
            b: format!("{PREFIX}{pid}-{n}-b"),
            // Interface names: at most 15 bytes.
            dev_a: format!("cf{pid}-{n}a"),
            dev_b: format!("cf{pid}-{n}b"),
            kind: LinkKind::Netem,
            emulator: None,
        };
        // From here on, a panic drops `link`, which deletes what exists.
        ip(&["netns", "add", &link.a]);
        ip(&["netns", "add", &link.b]);
        ip(&[
            "link",
            "add",
            &link.dev_a,
            "netns",
            &link.a,
            "type",
            "veth",
            "peer",
            "name",
            &link.dev_b,
            "netns",
            &link.b,
        ]);
        match link.netem(impairment) {
            Ok(()) => {}
            Err(e) if e.contains("unknown") => {
                eprintln!(
                    "e2e: no sch_netem in this kernel ({}); emulating the link in user space",
                    e.trim()
                );
                ip(&["-n", &link.a, "link", "del", &link.dev_a]);
                link.kind = LinkKind::Emulated;
                link.emulator = Some(link.start_emulator(impairment));
            }
            Err(e) => panic!("tc netem: {e}"),
        }
        for (ns, dev, addr) in [(&link.a, &link.dev_a, IP_A), (&link.b, &link.dev_b, IP_B)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        eprintln!(
            "e2e: link {} ({IP_A}) <-> {} ({IP_B}): {impairment:?} each way, {:?}",
            link.a, link.b, link.kind
        );
        link
    }

    /// 10.79.0.1 in namespace A.
    pub fn site_a(&self) -> Site {
        Site::in_netns(&self.a, IpAddr::V4(IP_A))
    }

    /// 10.79.0.2 in namespace B.
    pub fn site_b(&self) -> Site {
        Site::in_netns(&self.b, IpAddr::V4(IP_B))
    }

    /// The shortest of `tries` TCP handshakes from B to `IP_A:port` (one
    /// round trip, plus the cost of starting `ip netns exec bash`): what the
    /// link's delay is seen to be, whatever implements it.
    pub fn tcp_handshake_from_b(&self, port: u16, tries: usize) -> Duration {
        let script = format!("exec 3<>/dev/tcp/{IP_A}/{port}");
        (0..tries)
            .map(|_| {
                let t0 = Instant::now();
                let mut connect = Command::new("ip");
                connect.args([
                    "netns", "exec", &self.b, "timeout", "10", "bash", "-c", &script,
                ]);
                run(&mut connect).unwrap_or_else(|e| panic!("TCP connect from B: {e}"));
                t0.elapsed()
            })
            .min()
            .expect("at least one try")
    }

    /// `tc netem` on both veth ends.
    fn netem(&self, imp: Impairment) -> Result<(), String> {
        for (ns, dev) in [(&self.a, &self.dev_a), (&self.b, &self.dev_b)] {
            let delay = format!("{}ms", imp.delay_ms);
            let jitter = format!("{}ms", imp.jitter_ms);
            let loss = format!("{}%", imp.loss_percent);
            run(Command::new("ip").args([
                "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem", "delay",
                &delay, &jitter, "loss", &loss,
            ]))?;
        }
        Ok(())
    }

    /// Starts `link-emulator.py` in A; it creates both TUN devices and
    /// moves the second into B before it prints `ready`.
    fn start_emulator(&self, imp: Impairment) -> Emulator {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("netns/link-emulator.py");
        let seed = std::process::id();
        eprintln!("e2e: link emulator seed {seed}");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.a, "python3"])
            .arg(script)
            .args([&self.dev_a, &self.dev_b, &self.b])
            .arg(imp.delay_ms.to_string())
            .arg(imp.jitter_ms.to_string())
            .arg((imp.loss_percent / 100.0).to_string())
            .arg(seed.to_string())
            .arg(EMULATOR_MAX_SECONDS.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn link-emulator.py (python3)");
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut emulator = Emulator {
            stderr: Some(stderr),
            child,
        };
        let ready = lines_of(&mut emulator.child);
        match ready.recv_timeout(Duration::from_secs(10)) {
            Ok(line) if line == "ready" => emulator,
            other => {
                let printed = emulator.stop();
                panic!("link emulator did not start ({other:?}): {printed}");
            }
        }
    }

    /// Stops the link emulator, if any: its counts, one JSON object per
    /// direction (`direction`, `sent`, `lost`, `overflow`).
    pub fn stop_emulator(&mut self) -> Option<Vec<serde_json::Value>> {
        let printed = self.emulator.take()?.stop();
        Some(
            printed
                .lines()
                .filter_map(|l| {
                    let counts = serde_json::from_str(l).ok();
                    if counts.is_none() {
                        eprintln!("[link-emulator] {l}");
                    }
                    counts
                })
                .collect(),
        )
    }

    /// `tc -s qdisc` of both ends (netem's sent and dropped counts).
    pub fn qdisc_stats(&self) -> String {
        [(&self.a, &self.dev_a), (&self.b, &self.dev_b)]
            .iter()
            .map(|(ns, dev)| {
                let out = Command::new("ip")
                    .args(["netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_else(|e| e.to_string());
                format!("{dev}: {}", out.trim())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Emulator {
    /// Closes its stdin (it prints its counts and exits), waits a bounded
    /// time, kills it if needed; what it printed on stderr.
    fn stop(mut self) -> String {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            // std has no timed wait for a child: poll.
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for DegradedLink {
    fn drop(&mut self) {
        // The emulator first: its TUN devices go with its descriptors.
        if let Some(counts) = self.stop_emulator() {
            for c in counts {
                eprintln!("e2e: link emulator {c}");
            }
        }
        for ns in [&self.b, &self.a] {
            if let Err(e) = run(Command::new("ip").args(["netns", "del", ns])) {
                eprintln!("e2e: could not delete namespace {ns}: {e}");
            }
        }
    }
}

/// Runs `cmd`; its stderr as the error when it fails.
fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn ip(args: &[&str]) {
    if let Err(e) = run(Command::new("ip").args(args)) {
        panic!("{e}");
    }
}

fn require_root_and_iproute2() {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .expect("an effective uid");
    assert_eq!(
        euid, "0",
        "network namespaces need root: run this test as root (CI does)"
    );
    for tool in [["ip", "-V"], ["tc", "-V"]] {
        let ok = Command::new(tool[0])
            .arg(tool[1])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "`{}` (iproute2) is missing: scripts/install-deps installs it",
            tool[0]
        );
    }
}

/// Deletes `campfire-e2e-PID-…` namespaces whose test process is gone (a
/// run that was SIGKILLed never ran its Drop), killing first what that run
/// left running inside them.
fn remove_stale_namespaces() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let pid = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            eprintln!("e2e: deleting the stale namespace {name}");
            let pids = Command::new("ip").args(["netns", "pids", name]).output();
            let pids = pids.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            for pid in pids.unwrap_or_default().split_whitespace() {
                let _ = run(Command::new("kill").args(["-KILL", pid]));
            }
            let _ = run(Command::new("ip").args(["netns", "del", name]));
        }
    }
}
