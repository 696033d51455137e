//! The predicted view: the confirmed engine run ahead through this
//! player's inputs the host has not confirmed yet (see [`crate::predict`]).

use game_api::Game;

use super::{GuestSession, Phase};
use crate::predict;

impl<E: Game> GuestSession<E> {
    /// The tick the predicted view shows ([`GuestSession::predicted`]): one
    /// past the newest input this player sampled, or `None` when nothing
    /// is pending (then the view is the confirmed engine).
    pub fn predicted_tick(&self) -> Option<u64> {
        let engine = self.engine.as_ref()?;
        if !matches!(self.phase, Phase::Running) || self.me.is_none() || self.spectator {
            return None;
        }
        predict::predicted_tick(engine.tick(), self.pending.newest())
    }
}

impl<E: Game + Clone> GuestSession<E> {
    /// The world to draw: a copy of the confirmed engine run ahead through
    /// the inputs this player sampled and the host has not yet confirmed,
    /// everyone else repeating their input of the newest applied tick (see
    /// [`crate::predict`]). `None` when nothing is pending: draw
    /// [`GuestSession::engine`]. The confirmed engine is not touched.
    pub fn predicted(&self) -> Option<E> {
        let until = self.predicted_tick()?;
        let (engine, me) = (self.engine.as_ref()?, self.me.as_ref()?);
        let mut mine = self.known_inputs.get(me).cloned().unwrap_or_default();
        Some(predict::run_ahead(engine, until, |tick| {
            if let Some(input) = self.pending.get(tick) {
                mine.clone_from(input);
            }
            predict::with_mine(&self.known_inputs, me, &mine)
        }))
    }
}
