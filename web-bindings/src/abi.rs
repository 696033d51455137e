//! The module's exports: a byte-buffer ABI over the safe wrappers, read by
//! `web/lib/wasm.js`.
//!
//! Strings cross as UTF-8: the page asks [`cf_alloc`] for a buffer, writes
//! into it, passes `(ptr, len)` and releases it with [`cf_free`]. Every
//! call that answers leaves its answer (JSON or text) in one result buffer
//! read through [`cf_result_ptr`] and [`cf_result_len`], and returns 0 on
//! success or 1 when the answer is an error message. Sessions are numbered
//! handles (0 is never a session). Nothing here panics on bad input: a
//! wrong handle, invalid UTF-8 or malformed JSON is an error answer.
//!
//! This is the only module with `unsafe`: reading the page's buffers. The
//! browser host's hosting machine exports are in [`hosting`], the
//! joiner's in [`joining`].

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::thread::LocalKey;

use netcode::link::{ConnectionState, Payload};
use protocol::peer::Channel;
use serde::Serialize;

use crate::campaign::botmatch;
use crate::facts::{CONNECTION_STATES, facts_json, parse_code, sanitize_input, sanitize_name};
use crate::guest::WebGuest;
use crate::host::WebHost;
use crate::hosting::WebHosting;
use crate::joining::WebJoining;
use crate::replay;
use crate::replay_viewer::ReplayViewer;

pub mod hosting;
pub mod joining;

/// The live objects of one kind, by handle.
type Handles<T> = RefCell<BTreeMap<u32, T>>;

thread_local! {
    static RESULT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static GUESTS: Handles<WebGuest> = const { RefCell::new(BTreeMap::new()) };
    static HOSTS: Handles<WebHost> = const { RefCell::new(BTreeMap::new()) };
    static HOSTINGS: Handles<WebHosting> = const { RefCell::new(BTreeMap::new()) };
    static JOININGS: Handles<WebJoining> = const { RefCell::new(BTreeMap::new()) };
    static VIEWERS: Handles<ReplayViewer> = const { RefCell::new(BTreeMap::new()) };
    static NEXT_HANDLE: Cell<u32> = const { Cell::new(1) };
}

const OK: i32 = 0;
const ERR: i32 = 1;

fn answer(result: Result<String, String>) -> i32 {
    let (status, bytes) = match result {
        Ok(s) => (OK, s.into_bytes()),
        Err(e) => (ERR, e.into_bytes()),
    };
    RESULT.with(|r| *r.borrow_mut() = bytes);
    status
}

fn json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// The page's bytes at `(ptr, len)`.
fn bytes(ptr: *const u8, len: usize) -> Result<Vec<u8>, String> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err("null buffer".into());
    }
    // SAFETY: the page passes a buffer it got from `cf_alloc` with at least
    // `len` initialized bytes, and does not touch it during the call.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec())
}

/// The page's string at `(ptr, len)`.
fn text(ptr: *const u8, len: usize) -> Result<String, String> {
    String::from_utf8(bytes(ptr, len)?).map_err(|_| "not UTF-8".to_owned())
}

/// The page's data-channel message at `(ptr, len)`: binary (`binary` is
/// 1) or text.
fn payload(binary: u32, ptr: *const u8, len: usize) -> Result<Payload, String> {
    match binary {
        0 => text(ptr, len).map(Payload::Text),
        1 => bytes(ptr, len).map(Payload::Binary),
        n => Err(format!("no message kind {n}")),
    }
}

/// Stores a new object under a fresh handle and returns it; 0, with the
/// error as the answer, when it could not be made.
fn create<T: 'static>(table: &'static LocalKey<Handles<T>>, made: Result<T, String>) -> u32 {
    match made {
        Ok(object) => {
            let handle = next_handle();
            table.with(|t| t.borrow_mut().insert(handle, object));
            handle
        }
        Err(e) => {
            answer(Err(e));
            0
        }
    }
}

/// Runs `f` on the object `handle` names; an error naming `what` when
/// there is none.
fn with_handle<T: 'static, R>(
    table: &'static LocalKey<Handles<T>>,
    what: &str,
    handle: u32,
    f: impl FnOnce(&mut T) -> R,
) -> Result<R, String> {
    table.with(|t| {
        t.borrow_mut()
            .get_mut(&handle)
            .map(f)
            .ok_or_else(|| format!("no {what} {handle}"))
    })
}

