//! The joiner's exports: joining a session by code
//! ([`crate::joining::WebJoining`]).

use super::{JOININGS, answer, create, release, text, with_handle};
use crate::joining::WebJoining;

fn with_joining<T>(
    handle: u32,
    f: impl FnOnce(&mut WebJoining) -> Result<T, String>,
) -> Result<T, String> {
    with_handle(&JOININGS, "joiner", handle, f).and_then(|r| r)
}

/// Creates a joiner from the page's JSON request (`{code, spectate?,
/// build?}`) at `now_ms`; returns its handle, or 0 with the error as the
/// answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_joining_new(ptr: *const u8, len: usize, now_ms: f64) -> u32 {
    create(
        &JOININGS,
        text(ptr, len).and_then(|t| WebJoining::new(&t, now_ms)),
    )
}

/// Answers the joiner's first step (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joining_start(handle: u32) -> i32 {
    answer(with_joining(handle, WebJoining::start))
}

/// Takes the page's report (JSON event) at `now_ms` and answers the next
/// step (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_joining_on(handle: u32, ptr: *const u8, len: usize, now_ms: f64) -> i32 {
    answer(text(ptr, len).and_then(|t| with_joining(handle, |j| j.on(&t, now_ms))))
}

/// Drops a joiner.
#[unsafe(no_mangle)]
pub extern "C" fn cf_joining_drop(handle: u32) {
    release(&JOININGS, handle);
}
