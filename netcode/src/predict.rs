//! The predicted view: instant feedback for the local player.
//!
//! A player's input reaches the shared simulation only after its input
//! delay (up to [`protocol::tick::MAX_INPUT_DELAY_TICKS`] on a slow link).
//! To show the player its own movement and turning at once, a copy of the
//! confirmed engine is run ahead through the inputs this player already
//! sampled but the confirmed simulation has not applied yet; everyone
//! else repeats their newest known input. The copy is thrown away and run
//! again from the next confirmed state, so a misprediction lasts at most
//! until its tick is confirmed. The confirmed engine, its hashes and what
//! is sent are never touched: the prediction is only ever drawn.

use std::collections::{BTreeMap, VecDeque};

use game_api::game::Input;
use game_api::{Game, LevelStatus, PlayerId};

/// At most this many ticks are predicted past the confirmed state (800
/// ms): beyond it a stalled link would let the local player run off
/// alone, so the view waits for confirmed ticks instead, as rollback
/// netcode caps its prediction window.
pub const MAX_PREDICTED_TICKS: u64 = 24;

/// Inputs kept for ticks not yet confirmed (a bound on what a stalled
/// host makes a guest hold; more than the prediction window).
const MAX_PENDING: usize = 128;

/// One player's own inputs for ticks the confirmed engine has not
/// applied yet, oldest first.
#[derive(Clone, Debug)]
pub struct PendingInputs<I> {
    inputs: VecDeque<(u64, I)>,
}

impl<I> Default for PendingInputs<I> {
    fn default() -> Self {
        Self {
            inputs: VecDeque::new(),
        }
    }
}

impl<I> PendingInputs<I> {
    /// Records the input sampled for `tick`. Ticks only move forward: a
    /// tick at or before the newest one is ignored (it was already
    /// recorded).
    pub fn push(&mut self, tick: u64, input: I) {
        if self.newest().is_some_and(|n| tick <= n) {
            return;
        }
        self.inputs.push_back((tick, input));
        if self.inputs.len() > MAX_PENDING {
            self.inputs.pop_front();
        }
    }

    /// The confirmed engine reached `tick`: inputs for earlier ticks are
    /// applied and forgotten.
    pub fn confirm(&mut self, tick: u64) {
        while self.inputs.front().is_some_and(|(t, _)| *t < tick) {
            self.inputs.pop_front();
        }
    }

    /// Forgets everything (a new level counts ticks from 0).
    pub fn clear(&mut self) {
        self.inputs.clear();
    }

    /// The newest tick an input is recorded for.
    pub fn newest(&self) -> Option<u64> {
        self.inputs.back().map(|(t, _)| *t)
    }

    /// The input recorded for `tick`, if any.
    pub fn get(&self, tick: u64) -> Option<&I> {
        let first = self.inputs.front()?.0;
        let i = usize::try_from(tick.checked_sub(first)?).ok()?;
        // Ticks are consecutive in practice; search if a gap shifted them.
        match self.inputs.get(i) {
            Some((t, input)) if *t == tick => Some(input),
            _ => self
                .inputs
                .iter()
                .find(|(t, _)| *t == tick)
                .map(|(_, input)| input),
        }
    }
}

/// The tick a prediction from `confirmed_tick` through inputs up to
/// `newest_input` shows: one past the newest input, within the window.
/// `None` when there is nothing to predict.
pub fn predicted_tick(confirmed_tick: u64, newest_input: Option<u64>) -> Option<u64> {
    let until = newest_input?.checked_add(1)?;
    (until > confirmed_tick).then(|| until.min(confirmed_tick + MAX_PREDICTED_TICKS))
}

/// A copy of `confirmed` advanced to tick `until` (at most
/// [`MAX_PREDICTED_TICKS`] ahead), each tick with the inputs
/// `inputs_at(tick)` returns. It stops early once the level no longer
/// takes input (complete or lost): the confirmed transition decides what
/// follows.
pub fn run_ahead<E: Game + Clone>(
    confirmed: &E,
    until: u64,
    mut inputs_at: impl FnMut(u64) -> BTreeMap<PlayerId, Input<E>>,
) -> E {
    let mut ahead = confirmed.clone();
    let until = until.min(confirmed.tick() + MAX_PREDICTED_TICKS);
    while ahead.tick() < until
        && matches!(
            ahead.status(),
            LevelStatus::Running | LevelStatus::Countdown { .. }
        )
    {
        let inputs = inputs_at(ahead.tick());
        ahead.advance(&inputs, &[]);
    }
    ahead
}

/// The inputs of one predicted tick: everyone's `known` input, with
/// `me`'s replaced by `mine` (only if `me` is among them: a player who
/// left the roster is not brought back).
pub fn with_mine<I: Clone>(
    known: &BTreeMap<PlayerId, I>,
    me: &PlayerId,
    mine: &I,
) -> BTreeMap<PlayerId, I> {
    let mut inputs = known.clone();
    if let Some(slot) = inputs.get_mut(me) {
        slot.clone_from(mine);
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A game's input for these tests: a byte, 0 the neutral input.
    const NEUTRAL: u8 = 0;

    fn forward() -> u8 {
        1
    }

    #[test]
    fn pending_inputs_move_forward_and_are_forgotten_once_confirmed() {
        let mut p = PendingInputs::<u8>::default();
        p.push(5, forward());
        p.push(6, NEUTRAL);
        p.push(6, forward());
        p.push(4, forward());
        assert_eq!(p.newest(), Some(6));
        assert_eq!(p.get(5), Some(&forward()));
        assert_eq!(p.get(6), Some(&NEUTRAL), "a repeat is ignored");
        assert_eq!(p.get(4), None);
        p.confirm(6);
        assert_eq!(p.get(5), None);
        assert_eq!(p.get(6), Some(&NEUTRAL));
        p.push(9, forward());
        assert_eq!(p.get(9), Some(&forward()), "found across a gap");
        p.clear();
        assert_eq!(p.newest(), None);
    }

    #[test]
    fn pending_inputs_are_bounded() {
        let mut p = PendingInputs::<u8>::default();
        for t in 0..1_000 {
            p.push(t, NEUTRAL);
        }
        assert_eq!(p.inputs.len(), MAX_PENDING);
        assert_eq!(p.newest(), Some(999));
    }

    #[test]
    fn the_predicted_tick_is_past_the_newest_input_within_the_window() {
        assert_eq!(predicted_tick(10, None), None);
        assert_eq!(predicted_tick(10, Some(9)), None, "all confirmed");
        assert_eq!(predicted_tick(10, Some(10)), Some(11));
        assert_eq!(predicted_tick(10, Some(15)), Some(16));
        assert_eq!(
            predicted_tick(10, Some(500)),
            Some(10 + MAX_PREDICTED_TICKS)
        );
    }

    #[test]
    fn only_a_player_in_the_inputs_gets_its_own_input() {
        let me = PlayerId::new("me");
        let other = PlayerId::new("other");
        let known = BTreeMap::from([(other.clone(), NEUTRAL)]);
        assert_eq!(with_mine(&known, &me, &forward()), known);
        let known = BTreeMap::from([(me.clone(), NEUTRAL), (other.clone(), NEUTRAL)]);
        let mixed = with_mine(&known, &me, &forward());
        assert_eq!(mixed[&me], forward());
        assert_eq!(mixed[&other], NEUTRAL);
    }
}
