//! [`Raycaster`], the raycaster's [`GameWire`]: which of its types the
//! peer envelope carries, its session settings, level head and campaign,
//! and its input's compact form.

use game_api::GameWire;
use serde::{Deserialize, Serialize};

use crate::wire::difficulty::Difficulty;
use crate::wire::input::{InputSnapshot, MOUSE_STEPS_PER_PIXEL};
use crate::wire::map::GameMap;
use crate::wire::snapshot::{Carryover, ReconciliationSnapshot};

/// The raycaster, as the wire knows it. Never built: it names the game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Raycaster {}

impl GameWire for Raycaster {
    type Input = InputSnapshot;
    type Snapshot = ReconciliationSnapshot;
    type CompactInput = CompactInput;
    type Settings = Settings;
    type LevelHead = LevelSeed;
    type LevelBody = GameMap;
    type Carryover = Carryover;
    type Campaign = CampaignSeed;
    /// The spec's own game: its hellos name none.
    const NAME: Option<&'static str> = None;

    fn sanitize(input: &InputSnapshot) -> InputSnapshot {
        input.sanitized()
    }

    fn snapshot_tick(snapshot: &ReconciliationSnapshot) -> u64 {
        snapshot.tick
    }

    fn compact_input(input: &InputSnapshot) -> CompactInput {
        CompactInput::of(input)
    }

    fn input_from_compact(compact: CompactInput) -> Result<InputSnapshot, String> {
        compact.snapshot()
    }
}

/// The raycaster's session settings: `difficulty` on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// The session's difficulty.
    pub difficulty: Difficulty,
}

/// A raycaster level's head: `gameplaySeed` on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelSeed {
    /// The level's gameplay seed (the PRNG stream's first state).
    pub gameplay_seed: u32,
}

/// What a relay's authority builds the raycaster's levels from:
/// `campaignSeed` on the wire (maps and gameplay seeds derive from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CampaignSeed {
    /// The campaign's seed.
    pub campaign_seed: u32,
}

/// Seed 1, a relay's default campaign.
impl Default for CampaignSeed {
    fn default() -> Self {
        Self { campaign_seed: 1 }
    }
}

/// An [`InputSnapshot`] in the compact form: one varint of flag bits, the
/// weapon slot when one is selected, and the mouse movement as a count of
/// 1/64 pixels when that count is exact (any other value travels as the
/// full `f64`).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactInput {
    pub(crate) flags: u16,
    pub(crate) weapon_select: Option<u8>,
    pub(crate) mouse: Mouse,
}

/// A mouse movement in the compact form.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub enum Mouse {
    /// A count of 1/64 pixels.
    Steps(i32),
    /// Any other value, exactly.
    Exact(f64),
}

const FLAGS: [fn(&InputSnapshot) -> bool; 12] = [
    |i| i.move_forward,
    |i| i.move_back,
    |i| i.strafe_left,
    |i| i.strafe_right,
    |i| i.turn_left,
    |i| i.turn_right,
    |i| i.fire,
    |i| i.use_,
    |i| i.escape,
    |i| i.blur,
    |i| i.pointer_unlock,
    |i| i.click,
];

impl CompactInput {
    pub(crate) fn of(i: &InputSnapshot) -> Self {
        let flags = FLAGS
            .iter()
            .enumerate()
            .filter(|(_, f)| f(i))
            .fold(0u16, |acc, (bit, _)| acc | 1 << bit);
        let steps = i.mouse_delta_x * MOUSE_STEPS_PER_PIXEL;
        // Exact only when the count gives back the very same f64 (and not
        // for -0.0, whose sign a count would lose).
        let mouse = match steps {
            s if s.fract() == 0.0
                && s.abs() <= f64::from(i32::MAX)
                && (s != 0.0 || i.mouse_delta_x.is_sign_positive())
                && f64::from(s as i32) / MOUSE_STEPS_PER_PIXEL == i.mouse_delta_x =>
            {
                Mouse::Steps(s as i32)
            }
            _ => Mouse::Exact(i.mouse_delta_x),
        };
        Self {
            flags,
            weapon_select: i.weapon_select,
            mouse,
        }
    }

    /// The input it carries; a mouse movement JSON could not carry (NaN,
    /// infinite) is an error, so both forms read the same messages.
    pub(crate) fn snapshot(&self) -> Result<InputSnapshot, String> {
        let bit = |n: u16| self.flags & (1 << n) != 0;
        let mouse_delta_x = match self.mouse {
            Mouse::Steps(s) => f64::from(s) / MOUSE_STEPS_PER_PIXEL,
            Mouse::Exact(x) if x.is_finite() => x,
            Mouse::Exact(x) => return Err(format!("mouse movement {x}")),
        };
        Ok(InputSnapshot {
            move_forward: bit(0),
            move_back: bit(1),
            strafe_left: bit(2),
            strafe_right: bit(3),
            turn_left: bit(4),
            turn_right: bit(5),
            fire: bit(6),
            use_: bit(7),
            escape: bit(8),
            blur: bit(9),
            pointer_unlock: bit(10),
            click: bit(11),
            weapon_select: self.weapon_select,
            mouse_delta_x,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::wire::input::MAX_MOUSE_DELTA_X;
    use crate::wire::input::tests::arb_input;

    /// Bit-for-bit equality, so -0.0 and 0.0 count as different.
    fn same(a: &InputSnapshot, b: &InputSnapshot) -> bool {
        a == b && a.mouse_delta_x.to_bits() == b.mouse_delta_x.to_bits()
    }

    proptest! {
        #[test]
        fn every_input_reads_back_bit_for_bit(i in arb_input()) {
            prop_assert!(same(&CompactInput::of(&i).snapshot().unwrap(), &i));
        }

        #[test]
        fn sanitized_mouse_movement_travels_as_a_count(i in arb_input()) {
            let clean = i.sanitized();
            prop_assert!(matches!(CompactInput::of(&clean).mouse, Mouse::Steps(_)), "{:?}", clean);
            prop_assert!(clean.mouse_delta_x.abs() <= MAX_MOUSE_DELTA_X);
            prop_assert!(same(&clean.sanitized(), &clean), "sanitizing twice changes nothing");
        }
    }

    #[test]
    fn a_mouse_movement_json_could_not_carry_is_refused() {
        for x in [f64::NAN, f64::INFINITY] {
            let compact = CompactInput {
                flags: 0,
                weapon_select: None,
                mouse: Mouse::Exact(x),
            };
            assert!(Raycaster::input_from_compact(compact).is_err(), "{x}");
        }
    }
}
