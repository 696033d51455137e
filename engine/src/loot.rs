//! Loot drops: what a kill drops (health check first, then one weighted
//! roll), what a removed player drops (spec §5), the keys a dying player drops, and what picking a drop up
//! does, including the multiplayer weapon rule (an owner does not collect a
//! weapon drop; it stays for a teammate who needs it).

use crate::wire::map::LootKind;
use crate::wire::snapshot::{LootDropSnapshot, LootSource};
use game_api::PlayerId;

use crate::geom::Vec2;
use crate::player::Player;
use crate::rng::Mulberry32;
use crate::rules::{AMMO_CAPS, LOOT_HEALTH_AMOUNT, LOOT_HEALTH_CHANCE, MAX_HEALTH};
use crate::weapon::{self, AmmoPool, SMG, STARTING_MASK};

/// A live loot drop. The wire shape is the runtime shape.
pub type LootDrop = LootDropSnapshot;

/// One row of the kill-loot table: weight, kind, amount.
const ROLL_TABLE: [(u32, Option<LootKind>, u32); 6] = [
    (45, None, 0),
    (25, Some(LootKind::Bullets), 15),
    (10, Some(LootKind::Smg), 40),
    (7, Some(LootKind::Rockets), 3),
    (6, Some(LootKind::Gas), 40),
    (7, Some(LootKind::Weapon), 0),
];

fn drop_at(
    id: String,
    source: Option<LootSource>,
    at: Vec2,
    kind: LootKind,
    amount: Option<u32>,
    weapon_index: Option<u8>,
) -> LootDrop {
    LootDrop {
        id,
        source,
        x: at.x,
        y: at.y,
        kind,
        amount,
        weapon_index,
    }
}

/// The drops of enemy `index` dying at `at`. Draws: one for the health
/// check, one for the roll, and one more for the slot of a weapon drop.
pub fn kill_drops(
    index: usize,
    drop_seq: &mut u32,
    at: Vec2,
    rng: &mut Mulberry32,
) -> Vec<LootDrop> {
    let mut out = Vec::new();
    let mut push = |kind, amount, weapon_index, seq: &mut u32| {
        out.push(drop_at(
            format!("{index}:{seq}"),
            None,
            at,
            kind,
            amount,
            weapon_index,
        ));
        *seq += 1;
    };
    if rng.next_f64() < LOOT_HEALTH_CHANCE {
        push(LootKind::Health, Some(LOOT_HEALTH_AMOUNT), None, drop_seq);
    }
    let total: u32 = ROLL_TABLE.iter().map(|r| r.0).sum();
    let mut roll = rng.below(total);
    for (weight, kind, amount) in ROLL_TABLE {
        if roll >= weight {
            roll -= weight;
            continue;
        }
        match kind {
            Some(LootKind::Weapon) => {
                let slot = SMG + u8::try_from(rng.below(3)).unwrap_or(0);
                push(LootKind::Weapon, None, Some(slot), drop_seq);
            }
            Some(kind) => push(kind, Some(amount), None, drop_seq),
            None => {}
        }
        break;
    }
    out
}

/// What a removed player leaves behind, in the spec's order: non-empty ammo
/// pools (bullets, rockets, smg, gas), then unlocked weapons beyond the
/// starting set in slot order, then one key per held key. Ids are
/// `disconnect:playerId:dropSeq`, source `disconnect`.
pub fn disconnect_drops(id: &PlayerId, p: &Player) -> Vec<LootDrop> {
    let mut out: Vec<LootDrop> = Vec::new();
    let mut push = |kind, amount, weapon_index| {
        let seq = out.len();
        out.push(drop_at(
            format!("disconnect:{id}:{seq}"),
            Some(LootSource::Disconnect),
            p.pos,
            kind,
            amount,
            weapon_index,
        ));
    };
    for pool in AmmoPool::ALL {
        let n = pool.get(&p.ammo);
        if n > 0 {
            push(pool.loot_kind(), Some(n), None);
        }
    }
    for slot in weapon::owned_list(p.owned & !STARTING_MASK) {
        push(LootKind::Weapon, None, Some(slot));
    }
    for _ in 0..p.keys_held {
        push(LootKind::Key, None, None);
    }
    out
}

/// What a player who dies drops: one key per held key, ids
/// `death:playerId:dropSeq`, no source tag (an ordinary drop).
pub fn death_drops(id: &PlayerId, p: &Player) -> Vec<LootDrop> {
    (0..p.keys_held)
        .map(|seq| {
            drop_at(
                format!("death:{id}:{seq}"),
                None,
                p.pos,
                LootKind::Key,
                None,
                None,
            )
        })
        .collect()
}

/// Adds to an ammo pool up to its cap; false if it was already full.
pub fn add_ammo(p: &mut Player, pool: AmmoPool, amount: u32) -> bool {
    let cap = AMMO_CAPS.get(pool.index()).copied().unwrap_or(u32::MAX);
    let slot = pool.get_mut(&mut p.ammo);
    if *slot >= cap {
        return false;
    }
    *slot = slot.saturating_add(amount).min(cap);
    true
}

/// Adds health up to full; false if already full.
pub fn add_health(p: &mut Player, amount: u32) -> bool {
    if p.health >= MAX_HEALTH {
        return false;
    }
    p.health = (p.health + f64::from(amount)).min(MAX_HEALTH);
    true
}

/// Applies a drop to a player who walked over it; true if the drop is
/// consumed, false if it stays where it is.
pub fn pick_up(p: &mut Player, drop: &LootDrop, multiplayer: bool) -> bool {
    let amount = drop.amount.unwrap_or(0);
    match drop.kind {
        LootKind::Health => add_health(p, amount),
        LootKind::Key => {
            p.keys_held = p.keys_held.saturating_add(1);
            true
        }
        LootKind::Weapon => {
            let Some(slot) = drop.weapon_index else {
                return false;
            };
            let Some(w) = weapon::weapon(slot) else {
                return false;
            };
            if weapon::owns(p.owned, slot) {
                // Multiplayer: an owner leaves it for a teammate. Alone: top up.
                return !multiplayer
                    && w.ammo
                        .is_some_and(|(pool, _)| add_ammo(p, pool, w.drop_ammo));
            }
            p.owned |= 1 << slot;
            if let Some((pool, _)) = w.ammo {
                add_ammo(p, pool, w.drop_ammo);
            }
            true
        }
        kind => AmmoPool::for_loot(kind).is_some_and(|pool| add_ammo(p, pool, amount)),
    }
}
