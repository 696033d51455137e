//! Replay files: one level as the host played it, re-simulated to the
//! same world hash. A host records one with [`crate::host::HostConfig`]'s
//! `record_replay`: its session then emits a [`ReplayRecord`] when a level
//! begins, one per tick, and one when the level stops. The driver writes
//! each as one line ([`ReplayRecord::line`]). Reading a replay
//! ([`Replay::parse`]) and re-simulating it ([`Replay::run`]) needs
//! nothing but the file and the engine.
//!
//! The file is text, one record per line:
//!
//! 1. The header: `{"replay": ReplayHeader}`. It carries the format
//!    version, the build, and everything the level is built from: the
//!    game's level head and settings (flattened: the raycaster's
//!    `gameplaySeed` and `difficulty`), the level body as `map`, the
//!    roster and names, the player count, the carry-overs and the input
//!    delays.
//! 2. Every tick's bundle, as it went out on the wire: the compact form
//!    (`~…`, see `protocol::wire`), or JSON when a bundle has no compact
//!    form.
//! 3. The end, if the level stopped while recording: `{"end": ReplayEnd}`,
//!    with the last tick and the world hash there.
//!
//! A desync report names a level epoch and a tick. Re-simulating its
//! replay with [`Replay::run_to`] stops at that tick with the host's world
//! there.

use std::collections::BTreeMap;

use game_api::{Game, GameWire, LevelSetup, LevelStatus, PlayerId};
use protocol::peer::{HostMessage, TickInputBundle};
use protocol::wire::WireFormat;
use serde::{Deserialize, Serialize};

/// The replay format this build writes and reads.
pub const REPLAY_FORMAT: u32 = 1;

/// Most ticks a replay may hold (about 9 hours at 30 Hz): a bound on what
/// reading a file may allocate and re-simulate.
pub const MAX_REPLAY_TICKS: usize = 1_000_000;

/// Most players a replay's header and each of its bundles may name (a
/// session seats far fewer); a file naming more is refused before it is
/// simulated.
pub const MAX_REPLAY_PLAYERS: usize = 64;

/// Everything a recorded level is built from (the first line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
pub struct ReplayHeader<W: GameWire> {
    /// [`REPLAY_FORMAT`] when written.
    pub format: u32,
    /// The host's build version.
    pub build: String,
    /// The level epoch (1 for the first level).
    pub level_epoch: u32,
    /// The level's place in the campaign (0 for the first).
    pub level_index: u32,
    /// The level's small facts (the raycaster's: `gameplaySeed`).
    #[serde(flatten)]
    pub head: W::LevelHead,
    /// The session's settings (the raycaster's: `difficulty`).
    #[serde(flatten)]
    pub settings: W::Settings,
    /// The player count elite scaling uses for this level.
    pub player_count: u32,
    /// Every player at the level's start, sorted.
    pub roster: Vec<PlayerId>,
    /// Display names by player.
    pub names: BTreeMap<PlayerId, String>,
    /// What each player carried in from the previous level.
    pub carryovers: BTreeMap<PlayerId, W::Carryover>,
    /// Each player's input delay in ticks.
    pub input_delays: BTreeMap<PlayerId, u64>,
    /// The level's content (the raycaster's: its map).
    #[serde(rename = "map")]
    pub body: W::LevelBody,
}

impl<W: GameWire> ReplayHeader<W> {
    /// The level setup this header describes.
    pub fn level_setup(&self) -> LevelSetup<W> {
        LevelSetup {
            body: self.body.clone(),
            roster: self.roster.clone(),
            head: self.head.clone(),
            settings: self.settings.clone(),
            player_count: self.player_count,
            carryovers: self.carryovers.clone(),
            input_delays: self.input_delays.clone(),
        }
    }
}

/// How a recorded level stopped (the last line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayEnd {
    /// The tick the level stopped at.
    pub ticks: u64,
    /// The world hash there, 16 hex digits.
    pub final_world_hash: String,
}

/// One record of a replay, as a host session emits them.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayRecord<W: GameWire> {
    /// A level begins: start a new file.
    Begin(Box<ReplayHeader<W>>),
    /// One tick's bundle.
    Bundle(TickInputBundle<W>),
    /// The level stopped: the file is complete.
    End(ReplayEnd),
}

/// A host's records as the text of one replay file per level (a header
/// starts each), in order: what a driver writes to disk, in memory.
///
/// # Errors
///
/// A record could not be encoded, or one came before any header.
pub fn level_files<W: GameWire>(records: &[ReplayRecord<W>]) -> Result<Vec<String>, ReplayError> {
    let mut files: Vec<String> = Vec::new();
    for record in records {
        if matches!(record, ReplayRecord::Begin(_)) {
            files.push(String::new());
        }
        let Some(file) = files.last_mut() else {
            return Err(ReplayError::Encode("a record before any header".into()));
        };
        file.push_str(&record.line()?);
        file.push('\n');
    }
    Ok(files)
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound = "")]
enum Tagged<W: GameWire> {
    Replay(Box<ReplayHeader<W>>),
    End(ReplayEnd),
}

