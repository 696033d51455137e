use std::time::Duration;

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_steady_flow_reads_its_rate_and_keeps_exact_totals() {
    let mut flow = Flow::default();
    // 30 messages of 100 bytes a second for five seconds.
    for i in 0..150u64 {
        flow.record(ms(i * 1000 / 30), 100);
    }
    let r = flow.reading(ms(5000));
    assert!((r.messages_per_s - 30.0).abs() < 1.0, "{r:?}");
    assert!((r.bytes_per_s - 3000.0).abs() < 100.0, "{r:?}");
    assert_eq!((r.messages, r.bytes), (150, 15_000));
    let overhead = r.wire_bytes_per_s - r.bytes_per_s;
    assert!((overhead - r.messages_per_s * WIRE_OVERHEAD_BYTES as f64).abs() < 1e-6);
}

#[test]
fn a_flow_that_stopped_reads_zero_and_a_young_one_is_not_diluted() {
    let mut flow = Flow::default();
    flow.record(ms(0), 500);
    flow.record(ms(500), 500);
    // One second old: the rate is over that second, not the window.
    let young = flow.reading(ms(1000));
    assert!((young.bytes_per_s - 1000.0).abs() < 1e-6, "{young:?}");
    let stopped = flow.reading(ms(10_000));
    assert_eq!(stopped.bytes_per_s, 0.0);
    assert_eq!(stopped.bytes, 1000);
    assert_eq!(flow.last_bytes(), Some(500));
}

#[test]
fn a_flood_is_remembered_only_up_to_its_bound() {
    let mut flow = Flow::default();
    for _ in 0..(MAX_RECENT * 3) {
        flow.record(ms(7), 1);
    }
    assert_eq!(flow.recent.len(), MAX_RECENT);
    assert_eq!(flow.messages(), (MAX_RECENT * 3) as u64);
}

#[test]
fn corrections_count_only_real_moves_and_keep_the_largest() {
    let mut c = Corrections::default();
    assert_eq!(c.last(), None);
    c.record(0.0);
    c.record(0.25);
    c.record(0.05);
    assert_eq!(c.last(), Some(0.05));
    assert_eq!(c.count(), 2);
    assert_eq!(c.largest(), 0.25);
}
