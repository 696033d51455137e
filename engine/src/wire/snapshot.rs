//! The host's periodic reconciliation payload (spec §3) and the per-player
//! carryover a level transition ships (spec §7).
//!
//! Field names follow the spec's TypeScript shapes. The `type` and
//! `levelEpoch` fields are added by the envelope's
//! `protocol::peer::ReconciliationSnapshotMessage`, not here.
//! Map-authored entities are identified by their index in the [`GameMap`]
//! lists; runtime loot drops by their `id` string.
//!
//! [`GameMap`]: crate::wire::map::GameMap

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::wire::map::{LootKind, Tile};
use game_api::PlayerId;

/// Position corrections at or above this many tiles snap in rendering too;
/// smaller ones are smoothed over [`CORRECTION_SMOOTH_MS`].
pub const SNAP_THRESHOLD_TILES: f64 = 0.5;

/// Rendering window over which a small correction decays to zero.
pub const CORRECTION_SMOOTH_MS: u64 = 150;

/// Position corrections at or above this many tiles show on screen
/// despite the smoothing (seed 001's 10 cm, with a tile about a metre).
pub const VISIBLE_CORRECTION_TILES: f64 = 0.1;

/// The four ammo pools.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AmmoPools {
    /// Pistol and shotgun ammo.
    pub bullets: u32,
    /// Rocket launcher ammo.
    pub rockets: u32,
    /// SMG ammo.
    pub smg: u32,
    /// Flamethrower fuel.
    pub gas: u32,
}

/// One player's reconciled state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerSnapshot {
    /// Position, tile units.
    pub pos_x: f64,
    /// Position, tile units.
    pub pos_y: f64,
    /// Facing direction (unit vector).
    pub dir_x: f64,
    /// Facing direction (unit vector).
    pub dir_y: f64,
    /// Camera plane (perpendicular to `dir`, field-of-view width).
    pub plane_x: f64,
    /// Camera plane.
    pub plane_y: f64,
    /// Health points; 0 when dead.
    pub health: f64,
    /// Seconds left of the current weapon swap (no firing while positive).
    pub swap: f64,
    /// Ammo pools.
    pub ammo: AmmoPools,
    /// Current weapon slot.
    pub weapon_index: u8,
    /// Keys held, not yet used.
    pub keys_held: u32,
    /// Owned weapon slots, ascending.
    pub owned_weapons: Vec<u8>,
    /// False while dead and spectating. A dead player stays in the record.
    pub alive: bool,
    /// Kill score credited so far.
    pub kill_score: u32,
    /// Kills so far.
    pub kills: u32,
}

/// One map enemy's reconciled state (index-aligned with `GameMap.enemies`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnemySnapshot {
    /// Index into `GameMap.enemies`.
    pub index: u32,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// Hit points.
    pub hp: f64,
    /// Still alive.
    pub alive: bool,
    /// Has seen a player and is hunting.
    pub aggroed: bool,
}

/// One map mine's reconciled state (index-aligned with `GameMap.mines`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MineSnapshot {
    /// Index into `GameMap.mines`.
    pub index: u32,
    /// Not yet detonated.
    pub alive: bool,
    /// Spotted by a player.
    pub visible: bool,
}

/// Where a loot drop came from, when that is not an ordinary kill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LootSource {
    /// Dropped by a player removed from the roster (spec §5).
    Disconnect,
}

/// A runtime loot drop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LootDropSnapshot {
    /// Identity only: `enemyIndex:dropSeq` or `disconnect:playerId:dropSeq`.
    /// Never read for behaviour.
    pub id: String,
    /// Explicit origin tag; absent for kill drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<LootSource>,
    /// Position.
    pub x: f64,
    /// Position.
    pub y: f64,
    /// What it gives.
    pub kind: LootKind,
    /// How much (ammo and health drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<u32>,
    /// Which weapon (weapon drops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weapon_index: Option<u8>,
}

/// One changed grid tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TileMutation {
    /// Column.
    pub x: u32,
    /// Row.
    pub y: u32,
    /// The tile's new value.
    pub value: Tile,
}

