//! Reconciliation snapshots, roster removal drops and the multiplayer
//! weapon-drop rule.

mod common;

use std::collections::BTreeMap;

use engine::Game;
use engine::RaycasterEngine;
use engine::engine::{Engine, EngineError};
use engine::wire::input::InputSnapshot;
use engine::wire::map::LootKind;
use engine::wire::snapshot::{LootDropSnapshot, LootSource, ReconciliationSnapshot};
use game_api::PlayerId;

use common::{bot_inputs, bots, engine};

fn neutral(e: &RaycasterEngine) -> BTreeMap<PlayerId, InputSnapshot> {
    e.roster()
        .into_iter()
        .map(|id| (id, InputSnapshot::NEUTRAL))
        .collect()
}

/// Writes a modified snapshot of the engine's own state back into it.
fn edit(e: &mut RaycasterEngine, f: impl FnOnce(&mut ReconciliationSnapshot)) {
    let mut snap = e.snapshot();
    f(&mut snap);
    e.apply_snapshot(&snap).expect("edited snapshot applies");
}

#[test]
fn applying_the_hosts_snapshot_resynchronizes_a_perturbed_peer() {
    let mut a = engine(21, 1, 2, 77);
    let mut b = engine(21, 1, 2, 77);
    let bot = bots(&a);
    for _ in 0..240 {
        let i = bot_inputs(&a, &bot);
        a.advance(&i, &[]);
        b.advance(&i, &[]);
    }
    assert_eq!(a.world_hash(), b.world_hash());
    let (p0, p1) = (PlayerId::new("p0"), PlayerId::new("p1"));
    edit(&mut b, |s| {
        let p = s.players.get_mut(&p0).expect("p0");
        p.pos_x += 0.3;
        p.health -= 20.0;
        s.rng_state ^= 0xDEAD_BEEF;
        let alive = s
            .enemies
            .iter_mut()
            .find(|e| e.alive)
            .expect("an enemy is alive");
        alive.alive = false;
        alive.hp = 0.0;
        if s.keys_collected.contains(&0) {
            s.keys_collected.retain(|k| *k != 0);
        } else {
            s.keys_collected.push(0);
            s.players.get_mut(&p1).expect("p1").keys_held += 1;
        }
    });
    assert_ne!(
        a.world_hash(),
        b.world_hash(),
        "the perturbation must be visible"
    );
    let truth = a.snapshot();
    b.apply_snapshot(&truth).expect("host snapshot applies");
    assert_eq!(
        a.world_hash(),
        b.world_hash(),
        "snapshot must restore every perturbed field"
    );
    for _ in 0..300 {
        let i = bot_inputs(&a, &bot);
        a.advance(&i, &[]);
        b.advance(&i, &[]);
        assert_eq!(
            a.world_hash(),
            b.world_hash(),
            "diverged again at tick {}",
            a.tick()
        );
    }
}

#[test]
fn snapshot_json_round_trip_and_grid_delta() {
    let mut a = engine(5, 0, 1, 9);
    let bot = bots(&a);
    let mut saw_delta = false;
    let mut b = engine(5, 0, 1, 9);
    for t in 1..=2000u64 {
        let i = bot_inputs(&a, &bot);
        a.advance(&i, &[]);
        b.advance(&i, &[]);
        if t % 30 == 0 {
            let snap = a.snapshot();
            saw_delta |= !snap.grid_delta.is_empty();
            let wire = serde_json::to_string(&snap).expect("encode");
            let back: ReconciliationSnapshot = serde_json::from_str(&wire).expect("decode");
            assert_eq!(back, snap);
            b.apply_snapshot(&back).expect("apply");
            assert_eq!(a.world_hash(), b.world_hash());
        }
        if !matches!(
            a.status(),
            engine::LevelStatus::Running | engine::LevelStatus::Countdown { .. }
        ) {
            break;
        }
    }
    assert!(
        saw_delta,
        "the bot opened a door, so some snapshot carried a tile delta"
    );
    // A delta is reported once: the next snapshot has none unless the grid changed again.
    let _ = a.snapshot();
    assert!(a.snapshot().grid_delta.is_empty());
}

#[test]
fn bad_snapshots_are_rejected_without_side_effects() {
    let mut e = engine(1, 0, 2, 1);
    e.advance(&neutral(&e), &[]);
    let before = e.world_hash();
    let good = e.snapshot();

    let mut s = good.clone();
    s.tick += 1;
    assert!(matches!(
        e.apply_snapshot(&s),
        Err(EngineError::TickMismatch { .. })
    ));
    let mut s = good.clone();
    s.players.remove(&PlayerId::new("p1"));
    assert!(matches!(
        e.apply_snapshot(&s),
        Err(EngineError::RosterMismatch(_))
    ));
    let mut s = good.clone();
    s.enemies[0].index = 10_000;
    s.rng_state ^= 1;
    assert!(matches!(
        e.apply_snapshot(&s),
        Err(EngineError::BadSnapshot { .. })
    ));
    let mut s = good.clone();
    s.players.get_mut(&PlayerId::new("p0")).expect("p0").pos_x = f64::NAN;
    assert!(matches!(
        e.apply_snapshot(&s),
        Err(EngineError::BadSnapshot { .. })
    ));
    let mut s = good.clone();
    s.grid_delta.push(engine::wire::snapshot::TileMutation {
        x: 9999,
        y: 0,
        value: engine::wire::map::Tile::Floor,
    });
    assert!(matches!(
        e.apply_snapshot(&s),
        Err(EngineError::BadSnapshot { .. })
    ));
    assert_eq!(
        e.world_hash(),
        before,
        "a rejected snapshot changes nothing"
    );
}

