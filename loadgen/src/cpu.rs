//! CPU time of another process (the server under test), from /proc.

use std::time::Duration;

/// User plus system CPU time consumed so far by process `pid`, all threads.
pub fn process_cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line, in clock ticks (100 Hz on Linux).
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow::anyhow!("bad /proc stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("short /proc stat"))?
            .parse()?)
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 10))
}