impl<W: GameWire> ReplayRecord<W> {
    /// The record as one line of a replay file (no newline).
    pub fn line(&self) -> Result<String, ReplayError> {
        let json = |t: &Tagged<W>| {
            serde_json::to_string(t).map_err(|e| ReplayError::Encode(e.to_string()))
        };
        match self {
            ReplayRecord::Begin(h) => json(&Tagged::Replay(h.clone())),
            ReplayRecord::End(e) => json(&Tagged::End(e.clone())),
            ReplayRecord::Bundle(b) => HostMessage::<W>::TickInputBundle(b.clone())
                .encode(WireFormat::Compact)
                .map_err(|e| ReplayError::Encode(e.to_string())),
        }
    }
}

/// Why a replay could not be read or run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReplayError {
    /// A record could not be written.
    #[error("could not encode a replay record: {0}")]
    Encode(String),
    /// The file is not a replay of this format.
    #[error("line {line}: {what}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// The level could not be built from the header.
    #[error("the recorded level could not be built: {0}")]
    Level(String),
}

/// A parsed replay file.
#[derive(Clone, Debug, PartialEq)]
pub struct Replay<W: GameWire> {
    /// The header.
    pub header: ReplayHeader<W>,
    /// Every recorded tick, in order.
    pub bundles: Vec<TickInputBundle<W>>,
    /// How the level stopped, when the recording got that far.
    pub end: Option<ReplayEnd>,
}

/// What re-simulating a replay gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayOutcome {
    /// Ticks simulated.
    pub ticks: u64,
    /// The world hash after the last of them, 16 hex digits.
    pub final_world_hash: String,
    /// Whether that equals the recorded final hash (`None`: the file has
    /// no end record, or the run stopped early).
    pub matches: Option<bool>,
}

/// The report of a re-simulated replay, as `host-daemon replay` prints it
/// and the browser's `replay()` answers it: the level, the ticks run, the
/// hash reached and whether that is the recorded end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayVerdict {
    /// Always `replay`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The recording host's build version.
    pub build: String,
    /// The recorded level's epoch (1 for the first level).
    pub level_epoch: u32,
    /// The level's place in the campaign (0 for the first).
    pub level_index: u32,
    /// Every player at the level's start, sorted.
    pub roster: Vec<PlayerId>,
    /// Ticks simulated.
    pub ticks: u64,
    /// The world hash after the last of them, 16 hex digits.
    pub final_world_hash: String,
    /// The world hash written on the file's end record (`None`: the file
    /// has no end record).
    pub recorded_world_hash: Option<String>,
    /// Whether the run reproduced the recorded end: the same tick and the
    /// same hash (`None`: no end record, or the run stopped early).
    pub matches: Option<bool>,
}

impl<W: GameWire> Replay<W> {
    /// Re-simulates the replay (up to `to_tick`, a desync report's tick,
    /// when given) and reports it.
    pub fn verdict<E: Game<Wire = W>>(
        &self,
        to_tick: Option<u64>,
    ) -> Result<ReplayVerdict, ReplayError> {
        let outcome = match to_tick {
            None => self.run::<E>()?,
            Some(tick) => {
                let (engine, _) = self.run_to::<E>(Some(tick))?;
                ReplayOutcome {
                    ticks: engine.tick(),
                    final_world_hash: game_api::WorldHash(engine.world_hash()).to_string(),
                    matches: None,
                }
            }
        };
        Ok(ReplayVerdict {
            kind: "replay",
            build: self.header.build.clone(),
            level_epoch: self.header.level_epoch,
            level_index: self.header.level_index,
            roster: self.header.roster.clone(),
            ticks: outcome.ticks,
            final_world_hash: outcome.final_world_hash,
            recorded_world_hash: self.end.as_ref().map(|e| e.final_world_hash.clone()),
            matches: outcome.matches,
        })
    }

