//! The exports of the browser host's join and round policy
//! ([`WebJoinSlots`]).

use netcode::host::rounds::Seats;

use super::{JOIN_SLOTS, answer, create, json, release, text, with_handle};
use crate::join_slots::WebJoinSlots;

fn with_joins<T>(handle: u32, f: impl FnOnce(&mut WebJoinSlots) -> T) -> Result<T, String> {
    with_handle(&JOIN_SLOTS, "join slots", handle, f)
}

/// Creates a browser host's join policy from its JSON settings; returns
/// its handle, or 0 with the error as the answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_new(ptr: *const u8, len: usize) -> u32 {
    create(
        &JOIN_SLOTS,
        text(ptr, len).and_then(|t| WebJoinSlots::new(&t)),
    )
}

/// Drops a join policy.
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_drop(handle: u32) {
    release(&JOIN_SLOTS, handle);
}

/// Answers when the next round may open, ms (JSON number).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_round_opens_at(handle: u32, now_ms: f64) -> i32 {
    answer(with_joins(handle, |j| j.round_opens_at(now_ms)).and_then(|t| json(&t)))
}

/// An answer arrived: answers its join id and the join dropped for it
/// (JSON `{id, evicted}`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_admit(handle: u32, now_ms: f64) -> i32 {
    answer(with_joins(handle, |j| j.admit(now_ms)).and_then(|a| json(&a)))
}

/// Join `id`'s ICE state reached connected; answers whether it was still
/// in flight (JSON boolean).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_ice_progress(handle: u32, id: f64, now_ms: f64) -> i32 {
    answer(with_joins(handle, |j| j.ice_progress(join_id(id), now_ms)).and_then(|b| json(&b)))
}

/// Join `id` ended on its own; answers whether it was still in flight
/// (JSON boolean).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_finished(handle: u32, id: f64) -> i32 {
    answer(with_joins(handle, |j| j.finished(join_id(id))).and_then(|b| json(&b)))
}

/// Answers the joins whose deadline passed (JSON `[{id, why}]`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_expire(handle: u32, now_ms: f64) -> i32 {
    answer(with_joins(handle, |j| j.expire(now_ms)).and_then(|e| json(&e)))
}

/// Answers when to expire next, ms, or `null` (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_next_deadline(handle: u32) -> i32 {
    answer(with_joins(handle, |j| j.next_deadline()).and_then(|d| json(&d)))
}

/// Answers whether a round should be open now, for a session that has
/// `started` (0 or 1) with `taken` guest seats and `spectators` watching
/// (JSON boolean).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_wants_round(
    handle: u32,
    started: u32,
    taken: u32,
    spectators: u32,
) -> i32 {
    let seats = Seats {
        started: started != 0,
        taken: taken as usize,
        spectators: spectators as usize,
    };
    answer(with_joins(handle, |j| j.wants_round(seats)).and_then(|b| json(&b)))
}

/// Answers whether rounds are served at all, `started` (0 or 1) or not
/// (JSON boolean).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joins_takes_joiners(handle: u32, started: u32) -> i32 {
    answer(with_joins(handle, |j| j.takes_joiners(started != 0)).and_then(|b| json(&b)))
}

/// A join id from the page: a JavaScript number; anything but a whole
/// number in range names no join (0).
fn join_id(id: f64) -> u64 {
    if id.is_finite() && id >= 1.0 && id.fract() == 0.0 && id < 9_007_199_254_740_992.0 {
        id as u64
    } else {
        0
    }
}
