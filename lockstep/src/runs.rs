//! Input runs (the `input-runs` hello feature), the sending side: a guest
//! sending redundant inputs sends a `tick-inputs` only when its input changed, for
//! [`INPUT_RUN_COPIES`] ticks after a change (the input channel is
//! unreliable), and as a keep-alive once [`INPUT_RUN_KEEP_ALIVE_TICKS`]
//! ticks passed without one. Every message carries the ticks before it,
//! so it still covers every tick since the one before; the host plays the
//! player's last input in between ([`crate::inputs::InputBuffer::insert_run`]).
//! Shared by the guest session (`netcode`) and the daemon's light swarm
//! guests.

use protocol::peer::{INPUT_RUN_COPIES, INPUT_RUN_KEEP_ALIVE_TICKS};

/// When the next input message is due.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputRuns {
    /// The newest tick of the last message sent this level.
    last_sent: Option<u64>,
    /// Copies still to send after the last change.
    copies_left: u8,
}

impl InputRuns {
    /// Whether the message whose newest tick is `newest` goes: `changed`
    /// says an input in it differs from the tick before. Counts it as sent
    /// when it does.
    pub fn due(&mut self, changed: bool, newest: u64) -> bool {
        let due = if changed {
            self.copies_left = INPUT_RUN_COPIES;
            true
        } else if self.copies_left > 0 {
            self.copies_left -= 1;
            true
        } else {
            self.last_sent
                .is_none_or(|sent| newest >= sent + INPUT_RUN_KEEP_ALIVE_TICKS)
        };
        if due {
            self.last_sent = Some(newest);
        }
        due
    }

    /// A level starts, or the sampling skipped ticks: the next message
    /// goes whatever it holds.
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_goes_with_copies_then_keep_alives_only() {
        let mut runs = InputRuns::default();
        let sent: Vec<u64> = (0..40u64)
            .filter(|&tick| runs.due(tick == 0 || tick == 20, tick))
            .collect();
        // The first message, two copies, keep-alives every eighth tick, the
        // change at 20 and its copies, a keep-alive eight ticks later.
        assert_eq!(sent, [0, 1, 2, 10, 18, 20, 21, 22, 30, 38]);
        for pair in sent.windows(2) {
            assert!(pair[1] - pair[0] <= INPUT_RUN_KEEP_ALIVE_TICKS);
        }
    }

    #[test]
    fn after_a_reset_the_next_message_goes() {
        let mut runs = InputRuns::default();
        assert!(runs.due(true, 5));
        for tick in 6..=7 {
            assert!(runs.due(false, tick));
        }
        assert!(!runs.due(false, 8));
        runs.reset();
        assert!(runs.due(false, 9));
    }
}
