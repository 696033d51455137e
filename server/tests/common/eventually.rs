//! The suite's one bounded wait for a condition that another task, a
//! replica or a child process makes true.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How often [`eventually`] checks: fine enough for the tests that measure
/// how soon a change arrives, cheap enough for an HTTP request a check.
pub const POLL: Duration = Duration::from_millis(5);

/// What one check of [`eventually`] found: the condition holds (with the
/// value it holds with), or not yet (with what it saw instead, if it says).
pub trait Outcome {
    type Value;
    fn settled(self) -> Result<Self::Value, Option<String>>;
}

impl Outcome for bool {
    type Value = ();
    fn settled(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

/// `Err` carries what the check saw, for the panic message.
impl<T, E: Debug> Outcome for Result<T, E> {
    type Value = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.map_err(|seen| Some(format!("{seen:?}")))
    }
}

/// Runs `check` every [`POLL`] until its outcome holds and returns the
/// value it holds with. `within` bounds the whole wait, a check still
/// running included; past it, panics naming `what` and the last thing a
/// check saw.
pub async fn eventually<F, Fut>(
    within: Duration,
    what: &str,
    mut check: F,
) -> <Fut::Output as Outcome>::Value
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Outcome,
{
    let deadline = Instant::now() + within;
    let mut seen = None;
    loop {
        if let Ok(outcome) = tokio::time::timeout_at(deadline, check()).await {
            match outcome.settled() {
                Ok(value) => return value,
                Err(saw) => seen = saw,
            }
        }
        if Instant::now() >= deadline {
            match seen {
                Some(saw) => panic!("{what}: not within {within:?} (last saw {saw})"),
                None => panic!("{what}: not within {within:?}"),
            }
        }
        tokio::time::sleep(POLL).await;
    }
}
