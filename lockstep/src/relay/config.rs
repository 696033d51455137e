//! What a relay is configured with, what it asks its driver to send, and
//! what it reports.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use game_api::PlayerId;
use protocol::tick::{DISCONNECT_GRACE_MS, TICK_RATE_HZ};

use crate::frame::Frame;
use crate::log::CatchUp;

/// A peer connection, numbered by the relay's driver.
pub type Slot = usize;

/// Ticks between the snapshots a relay asks its authority for, unless
/// configured otherwise.
pub const DEFAULT_SNAPSHOT_INTERVAL: u64 = 600;

/// The longest snapshot interval a relay should be given, ticks (a
/// minute): a guest holds at most three minutes of bundles while a
/// catch-up's state is on its way, and a catch-up can carry two intervals.
pub const MAX_SNAPSHOT_INTERVAL: u64 = 1_800;

/// What a relay is configured with.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Players at once.
    pub max_players: usize,
    /// Spectators at once.
    pub max_spectators: usize,
    /// Start as soon as this many players are connected.
    pub start_players: usize,
    /// Start with whoever is there this long after the first player came
    /// (`None`: wait for `start_players`).
    pub lobby_wait: Option<Duration>,
    /// Ticks per second.
    pub tick_rate_hz: u32,
    /// Ticks between snapshots asked of the authority.
    pub snapshot_interval: u64,
    /// Ticks a hash report waits for the other voters before it is judged.
    pub judge_window: u64,
    /// How long a dropped player keeps its place (neutral input).
    pub grace: Duration,
    /// How long a level start waits for the peers to load it, and how
    /// long the authority may take to answer before another is asked.
    pub answer_timeout: Duration,
    /// Players may join a running level.
    pub late_join: bool,
    /// Player seats one [`Origin`] may hold at once.
    pub max_seats_per_origin: usize,
}

/// Where a connection comes from, as the driver knows it (a client
/// address or network, reduced to a number; each connection its own when
/// the driver knows none). A stranger may take several seats: one
/// origin's seats are capped ([`RelayConfig::max_seats_per_origin`]) and
/// count once when hashes are judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin(pub u64);

impl Origin {
    /// The origin of a connection whose address the driver does not know:
    /// its own, apart from every other.
    pub fn of_slot(slot: Slot) -> Origin {
        Origin((1 << 63) | slot as u64)
    }
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            max_players: 8,
            max_spectators: 8,
            start_players: 2,
            lobby_wait: None,
            tick_rate_hz: TICK_RATE_HZ,
            snapshot_interval: DEFAULT_SNAPSHOT_INTERVAL,
            judge_window: 120,
            grace: Duration::from_millis(DISCONNECT_GRACE_MS),
            answer_timeout: Duration::from_secs(10),
            late_join: true,
            max_seats_per_origin: 4,
        }
    }
}

impl RelayConfig {
    /// The most frames a level's log holds: two snapshot intervals (the
    /// newest snapshot may still await its verdict) plus the judging
    /// window. Past it the log drops its anchor (see [`crate::log`]).
    pub fn log_cap(&self) -> usize {
        let frames = 2 * self.snapshot_interval.max(1) + self.judge_window;
        usize::try_from(frames).unwrap_or(usize::MAX)
    }
}

/// How a connection asks to come in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A new player.
    Player {
        /// Its display name.
        name: String,
        /// Its input delay, ticks, fitted by the driver to its link.
        input_delay: u64,
    },
    /// A watcher: no seat, no input, no vote.
    Spectator {
        /// Its display name.
        name: String,
    },
    /// A player of this level back on a new connection (the driver
    /// checked its rejoin token).
    Resume {
        /// The player it was.
        player: PlayerId,
        /// Its new link's input delay, ticks (kept for the rest of the level).
        input_delay: u64,
    },
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every player seat is taken.
    Full,
    /// The connection's origin holds as many seats as one may.
    OriginFull,
    /// Every spectator place is taken.
    SpectatorsFull,
    /// The session has started and late join is off.
    Started,
    /// A resume for a player who is not in the level (removed, or never was).
    NotInLevel,
    /// The log cannot rebuild a peer right now (its anchor was dropped;
    /// the next verified snapshot restores it).
    NoAnchor,
    /// The session is over.
    Ended,
}

/// Why a relay session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayEnd {
    /// The authority reported the last level's end.
    Completed,
    /// Every player left.
    Empty,
    /// The relay shut down.
    Shutdown,
}