/// The host's authoritative world state at `tick`, post-advance (spec §3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationSnapshot {
    /// The tick this reflects.
    pub tick: u64,
    /// The raw mulberry32 state; always overwritten on receipt.
    pub rng_state: u32,
    /// Every roster member, dead or alive.
    pub players: BTreeMap<PlayerId, PlayerSnapshot>,
    /// Index-aligned with `GameMap.enemies`.
    pub enemies: Vec<EnemySnapshot>,
    /// Index-aligned with `GameMap.mines`.
    pub mines: Vec<MineSnapshot>,
    /// The full current set of loot drops.
    pub loot_drops: Vec<LootDropSnapshot>,
    /// Indices into `GameMap.ammoPickups` now collected.
    pub pickups_collected: Vec<u32>,
    /// Indices into `GameMap.keys` now collected.
    pub keys_collected: Vec<u32>,
    /// Grid mutation counter.
    pub grid_version: u64,
    /// Tiles changed since the previous snapshot.
    pub grid_delta: Vec<TileMutation>,
    /// The simulation state the fields above leave out (a campfire
    /// extension; peers that do not know it ignore it). With it a snapshot
    /// restores everything the world hash covers, so a guest that drifted
    /// anywhere hashes equal to the host right after the next snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual: Option<Box<ResidualState>>,
}

/// A player's score in the end-of-run table (the same for every game).
pub use game_api::PlayerScore;

/// How a level ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LevelOutcome {
    /// The exit countdown ran out.
    Complete,
    /// Every player died.
    TeamEliminated,
}

/// What a [`PlayerSnapshot`] leaves out of a player's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerResidual {
    /// Seconds until the player may fire again.
    pub fire_cooldown: f64,
    /// Distance walked this level, tiles.
    pub distance: f64,
}

/// What an [`EnemySnapshot`] leaves out of an enemy's state (index-aligned
/// with `GameMap.enemies`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnemyResidual {
    /// Seconds until its next attack may happen.
    pub attack_cooldown: f64,
    /// Idle-roam target `[x, y]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roam: Option<[f64; 2]>,
    /// Where it last saw a player `[x, y]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<[f64; 2]>,
    /// Loot drops it made this level (the `dropSeq` of their ids).
    pub drop_seq: u32,
}

/// The simulation state a [`ReconciliationSnapshot`]'s spec fields leave
/// out: level timers, AI state, fuses, the lag-compensation history, the
/// whole grid's changes and the level constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResidualState {
    /// Simulated seconds this level.
    pub level_time: f64,
    /// Exit countdown ticks left, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub countdown: Option<u32>,
    /// Set once the level is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<LevelOutcome>,
    /// The session's difficulty.
    pub difficulty: crate::wire::difficulty::Difficulty,
    /// Player count for elite scaling.
    pub player_count: u32,
    /// Whether the level started with more than one player.
    pub multiplayer: bool,
    /// Players removed this level, with their scores.
    pub departed: BTreeMap<PlayerId, PlayerScore>,
    /// Per roster member.
    pub players: BTreeMap<PlayerId, PlayerResidual>,
    /// Index-aligned with `GameMap.enemies`.
    pub enemies: Vec<EnemyResidual>,
    /// Index-aligned with `GameMap.mines`: seconds to detonation once armed.
    pub mine_fuses: Vec<Option<f64>>,
    /// Enemy positions at the end of recent ticks, oldest first, each
    /// index-aligned with `GameMap.enemies`, as `[x, y]`.
    pub enemy_history: Vec<Vec<[f64; 2]>>,
    /// Every tile that differs from the level's map as loaded.
    pub changed_tiles: Vec<TileMutation>,
}

