//! The input buffer and the held-input policy: which input each player
//! gets at each tick. The host session and the relay both build their
//! bundles with it, so the rules are one implementation. Inputs are any
//! `I: Clone + Default`: `I::default()` is the neutral input.

use std::collections::{BTreeMap, BTreeSet};

use game_api::PlayerId;
use protocol::tick::{INPUT_DELAY_TICKS, MAX_INPUT_DELAY_TICKS};

/// How far ahead of the current tick a guest input may be tagged.
pub const INPUT_WINDOW_TICKS: u64 = MAX_INPUT_DELAY_TICKS + 90;

/// Where an arriving input went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Buffered for its tick.
    Buffered,
    /// Too late for its tick; kept as the player's last-received input.
    Late,
    /// Tagged too far ahead; dropped.
    TooFarAhead,
    /// For a tick this player already sent an input for (a redundant
    /// copy, or one that arrived after a newer one); dropped.
    Stale,
}

/// Inputs by tick, plus every player's last-received one and the level's
/// input delays.
#[derive(Debug)]
pub struct InputBuffer<I> {
    by_tick: BTreeMap<u64, BTreeMap<PlayerId, I>>,
    last: BTreeMap<PlayerId, I>,
    /// The newest tick each player's input was received for this level.
    newest: BTreeMap<PlayerId, u64>,
    delays: BTreeMap<PlayerId, u64>,
    /// The tick each late joiner entered the level at (everyone else: 0).
    joined_at: BTreeMap<PlayerId, u64>,
}

/// The inputs of one tick.
#[derive(Debug)]
pub struct TickInputs<I> {
    /// Every roster member's input.
    pub inputs: BTreeMap<PlayerId, I>,
    /// Players whose input had not arrived: their last one was held.
    pub held: Vec<PlayerId>,
}

impl<I> Default for InputBuffer<I> {
    fn default() -> Self {
        Self {
            by_tick: BTreeMap::new(),
            last: BTreeMap::new(),
            newest: BTreeMap::new(),
            delays: BTreeMap::new(),
            joined_at: BTreeMap::new(),
        }
    }
}

impl<I: Clone + Default> InputBuffer<I> {
    /// Files `input` (already sanitized) from `player`, tagged for `tick`,
    /// while the host is at `now_tick`.
    pub fn insert(&mut self, player: PlayerId, tick: u64, input: I, now_tick: u64) -> Placement {
        if self.newest.get(&player).is_some_and(|n| tick <= *n) {
            return Placement::Stale;
        }
        if tick > now_tick + INPUT_WINDOW_TICKS {
            return Placement::TooFarAhead;
        }
        self.newest.insert(player.clone(), tick);
        if tick < now_tick {
            // Too late for its tick, but still this player's last-received
            // input: the one held for them from now on (spec: hold the
            // last-received snapshot). Without this, a link whose round trip
            // exceeds the input delay would hold a stale input forever.
            self.last.insert(player, input);
            return Placement::Late;
        }
        self.by_tick.entry(tick).or_default().insert(player, input);
        Placement::Buffered
    }

    /// Takes tick `tick`'s inputs for `players`: neutral for players in
    /// their disconnect grace and before the first delayed input can
    /// arrive (a late joiner: its join tick plus its delay); the
    /// last-received input, held, for anyone else missing.
    pub fn take(
        &mut self,
        tick: u64,
        players: &[PlayerId],
        in_grace: &BTreeSet<PlayerId>,
    ) -> TickInputs<I> {
        let arrived = self.by_tick.remove(&tick).unwrap_or_default();
        let mut out = TickInputs {
            inputs: BTreeMap::new(),
            held: Vec::new(),
        };
        for id in players {
            let input = if in_grace.contains(id) {
                I::default()
            } else if let Some(i) = arrived.get(id) {
                self.last.insert(id.clone(), i.clone());
                i.clone()
            } else if tick < self.joined_at.get(id).copied().unwrap_or(0) + self.delay(id) {
                I::default()
            } else {
                out.held.push(id.clone());
                self.last.get(id).cloned().unwrap_or_default()
            };
            out.inputs.insert(id.clone(), input);
        }
        out
    }

    /// Forgets everything: a new level starts at tick 0, with each
    /// player's input delay from `delays` (empty: the spec's fixed delay
    /// for everyone).
    pub fn start_level(&mut self, delays: BTreeMap<PlayerId, u64>) {
        self.by_tick.clear();
        self.last.clear();
        self.newest.clear();
        self.joined_at.clear();
        self.delays = delays;
    }

    /// `player` joins the running level at `tick` with input delay
    /// `delay` (a late joiner): its input is neutral, not held, until its
    /// first delayed input can arrive, as at a level's start.
    pub fn join(&mut self, player: PlayerId, tick: u64, delay: u64) {
        self.joined_at.insert(player.clone(), tick);
        self.delays.insert(player, delay);
    }

