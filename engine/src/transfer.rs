//! Exact state transfer: the whole world at a tick as compact bytes, for a
//! peer that arrives after the level began (a late joiner, a rejoiner, a
//! spectator). It holds everything the world hash covers, plus the grid
//! mutation log, so a peer that loads it and then applies the same bundles
//! hashes equal to the host at every later tick. The lossy
//! reconciliation snapshot ([`crate::reconcile`]) cannot do that.
//!
//! The form is one version byte, then the saved world's JSON (the form of
//! [`crate::Engine::save_state`]), raw-deflated. The JSON writes floats so
//! that they parse back bit for bit (serde_json's `float_roundtrip`), and
//! deflate takes away most of its size: the field names repeat. A binary
//! record (postcard) would not carry the state as it is: some of its
//! types leave out empty optional fields, which only a self-describing
//! form can read back. Loading refuses a wrong version, bytes that
//! inflate past [`MAX_STATE_BYTES`], a record that does not parse, and a
//! world that does not fit the level's map. A refused load changes
//! nothing.
//!
//! The map is not in the transfer: the receiver builds the level from the
//! same [`crate::LevelSetup`] first (the level generator is deterministic),
//! then loads the state into it.

use crate::engine::EngineError;
use crate::world::{RaycasterEngine, SavedWorld};

/// The format of [`game_api::Game::save_exact`] for the raycaster; a peer
/// refuses any other.
pub const STATE_FORMAT: u8 = 1;

/// Most bytes a transferred state may inflate to. A 5-player level is far
/// below this (see the tests); the bound stops a deflate bomb.
pub const MAX_STATE_BYTES: usize = 4 << 20;

/// Deflate level: the best ratio. A state is saved once per joiner, so the
/// time matters less than the bytes on the joiner's link.
const LEVEL: u8 = 9;

/// The whole world as compact bytes (see the module documentation).
pub(crate) fn save(engine: &RaycasterEngine) -> Result<Vec<u8>, EngineError> {
    let record = serde_json::to_vec(&engine.saved())
        .map_err(|e| EngineError::BadState(format!("encoding the state: {e}")))?;
    let mut out = vec![STATE_FORMAT];
    out.extend(miniz_oxide::deflate::compress_to_vec(&record, LEVEL));
    Ok(out)
}

