//! Game-balance constants and the difficulty model. Changing any value here
//! changes the simulation, so every peer must run the same build.

/// Ticks of the exit countdown (five seconds) before a level is complete.
pub const COUNTDOWN_TICKS: u32 = 150;

/// Player collision radius, tiles.
pub const PLAYER_RADIUS: f64 = 0.2;
/// Radius within which an enemy's hitscan shot can hit a player, tiles.
pub const PLAYER_HIT_RADIUS: f64 = 0.35;
/// Player walking speed, tiles per second.
pub const PLAYER_MOVE_SPEED: f64 = 3.2;
/// Keyboard turn speed, radians per second.
pub const PLAYER_TURN_SPEED: f64 = 3.0;
/// Radians turned per mouse pixel.
pub const MOUSE_SENSITIVITY: f64 = 0.0025;
/// Camera plane length (sets the field of view, about 66 degrees).
pub const CAMERA_PLANE: f64 = 0.66;
/// Full health.
pub const MAX_HEALTH: f64 = 100.0;
/// Health a player who died in a level starts the next one with.
pub const REVIVE_HEALTH: f64 = 50.0;
/// Bullets a fresh player starts with.
pub const STARTING_BULLETS: u32 = 60;
/// Distance within which a player collects pickups, keys and drops.
pub const PICKUP_RADIUS: f64 = 0.6;
/// Distances in front of a player probed by `use`.
pub const USE_REACH: [f64; 2] = [0.6, 1.1];

/// Enemy collision radius, tiles.
pub const ENEMY_RADIUS: f64 = 0.3;
/// Radius within which a player's shot hits an enemy, tiles.
pub const ENEMY_HIT_RADIUS: f64 = 0.35;
/// How far enemies see, tiles.
pub const ENEMY_SIGHT: f64 = 10.0;
/// Fraction of chase speed used while roaming.
pub const ROAM_SPEED_FACTOR: f64 = 0.5;
/// Enemy hit points gained per extra player at level start (elite scaling).
pub const ELITE_HP_PER_EXTRA_PLAYER: f64 = 0.4;

/// Mines become visible to everyone when a player comes this close.
pub const MINE_SPOT_RADIUS: f64 = 3.0;
/// A player this close arms a mine's fuse.
pub const MINE_TRIGGER_RADIUS: f64 = 0.7;
/// Seconds from arming to detonation.
pub const MINE_FUSE: f64 = 0.5;
/// Blast radius.
pub const MINE_BLAST_RADIUS: f64 = 1.8;
/// Damage to a player in the blast.
pub const MINE_PLAYER_DAMAGE: f64 = 30.0;
/// Damage to an enemy in the blast.
pub const MINE_ENEMY_DAMAGE: f64 = 60.0;

/// Chance that a kill drops health (checked first).
pub const LOOT_HEALTH_CHANCE: f64 = 0.3;
/// Health in a health drop.
pub const LOOT_HEALTH_AMOUNT: u32 = 25;

/// Ammo pool caps: bullets, rockets, smg, gas.
pub const AMMO_CAPS: [u32; 4] = [200, 50, 300, 200];

pub use crate::wire::difficulty::Difficulty;

/// How a [`Difficulty`] scales the enemies (the engine's half of the
/// difficulty model; the wire type lives in `protocol`).
pub trait DifficultyScaling {
    /// Enemy hit point multiplier.
    fn enemy_hp(self) -> f64;
    /// Multiplier on damage enemies deal.
    fn enemy_damage(self) -> f64;
    /// Enemy aim spread, degrees either side.
    fn enemy_aim_spread_deg(self) -> f64;
}

impl DifficultyScaling for Difficulty {
    fn enemy_hp(self) -> f64 {
        match self {
            Difficulty::Easy => 0.75,
            Difficulty::Normal => 1.0,
            Difficulty::Hard => 1.3,
        }
    }

    fn enemy_damage(self) -> f64 {
        match self {
            Difficulty::Easy => 0.6,
            Difficulty::Normal => 1.0,
            Difficulty::Hard => 1.4,
        }
    }

    fn enemy_aim_spread_deg(self) -> f64 {
        match self {
            Difficulty::Easy => 9.0,
            Difficulty::Normal => 6.0,
            Difficulty::Hard => 3.5,
        }
    }
}
