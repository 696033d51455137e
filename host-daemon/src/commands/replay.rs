//! `host-daemon replay FILE`: re-simulates a recorded level
//! ([`netcode::replay`]) and prints one JSON line: `ticks`,
//! `finalWorldHash`, `matches` (whether that equals the recorded final
//! hash; `null` when the file has no end record), and the level it is.
//! Exits 1 when the hashes differ: a replay that does not reproduce the
//! level is a failure a script should see.

use std::io::Read;

use anyhow::Context;
use clap::Args;
use engine::RaycasterEngine;
use game_api::Game;
use netcode::replay::{Replay, ReplayVerdict};
use tag::TagWorld;

use crate::game::GameName;

/// Largest replay file read (about 9 hours of a full session).
const MAX_FILE_BYTES: u64 = 512 << 20;

/// Flags of `replay`.
#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The replay file (`host --record DIR` writes them).
    file: std::path::PathBuf,
    /// Stop after this tick (a desync report's tick) and print the hash
    /// there.
    #[arg(long)]
    to_tick: Option<u64>,
    /// The game the file is of.
    #[arg(long, value_enum, env = "CAMPFIRE_GAME", default_value_t = GameName::Raycaster)]
    game: GameName,
}

/// Runs `replay`.
pub fn run(a: &ReplayArgs) -> anyhow::Result<()> {
    let mut text = String::new();
    std::fs::File::open(&a.file)
        .with_context(|| format!("opening {}", a.file.display()))?
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .with_context(|| format!("reading {}", a.file.display()))?;
    let verdict = match a.game {
        GameName::Raycaster => verdict::<RaycasterEngine>(&text, a)?,
        GameName::Tag => verdict::<TagWorld>(&text, a)?,
    };
    let line = serde_json::to_string(&verdict).context("encoding the verdict")?;
    crate::stdout::line(&line);
    if verdict.matches == Some(false) {
        anyhow::bail!("the replay does not reproduce the recorded final world hash");
    }
    Ok(())
}

/// The file's verdict as a replay of game `E`.
fn verdict<E: Game>(text: &str, a: &ReplayArgs) -> anyhow::Result<ReplayVerdict> {
    let replay = Replay::<E::Wire>::parse(text).with_context(|| format!("{}", a.file.display()))?;
    Ok(replay.verdict::<E>(a.to_tick)?)
}