    /// Reads a replay file's text. Refuses another format, a header or a
    /// bundle naming more than [`MAX_REPLAY_PLAYERS`] players, a bundle of
    /// another level epoch or out of tick order, a line after the end, and
    /// more than [`MAX_REPLAY_TICKS`] bundles.
    pub fn parse(text: &str) -> Result<Self, ReplayError> {
        let bad = |line: usize, what: String| ReplayError::Malformed { line, what };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let header = match lines.next() {
            Some((n, l)) => match serde_json::from_str::<Tagged<W>>(l) {
                Ok(Tagged::Replay(h)) => *h,
                Ok(Tagged::End(_)) => return Err(bad(n, "the end before the header".into())),
                Err(e) => return Err(bad(n, format!("not a replay header: {e}"))),
            },
            None => return Err(bad(1, "an empty file".into())),
        };
        let named = [
            header.roster.len(),
            header.names.len(),
            header.carryovers.len(),
            header.input_delays.len(),
            usize::try_from(header.player_count).unwrap_or(usize::MAX),
        ];
        if named.iter().any(|n| *n > MAX_REPLAY_PLAYERS) {
            return Err(bad(
                1,
                format!("more than {MAX_REPLAY_PLAYERS} players in the header"),
            ));
        }
        if header.format != REPLAY_FORMAT {
            return Err(bad(
                1,
                format!(
                    "replay format {}, this build reads {REPLAY_FORMAT}",
                    header.format
                ),
            ));
        }
        let mut bundles: Vec<TickInputBundle<W>> = Vec::new();
        let mut end = None;
        for (n, l) in lines {
            if l.is_empty() {
                continue;
            }
            if end.is_some() {
                return Err(bad(n, "a record after the end".into()));
            }
            if l.starts_with("{\"end\"") {
                match serde_json::from_str::<Tagged<W>>(l) {
                    Ok(Tagged::End(e)) => end = Some(e),
                    _ => return Err(bad(n, "not an end record".into())),
                }
                continue;
            }
            let bundle = match HostMessage::<W>::decode(l) {
                Ok(HostMessage::TickInputBundle(b)) => b,
                Ok(_) => return Err(bad(n, "not a tick bundle".into())),
                Err(e) => return Err(bad(n, e.to_string())),
            };
            if bundle.inputs.len() > MAX_REPLAY_PLAYERS {
                return Err(bad(
                    n,
                    format!("more than {MAX_REPLAY_PLAYERS} players' inputs"),
                ));
            }
            if bundle.level_epoch != header.level_epoch {
                return Err(bad(
                    n,
                    format!("a bundle of level epoch {}", bundle.level_epoch),
                ));
            }
            let expected = bundles.last().map_or(bundle.tick, |b| b.tick + 1);
            if bundle.tick != expected {
                return Err(bad(
                    n,
                    format!("tick {} where {expected} was due", bundle.tick),
                ));
            }
            if bundles.len() >= MAX_REPLAY_TICKS {
                return Err(bad(n, format!("more than {MAX_REPLAY_TICKS} ticks")));
            }
            bundles.push(bundle);
        }
        Ok(Self {
            header,
            bundles,
            end,
        })
    }

    /// Re-simulates every tick and compares the final hash with the
    /// recorded one.
    pub fn run<E: Game<Wire = W>>(&self) -> Result<ReplayOutcome, ReplayError> {
        let (engine, complete) = self.run_to::<E>(None)?;
        let final_world_hash = game_api::WorldHash(engine.world_hash()).to_string();
        let matches = match (&self.end, complete) {
            (Some(end), true) => {
                Some(end.ticks == engine.tick() && end.final_world_hash == final_world_hash)
            }
            _ => None,
        };
        Ok(ReplayOutcome {
            ticks: engine.tick(),
            final_world_hash,
            matches,
        })
    }

    /// The world after every recorded tick up to `tick` (all of them when
    /// `None`), and whether every recorded tick ran.
    pub fn run_to<E: Game<Wire = W>>(&self, tick: Option<u64>) -> Result<(E, bool), ReplayError> {
        let mut engine = self.start::<E>()?;
        for bundle in &self.bundles {
            if tick.is_some_and(|t| engine.tick() >= t) {
                return Ok((engine, false));
            }
            if level_over(&engine) {
                // Every peer stops at the level's end; a relay's file may
                // hold the frames it sent past it before its authority said.
                break;
            }
            apply(&mut engine, bundle);
        }
        Ok((engine, true))
    }

    /// The recorded level at its first tick, as the host built it.
    pub fn start<E: Game<Wire = W>>(&self) -> Result<E, ReplayError> {
        E::new_level(self.header.level_setup()).map_err(|e| ReplayError::Level(e.to_string()))
    }
}

/// Whether `engine`'s level is over (completed or lost): no bundle
/// applies past it.
pub fn level_over<E: Game>(engine: &E) -> bool {
    matches!(
        engine.status(),
        LevelStatus::Complete | LevelStatus::TeamEliminated
    )
}

/// Runs one recorded tick on `engine`, as every peer did: its roster adds
/// first, then the inputs with its removals.
pub fn apply<E: Game>(engine: &mut E, bundle: &TickInputBundle<E::Wire>) {
    for (joiner, add) in bundle.roster_add.iter().flatten() {
        engine.add_player(joiner, add.input_delay);
    }
    let remove = bundle.roster_remove.clone().unwrap_or_default();
    engine.advance(&bundle.inputs, &remove);
}
