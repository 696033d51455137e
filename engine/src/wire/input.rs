//! Per-tick player input as it travels between peers (spec §2, §6).
//!
//! An [`InputSnapshot`] carries only what the shared simulation may see. The
//! local-only signals (escape, blur, pointer unlock, click) exist so a client
//! can record what the browser reported, but [`InputSnapshot::sanitized`]
//! forces them neutral before an input reaches the shared stream. There is no
//! cheat field at all, by design (spec §6).

use serde::{Deserialize, Serialize};

/// Largest mouse movement (in pixels, either sign) one tick may carry;
/// sanitizing clamps to it so a forged input cannot spin a player arbitrarily.
pub const MAX_MOUSE_DELTA_X: f64 = 4096.0;

/// Number of weapon slots; a `weaponSelect` must be below it.
pub const WEAPON_SLOT_COUNT: u8 = 6;

/// Mouse movement resolution of sanitized input (and so of the compact wire
/// form, which carries it exactly): counts of 1/64 pixel.
pub const MOUSE_STEPS_PER_PIXEL: f64 = 64.0;

/// One player's input for one tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InputSnapshot {
    /// Walk forward.
    pub move_forward: bool,
    /// Walk backward.
    pub move_back: bool,
    /// Strafe left.
    pub strafe_left: bool,
    /// Strafe right.
    pub strafe_right: bool,
    /// Turn left (keyboard).
    pub turn_left: bool,
    /// Turn right (keyboard).
    pub turn_right: bool,
    /// Horizontal mouse movement in pixels this tick (positive turns right).
    pub mouse_delta_x: f64,
    /// Fire the current weapon.
    pub fire: bool,
    /// Use what is in front (doors, secret walls).
    #[serde(rename = "use")]
    pub use_: bool,
    /// Switch to this weapon slot.
    pub weapon_select: Option<u8>,
    /// Local only: escape was pressed. Always false in the shared stream.
    pub escape: bool,
    /// Local only: the window lost focus. Always false in the shared stream.
    pub blur: bool,
    /// Local only: pointer lock was released. Always false in the shared stream.
    pub pointer_unlock: bool,
    /// Local only: a click happened. Always false in the shared stream.
    pub click: bool,
}

impl InputSnapshot {
    /// The all-neutral idle input: nothing pressed, no turn, no fire
    /// (the spec's `EMPTY_SNAPSHOT`).
    pub const NEUTRAL: InputSnapshot = InputSnapshot {
        move_forward: false,
        move_back: false,
        strafe_left: false,
        strafe_right: false,
        turn_left: false,
        turn_right: false,
        mouse_delta_x: 0.0,
        fire: false,
        use_: false,
        weapon_select: None,
        escape: false,
        blur: false,
        pointer_unlock: false,
        click: false,
    };

    /// The all-neutral idle input.
    pub fn neutral() -> Self {
        Self::NEUTRAL
    }

    /// What may enter the shared stream: local-only signals forced false, a
    /// non-finite mouse delta replaced by 0 and the rest clamped to
    /// ±[`MAX_MOUSE_DELTA_X`] and rounded to 1/64 pixel (what the compact
    /// wire form carries exactly; a turn of about 0.00004 rad), an
    /// out-of-range `weaponSelect` dropped.
    pub fn sanitized(&self) -> InputSnapshot {
        let steps = MOUSE_STEPS_PER_PIXEL;
        let mouse_delta_x = if self.mouse_delta_x.is_finite() {
            // `+ 0.0` turns a -0.0 into 0.0.
            (self
                .mouse_delta_x
                .clamp(-MAX_MOUSE_DELTA_X, MAX_MOUSE_DELTA_X)
                * steps)
                .round()
                / steps
                + 0.0
        } else {
            0.0
        };
        InputSnapshot {
            mouse_delta_x,
            weapon_select: self.weapon_select.filter(|w| *w < WEAPON_SLOT_COUNT),
            escape: false,
            blur: false,
            pointer_unlock: false,
            click: false,
            ..self.clone()
        }
    }
}

impl Default for InputSnapshot {
    fn default() -> Self {
        Self::NEUTRAL
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::TickInput;
    use game_api::PlayerId;
    use proptest::prelude::*;

    #[test]
    fn sanitize_strips_local_signals_and_bad_values() {
        let raw = InputSnapshot {
            escape: true,
            blur: true,
            pointer_unlock: true,
            click: true,
            fire: true,
            mouse_delta_x: f64::NAN,
            weapon_select: Some(WEAPON_SLOT_COUNT),
            ..InputSnapshot::NEUTRAL
        };
        let clean = raw.sanitized();
        assert!(!clean.escape && !clean.blur && !clean.pointer_unlock && !clean.click);
        assert!(clean.fire);
        assert_eq!(clean.mouse_delta_x, 0.0);
        assert_eq!(clean.weapon_select, None);
        let big = InputSnapshot {
            mouse_delta_x: 1e12,
            weapon_select: Some(2),
            ..InputSnapshot::NEUTRAL
        };
        assert_eq!(big.sanitized().mouse_delta_x, MAX_MOUSE_DELTA_X);
        assert_eq!(big.sanitized().weapon_select, Some(2));
    }

    #[test]
    fn wire_names_are_camel_case() {
        let json = serde_json::to_value(InputSnapshot {
            use_: true,
            ..InputSnapshot::NEUTRAL
        })
        .unwrap();
        assert_eq!(json["use"], true);
        assert_eq!(json["mouseDeltaX"], 0.0);
        assert!(json.get("pointerUnlock").is_some());
        let t = TickInput {
            tick: 4,
            player_id: PlayerId::new("p1"),
            input: InputSnapshot::NEUTRAL,
        };
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["playerId"], "p1");
    }

    /// Any input a peer might send: every flag, any weapon byte, and
    /// mouse movements that are zero, negative zero, whole 1/64 pixels or
    /// any finite value.
    pub(crate) fn arb_input() -> impl Strategy<Value = InputSnapshot> {
        (
            any::<[bool; 12]>(),
            proptest::option::of(any::<u8>()),
            prop_oneof![
                Just(0.0),
                Just(-0.0),
                (-4096i32 * 64..=4096 * 64).prop_map(|s| f64::from(s) / 64.0),
                any::<f64>().prop_filter("finite", |x| x.is_finite()),
            ],
        )
            .prop_map(|(b, weapon_select, mouse_delta_x)| InputSnapshot {
                move_forward: b[0],
                move_back: b[1],
                strafe_left: b[2],
                strafe_right: b[3],
                turn_left: b[4],
                turn_right: b[5],
                fire: b[6],
                use_: b[7],
                escape: b[8],
                blur: b[9],
                pointer_unlock: b[10],
                click: b[11],
                weapon_select,
                mouse_delta_x,
            })
    }

    proptest! {
        #[test]
        fn input_round_trips(input in arb_input(), tick in any::<u32>(), id in "[a-z0-9-]{1,12}") {
            let t = TickInput { tick: u64::from(tick), player_id: PlayerId::new(id), input };
            let back: TickInput = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
            prop_assert_eq!(back, t);
        }

        #[test]
        fn sanitized_is_idempotent_and_neutral(input in arb_input()) {
            let s = input.sanitized();
            prop_assert_eq!(s.sanitized(), s.clone());
            prop_assert!(!s.escape && !s.blur && !s.pointer_unlock && !s.click);
            prop_assert!(s.mouse_delta_x.abs() <= MAX_MOUSE_DELTA_X);
        }
    }
}