/// Replaces `engine`'s world with one from [`save`] of the same level. On
/// an error nothing changes.
pub(crate) fn load(engine: &mut RaycasterEngine, bytes: &[u8]) -> Result<(), EngineError> {
    let bad = |what: String| EngineError::BadState(what);
    let (&format, deflated) = bytes
        .split_first()
        .ok_or_else(|| bad("an empty state".into()))?;
    if format != STATE_FORMAT {
        return Err(bad(format!(
            "state format {format}, this build reads {STATE_FORMAT}"
        )));
    }
    let record = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, MAX_STATE_BYTES)
        .map_err(|e| bad(format!("inflating the state: {e:?}")))?;
    let saved: SavedWorld =
        serde_json::from_slice(&record).map_err(|e| bad(format!("decoding the state: {e}")))?;
    engine.restore(saved)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::wire::input::InputSnapshot;
    use game_api::PlayerId;

    use crate::bot::BotController;
    use crate::engine::{Engine, LevelSetup, LevelStatus};
    use crate::level_gen::generate;
    use crate::rules::Difficulty;
    use crate::world::RaycasterEngine;
    use game_api::Game;

    use super::*;
    use crate::wire::raycaster::{LevelSeed, Settings};

    /// Level 7 of seed 11 on hard: a big level that five bots take more
    /// than 3,000 ticks to finish.
    fn setup(players: u32) -> LevelSetup {
        LevelSetup {
            body: generate(11, 7, players),
            roster: (0..players)
                .map(|i| PlayerId::new(format!("p{i}")))
                .collect(),
            head: LevelSeed { gameplay_seed: 5 },
            settings: Settings {
                difficulty: Difficulty::Hard,
            },
            player_count: players,
            carryovers: BTreeMap::new(),
            input_delays: BTreeMap::new(),
        }
    }

    fn inputs(
        bots: &[BotController],
        engine: &RaycasterEngine,
    ) -> BTreeMap<PlayerId, InputSnapshot> {
        bots.iter()
            .map(|b| (b.player_id().clone(), b.decide(engine)))
            .collect()
    }

    /// Five bots play a level to tick 3,000; the state moves
    /// to a fresh engine of the same level, and both then hash equal at
    /// every one of 300 more ticks of the same inputs.
    #[test]
    fn a_transferred_world_hashes_equal_at_every_later_tick() {
        let players = 5;
        let mut host = RaycasterEngine::new_level(setup(players)).expect("level");
        let bots: Vec<BotController> = host.roster().into_iter().map(BotController::new).collect();
        while host.tick() < 3_000 && host.status() == LevelStatus::Running {
            let i = inputs(&bots, &host);
            host.advance(&i, &[]);
        }
        assert_eq!(host.tick(), 3_000, "the level ended first");
        let bytes = host.save_exact().expect("save");
        let json = host.save_state().expect("json");
        eprintln!(
            "state at tick {}: {} bytes exact and deflated ({} bytes as JSON)",
            host.tick(),
            bytes.len(),
            json.len()
        );
        // Small enough for a joiner's link: well under one second at 1 Mbit/s.
        assert!(bytes.len() < 64 * 1024, "{} bytes", bytes.len());

        let mut joiner = RaycasterEngine::new_level(setup(players)).expect("level");
        assert_ne!(joiner.world_hash(), host.world_hash());
        joiner.load_exact(&bytes).expect("load");
        assert_eq!(joiner.tick(), host.tick());
        assert_eq!(joiner.world_hash(), host.world_hash());
        for _ in 0..300 {
            let i = inputs(&bots, &host);
            host.advance(&i, &[]);
            joiner.advance(&i, &[]);
            assert_eq!(
                joiner.world_hash(),
                host.world_hash(),
                "tick {}",
                host.tick()
            );
        }
    }

    #[test]
    fn a_bad_state_is_refused_and_changes_nothing() {
        let mut host = RaycasterEngine::new_level(setup(2)).expect("level");
        let bots: Vec<BotController> = host.roster().into_iter().map(BotController::new).collect();
        for _ in 0..50 {
            let i = inputs(&bots, &host);
            host.advance(&i, &[]);
        }
        let good = host.save_exact().expect("save");
        let mut other = RaycasterEngine::new_level(setup(2)).expect("level");
        let before = other.world_hash();
        let mut wrong_version = good.clone();
        wrong_version[0] = STATE_FORMAT + 1;
        let bomb = {
            let mut b = vec![STATE_FORMAT];
            b.extend(miniz_oxide::deflate::compress_to_vec(
                &vec![0u8; MAX_STATE_BYTES + 1],
                9,
            ));
            b
        };
        let mut trailing_record = serde_json::to_vec(&host.saved()).expect("record");
        trailing_record.extend(b"{}");
        let mut trailing = vec![STATE_FORMAT];
        trailing.extend(miniz_oxide::deflate::compress_to_vec(&trailing_record, 9));
        let another_level = {
            let mut s = setup(2);
            s.body = generate(12, 3, 2);
            RaycasterEngine::new_level(s)
                .expect("level")
                .save_exact()
                .expect("save")
        };
        for (what, bytes) in [
            ("empty", Vec::new()),
            ("wrong version", wrong_version),
            ("truncated", good[..good.len() / 2].to_vec()),
            ("not deflate", vec![STATE_FORMAT, 0xff, 0x00, 0x13]),
            ("deflate bomb", bomb),
            ("trailing bytes", trailing),
            ("another level's map", another_level),
        ] {
            assert!(other.load_exact(&bytes).is_err(), "{what} was accepted");
            assert_eq!(other.world_hash(), before, "{what} changed the world");
        }
        other.load_exact(&good).expect("the good state still loads");
        assert_eq!(other.world_hash(), host.world_hash());
    }
}