/// What a relay sends.
#[derive(Clone, Debug)]
pub enum RelayMessage<I> {
    /// Who the authority is from `from_tick` on (sent to everyone when it
    /// changes, and to each newcomer).
    Authority {
        /// The level.
        epoch: u32,
        /// The authority's player.
        player: PlayerId,
        /// The first tick it answers for.
        from_tick: u64,
    },
    /// To the authority: build level `level_index` (epoch `epoch`) for
    /// this roster and answer with its payload.
    AskLevel {
        /// The level's epoch.
        epoch: u32,
        /// The level's index (0 is the first).
        level_index: u32,
        /// Every player, sorted, with its display name.
        roster: BTreeMap<PlayerId, String>,
        /// Every player's input delay, ticks.
        input_delays: BTreeMap<PlayerId, u64>,
    },
    /// To the authority: answer with the world at `tick` (before that
    /// tick's frame) and its hash.
    AskSnapshot {
        /// The level.
        epoch: u32,
        /// The tick.
        tick: u64,
    },
    /// A level starts from the authority's payload at tick 0.
    LevelStart {
        /// The level's epoch.
        epoch: u32,
        /// The payload.
        payload: Arc<[u8]>,
    },
    /// Rebuild the level from a snapshot and the frames after it (a late
    /// joiner, a rejoin, a spectator, a desynced peer).
    CatchUp {
        /// The level's epoch.
        epoch: u32,
        /// The snapshot and frames.
        catch_up: CatchUp<I>,
    },
    /// One tick.
    Frame(Arc<Frame<I>>),
    /// The level ended at `tick` (its frames from `tick` on do not count).
    LevelEnd {
        /// The level.
        epoch: u32,
        /// The tick it ended at.
        tick: u64,
    },
    /// The session is over.
    SessionEnd(RelayEnd),
}

/// What the driver should send.
#[derive(Clone, Debug)]
pub enum RelayOutput<I> {
    /// To one connection.
    To(Slot, RelayMessage<I>),
    /// The same message to several.
    Broadcast(Vec<Slot>, RelayMessage<I>),
    /// Close a connection (replaced by a rejoin).
    Close(Slot),
}

/// What happened, for the driver's log and counters.
#[derive(Clone, Debug, PartialEq)]
pub enum RelayEvent {
    /// A tick ran.
    Ticked {
        /// How late it ran, microseconds.
        lateness_us: u64,
        /// Inputs held over in its frame.
        held: u64,
    },
    /// A player entered the level at a tick.
    Arrived {
        /// The level.
        epoch: u32,
        /// The tick.
        tick: u64,
        /// Who.
        player: PlayerId,
    },
    /// A player left the level at a tick.
    Removed {
        /// The level.
        epoch: u32,
        /// The tick.
        tick: u64,
        /// Who.
        player: PlayerId,
    },
    /// Authority passed to `player` from `tick`.
    AuthorityChanged {
        /// The level (0 before the first).
        epoch: u32,
        /// The first tick it answers for.
        tick: u64,
        /// Who.
        player: PlayerId,
    },
    /// A level started ticking.
    LevelStarted {
        /// Its epoch.
        epoch: u32,
    },
    /// The authority ended a level at a tick.
    LevelEnded {
        /// Its epoch.
        epoch: u32,
        /// The tick.
        tick: u64,
    },
    /// A peer's hash lost the vote.
    Desynced {
        /// The connection.
        slot: Slot,
        /// The level.
        epoch: u32,
        /// The judged tick.
        tick: u64,
    },
    /// A peer was sent a catch-up from the log's anchor.
    Resynced {
        /// The connection.
        slot: Slot,
        /// The anchor's tick.
        from_tick: u64,
    },
    /// A snapshot's hash matched the verdict: the log is anchored on it.
    SnapshotVerified {
        /// The level.
        epoch: u32,
        /// Its tick.
        tick: u64,
        /// Its payload's size.
        bytes: usize,
    },
    /// The hashes of a tick split with no majority of origins: nobody
    /// was rebuilt and nothing anchored.
    Split {
        /// The level.
        epoch: u32,
        /// The tick judged.
        tick: u64,
    },
    /// A snapshot's hash lost the vote, or won only a tie: it was dropped.
    SnapshotRejected {
        /// The level.
        epoch: u32,
        /// Its tick.
        tick: u64,
    },
    /// An authority message from a connection that is not the authority
    /// (or for another level, or malformed): ignored.
    Ignored {
        /// The connection.
        slot: Slot,
        /// What was wrong.
        why: &'static str,
    },
    /// The session ended.
    Ended(RelayEnd),
}

/// Counters, as plain values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Frames sent.
    pub frames: u64,
    /// Inputs held over (a player's input was late).
    pub held_inputs: u64,
    /// Times authority changed hands after the first choice.
    pub handovers: u64,
    /// Peers judged desynced.
    pub desyncs: u64,
    /// Catch-ups sent (joins, rejoins, spectators, resyncs).
    pub catch_ups: u64,
    /// Snapshots verified.
    pub snapshots_verified: u64,
    /// The most frames the log ever held.
    pub log_frames_max: usize,
    /// The largest anchor payload, bytes.
    pub anchor_bytes_max: usize,
    /// Ticks whose hashes split with no majority of origins.
    pub splits: u64,
}
