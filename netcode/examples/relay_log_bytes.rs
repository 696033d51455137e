//! How many heap bytes a relay's input log spends per frame.
//!
//! Drives a [`Relay`] over campfire's input type through its public calls
//! (players admitted, the level answered and loaded, every player's input
//! each tick) with snapshots turned off, so the log keeps every frame.
//! A counting allocator measures the live heap before and after the ticks;
//! the difference over the frames held is the log's cost per frame (the
//! input buffer and judge stay near empty: inputs are taken as they come).
//!
//! `cargo run --release -p netcode --example relay_log_bytes -- [players] [ticks]`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use engine::wire::input::InputSnapshot;
use lockstep::relay::{Entry, Origin, Relay, RelayConfig, RelayPhase};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the pointer and layout the caller got from `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let mut args = std::env::args().skip(1);
    let players: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let ticks: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(6_000);
    let tick = Duration::from_micros(33_334);
    let mut relay = Relay::<InputSnapshot>::new(RelayConfig {
        start_players: players,
        max_players: players,
        snapshot_interval: ticks * 10,
        ..RelayConfig::default()
    });
    let mut now = Duration::ZERO;
    for slot in 0..players {
        let entry = Entry::Player {
            name: format!("player {slot}"),
            input_delay: 3,
        };
        relay
            .admit(slot, entry, Origin::of_slot(slot), now)
            .expect("a seat");
    }
    relay.poll(now);
    let epoch = relay.epoch();
    // The first player is the authority: it answers with a level payload.
    assert!(relay.level(0, epoch, Arc::from(vec![0u8; 64]), now));
    for slot in 0..players {
        relay.loaded(slot, epoch);
    }
    relay.poll(now);
    assert_eq!(relay.phase(), RelayPhase::Running);
    drop(relay.drain_outbox());
    drop(relay.drain_events());
    let before = LIVE.load(Ordering::Relaxed);
    let frames_before = relay.log_size().0;
    for t in 0..ticks {
        for slot in 0..players {
            let input = InputSnapshot {
                move_forward: (t + slot as u64) % 3 == 0,
                mouse_delta_x: (t % 7) as f64,
                ..InputSnapshot::NEUTRAL
            };
            relay.input(slot, epoch, relay.next_tick() + 3, input);
        }
        now += tick;
        relay.poll(now);
        drop(relay.drain_outbox());
        drop(relay.drain_events());
    }
    let after = LIVE.load(Ordering::Relaxed);
    let frames = relay.log_size().0 - frames_before;
    println!(
        "{players} players, {frames} frames: {} bytes per frame in the log ({} bytes of InputSnapshot each)",
        (after - before) / frames.max(1) as isize,
        std::mem::size_of::<InputSnapshot>()
    );
}
