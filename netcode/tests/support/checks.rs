//! What a finished run shows: guests in lockstep with the host, how a
//! guest ended, who it played.

use std::collections::BTreeMap;

use game_api::PlayerId;
use netcode::guest::GuestEnd;
use netcode::sim::final_hash_matches;

use super::{GuestSession, Outcome};

/// The host's world hash for every `(epoch, tick)` it recorded.
pub fn host_hashes(o: &Outcome) -> BTreeMap<(u32, u64), u64> {
    o.host
        .hash_log()
        .iter()
        .map(|(e, t, h)| ((*e, *t), *h))
        .collect()
}

/// Every tick guest `g` applied has the host's hash for that tick; how
/// many it applied.
pub fn assert_lockstep(o: &Outcome, g: usize) -> usize {
    assert_applied_match(o, &o.guests[g], &format!("guest {g}"))
}

/// Every tick late guest `g` applied has the host's hash for that tick;
/// how many it applied.
pub fn assert_late_lockstep(o: &Outcome, g: usize) -> usize {
    assert_applied_match(o, &o.late[g], &format!("late guest {g}"))
}

fn assert_applied_match(o: &Outcome, guest: &GuestSession, who: &str) -> usize {
    let hh = host_hashes(o);
    let applied = guest.applied();
    assert!(!applied.is_empty(), "{who} applied nothing");
    for a in applied {
        assert_eq!(
            hh.get(&(a.epoch, a.tick + 1)),
            Some(&a.hash),
            "{who} differs at epoch {} tick {}",
            a.epoch,
            a.tick
        );
    }
    applied.len()
}

/// Each of `guests` applied the host's hash on every tick and ended on
/// the host's final hash.
pub fn assert_in_lockstep(o: &Outcome, guests: impl IntoIterator<Item = usize>) {
    for g in guests {
        assert_lockstep(o, g);
        assert!(
            final_hash_matches(&o.host, &o.guests[g]),
            "guest {g} ended on another hash than the host"
        );
    }
}

/// Guest `g` skipped no tick within a level.
pub fn consecutive(o: &Outcome, g: usize) {
    let applied = o.guests[g].applied();
    for w in applied.windows(2) {
        if w[0].epoch == w[1].epoch {
            assert_eq!(w[1].tick, w[0].tick + 1, "guest {g} skipped a tick");
        }
    }
}

/// How guest `g` ended.
pub fn ended(o: &Outcome, g: usize) -> GuestEnd {
    o.guests[g]
        .ended()
        .cloned()
        .expect("guest session still running")
}

/// The player guest `g` was given.
pub fn player(o: &Outcome, g: usize) -> PlayerId {
    o.guests[g]
        .player_id()
        .cloned()
        .expect("guest has no player id")
}
