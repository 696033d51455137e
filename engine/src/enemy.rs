//! Enemy archetypes and per-enemy state. The per-tick AI lives in
//! [`crate::world`] because it reads players and draws from the shared stream.

use crate::wire::map::{EnemyKind, MapEnemy};
use crate::wire::snapshot::EnemySnapshot;
use serde::{Deserialize, Serialize};

use crate::geom::Vec2;
use crate::rules::{Difficulty, DifficultyScaling, ELITE_HP_PER_EXTRA_PLAYER};

/// An archetype's rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnemyStats {
    /// Base hit points.
    pub hp: f64,
    /// Chase speed, tiles per second.
    pub speed: f64,
    /// Base damage per attack.
    pub damage: f64,
    /// Attack reach, tiles.
    pub range: f64,
    /// Base seconds between attacks (jittered ±25% from the stream).
    pub cooldown: f64,
    /// Melee (always hits in reach) or ranged (aim spread applies).
    pub melee: bool,
    /// Multiplier on the difficulty's aim spread.
    pub spread_factor: f64,
    /// Score credited for the kill.
    pub score: u32,
}

/// The rules of an archetype.
pub fn stats(kind: EnemyKind) -> EnemyStats {
    match kind {
        EnemyKind::Grunt => EnemyStats {
            hp: 30.0,
            speed: 1.4,
            damage: 5.0,
            range: 8.0,
            cooldown: 1.5,
            melee: false,
            spread_factor: 1.0,
            score: 100,
        },
        EnemyKind::Brute => EnemyStats {
            hp: 70.0,
            speed: 2.0,
            damage: 10.0,
            range: 0.9,
            cooldown: 1.1,
            melee: true,
            spread_factor: 0.0,
            score: 200,
        },
        EnemyKind::Sniper => EnemyStats {
            hp: 20.0,
            speed: 1.0,
            damage: 10.0,
            range: 12.0,
            cooldown: 2.4,
            melee: false,
            spread_factor: 0.5,
            score: 150,
        },
    }
}

/// One enemy's live state (index-aligned with `GameMap.enemies`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enemy {
    /// Position.
    pub pos: Vec2,
    /// Hit points.
    pub hp: f64,
    /// Alive.
    pub alive: bool,
    /// Has seen a player.
    pub aggroed: bool,
    /// Seconds until the next attack may happen.
    pub attack_cooldown: f64,
    /// Current idle-roam target.
    pub roam: Option<Vec2>,
    /// Where a player was last seen.
    pub last_seen: Option<Vec2>,
    /// Loot drops pushed so far this level (the `dropSeq` of its ids).
    pub drop_seq: u32,
}

impl Enemy {
    /// A fresh enemy: hit points scaled by difficulty and by the level's
    /// starting player count (elite scaling).
    pub fn spawn(def: &MapEnemy, difficulty: Difficulty, player_count: u32) -> Self {
        let extra = f64::from(player_count.saturating_sub(1));
        let hp =
            stats(def.kind).hp * difficulty.enemy_hp() * (1.0 + ELITE_HP_PER_EXTRA_PLAYER * extra);
        Enemy {
            pos: Vec2::new(def.position.x, def.position.y),
            hp,
            alive: true,
            aggroed: false,
            attack_cooldown: stats(def.kind).cooldown,
            roam: None,
            last_seen: None,
            drop_seq: 0,
        }
    }

    /// The wire form.
    pub fn to_snapshot(&self, index: u32) -> EnemySnapshot {
        EnemySnapshot {
            index,
            x: self.pos.x,
            y: self.pos.y,
            hp: self.hp,
            alive: self.alive,
            aggroed: self.aggroed,
        }
    }
}
