//! Where a session's events go: logged (warnings at a bounded rate, the
//! rest counted), counted in the metrics, written to the replay files.

use std::num::NonZeroU32;

use game_api::GameWire;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use netcode::guest::GuestEvent;
use netcode::host::HostEvent;

use crate::metrics::SessionMetrics;
use crate::replay_files::ReplayFiles;

/// Warnings logged per second per session; the rest are counted.
const WARNINGS_PER_SECOND: u32 = 5;

/// Logs warnings at a bounded rate, counting what it suppressed.
pub(super) struct Warnings {
    limiter: DefaultDirectRateLimiter,
    suppressed: u64,
}

impl Warnings {
    /// At most [`WARNINGS_PER_SECOND`] a second.
    pub(super) fn new() -> Self {
        let per_second = NonZeroU32::new(WARNINGS_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        Self {
            limiter: RateLimiter::direct(Quota::per_second(per_second)),
            suppressed: 0,
        }
    }

    /// Whether to log now; when it says yes after a quiet spell, the
    /// caller's line carries how many were suppressed.
    pub(super) fn allow(&mut self) -> Option<u64> {
        if self.limiter.check().is_ok() {
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

/// Counts a host session's event and logs it (warnings rate-limited).
pub(super) fn log_host_event<W: GameWire>(
    event: &HostEvent<W>,
    warnings: &mut Warnings,
    metrics: Option<&SessionMetrics>,
) {
    if let Some(m) = metrics {
        m.record(event);
    }
    match event {
        HostEvent::Ticked { .. }
        | HostEvent::GuestsPresent(_)
        | HostEvent::RoundTrip { .. }
        | HostEvent::Replay(_) => {}
        HostEvent::GuestLost(slot, state) => tracing::info!(slot, ?state, "guest transport lost"),
        HostEvent::Refused(slot, reason) => tracing::info!(slot, ?reason, "join refused"),
        HostEvent::PlayerRemoved(epoch, tick, player) => {
            tracing::info!(level_epoch = epoch, tick, %player, "player removed from the roster");
        }
        HostEvent::PlayerJoined(epoch, tick, player) => {
            tracing::info!(level_epoch = epoch, tick, %player, "late joiner entered the level");
        }
        HostEvent::SpectatorAdmitted(slot, spectator) => {
            tracing::info!(slot, %spectator, "spectator admitted");
        }
        HostEvent::PlayerResumed(slot, player) => {
            tracing::info!(slot, %player, "player resumed on a fresh connection (rejoin)");
        }
        HostEvent::JoinFailed(player, why) => {
            tracing::error!(%player, %why, "late joiner's state could not be sent; removing it");
        }
        HostEvent::TransitionDropped(player) => {
            tracing::warn!(%player, "guest never acked the transition; dropping it");
        }
        HostEvent::LevelFailed(why) => tracing::error!(%why, "level failed; ending the session"),
        HostEvent::Ended(reason) => tracing::info!(?reason, "host session ended"),
        HostEvent::OverBudget(slot) => tracing::warn!(
            slot,
            "guest sent more than its budget of messages or bytes: disconnected"
        ),
        HostEvent::BadMessage(slot, error) => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(slot, %error, suppressed, "unparsable guest message");
            }
        }
        HostEvent::Desync {
            player,
            level_epoch,
            tick,
            persistent,
        } => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(%player, level_epoch, tick, persistent, suppressed, "desync: guest hash differs from host");
            }
        }
    }
}

/// Logs a guest session's event (warnings rate-limited).
pub(super) fn log_guest_event(event: &GuestEvent, warnings: &mut Warnings) {
    match event {
        GuestEvent::Ended(end) => tracing::info!(?end, "guest session ended"),
        GuestEvent::Admitted { player, .. } => tracing::info!(%player, "admitted"),
        GuestEvent::HostBuildDiffers(build) => tracing::warn!(%build, "host runs another build"),
        GuestEvent::TransitionRejected(why) => {
            tracing::warn!(%why, "level transition payload rejected; waiting for a resend");
        }
        other => {
            if let Some(suppressed) = warnings.allow() {
                tracing::warn!(event = ?other, suppressed, "guest session");
            }
        }
    }
}

/// Where a session's events go: the rate-limited log, the metrics, the
/// replay files.
pub struct EventLog {
    /// The rate limit of the session's warnings.
    pub(super) warnings: Warnings,
    /// The session's metrics, if counted.
    pub metrics: Option<SessionMetrics>,
    /// The session's replay files, if recorded.
    pub replays: Option<ReplayFiles>,
}

impl EventLog {
    /// Logs a warning unless too many came this second.
    pub fn warn(&mut self, what: impl FnOnce(u64)) {
        if let Some(suppressed) = self.warnings.allow() {
            what(suppressed);
        }
    }
}