    /// `player`'s new connection takes over at `tick` (a rejoin): what its
    /// old one sent is forgotten, its delay stays, and its input is
    /// neutral until its first delayed input can arrive.
    pub fn resume(&mut self, player: &PlayerId, tick: u64) {
        self.newest.remove(player);
        self.last.remove(player);
        self.joined_at.insert(player.clone(), tick);
    }

    /// `player`'s input delay this level.
    pub fn delay(&self, player: &PlayerId) -> u64 {
        self.delays
            .get(player)
            .copied()
            .unwrap_or(INPUT_DELAY_TICKS)
    }

    /// The level's fitted delays (empty when every delay is the spec's).
    pub fn delays(&self) -> &BTreeMap<PlayerId, u64> {
        &self.delays
    }

    /// The inputs already filed for `tick` (a prediction reads them).
    pub fn arrived(&self, tick: u64) -> impl Iterator<Item = (&PlayerId, &I)> {
        self.by_tick.get(&tick).into_iter().flatten()
    }

    /// `player`'s last-received input, the one held if the next is late.
    pub fn last(&self, player: &PlayerId) -> Option<&I> {
        self.last.get(player)
    }

    /// The newest tick `player`'s input was filed for this level.
    pub fn newest(&self, player: &PlayerId) -> Option<u64> {
        self.newest.get(player).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A game's input for these tests: a byte, whose default (0) is the
    /// neutral input.
    type Input = u8;
    const NEUTRAL: Input = 0;

    fn fire() -> Input {
        1
    }

    #[test]
    fn the_held_input_is_the_newest_received_whatever_the_arrival_order() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let mut b = InputBuffer::<Input>::default();
        assert_eq!(b.insert(p.clone(), 7, fire(), 8), Placement::Late);
        // Tick 6's input overtook nothing: it is older than what is held.
        assert_eq!(b.insert(p.clone(), 6, NEUTRAL, 8), Placement::Stale);
        assert_eq!(b.take(8, &players, &BTreeSet::new()).inputs[&p], fire());
        b.start_level(BTreeMap::new());
        assert_eq!(
            b.insert(p.clone(), 6, NEUTRAL, 0),
            Placement::Buffered,
            "a new level starts a new count"
        );
    }

    #[test]
    fn a_missing_input_holds_the_last_received_even_a_late_one() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let mut b = InputBuffer::<Input>::default();
        assert_eq!(b.insert(p.clone(), 5, fire(), 6), Placement::Late);
        let t = b.take(6, &players, &BTreeSet::new());
        assert_eq!(t.held, vec![p.clone()]);
        assert_eq!(t.inputs[&p], fire());
    }

    #[test]
    fn a_late_joiner_gets_neutral_until_its_first_delayed_input_can_arrive() {
        let (early, late) = (PlayerId::new("a"), PlayerId::new("b"));
        let players = [early.clone(), late.clone()];
        let mut b = InputBuffer::<Input>::default();
        b.join(late.clone(), 100, 5);
        assert_eq!(b.delay(&late), 5);
        assert_eq!(b.delay(&early), INPUT_DELAY_TICKS);
        let t = b.take(104, &players, &BTreeSet::new());
        assert_eq!(t.held, vec![early.clone()], "only the early player is held");
        assert_eq!(
            b.insert(late.clone(), 105, fire(), 104),
            Placement::Buffered
        );
        let t = b.take(105, &players, &BTreeSet::new());
        assert_eq!(t.inputs[&late], fire());
        let t = b.take(106, &players, &BTreeSet::new());
        assert_eq!(
            t.held,
            players.to_vec(),
            "from then on it is held as anyone"
        );
    }

    #[test]
    fn grace_and_the_first_ticks_get_neutral_and_far_inputs_are_dropped() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let mut b = InputBuffer::<Input>::default();
        let t = b.take(0, &players, &BTreeSet::new());
        assert!(t.held.is_empty());
        assert_eq!(t.inputs[&p], NEUTRAL);
        assert_eq!(
            b.insert(p.clone(), 10 + INPUT_WINDOW_TICKS + 1, fire(), 10),
            Placement::TooFarAhead
        );
        assert_eq!(b.insert(p.clone(), 11, fire(), 10), Placement::Buffered);
        // A copy of tick 11, or an older input arriving after it, is stale.
        assert_eq!(b.insert(p.clone(), 11, NEUTRAL, 10), Placement::Stale);
        assert_eq!(b.insert(p.clone(), 9, fire(), 10), Placement::Stale);
        let grace: BTreeSet<PlayerId> = players.iter().cloned().collect();
        assert_eq!(b.take(11, &players, &grace).inputs[&p], NEUTRAL);
    }
}
