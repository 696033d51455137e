//! Watching a replay in the browser: the recorded level re-simulated tick
//! by tick on the engine every peer runs ([`netcode::replay`]), so the page
//! can play, pause, change speed, jump to a tick (a desync report's) and
//! draw any player's view ([`View`]). At the end it says whether the run
//! reproduced the recorded end, as `host-daemon replay` does.

use engine::wire::Raycaster;
use std::collections::BTreeMap;

use engine::{Engine, Game, RaycasterEngine};
use game_api::PlayerId;
use game_api::WorldHash;
use netcode::replay::{self, Replay};
use protocol::name::sanitize_display_name;
use serde::Serialize;

use crate::view::View;

/// Most ticks one call may run (a page asking for more gets this many).
pub const MAX_STEP_TICKS: u32 = 3_000;

/// A replay being watched.
#[derive(Debug)]
pub struct ReplayViewer {
    replay: Replay<Raycaster>,
    engine: RaycasterEngine,
    /// Bundles applied so far.
    next: usize,
    names: BTreeMap<PlayerId, String>,
}

/// Where the viewer stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ViewerStatus {
    /// The engine's tick now.
    pub tick: u64,
    /// The tick after the last recorded bundle.
    pub last_tick: u64,
    /// Every recorded tick has run.
    pub ended: bool,
    /// The level's roster now, sorted.
    pub roster: Vec<String>,
    /// Every player's display name ("" when none).
    pub names: BTreeMap<String, String>,
    /// The recording host's build.
    pub build: String,
    /// The level's epoch in its session.
    pub level_epoch: u32,
    /// The session's difficulty.
    pub difficulty: &'static str,
    /// At the end: the world hash reached, 16 hex digits.
    pub final_world_hash: Option<String>,
    /// The hash the file's end record names, if it has one.
    pub recorded_world_hash: Option<String>,
    /// At the end of a file with an end record: whether the run reproduced
    /// it (tick and hash).
    pub matches: Option<bool>,
}

impl ReplayViewer {
    /// Reads a replay file's text and builds its level at its first tick.
    pub fn open(text: &str) -> Result<Self, String> {
        let replay = Replay::parse(text).map_err(|e| format!("replay: {e}"))?;
        let engine = replay
            .start::<RaycasterEngine>()
            .map_err(|e| format!("replay: {e}"))?;
        let names = replay.header.names.clone();
        Ok(Self {
            replay,
            engine,
            next: 0,
            names,
        })
    }

    /// Runs up to `ticks` recorded ticks (at most [`MAX_STEP_TICKS`]).
    pub fn step(&mut self, ticks: u32) -> ViewerStatus {
        for _ in 0..ticks.min(MAX_STEP_TICKS) {
            let Some(bundle) = self.replay.bundles.get(self.next) else {
                break;
            };
            for (joiner, add) in bundle.roster_add.iter().flatten() {
                self.names
                    .insert(joiner.clone(), sanitize_display_name(&add.name));
            }
            replay::apply(&mut self.engine, bundle);
            self.next += 1;
        }
        self.status()
    }

    /// Goes to `tick` (clamped to the recording): forward by running the
    /// ticks between, backward by building the level again and running
    /// from its start.
    pub fn seek(&mut self, tick: u64) -> Result<ViewerStatus, String> {
        if tick < self.engine.tick() {
            self.engine = self
                .replay
                .start::<RaycasterEngine>()
                .map_err(|e| format!("replay: {e}"))?;
            self.next = 0;
            self.names = self.replay.header.names.clone();
        }
        while self.engine.tick() < tick && self.next < self.replay.bundles.len() {
            let left = tick - self.engine.tick();
            self.step(u32::try_from(left).unwrap_or(u32::MAX).min(MAX_STEP_TICKS));
        }
        Ok(self.status())
    }

    /// Where the viewer stands.
    pub fn status(&self) -> ViewerStatus {
        let ended = self.next >= self.replay.bundles.len();
        let first = self.replay.bundles.first().map_or(0, |b| b.tick);
        let last_tick = first + self.replay.bundles.len() as u64;
        let hash = ended.then(|| WorldHash(self.engine.world_hash()).to_string());
        let recorded = self.replay.end.as_ref();
        let matches = match (recorded, &hash) {
            (Some(end), Some(h)) => {
                Some(end.ticks == self.engine.tick() && &end.final_world_hash == h)
            }
            _ => None,
        };
        ViewerStatus {
            tick: self.engine.tick(),
            last_tick,
            ended,
            roster: self
                .engine
                .roster()
                .iter()
                .map(ToString::to_string)
                .collect(),
            names: self
                .names
                .iter()
                .map(|(id, n)| (id.to_string(), n.clone()))
                .collect(),
            build: self.replay.header.build.clone(),
            level_epoch: self.replay.header.level_epoch,
            difficulty: self.engine.difficulty().as_str(),
            final_world_hash: hash,
            recorded_world_hash: recorded.map(|e| e.final_world_hash.clone()),
            matches,
        }
    }

    /// The world now through `player`'s eyes (any roster member; `None`:
    /// no one's in particular).
    pub fn view(&self, player: Option<&str>) -> View {
        let me = player.map(PlayerId::new);
        View::of(&self.engine, me.as_ref(), &self.names, |_| (0.0, 0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../../web/test/fixtures/short-level.replay");

    #[test]
    fn stepping_to_the_end_reproduces_the_recorded_end() {
        let mut v = ReplayViewer::open(FIXTURE).expect("a replay");
        let start = v.status();
        assert_eq!(start.tick, 0);
        assert!(!start.ended);
        assert_eq!(start.matches, None);
        let mut status = start;
        while !status.ended {
            status = v.step(7);
        }
        assert_eq!(status.tick, status.last_tick);
        assert_eq!(status.matches, Some(true), "{status:?}");
        assert_eq!(status.final_world_hash, status.recorded_world_hash);
        let verdict = crate::replay::verify(FIXTURE).expect("a replay");
        assert_eq!(Some(verdict.final_world_hash), status.final_world_hash);
    }

    #[test]
    fn seeking_back_and_forth_lands_on_the_same_world() {
        let mut v = ReplayViewer::open(FIXTURE).expect("a replay");
        v.seek(120).expect("forward");
        let at_120 = v.engine.world_hash();
        assert_eq!(v.status().tick, 120);
        v.seek(250).expect("forward");
        v.seek(120).expect("back");
        assert_eq!(v.engine.world_hash(), at_120);
        let end = v.seek(u64::MAX).expect("past the end");
        assert!(end.ended);
        assert_eq!(end.matches, Some(true));
    }

    #[test]
    fn a_view_follows_the_chosen_player() {
        let mut v = ReplayViewer::open(FIXTURE).expect("a replay");
        v.step(30);
        let roster = v.status().roster;
        let who = roster.last().expect("players");
        let view = v.view(Some(who));
        assert_eq!(view.me.as_deref(), Some(who.as_str()));
        assert_eq!(view.tick, 30);
        assert!(view.players.iter().any(|p| &p.id == who));
    }

    #[test]
    fn junk_is_an_error_not_a_panic() {
        for junk in ["", "nothing", "{\"replay\":{}}", "\u{0}\n~"] {
            assert!(ReplayViewer::open(junk).is_err(), "{junk:?}");
        }
    }
}
