//! One tick of a relayed level: every roster member's input plus the
//! roster events applied at the start of that tick.

use std::collections::BTreeMap;

use protocol::input::PlayerId;

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
    /// An input for every roster member (arrivals included).
    pub inputs: BTreeMap<PlayerId, I>,
    /// Players whose input had not arrived and whose last one was held.
    pub held: Vec<PlayerId>,
    /// Players who enter the roster at the start of this tick.
    pub add: BTreeMap<PlayerId, Arrival>,
    /// Players who leave the roster at the start of this tick.
    pub remove: Vec<PlayerId>,
}
