//! The browser host's exports: its rounds, join policy and `players`
//! updates ([`crate::hosting::WebHosting`]).

use super::{HOSTINGS, answer, create, json, release, text, with_handle};
use crate::hosting::WebHosting;

/// Creates a browser host's hosting machine from its JSON settings;
/// returns its handle, or 0 with the error as the answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_hosting_new(ptr: *const u8, len: usize) -> u32 {
    create(&HOSTINGS, text(ptr, len).and_then(|t| WebHosting::new(&t)))
}

/// Drops a hosting machine.
#[unsafe(no_mangle)]
pub extern "C" fn cf_hosting_drop(handle: u32) {
    release(&HOSTINGS, handle);
}

/// Answers the first commands at `now_ms` (JSON array).
#[unsafe(no_mangle)]
pub extern "C" fn cf_hosting_start(handle: u32, now_ms: f64) -> i32 {
    answer(with_handle(&HOSTINGS, "hosting machine", handle, |h| h.start(now_ms)).and_then(|r| r))
}

/// Takes the page's report (JSON event) at `now_ms` and answers the
/// commands (JSON array).
#[unsafe(no_mangle)]
pub extern "C" fn cf_hosting_on(handle: u32, ptr: *const u8, len: usize, now_ms: f64) -> i32 {
    answer(text(ptr, len).and_then(|t| {
        with_handle(&HOSTINGS, "hosting machine", handle, |h| h.on(&t, now_ms)).and_then(|r| r)
    }))
}

/// Answers when to report a `clock` event, ms, or `null` (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_hosting_next_wake(handle: u32, now_ms: f64) -> i32 {
    answer(
        with_handle(&HOSTINGS, "hosting machine", handle, |h| {
            h.next_wake(now_ms)
        })
        .and_then(|w| json(&w)),
    )
}
