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
