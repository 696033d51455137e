//! What the host and guest sessions drive: a deterministic [`Game`], and
//! the [`Bot`]s that play it. GGRS draws the same line with its `Config`
//! trait; the sessions never look inside the game's types.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::level::{LevelSetup, LevelStatus};
use crate::plan::{LevelPlan, LevelSpec};
use crate::player::PlayerId;
use crate::score::PlayerScore;
use crate::wire::GameWire;

/// One player's input for one tick, in game `G`.
pub type Input<G> = <<G as Game>::Wire as GameWire>::Input;
/// The reconciliation snapshot of game `G`.
pub type Snapshot<G> = <<G as Game>::Wire as GameWire>::Snapshot;
/// What one player of game `G` carries to the next level.
pub type Carryover<G> = <<G as Game>::Wire as GameWire>::Carryover;
/// The session-wide settings of game `G`.
pub type Settings<G> = <<G as Game>::Wire as GameWire>::Settings;
/// What a relay session of game `G` builds its levels from.
pub type Campaign<G> = <<G as Game>::Wire as GameWire>::Campaign;

/// A deterministic simulation the sessions can drive: every peer that
/// builds the same level and advances it with the same inputs hashes
/// equal at every tick.
pub trait Game: Sized {
    /// What its peers send each other.
    type Wire: GameWire;
    /// Its computer player.
    type Bot: Bot<Self>;
    /// Why it refused a level, a snapshot or a saved state.
    type Error: std::error::Error + Send + Sync + 'static;

    /// A correction at least this far (in [`Game::positions`] units) snaps
    /// in rendering too; smaller ones are smoothed over
    /// [`Game::CORRECTION_SMOOTH_MS`].
    const SNAP_THRESHOLD: f64 = f64::INFINITY;

    /// The rendering window over which a small correction decays.
    const CORRECTION_SMOOTH_MS: u64 = 0;

    /// A correction at least this far (in [`Game::positions`] units) can
    /// be seen despite the smoothing: the netgraph's correction bar turns
    /// red past it (infinite: the game does not say).
    const VISIBLE_CORRECTION: f64 = f64::INFINITY;

    /// The levels a host plays unless it is given others.
    fn default_plan() -> Arc<dyn LevelPlan<Self::Wire>>;

    /// Level `index` of `campaign` for `player_count` players: what a relay
    /// session's authority builds (a relay runs no game, and names the
    /// campaign only).
    fn campaign_level(
        campaign: &Campaign<Self>,
        index: u32,
        player_count: u32,
    ) -> LevelSpec<Self::Wire>;

    /// Builds a level.
    ///
    /// # Errors
    ///
    /// The setup is not one the game can play (its content fails the
    /// game's checks, or the roster is empty, unsorted or repeats).
    fn new_level(setup: LevelSetup<Self::Wire>) -> Result<Self, Self::Error>;

    /// Simulates one tick. `roster_remove` players are removed at the start
    /// of this tick; a roster member missing from `inputs` gets the neutral
    /// input.
    fn advance(&mut self, inputs: &BTreeMap<PlayerId, Input<Self>>, roster_remove: &[PlayerId]);

    /// Adds `player`, whose input delay is `input_delay` ticks, to the
    /// roster at the start of the current tick, before [`Game::advance`]
    /// runs it (a late joiner: every peer does this at the same tick). A
    /// player already in the roster is left as it is.
    fn add_player(&mut self, player: &PlayerId, input_delay: u64);

    /// The reconciliation snapshot of the current tick. It may carry what
    /// changed since the previous call (the raycaster's tile changes), so
    /// every snapshot taken is one the host sends: `&mut self`.
    fn snapshot(&mut self) -> Snapshot<Self>;

    /// Snaps every reconciled field to the host's snapshot.
    ///
    /// # Errors
    ///
    /// The snapshot does not fit this level (its tick, its players, a
    /// value out of range); nothing changed.
    fn apply_snapshot(&mut self, snapshot: &Snapshot<Self>) -> Result<(), Self::Error>;

    /// A hash of the whole simulation state in canonical order: after
    /// [`Game::apply_snapshot`] two peers at the same tick hash equal.
    fn world_hash(&self) -> u64;

    /// The whole world at the current tick, exactly: a peer that builds
    /// the same level, loads it ([`Game::load_exact`]) and applies the same
    /// inputs hashes equal from then on (late join, rejoin, spectators,
    /// a relay's anchors).
    ///
    /// # Errors
    ///
    /// The state could not be written.
    fn save_exact(&self) -> Result<Vec<u8>, Self::Error>;

    /// Restores a state from [`Game::save_exact`] of the same level.
    ///
    /// # Errors
    ///
    /// The bytes are not such a state; nothing changed.
    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;

    /// The level's status.
    fn status(&self) -> LevelStatus;

    /// Ticks simulated this level.
    fn tick(&self) -> u64;

    /// The current roster, sorted.
    fn roster(&self) -> Vec<PlayerId>;

    /// What every roster member carries into the next level.
    fn carryovers(&self) -> BTreeMap<PlayerId, Carryover<Self>>;

    /// Every player's score this level, players removed mid-level included.
    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore>;

    /// A position per player, for renderers that smooth corrections (none
    /// by default: nothing is smoothed).
    fn positions(&self) -> BTreeMap<PlayerId, (f64, f64)> {
        BTreeMap::new()
    }

    /// Knocks this peer's world off the others' on purpose (a fault for
    /// tests of the desync path): the shared randomness and, where there is
    /// one, the player `me`.
    ///
    /// # Errors
    ///
    /// A sentence saying why it could not: the game has no such fault (the
    /// default, which has no [`Game::Error`] to build), or applying it
    /// failed.
    fn scramble(&mut self, _me: Option<&PlayerId>) -> Result<(), String> {
        Err("this game has no fault injection".to_owned())
    }
}

/// A computer player of game `G`: decides one player's input from the
/// world as it stands.
pub trait Bot<G: Game> {
    /// A bot driving `player`.
    fn new(player: PlayerId) -> Self;

    /// The player it drives.
    fn player_id(&self) -> &PlayerId;

    /// A level starts, and the bot's inputs apply `input_delay` ticks after
    /// it decides them.
    fn start_level(&mut self, _input_delay: u64) {}

    /// The input to tag for the world's tick plus the input delay.
    fn decide(&mut self, world: &G) -> Input<G>;
}

/// A bot that never touches the controls (idle players, test games).
#[derive(Clone, Debug)]
pub struct IdleBot(PlayerId);

impl<G: Game> Bot<G> for IdleBot {
    fn new(player: PlayerId) -> Self {
        Self(player)
    }

    fn player_id(&self) -> &PlayerId {
        &self.0
    }

    fn decide(&mut self, _: &G) -> Input<G> {
        Input::<G>::default()
    }
}