#[test]
fn rng_state_reads_and_resumes() {
    let a = engine(2, 0, 1, 1234);
    let mut b = engine(2, 0, 1, 1);
    assert_eq!(a.rng_state(), 1234);
    b.set_rng_state(a.rng_state());
    assert_eq!(a.world_hash(), b.world_hash());
}

#[test]
fn roster_removal_drops_ammo_then_weapons_then_keys() {
    let mut e = engine(4, 0, 3, 8);
    let gone = PlayerId::new("p1");
    edit(&mut e, |s| {
        let p = s.players.get_mut(&gone).expect("p1");
        p.ammo.bullets = 10;
        p.ammo.rockets = 0;
        p.ammo.smg = 5;
        p.ammo.gas = 7;
        p.owned_weapons = vec![0, 1, 2, 3, 5];
        p.keys_held = 2;
    });
    let at = e.state().players[&gone].pos;
    e.advance(&neutral(&e), std::slice::from_ref(&gone));
    assert!(!e.roster().contains(&gone));
    assert!(!e.snapshot().players.contains_key(&gone));
    assert!(e.scores().contains_key(&gone), "score survives removal");
    let drops: Vec<&LootDropSnapshot> = e
        .state()
        .loot
        .iter()
        .filter(|d| d.source == Some(LootSource::Disconnect))
        .collect();
    let got: Vec<(String, LootKind, Option<u32>, Option<u8>)> = drops
        .iter()
        .map(|d| (d.id.clone(), d.kind, d.amount, d.weapon_index))
        .collect();
    let want = vec![
        (
            "disconnect:p1:0".to_string(),
            LootKind::Bullets,
            Some(10),
            None,
        ),
        ("disconnect:p1:1".to_string(), LootKind::Smg, Some(5), None),
        ("disconnect:p1:2".to_string(), LootKind::Gas, Some(7), None),
        (
            "disconnect:p1:3".to_string(),
            LootKind::Weapon,
            None,
            Some(3),
        ),
        (
            "disconnect:p1:4".to_string(),
            LootKind::Weapon,
            None,
            Some(5),
        ),
        ("disconnect:p1:5".to_string(), LootKind::Key, None, None),
        ("disconnect:p1:6".to_string(), LootKind::Key, None, None),
    ];
    assert_eq!(got, want);
    assert!(drops.iter().all(|d| d.x == at.x && d.y == at.y));
    let json = serde_json::to_value(drops[0]).expect("encode");
    assert_eq!(json["source"], "disconnect");
    // Removing an unknown or already removed player is a no-op.
    let h = e.world_hash();
    let mut e2 = e.clone();
    e2.advance(&neutral(&e2), std::slice::from_ref(&gone));
    e.advance(&neutral(&e), &[]);
    assert_eq!(e.world_hash(), e2.world_hash());
    assert_ne!(h, e.world_hash());
}

fn weapon_drop_at(x: f64, y: f64) -> LootDropSnapshot {
    LootDropSnapshot {
        id: "0:0".into(),
        source: None,
        x,
        y,
        kind: LootKind::Weapon,
        amount: None,
        weapon_index: Some(3),
    }
}

#[test]
fn weapon_drop_is_a_no_op_for_an_owner_in_multiplayer() {
    let mut e = engine(4, 0, 2, 8);
    let (p0, p1) = (PlayerId::new("p0"), PlayerId::new("p1"));
    let at0 = e.state().players[&p0].pos;
    edit(&mut e, |s| {
        let p = s.players.get_mut(&p0).expect("p0");
        p.owned_weapons = vec![0, 1, 2, 3];
        p.ammo.smg = 11;
        s.loot_drops = vec![weapon_drop_at(at0.x, at0.y)];
    });
    e.advance(&neutral(&e), &[]);
    assert_eq!(
        e.state().loot.len(),
        1,
        "an owner leaves the drop where it is"
    );
    assert_eq!(
        e.state().players[&p0].ammo.smg,
        11,
        "no top-up for an owner"
    );
    // A teammate without it collects it.
    let at1 = e.state().players[&p1].pos;
    edit(&mut e, |s| {
        s.loot_drops = vec![weapon_drop_at(at1.x, at1.y)]
    });
    e.advance(&neutral(&e), &[]);
    assert!(e.state().loot.is_empty());
    assert!(e.snapshot().players[&p1].owned_weapons.contains(&3));
}

