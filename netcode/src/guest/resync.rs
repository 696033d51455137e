//! A relay's in-place rebuild of a desynced guest (the `resync` feature).
//!
//! The relay sends [`HostMessage::Resync`](engine::wire::HostMessage::Resync)
//! on the input channel, then, on the other channel, a session init with a
//! join point (its latest verified snapshot) and the level's state; the
//! bundles from the join tick on follow the marker. The two channels may
//! deliver in either order, so the guest waits for both halves:
//!
//! - the marker: every bundle queued before it belongs to the world being
//!   replaced and is dropped; the ones after it are the new stream;
//! - the state: the engine is rebuilt from it, as a late joiner's is.
//!
//! Until both came, no bundle is applied (the old world stops where it is)
//! and at most [`MAX_HELD_WHILE_RESYNCING`] are held. Then the guest plays
//! on as the same player: same id, same rejoin token, predictions and
//! sampled inputs started over from the join tick.

use game_api::Game;
use protocol::peer::Feature;
use protocol::peer::{SessionInit, TickInputBundle};

use super::{GuestEnd, GuestEvent, GuestSession, Phase};

/// Bundles held while a resync's halves are on their way: three minutes
/// of ticks, well over a relay's longest catch-up (its log holds at most
/// two snapshot intervals, of at most 1,800 ticks each, plus 120).
pub(super) const MAX_HELD_WHILE_RESYNCING: usize = 5_400;

/// Where an in-place rebuild stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Resync {
    /// The marker came: the backlog holds the new stream only.
    pub(super) marked: bool,
    /// The state came: the engine stands at the join tick.
    pub(super) rebuilt: bool,
}

impl<E: Game> GuestSession<E> {
    /// Whether the bundles wait for a resync's other half.
    pub(super) fn resync_holds(&self) -> bool {
        self.resync.is_some()
    }

    /// The relay's marker: the bundle stream restarts at `tick` of
    /// `level_epoch`.
    pub(super) fn on_resync_marker(&mut self, level_epoch: u32, tick: u64) {
        if !self.features.has(Feature::Resync)
            || self.me.is_none() && !self.spectator
            || level_epoch < self.level_epoch
        {
            self.stats.bad_messages += 1;
            self.events.push(GuestEvent::BadMessage(
                "a resync this guest did not take up, before its setup, or for an earlier level"
                    .into(),
            ));
            return;
        }
        self.backlog.clear();
        let mut state = self.resync.unwrap_or_default();
        state.marked = true;
        self.resync = Some(state);
        self.events
            .push(GuestEvent::Resyncing { level_epoch, tick });
        self.finish_resync_if_complete();
    }

    /// Whether `init` is a resync's state for this running guest: the
    /// guest took up the feature, the init has a join point and names the
    /// same player (or is a spectator's again).
    pub(super) fn is_resync_init(&self, init: &SessionInit<E::Wire>) -> bool {
        let running = matches!(self.phase, Phase::Running) || self.resync.is_some();
        running
            && self.features.has(Feature::Resync)
            && init.join.is_some()
            && init.spectator == self.spectator
            && (self.spectator || self.me.as_ref() == Some(&init.your_player_id))
    }

    /// A resync's init was taken: its state is on its way. What belonged
    /// to the world being replaced goes: a wait for a transition (the
    /// relay sends none for a level before it rebuilds a peer in it), a
    /// transition half received, smoothing offsets, an authority's kept
    /// snapshot and unanswered ask.
    pub(super) fn resync_state_coming(&mut self) {
        let mut state = self.resync.unwrap_or_default();
        state.rebuilt = false;
        self.resync = Some(state);
        self.fell_behind_since = None;
        self.transition = None;
        self.render_offsets.clear();
        self.authority.kept = None;
        self.authority.asked = None;
    }

    /// The engine was rebuilt from a join point's state.
    pub(super) fn resync_rebuilt(&mut self) {
        if let Some(state) = &mut self.resync {
            state.rebuilt = true;
            self.finish_resync_if_complete();
        }
    }

    /// Holds a bundle while a resync waits for its other half.
    pub(super) fn hold_for_resync(&mut self, bundle: TickInputBundle<E::Wire>) {
        if self.backlog.len() >= MAX_HELD_WHILE_RESYNCING {
            self.end(GuestEnd::Failed(
                "a resync's state took too long to arrive".into(),
            ));
            return;
        }
        self.backlog.push_back(bundle);
    }

    fn finish_resync_if_complete(&mut self) {
        if self
            .resync
            .is_some_and(|state| state.marked && state.rebuilt)
        {
            self.resync = None;
            self.stats.resyncs += 1;
            if let Some((epoch, tick)) = self.joined_at {
                self.events.push(GuestEvent::Resynced {
                    level_epoch: epoch,
                    tick,
                });
            }
        }
    }
}
