//! The level generator and map files: 200 seeds all give valid, playable
//! maps; generation is deterministic; maps round-trip through JSON; bad map
//! files are clear errors, never panics.

use engine::level_check::{PlayabilityError, check_playable};
use engine::level_gen::generate;
use engine::map_io::{MapLoadError, map_from_json, map_to_json};
use engine::wire::map::{GameMap, MapError, Tile};
use proptest::prelude::*;

#[test]
fn two_hundred_seeds_give_playable_maps() {
    let mut with_secret = 0;
    let mut doors = 0;
    for seed in 0..200u32 {
        let level = seed % 6;
        let players = 1 + seed % 8;
        let map = generate(seed.wrapping_mul(7919), level, players);
        // Exit reachable from the spawn through the doors, each door's key
        // reachable with that door shut, all spawns connected.
        check_playable(&map).unwrap_or_else(|e| panic!("seed {seed} level {level}: {e}"));
        assert!(
            !map.doors.is_empty(),
            "seed {seed}: every level has a locked door"
        );
        assert_eq!(map.keys.len(), map.doors.len());
        assert!(map.spawns.len() >= players.min(9) as usize);
        assert!(!map.enemies.is_empty());
        doors += map.doors.len();
        with_secret += usize::from(map.tiles.contains(&Tile::Secret));
    }
    assert!(
        with_secret > 100,
        "secret rooms are common: {with_secret}/200"
    );
    assert!(doors > 250, "later levels have more doors: {doors}");
}

#[test]
fn generation_is_deterministic_and_seed_dependent() {
    assert_eq!(generate(5, 2, 4), generate(5, 2, 4));
    assert_ne!(generate(5, 2, 4), generate(6, 2, 4));
    assert_ne!(generate(5, 2, 4), generate(5, 3, 4));
}

#[test]
fn bad_map_files_are_clear_errors() {
    let good = map_to_json(&generate(1, 0, 2)).expect("encode");
    assert!(map_from_json(&good).is_ok());

    let err = map_from_json("{ not json").expect_err("garbage");
    assert!(matches!(err, MapLoadError::Parse(_)));

    let mut v: serde_json::Value = serde_json::from_str(&good).expect("value");
    v["tiles"].as_array_mut().expect("tiles").pop();
    let err = map_from_json(&v.to_string()).expect_err("short grid");
    assert!(
        matches!(
            err,
            MapLoadError::Invalid(MapError::DimensionMismatch { .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("tiles"), "{err}");

    let mut v: serde_json::Value = serde_json::from_str(&good).expect("value");
    v["spawns"][0] = serde_json::json!({"x": 0.5, "y": 0.5});
    let err = map_from_json(&v.to_string()).expect_err("spawn in wall");
    assert!(err.to_string().contains("spawns[0]"), "{err}");

    let mut v: serde_json::Value = serde_json::from_str(&good).expect("value");
    v["keys"][0]["door"] = serde_json::json!(99);
    assert!(matches!(
        map_from_json(&v.to_string()),
        Err(MapLoadError::Invalid(MapError::KeyDoorOutOfRange { .. }))
    ));

    let mut v: serde_json::Value = serde_json::from_str(&good).expect("value");
    v["tiles"][3] = serde_json::json!(42);
    assert!(matches!(
        map_from_json(&v.to_string()),
        Err(MapLoadError::Parse(_))
    ));

    // Wall in every door: structurally fine, but the exit is unreachable.
    let mut map: GameMap = serde_json::from_str(&good).expect("map");
    for d in map.doors.clone() {
        let i = (d.y * map.width + d.x) as usize;
        map.tiles[i] = Tile::Wall;
    }
    map.doors.clear();
    map.keys.clear();
    let err = map_from_json(&serde_json::to_string(&map).expect("encode")).expect_err("sealed");
    assert!(
        matches!(
            err,
            MapLoadError::Unplayable(PlayabilityError::ExitUnreachable)
        ),
        "{err}"
    );
}

#[test]
fn key_behind_its_own_door_is_reported() {
    let mut map = generate(3, 0, 1);
    let door = map.doors[0];
    // Move the key to the exit tile, which lies behind every door.
    map.keys[0].position = engine::wire::map::MapPoint {
        x: f64::from(map.exit.x) + 0.5,
        y: f64::from(map.exit.y) + 0.5,
    };
    let _ = door;
    assert!(matches!(
        check_playable(&map),
        Err(PlayabilityError::KeyBehindDoor(0) | PlayabilityError::ExitUnreachable)
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn generated_maps_round_trip_through_json(seed in any::<u32>(), level in 0u32..6, players in 1u32..9) {
        let map = generate(seed, level, players);
        let back = map_from_json(&map_to_json(&map).expect("encode")).expect("decode");
        prop_assert_eq!(back, map);
    }
}