#[test]
fn weapon_drop_tops_up_an_owner_when_alone() {
    let mut e = engine(4, 0, 1, 8);
    let p0 = PlayerId::new("p0");
    let at = e.state().players[&p0].pos;
    edit(&mut e, |s| {
        let p = s.players.get_mut(&p0).expect("p0");
        p.owned_weapons = vec![0, 1, 2, 3];
        p.ammo.smg = 11;
        s.loot_drops = vec![weapon_drop_at(at.x, at.y)];
    });
    e.advance(&neutral(&e), &[]);
    assert!(e.state().loot.is_empty());
    assert!(e.state().players[&p0].ammo.smg > 11);
}

#[test]
fn carryovers_revive_the_dead() {
    let mut e = engine(4, 0, 2, 8);
    edit(&mut e, |s| {
        let p = s.players.get_mut(&PlayerId::new("p1")).expect("p1");
        p.alive = false;
        p.health = 0.0;
        p.owned_weapons = vec![0, 1, 2, 4];
    });
    let c = e.carryovers();
    assert_eq!(c.len(), 2);
    let dead = &c[&PlayerId::new("p1")];
    assert!(dead.health > 0.0);
    assert_eq!(dead.owned_weapons, vec![0, 1, 2, 4]);
    let mut next = common::setup(4, 1, 2, 9);
    next.carryovers = c;
    let e2 = RaycasterEngine::new_level(next).expect("next level");
    assert!(e2.state().players.values().all(|p| p.alive));
    assert!(engine::weapon::owns(
        e2.state().players[&PlayerId::new("p1")].owned,
        4
    ));
}

#[test]
fn a_dying_player_drops_held_keys() {
    let mut e = engine(4, 0, 2, 8);
    let p1 = PlayerId::new("p1");
    edit(&mut e, |s| {
        let p = s.players.get_mut(&p1).expect("p1");
        p.keys_held = 1;
        p.health = -5.0;
    });
    e.advance(&neutral(&e), &[]);
    let s = e.state();
    assert!(!s.players[&p1].alive);
    assert_eq!(s.players[&p1].keys_held, 0);
    let keys: Vec<_> = s
        .loot
        .iter()
        .filter(|d| d.kind == LootKind::Key)
        .map(|d| (d.id.as_str(), d.source))
        .collect();
    assert_eq!(keys, vec![("death:p1:0", None)]);
    assert!(
        e.roster().contains(&p1),
        "a dead player stays in the roster"
    );
    assert!(e.snapshot().players.contains_key(&p1));
}

#[test]
fn all_players_dead_is_team_elimination() {
    let mut e = engine(4, 0, 2, 8);
    edit(&mut e, |s| {
        s.players.values_mut().for_each(|p| p.health = 0.0)
    });
    e.advance(&neutral(&e), &[]);
    assert_eq!(e.status(), engine::LevelStatus::TeamEliminated);
    let t = e.tick();
    e.advance(&neutral(&e), &[]);
    assert_eq!(e.tick(), t, "a finished level no longer ticks");
}

#[test]
fn hostile_inputs_cannot_break_the_world() {
    let mut e = engine(4, 0, 2, 8);
    let evil = InputSnapshot {
        mouse_delta_x: f64::NAN,
        weapon_select: Some(200),
        escape: true,
        blur: true,
        fire: true,
        move_forward: true,
        ..InputSnapshot::NEUTRAL
    };
    let inputs: BTreeMap<PlayerId, InputSnapshot> = e
        .roster()
        .into_iter()
        .map(|id| (id, evil.clone()))
        .collect();
    let mut huge = inputs.clone();
    huge.values_mut()
        .for_each(|i| i.mouse_delta_x = f64::INFINITY);
    for t in 0..60 {
        e.advance(if t % 2 == 0 { &inputs } else { &huge }, &[]);
    }
    for p in e.state().players.values() {
        assert!(p.pos.is_finite() && p.dir.is_finite() && p.plane.is_finite());
        assert!(p.weapon_index < engine::wire::input::WEAPON_SLOT_COUNT);
    }
    // Still encodes, so it still hashes and reconciles.
    let snap = e.snapshot();
    assert!(serde_json::to_string(&snap).is_ok());
    // Inputs for players not in the roster are ignored.
    let mut stranger = BTreeMap::new();
    stranger.insert(PlayerId::new("zz"), evil);
    e.advance(&stranger, &[PlayerId::new("nobody")]);
    assert_eq!(e.roster().len(), 2);
}

#[test]
fn enemy_hp_scales_with_difficulty_and_player_count() {
    let hp = |difficulty, count| {
        let mut s = common::setup(6, 1, 1, 1);
        s.settings.difficulty = difficulty;
        s.player_count = count;
        RaycasterEngine::new_level(s)
            .expect("level")
            .state()
            .enemies[0]
            .hp
    };
    let base = hp(engine::Difficulty::Normal, 1);
    assert!(base > 0.0);
    assert!(
        (hp(engine::Difficulty::Normal, 4) - base * 2.2).abs() < 1e-9,
        "elite scaling: +40% per extra player"
    );
    assert!((hp(engine::Difficulty::Hard, 1) - base * 1.3).abs() < 1e-9);
    assert!((hp(engine::Difficulty::Easy, 1) - base * 0.75).abs() < 1e-9);
}
