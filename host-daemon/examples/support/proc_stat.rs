//! What the benchmark examples read from `/proc` (Linux): a process's CPU
//! time and resident memory.

/// utime + stime of process `pid` (`"self"` for this one), seconds; 0 when
/// the process is gone.
pub fn cpu_seconds(pid: &str) -> f64 {
    // Fields 14 and 15 of /proc/PID/stat, in clock ticks (100 a second);
    // counted after the command name, which may hold spaces.
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
        return 0.0;
    };
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Resident set size of process `pid`, KiB; 0 when the process is gone.
#[allow(dead_code)] // not every example reads memory
pub fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// UDP datagrams this network namespace has sent so far
/// (`OutDatagrams` in /proc/net/snmp); 0 when it cannot be read. On
/// loopback every datagram is counted once here, whichever process sent it.
#[allow(dead_code)] // not every example counts datagrams
pub fn udp_datagrams_sent() -> u64 {
    let Ok(snmp) = std::fs::read_to_string("/proc/net/snmp") else {
        return 0;
    };
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(name, _)| *name == "OutDatagrams")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}
