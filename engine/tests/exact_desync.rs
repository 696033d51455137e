//! The desync counter is exact: whatever a guest's world state differs in,
//! the host's next reconciliation snapshot makes its world hash equal the
//! host's again (snapshots carry everything the hash covers).

mod common;

use engine::{Engine, Game};
use protocol::tick::RECONCILE_INTERVAL_TICKS;
use serde_json::Value;

/// JSON pointers of every number and boolean in `v`.
fn leaves(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, c)| {
            leaves(
                c,
                &format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")),
                out,
            )
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, c)| leaves(c, &format!("{path}/{i}"), out)),
        Value::Number(_) | Value::Bool(_) => out.push(path.to_owned()),
        Value::Null | Value::String(_) => {}
    }
}

/// A small, still-valid change to one leaf.
fn perturb(v: &mut Value) {
    *v = match v {
        Value::Bool(b) => Value::Bool(!*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Value::from(if u == 0 { 1 } else { u - 1 }),
            (None, Some(i), _) => Value::from(i + 1),
            (_, _, Some(f)) => Value::from(f * 0.97 + 0.013),
            _ => return,
        },
        _ => return,
    };
}

#[test]
fn a_snapshot_repairs_a_guest_that_drifted_in_any_saved_field() {
    let mut host = common::engine(5, 0, 3, 17);
    let bots = common::bots(&host);
    // Into the second interval, with some shooting and movement behind us.
    while host.tick() < RECONCILE_INTERVAL_TICKS + RECONCILE_INTERVAL_TICKS / 2 {
        let inputs = common::noisy_inputs(&host, &bots);
        host.advance(&inputs, &[]);
        if host.tick() % RECONCILE_INTERVAL_TICKS == 0 {
            host.snapshot();
        }
    }
    let saved: Value = serde_json::from_str(&host.save_state().expect("save")).expect("json");
    let mut paths = Vec::new();
    leaves(&saved["state"], "/state", &mut paths);
    assert!(paths.len() > 100, "only {} leaves", paths.len());
    let (mut tried, mut drifted) = (0, 0);
    for path in &paths {
        // The tick is the bundle sequence, not drift: a guest at another
        // tick is out of sequence and never compares hashes.
        if path == "/state/tick" {
            continue;
        }
        let mut bad = saved.clone();
        let Some(leaf) = bad.pointer_mut(path) else {
            continue;
        };
        perturb(leaf);
        let mut guest = host.clone();
        // A change the engine refuses to load is not a reachable drift.
        if guest.load_state(&bad.to_string()).is_err() {
            continue;
        }
        tried += 1;
        if guest.world_hash() != host.world_hash() {
            drifted += 1;
        }
        let mut h = host.clone();
        while h.tick() % RECONCILE_INTERVAL_TICKS != 0 {
            let inputs = common::noisy_inputs(&h, &bots);
            h.advance(&inputs, &[]);
            guest.advance(&inputs, &[]);
        }
        let snapshot = h.snapshot();
        guest
            .apply_snapshot(&snapshot)
            .unwrap_or_else(|e| panic!("{path}: snapshot rejected: {e}"));
        assert_eq!(
            guest.world_hash(),
            h.world_hash(),
            "a guest drifted in {path} still differs after the snapshot"
        );
    }
    assert!(
        tried > 100 && drifted > 100,
        "tried {tried}, drifted {drifted}"
    );
}
