//! One tick of a relayed level: every roster member's input plus the
//! roster events applied at the start of that tick.
//!
//! Frames are what the input log is made of, so they are kept small: the
//! inputs sit in roster order in one slice, and the roster itself is shared
//! by every frame until it changes (one pointer per frame, no player id
//! cloned per tick). The empty roster events allocate nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use game_api::PlayerId;

/// A player entering the level at a frame's tick (a late joiner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Its input delay for the rest of the level, ticks.
    pub input_delay: u64,
    /// Its display name ("" for none).
    pub name: String,
}

/// What every peer advances from for one tick.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame<I> {
    /// The level it belongs to.
    pub epoch: u32,
    /// The tick it drives.
    pub tick: u64,
    /// The roster at this tick (arrivals in, removals out), sorted; shared
    /// with the neighbouring frames while it does not change.
    pub roster: Arc<[PlayerId]>,
    /// One input per roster member, in the roster's order (the same
    /// length as `roster`).
    pub inputs: Box<[I]>,
    /// Players whose input had not arrived and whose last one was held.
    pub held: Vec<PlayerId>,
    /// Players who enter the roster at the start of this tick.
    pub add: BTreeMap<PlayerId, Arrival>,
    /// Players who leave the roster at the start of this tick.
    pub remove: Vec<PlayerId>,
}

impl<I> Frame<I> {
    /// Every roster member with its input, in roster order.
    pub fn inputs(&self) -> impl Iterator<Item = (&PlayerId, &I)> {
        self.roster.iter().zip(self.inputs.iter())
    }

    /// `player`'s input at this tick (`None`: not in the roster).
    pub fn input(&self, player: &PlayerId) -> Option<&I> {
        let at = self.roster.binary_search(player).ok()?;
        self.inputs.get(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_found_by_player_in_roster_order() {
        let roster: Arc<[PlayerId]> = ["a", "b", "c"].map(PlayerId::new).into();
        let frame = Frame {
            epoch: 1,
            tick: 0,
            roster,
            inputs: vec![1, 2, 3].into(),
            held: Vec::new(),
            add: BTreeMap::new(),
            remove: Vec::new(),
        };
        assert_eq!(frame.input(&PlayerId::new("b")), Some(&2));
        assert_eq!(frame.input(&PlayerId::new("d")), None);
        let pairs: Vec<(&str, i32)> = frame.inputs().map(|(p, i)| (p.as_str(), *i)).collect();
        assert_eq!(pairs, [("a", 1), ("b", 2), ("c", 3)]);
    }
}