/// Drops the object `handle` names (nothing when there is none).
fn release<T: 'static>(table: &'static LocalKey<Handles<T>>, handle: u32) {
    table.with(|t| t.borrow_mut().remove(&handle));
}

fn with_guest<T>(handle: u32, f: impl FnOnce(&mut WebGuest) -> T) -> Result<T, String> {
    with_handle(&GUESTS, "guest session", handle, f)
}

fn with_host<T>(handle: u32, f: impl FnOnce(&mut WebHost) -> T) -> Result<T, String> {
    with_handle(&HOSTS, "host session", handle, f)
}

fn with_viewer<T>(handle: u32, f: impl FnOnce(&mut ReplayViewer) -> T) -> Result<T, String> {
    with_handle(&VIEWERS, "replay viewer", handle, f)
}

fn next_handle() -> u32 {
    NEXT_HANDLE.with(|n| {
        let h = n.get();
        n.set(h.wrapping_add(1).max(1));
        h
    })
}

/// The ABI's channel numbers: 0 `input`, 1 `reconciliation`, 2
/// `input-unreliable` (the order of [`Channel::ALL`]).
fn channel(number: u32) -> Result<Channel, String> {
    usize::try_from(number)
        .ok()
        .and_then(|n| Channel::ALL.get(n).copied())
        .ok_or_else(|| format!("unknown channel {number}"))
}

/// The ABI's connection states: the index in [`CONNECTION_STATES`].
fn connection_state(number: u32) -> Result<ConnectionState, String> {
    usize::try_from(number)
        .ok()
        .and_then(|n| CONNECTION_STATES.get(n))
        .map(|(_, state)| *state)
        .ok_or_else(|| format!("unknown connection state {number}"))
}

/// A buffer of `len` bytes for the page to write into.
#[unsafe(no_mangle)]
pub extern "C" fn cf_alloc(len: usize) -> *mut u8 {
    let mut buf = Vec::<u8>::with_capacity(len.max(1));
    let ptr = buf.as_mut_ptr();
    std::mem::forget(buf);
    ptr
}

/// Releases a buffer from [`cf_alloc`].
///
/// # Safety
/// `ptr` and `len` must be exactly what one earlier `cf_alloc(len)` call
/// returned and received, and the buffer must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cf_free(ptr: *mut u8, len: usize) {
    if !ptr.is_null() {
        // SAFETY: per this function's contract, `ptr` came from a Vec of
        // capacity `len.max(1)` that was forgotten.
        drop(unsafe { Vec::from_raw_parts(ptr, 0, len.max(1)) });
    }
}

/// Where the last answer starts.
#[unsafe(no_mangle)]
pub extern "C" fn cf_result_ptr() -> *const u8 {
    RESULT.with(|r| r.borrow().as_ptr())
}

/// How long the last answer is.
#[unsafe(no_mangle)]
pub extern "C" fn cf_result_len() -> usize {
    RESULT.with(|r| r.borrow().len())
}

/// Answers the shared protocol facts (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_facts() -> i32 {
    answer(Ok(facts_json()))
}

/// Answers an input as the shared stream may carry it (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_sanitize_input(ptr: *const u8, len: usize) -> i32 {
    answer(text(ptr, len).and_then(|t| sanitize_input(&t)))
}

/// Answers a display name as every peer shows it.
#[unsafe(no_mangle)]
pub extern "C" fn cf_sanitize_name(ptr: *const u8, len: usize) -> i32 {
    answer(text(ptr, len).map(|t| sanitize_name(&t)))
}

/// Answers a typed session code in its canonical form, or why it is none
/// (as an error).
#[unsafe(no_mangle)]
pub extern "C" fn cf_parse_code(ptr: *const u8, len: usize) -> i32 {
    answer(text(ptr, len).and_then(|t| parse_code(&t)))
}

/// Runs a bot campaign; answers its records and summary (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_botmatch(ptr: *const u8, len: usize) -> i32 {
    answer(
        text(ptr, len)
            .and_then(|t| botmatch(&t))
            .and_then(|r| json(&r)),
    )
}

