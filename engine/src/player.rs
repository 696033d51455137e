//! Per-player state (the raycaster camera model, health, ammo, weapons,
//! keys, score) and the per-tick movement and turning rules.

use crate::wire::input::InputSnapshot;
use crate::wire::snapshot::{AmmoPools, Carryover, PlayerSnapshot};
use serde::{Deserialize, Serialize};

use crate::geom::Vec2;
use crate::grid::Grid;
use crate::rules::{
    CAMERA_PLANE, MAX_HEALTH, MOUSE_SENSITIVITY, PLAYER_MOVE_SPEED, PLAYER_RADIUS,
    PLAYER_TURN_SPEED, REVIVE_HEALTH, STARTING_BULLETS,
};
use crate::weapon::{self, PISTOL, STARTING_MASK};

/// One player in the level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Player {
    /// Position.
    pub pos: Vec2,
    /// Facing direction (unit).
    pub dir: Vec2,
    /// Camera plane (perpendicular to `dir`).
    pub plane: Vec2,
    /// Health; 0 once dead.
    pub health: f64,
    /// Seconds of weapon swap left.
    pub swap: f64,
    /// Seconds until the weapon can fire again.
    pub fire_cooldown: f64,
    /// Ammo pools.
    pub ammo: AmmoPools,
    /// Current weapon slot.
    pub weapon_index: u8,
    /// Owned weapon slots as a bitmask.
    pub owned: u8,
    /// Unused keys held.
    pub keys_held: u32,
    /// False once dead (spectating).
    pub alive: bool,
    /// Kill score.
    pub kill_score: u32,
    /// Kills.
    pub kills: u32,
    /// Distance walked, tiles.
    pub distance: f64,
}

impl Player {
    /// A player at a spawn point, with a carryover from the previous level
    /// or the fresh starting loadout.
    pub fn spawn(at: Vec2, carry: Option<&Carryover>) -> Self {
        let mut p = Player {
            pos: at,
            dir: Vec2::new(1.0, 0.0),
            plane: Vec2::new(0.0, CAMERA_PLANE),
            health: MAX_HEALTH,
            swap: 0.0,
            fire_cooldown: 0.0,
            ammo: AmmoPools {
                bullets: STARTING_BULLETS,
                ..AmmoPools::default()
            },
            weapon_index: PISTOL,
            owned: STARTING_MASK,
            keys_held: 0,
            alive: true,
            kill_score: 0,
            kills: 0,
            distance: 0.0,
        };
        if let Some(c) = carry {
            p.health = if c.health.is_finite() && c.health > 0.0 {
                c.health.min(MAX_HEALTH)
            } else {
                REVIVE_HEALTH
            };
            p.ammo = c.ammo;
            p.owned = STARTING_MASK | weapon::mask_of(&c.owned_weapons).unwrap_or(0);
            if weapon::owns(p.owned, c.weapon_index) {
                p.weapon_index = c.weapon_index;
            }
        }
        p
    }

    /// What this player carries into the next level; a dead player revives.
    pub fn carryover(&self) -> Carryover {
        Carryover {
            health: if self.alive {
                self.health
            } else {
                REVIVE_HEALTH
            },
            ammo: self.ammo,
            owned_weapons: weapon::owned_list(self.owned),
            weapon_index: self.weapon_index,
        }
    }

    /// Turns and walks for one tick of `dt` seconds.
    pub fn steer(&mut self, input: &InputSnapshot, grid: &Grid, dt: f64) {
        let keys = f64::from(u8::from(input.turn_right)) - f64::from(u8::from(input.turn_left));
        let angle = keys * PLAYER_TURN_SPEED * dt + input.mouse_delta_x * MOUSE_SENSITIVITY;
        if angle != 0.0 {
            // Renormalize so rounding never lets the camera drift; the plane
            // stays perpendicular to `dir` at the field-of-view length.
            let d = self.dir.rotate(angle);
            let len = d.length();
            if len > 0.0 {
                self.dir = d.scale(1.0 / len);
                self.plane = Vec2::new(-self.dir.y, self.dir.x).scale(CAMERA_PLANE);
            }
        }
        let fwd = f64::from(u8::from(input.move_forward)) - f64::from(u8::from(input.move_back));
        let side = f64::from(u8::from(input.strafe_right)) - f64::from(u8::from(input.strafe_left));
        if fwd == 0.0 && side == 0.0 {
            return;
        }
        // Strafing right moves along the camera plane's direction.
        let right = Vec2::new(-self.dir.y, self.dir.x);
        let mut wish = self.dir.scale(fwd).plus(right.scale(side));
        let len = wish.length();
        if len > 0.0 {
            wish = wish.scale(PLAYER_MOVE_SPEED * dt / len);
        }
        let before = self.pos;
        self.pos = grid.slide(self.pos, wish, PLAYER_RADIUS);
        self.distance += before.distance(self.pos);
    }

    /// The wire form.
    pub fn to_snapshot(&self) -> PlayerSnapshot {
        PlayerSnapshot {
            pos_x: self.pos.x,
            pos_y: self.pos.y,
            dir_x: self.dir.x,
            dir_y: self.dir.y,
            plane_x: self.plane.x,
            plane_y: self.plane.y,
            health: self.health,
            swap: self.swap,
            ammo: self.ammo,
            weapon_index: self.weapon_index,
            keys_held: self.keys_held,
            owned_weapons: weapon::owned_list(self.owned),
            alive: self.alive,
            kill_score: self.kill_score,
            kills: self.kills,
        }
    }

    /// Overwrites every reconciled field (the snapshot must be validated).
    pub fn apply_snapshot(&mut self, s: &PlayerSnapshot, owned: u8) {
        self.pos = Vec2::new(s.pos_x, s.pos_y);
        self.dir = Vec2::new(s.dir_x, s.dir_y);
        self.plane = Vec2::new(s.plane_x, s.plane_y);
        self.health = s.health;
        self.swap = s.swap;
        self.ammo = s.ammo;
        self.weapon_index = s.weapon_index;
        self.keys_held = s.keys_held;
        self.owned = owned;
        self.alive = s.alive;
        self.kill_score = s.kill_score;
        self.kills = s.kills;
    }
}
