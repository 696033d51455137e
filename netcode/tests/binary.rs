//! Binary messages (the `binary` hello feature, issue 48) on a virtual
//! clock: a guest that names it gets its bundles, snapshot deltas and
//! pings as binary messages and sends its inputs and pongs so; a guest
//! that names `compact` but not `binary` (a peer from before it) never
//! sees a binary message either way, and both play the host's game.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use netcode::sim::{LinkConfig, Tamper};
use protocol::peer::FEATURE_BINARY;
use protocol::wire::Payload;
use support::checks::assert_lockstep;
use support::scenario::{guest, host, net, run, without_feature};

/// Binary messages one way of a link.
#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>);

impl Count {
    /// A tamper that counts the binary messages it sees and changes
    /// nothing.
    fn tamper(&self) -> Tamper {
        let count = self.0.clone();
        Arc::new(move |_, payload| {
            if matches!(payload, Payload::Binary(_)) {
                count.fetch_add(1, Ordering::SeqCst);
            }
            payload.clone()
        })
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn only_a_guest_that_names_binary_hears_or_sends_binary_messages() {
    let counts: [(Count, Count); 2] = Default::default();
    let link = |g: usize, (down, up): &(Count, Count)| LinkConfig {
        tamper_down: Some(down.tamper()),
        tamper_up: Some(up.tamper()),
        ..net(5, 0, g as u64 + 1)
    };
    let o = run(
        host(1, 2, Some(300)),
        vec![
            (guest("New"), link(0, &counts[0])),
            (
                without_feature(FEATURE_BINARY, guest("Old")),
                link(1, &counts[1]),
            ),
        ],
    );
    for g in 0..2 {
        assert_lockstep(&o, g);
    }
    let [(new_down, new_up), (old_down, old_up)] = &counts;
    // Every bundle of 300 ticks, and the inputs of a bot that moves.
    assert!(new_down.get() >= 300, "{} binary down", new_down.get());
    assert!(new_up.get() >= 100, "{} binary up", new_up.get());
    assert_eq!((old_down.get(), old_up.get()), (0, 0));
}