/// Re-simulates a replay file's text; answers `host-daemon replay`'s JSON
/// (`ticks`, `finalWorldHash`, `recordedWorldHash`, `matches`, the level).
#[unsafe(no_mangle)]
pub extern "C" fn cf_replay(ptr: *const u8, len: usize) -> i32 {
    answer(
        text(ptr, len)
            .and_then(|t| replay::verify(&t))
            .and_then(|r| json(&r)),
    )
}

/// Opens a replay file's text for watching; returns the viewer's handle,
/// or 0 with the error as the answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_viewer_new(ptr: *const u8, len: usize) -> u32 {
    create(
        &VIEWERS,
        text(ptr, len).and_then(|t| ReplayViewer::open(&t)),
    )
}

/// Runs up to `ticks` recorded ticks; answers the viewer's status.
#[unsafe(no_mangle)]
pub extern "C" fn cf_viewer_step(handle: u32, ticks: u32) -> i32 {
    answer(with_viewer(handle, |v| v.step(ticks)).and_then(|s| json(&s)))
}

/// Goes to `tick` (a whole number; clamped to the recording); answers the
/// viewer's status.
#[unsafe(no_mangle)]
pub extern "C" fn cf_viewer_seek(handle: u32, tick: f64) -> i32 {
    let tick = if tick.is_finite() && tick > 0.0 {
        // Saturating: a huge tick is the end.
        tick as u64
    } else {
        0
    };
    answer(with_viewer(handle, |v| v.seek(tick)).and_then(|s| s.and_then(|s| json(&s))))
}

/// The world now through the eyes of the player named by `(ptr, len)`
/// (empty: nobody's in particular), as a view.
#[unsafe(no_mangle)]
pub extern "C" fn cf_viewer_view(handle: u32, ptr: *const u8, len: usize) -> i32 {
    let player = if len == 0 {
        Ok(None)
    } else {
        text(ptr, len).map(Some)
    };
    answer(
        player.and_then(|p| {
            with_viewer(handle, |v| v.view(p.as_deref())).and_then(|view| json(&view))
        }),
    )
}

/// Drops a replay viewer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_viewer_drop(handle: u32) {
    release(&VIEWERS, handle);
}

/// Creates a guest session from its JSON configuration; returns its handle,
/// or 0 with the error as the answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_new(ptr: *const u8, len: usize) -> u32 {
    create(&GUESTS, text(ptr, len).and_then(|t| WebGuest::new(&t)))
}

/// Drops a guest session.
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_drop(handle: u32) {
    release(&GUESTS, handle);
}

/// Feeds a message that arrived on channel 0 (`input`) or 1
/// (`reconciliation`) at `now_ms`: text, or binary when `binary` is 1.
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_message(
    handle: u32,
    channel: u32,
    binary: u32,
    ptr: *const u8,
    len: usize,
    now_ms: f64,
) -> i32 {
    let channel = match self::channel(channel) {
        Ok(c) => c,
        Err(e) => return answer(Err(e)),
    };
    answer(payload(binary, ptr, len).and_then(|p| {
        with_guest(handle, |g| g.on_message(channel, p, now_ms)).map(|()| String::new())
    }))
}

/// Feeds a connection change: 0 connected, 1 disconnected, 2 failed,
/// 3 closed.
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_state(handle: u32, state: u32, now_ms: f64) -> i32 {
    let state = match connection_state(state) {
        Ok(s) => s,
        Err(e) => return answer(Err(e)),
    };
    answer(with_guest(handle, |g| g.on_state(state, now_ms)).map(|()| String::new()))
}

/// Runs timers and applies what can be applied.
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_poll(handle: u32, now_ms: f64) -> i32 {
    answer(with_guest(handle, |g| g.poll(now_ms)).map(|()| String::new()))
}

/// Sets this player's input (JSON `InputSnapshot`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_set_input(handle: u32, ptr: *const u8, len: usize) -> i32 {
    answer(
        text(ptr, len)
            .and_then(|t| with_guest(handle, |g| g.set_input(&t))?.map(|()| String::new())),
    )
}

/// Answers what to send and when to wake up (JSON `Output`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_output(handle: u32) -> i32 {
    answer(with_guest(handle, |g| g.output()).and_then(|o| json(&o)))
}

/// Answers the session's status (JSON `Status`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_status(handle: u32) -> i32 {
    answer(with_guest(handle, |g| g.status()).and_then(|s| json(&s)))
}

