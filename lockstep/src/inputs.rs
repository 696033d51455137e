//! The input buffer and the held-input policy: which input each player
//! gets at each tick. The host session and the relay both build their
//! bundles with it, so the rules are one implementation. Inputs are any
//! `I: Clone + Default`: `I::default()` is the neutral input.
//!
//! A player on input runs (the `input-runs` hello feature) sends its inputs
//! only when they change, plus a few copies and a keep-alive: a tick with
//! no input from it is played with its last one, assumed unchanged, and
//! counted as held only when a later message shows another input for that
//! tick ([`Placement::LateHeld`]) or its messages are overdue.

use std::collections::{BTreeMap, BTreeSet};

use game_api::PlayerId;
use protocol::peer::INPUT_RUN_OVERDUE_TICKS;
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
    /// Too late for its tick, which was played with this player's previous
    /// input assumed unchanged (input runs), and this one differs: in
    /// effect a held input. Kept as the last-received one, as
    /// [`Placement::Late`].
    LateHeld,
    /// For a tick already played with this player's previous input
    /// assumed unchanged (input runs), and this is that input: the
    /// guest's keep-alive or copy confirming it, neither late nor held.
    Confirmed,
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
    /// Players whose inputs come as runs ([`InputBuffer::insert_run`]).
    runs: BTreeSet<PlayerId>,
    /// The inputs ticks were played with for players on runs, assumed
    /// unchanged, for ticks after the newest received (bounded by the
    /// keep-alive window).
    assumed: BTreeMap<PlayerId, BTreeMap<u64, I>>,
}

/// The inputs of one tick.
#[derive(Debug)]
pub struct TickInputs<I> {
    /// Every roster member's input.
    pub inputs: BTreeMap<PlayerId, I>,
    /// Players whose input had not arrived: their last one was held (not
    /// those on runs whose last one was assumed unchanged).
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
            runs: BTreeSet::new(),
            assumed: BTreeMap::new(),
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
        if let Some(assumed) = self.assumed.get_mut(&player) {
            // Ticks up to this one are known now, not assumed.
            assumed.retain(|t, _| *t > tick);
        }
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
            } else if let Some(input) = self.assume(id, tick) {
                input
            } else {
                out.held.push(id.clone());
                self.last.get(id).cloned().unwrap_or_default()
            };
            out.inputs.insert(id.clone(), input);
        }
        out
    }

    /// The input `player`, on runs, plays `tick` with when nothing arrived
    /// for it: its last one, assumed unchanged, while its keep-alive is not
    /// overdue (the newest tick received plus [`INPUT_RUN_OVERDUE_TICKS`]
    /// and its input delay); `None` when it is held instead.
    fn assume(&mut self, player: &PlayerId, tick: u64) -> Option<I> {
        let newest = self.newest.get(player).copied()?;
        if !self.runs.contains(player)
            || tick > newest + INPUT_RUN_OVERDUE_TICKS + self.delay(player)
        {
            return None;
        }
        let input = self.last.get(player).cloned().unwrap_or_default();
        self.assumed
            .entry(player.clone())
            .or_default()
            .insert(tick, input.clone());
        Some(input)
    }

    /// Forgets everything: a new level starts at tick 0, with each
    /// player's input delay from `delays` (empty: the spec's fixed delay
    /// for everyone).
    pub fn start_level(&mut self, delays: BTreeMap<PlayerId, u64>) {
        self.by_tick.clear();
        self.last.clear();
        self.newest.clear();
        self.joined_at.clear();
        self.runs.clear();
        self.assumed.clear();
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
        self.runs.remove(player);
        self.assumed.remove(player);
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

impl<I: Clone + Default + PartialEq> InputBuffer<I> {
    /// Files `input` from `player`, whose inputs come as runs (the
    /// `input-runs` feature: only changes, copies and keep-alives), as
    /// [`InputBuffer::insert`] does; from now on a tick with no input from
    /// it is played with its last one. A late input for a tick played with
    /// an assumed one is [`Placement::LateHeld`] when it differs,
    /// [`Placement::Confirmed`] when it does not.
    pub fn insert_run(
        &mut self,
        player: PlayerId,
        tick: u64,
        input: I,
        now_tick: u64,
    ) -> Placement {
        if !self.runs.contains(&player) {
            self.runs.insert(player.clone());
        }
        let as_assumed = self
            .assumed
            .get(&player)
            .and_then(|a| a.get(&tick))
            .map(|played| *played == input);
        match (self.insert(player, tick, input, now_tick), as_assumed) {
            (Placement::Late, Some(true)) => Placement::Confirmed,
            (Placement::Late, Some(false)) => Placement::LateHeld,
            (placement, _) => placement,
        }
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

    #[test]
    fn a_player_on_runs_plays_its_last_input_until_its_messages_are_overdue() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let none = BTreeSet::new();
        let mut b = InputBuffer::<Input>::default();
        assert_eq!(b.insert_run(p.clone(), 10, fire(), 9), Placement::Buffered);
        assert_eq!(b.take(10, &players, &none).inputs[&p], fire());
        let last_assumed = 10 + INPUT_RUN_OVERDUE_TICKS + INPUT_DELAY_TICKS;
        for tick in 11..=last_assumed {
            let t = b.take(tick, &players, &none);
            assert!(t.held.is_empty(), "tick {tick}: its own input, not held");
            assert_eq!(t.inputs[&p], fire());
        }
        let t = b.take(last_assumed + 1, &players, &none);
        assert_eq!(t.held, vec![p.clone()], "its messages are overdue");
        assert_eq!(t.inputs[&p], fire());
    }

    #[test]
    fn a_late_input_that_differs_from_the_assumed_one_counts_as_held() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let none = BTreeSet::new();
        let mut b = InputBuffer::<Input>::default();
        b.insert_run(p.clone(), 10, fire(), 9);
        for tick in 10..=13 {
            b.take(tick, &players, &none);
        }
        // Ticks 11 to 13 were played with `fire`: the same input confirms
        // it, another one was in effect held.
        assert_eq!(
            b.insert_run(p.clone(), 11, fire(), 14),
            Placement::Confirmed
        );
        assert_eq!(
            b.insert_run(p.clone(), 12, NEUTRAL, 14),
            Placement::LateHeld
        );
        assert_eq!(
            b.insert_run(p.clone(), 13, NEUTRAL, 14),
            Placement::LateHeld
        );
        assert_eq!(
            b.take(14, &players, &none).inputs[&p],
            NEUTRAL,
            "the newest late input is the one played on"
        );
        // A player not on runs is held, never assumed.
        let q = PlayerId::new("q");
        b.insert(q.clone(), 14, fire(), 14);
        let both = [p.clone(), q.clone()];
        assert_eq!(b.take(15, &both, &none).held, vec![q.clone()]);
    }

    #[test]
    fn a_new_level_or_connection_forgets_runs() {
        let p = PlayerId::new("p");
        let players = [p.clone()];
        let none = BTreeSet::new();
        let mut b = InputBuffer::<Input>::default();
        b.insert_run(p.clone(), 10, fire(), 9);
        b.resume(&p, 11);
        b.insert(p.clone(), 20, fire(), 19);
        b.take(20, &players, &none);
        assert_eq!(b.take(21, &players, &none).held, vec![p.clone()]);
        b.insert_run(p.clone(), 22, fire(), 21);
        b.start_level(BTreeMap::new());
        b.insert(p.clone(), 5, fire(), 4);
        b.take(5, &players, &none);
        assert_eq!(b.take(6, &players, &none).held, vec![p.clone()]);
    }
}
