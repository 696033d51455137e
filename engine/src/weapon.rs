//! The weapon table: six slots, the first three (knife, pistol, shotgun) in
//! every player's starting set, the rest unlockable through loot.

use crate::wire::input::WEAPON_SLOT_COUNT;
use crate::wire::map::LootKind;
use crate::wire::snapshot::AmmoPools;

/// Which pool a weapon draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmmoPool {
    /// Pistol and shotgun.
    Bullets,
    /// Rocket launcher.
    Rockets,
    /// SMG.
    Smg,
    /// Flamethrower.
    Gas,
}

impl AmmoPool {
    /// All pools in the spec's drop order.
    pub const ALL: [AmmoPool; 4] = [
        AmmoPool::Bullets,
        AmmoPool::Rockets,
        AmmoPool::Smg,
        AmmoPool::Gas,
    ];

    /// The pool's position in [`AmmoPool::ALL`] (and in `AMMO_CAPS`).
    pub fn index(self) -> usize {
        match self {
            AmmoPool::Bullets => 0,
            AmmoPool::Rockets => 1,
            AmmoPool::Smg => 2,
            AmmoPool::Gas => 3,
        }
    }

    /// The loot kind that refills it.
    pub fn loot_kind(self) -> LootKind {
        match self {
            AmmoPool::Bullets => LootKind::Bullets,
            AmmoPool::Rockets => LootKind::Rockets,
            AmmoPool::Smg => LootKind::Smg,
            AmmoPool::Gas => LootKind::Gas,
        }
    }

    /// The pool a loot kind refills, if it is an ammo kind.
    pub fn for_loot(kind: LootKind) -> Option<AmmoPool> {
        match kind {
            LootKind::Bullets => Some(AmmoPool::Bullets),
            LootKind::Rockets => Some(AmmoPool::Rockets),
            LootKind::Smg => Some(AmmoPool::Smg),
            LootKind::Gas => Some(AmmoPool::Gas),
            _ => None,
        }
    }

    /// The pool's count.
    pub fn get(self, ammo: &AmmoPools) -> u32 {
        match self {
            AmmoPool::Bullets => ammo.bullets,
            AmmoPool::Rockets => ammo.rockets,
            AmmoPool::Smg => ammo.smg,
            AmmoPool::Gas => ammo.gas,
        }
    }

    /// A mutable reference to the pool's count.
    pub fn get_mut(self, ammo: &mut AmmoPools) -> &mut u32 {
        match self {
            AmmoPool::Bullets => &mut ammo.bullets,
            AmmoPool::Rockets => &mut ammo.rockets,
            AmmoPool::Smg => &mut ammo.smg,
            AmmoPool::Gas => &mut ammo.gas,
        }
    }
}

/// A weapon's rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weapon {
    /// Display name.
    pub name: &'static str,
    /// Pool and rounds per shot; `None` for the knife.
    pub ammo: Option<(AmmoPool, u32)>,
    /// Damage per pellet.
    pub damage: f64,
    /// Seconds between shots.
    pub cooldown: f64,
    /// Hitscan rays per shot.
    pub pellets: u32,
    /// Spread either side, radians.
    pub spread: f64,
    /// Reach, tiles.
    pub range: f64,
    /// Blast radius at the impact point (0: none).
    pub splash: f64,
    /// Ammo a weapon loot drop carries.
    pub drop_ammo: u32,
}

/// Seconds a weapon switch takes.
pub const SWAP_TIME: f64 = 0.3;

/// Slot of the knife.
pub const KNIFE: u8 = 0;
/// Slot of the pistol.
pub const PISTOL: u8 = 1;
/// Slot of the shotgun.
pub const SHOTGUN: u8 = 2;
/// Slot of the SMG.
pub const SMG: u8 = 3;
/// Slot of the rocket launcher.
pub const ROCKET_LAUNCHER: u8 = 4;
/// Slot of the flamethrower.
pub const FLAMETHROWER: u8 = 5;

/// The starting set every player owns: knife, pistol, shotgun.
pub const STARTING_WEAPONS: [u8; 3] = [KNIFE, PISTOL, SHOTGUN];

/// Owned-weapon bitmask of the starting set.
pub const STARTING_MASK: u8 = 0b0000_0111;

/// The table, indexed by slot.
pub const WEAPONS: [Weapon; WEAPON_SLOT_COUNT as usize] = [
    Weapon {
        name: "knife",
        ammo: None,
        damage: 30.0,
        cooldown: 0.4,
        pellets: 1,
        spread: 0.0,
        range: 1.3,
        splash: 0.0,
        drop_ammo: 0,
    },
    Weapon {
        name: "pistol",
        ammo: Some((AmmoPool::Bullets, 1)),
        damage: 14.0,
        cooldown: 0.3,
        pellets: 1,
        spread: 0.015,
        range: 24.0,
        splash: 0.0,
        drop_ammo: 20,
    },
    Weapon {
        name: "shotgun",
        ammo: Some((AmmoPool::Bullets, 2)),
        damage: 8.0,
        cooldown: 0.8,
        pellets: 7,
        spread: 0.1,
        range: 12.0,
        splash: 0.0,
        drop_ammo: 16,
    },
    Weapon {
        name: "smg",
        ammo: Some((AmmoPool::Smg, 1)),
        damage: 9.0,
        cooldown: 0.1,
        pellets: 1,
        spread: 0.04,
        range: 20.0,
        splash: 0.0,
        drop_ammo: 60,
    },
    Weapon {
        name: "rocket launcher",
        ammo: Some((AmmoPool::Rockets, 1)),
        damage: 90.0,
        cooldown: 1.0,
        pellets: 1,
        spread: 0.01,
        range: 30.0,
        splash: 1.5,
        drop_ammo: 5,
    },
    Weapon {
        name: "flamethrower",
        ammo: Some((AmmoPool::Gas, 1)),
        damage: 5.0,
        cooldown: 0.07,
        pellets: 2,
        spread: 0.12,
        range: 4.5,
        splash: 0.0,
        drop_ammo: 60,
    },
];

/// The weapon in a slot, if the slot exists.
pub fn weapon(slot: u8) -> Option<&'static Weapon> {
    WEAPONS.get(usize::from(slot))
}

/// Whether a bitmask owns a slot.
pub fn owns(mask: u8, slot: u8) -> bool {
    slot < WEAPON_SLOT_COUNT && mask & (1 << slot) != 0
}

/// Owned slots of a bitmask, ascending (the snapshot's canonical order).
pub fn owned_list(mask: u8) -> Vec<u8> {
    (0..WEAPON_SLOT_COUNT).filter(|s| owns(mask, *s)).collect()
}

/// The bitmask of a slot list, or `None` if a slot does not exist.
pub fn mask_of(slots: &[u8]) -> Option<u8> {
    slots
        .iter()
        .try_fold(0u8, |m, s| (*s < WEAPON_SLOT_COUNT).then(|| m | (1 << s)))
}