/// Answers the netgraph at `now_ms` (JSON `GuestNetgraph`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_netgraph(handle: u32, now_ms: f64) -> i32 {
    answer(with_guest(handle, |g| g.netgraph(now_ms)).and_then(|n| json(&n)))
}

/// Answers the world to draw at `now_ms` (JSON `View`, or `null` before
/// setup).
#[unsafe(no_mangle)]
pub extern "C" fn cf_guest_view(handle: u32, now_ms: f64) -> i32 {
    answer(with_guest(handle, |g| g.view(now_ms)).and_then(|v| json(&v)))
}

/// Creates a host session from its JSON configuration; returns its handle,
/// or 0 with the error as the answer.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_new(ptr: *const u8, len: usize) -> u32 {
    create(&HOSTS, text(ptr, len).and_then(|t| WebHost::new(&t)))
}

/// Drops a host session.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_drop(handle: u32) {
    release(&HOSTS, handle);
}

/// Hands the session a new guest connection; answers its slot number.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_add_guest(handle: u32, now_ms: f64) -> i32 {
    answer(with_host(handle, |h| h.add_guest(now_ms).to_string()))
}

/// Feeds a message from guest `slot` on channel 0 (`input`) or 1
/// (`reconciliation`) at `now_ms`: text, or binary when `binary` is 1.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_message(
    handle: u32,
    slot: u32,
    channel: u32,
    binary: u32,
    ptr: *const u8,
    len: usize,
    now_ms: f64,
) -> i32 {
    let channel = match self::channel(channel) {
        Ok(c) => c,
        Err(e) => return answer(Err(e)),
    };
    answer(payload(binary, ptr, len).and_then(|p| {
        with_host(handle, |h| h.on_message(slot as usize, channel, p, now_ms))?
            .map(|()| String::new())
    }))
}

/// Feeds guest `slot`'s connection change (numbers as for the guest).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_state(handle: u32, slot: u32, state: u32, now_ms: f64) -> i32 {
    let state = match connection_state(state) {
        Ok(s) => s,
        Err(e) => return answer(Err(e)),
    };
    answer(
        with_host(handle, |h| h.on_state(slot as usize, state, now_ms))
            .and_then(|r| r)
            .map(|()| String::new()),
    )
}

/// Runs deadlines and every due tick.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_poll(handle: u32, now_ms: f64) -> i32 {
    answer(with_host(handle, |h| h.poll(now_ms)).map(|()| String::new()))
}

/// Starts the level now with whoever is in.
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_start(handle: u32, now_ms: f64) -> i32 {
    answer(with_host(handle, |h| h.start(now_ms)).map(|()| String::new()))
}

/// Ends the session now (`host-shutdown`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_shutdown(handle: u32) -> i32 {
    answer(with_host(handle, WebHost::shutdown).map(|()| String::new()))
}

/// Sets the host player's input (JSON `InputSnapshot`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_set_input(handle: u32, ptr: *const u8, len: usize) -> i32 {
    answer(
        text(ptr, len)
            .and_then(|t| with_host(handle, |h| h.set_input(&t))?.map(|()| String::new())),
    )
}

/// Answers what to send, what to close and when to wake up (JSON).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_output(handle: u32) -> i32 {
    answer(with_host(handle, |h| h.output()).and_then(|o| json(&o)))
}

/// Answers the session's status (JSON `HostStatus`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_status(handle: u32) -> i32 {
    answer(with_host(handle, |h| h.status()).and_then(|s| json(&s)))
}

/// Answers the netgraph at `now_ms` (JSON `HostNetgraph`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_netgraph(handle: u32, now_ms: f64) -> i32 {
    answer(with_host(handle, |h| h.netgraph(now_ms)).and_then(|n| json(&n)))
}

/// Answers the operator's session report (JSON `SessionReport`).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_report(handle: u32) -> i32 {
    answer(with_host(handle, |h| h.report()).and_then(|r| json(&r)))
}

/// Answers the world as the host's player sees it (JSON `View`, or `null`
/// before setup).
#[unsafe(no_mangle)]
pub extern "C" fn cf_host_view(handle: u32) -> i32 {
    answer(with_host(handle, |h| h.view()).and_then(|v| json(&v)))
}