/// What one player carries into the next level (spec §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Carryover {
    /// Health to start the next level with.
    pub health: f64,
    /// Ammo pools.
    pub ammo: AmmoPools,
    /// Owned weapon slots, ascending.
    pub owned_weapons: Vec<u8>,
    /// Weapon slot in hand.
    pub weapon_index: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn coord() -> impl Strategy<Value = f64> {
        // Dyadic values: exactly representable in the shortest JSON form.
        (-100_000i32..100_000).prop_map(|v| f64::from(v) / 256.0)
    }

    fn ammo() -> impl Strategy<Value = AmmoPools> {
        (any::<u16>(), any::<u16>(), any::<u16>(), any::<u16>()).prop_map(|(a, b, c, d)| {
            AmmoPools {
                bullets: a.into(),
                rockets: b.into(),
                smg: c.into(),
                gas: d.into(),
            }
        })
    }

    fn player() -> impl Strategy<Value = PlayerSnapshot> {
        (
            proptest::array::uniform8(coord()),
            ammo(),
            any::<u8>(),
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 0..6),
            any::<bool>(),
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(|(c, ammo, w, k, owned, alive, ks, kills)| PlayerSnapshot {
                pos_x: c[0],
                pos_y: c[1],
                dir_x: c[2],
                dir_y: c[3],
                plane_x: c[4],
                plane_y: c[5],
                health: c[6],
                swap: c[7],
                ammo,
                weapon_index: w,
                keys_held: k,
                owned_weapons: owned,
                alive,
                kill_score: ks,
                kills,
            })
    }

    fn loot_kind() -> impl Strategy<Value = LootKind> {
        prop_oneof![
            Just(LootKind::Health),
            Just(LootKind::Bullets),
            Just(LootKind::Rockets),
            Just(LootKind::Smg),
            Just(LootKind::Gas),
            Just(LootKind::Weapon),
            Just(LootKind::Key),
        ]
    }

    fn tile() -> impl Strategy<Value = Tile> {
        (0u8..5).prop_map(|c| Tile::from_code(c).unwrap_or(Tile::Wall))
    }

    fn loot() -> impl Strategy<Value = LootDropSnapshot> {
        (
            "[a-z0-9:]{1,20}",
            any::<bool>(),
            coord(),
            coord(),
            loot_kind(),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u8>()),
        )
            .prop_map(
                |(id, d, x, y, kind, amount, weapon_index)| LootDropSnapshot {
                    id,
                    source: d.then_some(LootSource::Disconnect),
                    x,
                    y,
                    kind,
                    amount,
                    weapon_index,
                },
            )
    }

    fn snapshot() -> impl Strategy<Value = ReconciliationSnapshot> {
        (
            any::<u32>(),
            any::<u32>(),
            proptest::collection::btree_map(
                "[a-z0-9]{1,8}".prop_map(PlayerId::new),
                player(),
                0..4,
            ),
            proptest::collection::vec(
                (coord(), coord(), coord(), any::<bool>(), any::<bool>()),
                0..5,
            ),
            proptest::collection::vec((any::<bool>(), any::<bool>()), 0..4),
            proptest::collection::vec(loot(), 0..4),
            proptest::collection::vec(any::<u32>(), 0..4),
            (
                any::<u32>(),
                proptest::collection::vec((any::<u16>(), any::<u16>(), tile()), 0..6),
            ),
        )
            .prop_map(
                |(tick, rng_state, players, enemies, mines, loot_drops, collected, (gv, delta))| {
                    ReconciliationSnapshot {
                        tick: tick.into(),
                        rng_state,
                        players,
                        enemies: enemies
                            .into_iter()
                            .zip(0u32..)
                            .map(|((x, y, hp, alive, aggroed), index)| EnemySnapshot {
                                index,
                                x,
                                y,
                                hp,
                                alive,
                                aggroed,
                            })
                            .collect(),
                        mines: mines
                            .into_iter()
                            .zip(0u32..)
                            .map(|((alive, visible), index)| MineSnapshot {
                                index,
                                alive,
                                visible,
                            })
                            .collect(),
                        loot_drops,
                        pickups_collected: collected.clone(),
                        keys_collected: collected,
                        grid_version: gv.into(),
                        residual: None,
                        grid_delta: delta
                            .into_iter()
                            .map(|(x, y, value)| TileMutation {
                                x: x.into(),
                                y: y.into(),
                                value,
                            })
                            .collect(),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn snapshot_round_trips(s in snapshot()) {
            let back: ReconciliationSnapshot = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            prop_assert_eq!(back, s);
        }

        #[test]
        fn carryover_round_trips(health in coord(), ammo in ammo(), owned in proptest::collection::vec(any::<u8>(), 0..6), w in any::<u8>()) {
            let c = Carryover { health, ammo, owned_weapons: owned, weapon_index: w };
            let back: Carryover = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            prop_assert_eq!(back, c);
        }
    }

    #[test]
    fn wire_shape_matches_the_spec() {
        let drop = LootDropSnapshot {
            id: "disconnect:p2:0".into(),
            source: Some(LootSource::Disconnect),
            x: 1.5,
            y: 2.5,
            kind: LootKind::Bullets,
            amount: Some(12),
            weapon_index: None,
        };
        let v = serde_json::to_value(&drop).unwrap();
        assert_eq!(v["source"], "disconnect");
        assert_eq!(v["kind"], "bullets");
        assert!(v.get("weaponIndex").is_none());
        let plain = LootDropSnapshot {
            source: None,
            ..drop
        };
        assert!(
            serde_json::to_value(&plain)
                .unwrap()
                .get("source")
                .is_none()
        );
        let m = TileMutation {
            x: 1,
            y: 2,
            value: Tile::Floor,
        };
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"x":1,"y":2,"value":0}"#
        );
    }
}
