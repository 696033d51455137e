//! Wall-clock time as a dependency, so TTL logic can be tested on a manual clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use time::OffsetDateTime;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// A source of wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The real system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as Millis
    }
}

/// A clock that moves only when told to (for tests).
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A manual clock reading `start_ms`.
    pub fn new(start_ms: Millis) -> Self {
        Self(Arc::new(AtomicI64::new(start_ms)))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance_ms(&self, ms: Millis) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

/// Converts stored milliseconds to a timestamp for the wire.
pub fn to_datetime(ms: Millis) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}
