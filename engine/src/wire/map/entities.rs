//! The map-authored entities: enemies, pickups and keys, each identified
//! by its index in its list.

use serde::{Deserialize, Serialize};

use super::{MapPoint, RoomRect};

/// Enemy archetypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EnemyKind {
    /// Ranged, average.
    Grunt,
    /// Melee, tough and fast.
    Brute,
    /// Ranged, long reach, accurate, fragile.
    Sniper,
}

/// A map-authored enemy; its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapEnemy {
    /// Archetype.
    pub kind: EnemyKind,
    /// Spawn position.
    pub position: MapPoint,
    /// The room it lives in: it roams inside it, and the exit is gated on
    /// the exit room's enemies through it.
    pub home: RoomRect,
}

/// What a pickup or a loot drop gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LootKind {
    /// Health points.
    Health,
    /// Bullets ammo pool.
    Bullets,
    /// Rockets ammo pool.
    Rockets,
    /// SMG ammo pool.
    Smg,
    /// Gas ammo pool.
    Gas,
    /// A weapon (`weaponIndex` says which).
    Weapon,
    /// One door key (multiplayer disconnect drops).
    Key,
}

/// A map-authored pickup (ammo or health); its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapPickup {
    /// Where it lies.
    pub position: MapPoint,
    /// What it gives: an ammo pool or health.
    pub kind: LootKind,
    /// How much.
    pub amount: u32,
}

/// A map-authored key; its array index is its identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MapKey {
    /// Where it lies.
    pub position: MapPoint,
    /// Index into [`GameMap::doors`](super::GameMap::doors) of the door it
    /// was placed for. Any key opens any door; this records the generator's
    /// guarantee.
    pub door: u32,
}
