//! The relay's input log: the level's frames since the latest verified
//! snapshot, from which any peer's world is rebuilt (the snapshot's state
//! plus the frames after it).
//!
//! Memory is bounded: a snapshot is asked for every `interval` ticks and,
//! once a majority of hash reports agrees with it, the frames before it
//! are dropped. Should snapshots stop verifying, the log still keeps at
//! most `cap` frames; past that it forgets its anchor and no peer can be
//! rebuilt from it until the next snapshot verifies.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use game_api::PlayerId;

use crate::frame::Frame;

/// An opaque rebuild point from the authority: the world at `tick`, before
/// that tick's frame. Tick 0's is the level's start payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The level it belongs to.
    pub epoch: u32,
    /// The tick whose frame comes next.
    pub tick: u64,
    /// The roster at that tick, each player with its input delay (the
    /// frames after it add and remove from here).
    pub roster: BTreeMap<PlayerId, u64>,
    /// The game's bytes; the relay never reads them.
    pub payload: Arc<[u8]>,
}

/// Where a peer is rebuilt from: a snapshot and every frame after it.
#[derive(Clone, Debug)]
pub struct CatchUp<I> {
    /// The snapshot.
    pub base: Snapshot,
    /// Frames `base.tick..`, oldest first.
    pub frames: Vec<Arc<Frame<I>>>,
}

/// The frames of one level since its anchor.
#[derive(Debug)]
pub struct InputLog<I> {
    /// The latest verified snapshot (`None` once the cap forgot it).
    anchor: Option<Snapshot>,
    /// Frames from the anchor's tick on, oldest first (when the anchor
    /// is gone, the newest `cap`).
    frames: VecDeque<Arc<Frame<I>>>,
    cap: usize,
}

impl<I> InputLog<I> {
    /// A level's log anchored on its start payload, keeping at most `cap`
    /// frames.
    pub fn new(start: Snapshot, cap: usize) -> Self {
        Self {
            anchor: Some(start),
            frames: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    /// Appends the next frame.
    pub fn push(&mut self, frame: Arc<Frame<I>>) {
        self.frames.push_back(frame);
        if self.frames.len() > self.cap {
            self.frames.pop_front();
            self.anchor = None;
        }
    }

    /// Moves the anchor to a verified snapshot and drops the frames before
    /// it. A snapshot older than the anchor, or past the newest frame, is
    /// ignored (returns `false`).
    pub fn anchor_at(&mut self, snapshot: Snapshot) -> bool {
        let next = self.next_tick();
        if snapshot.tick > next {
            return false;
        }
        if let Some(a) = &self.anchor
            && snapshot.tick <= a.tick
        {
            return false;
        }
        while self.frames.front().is_some_and(|f| f.tick < snapshot.tick) {
            self.frames.pop_front();
        }
        self.anchor = Some(snapshot);
        true
    }

    /// The tick of the next frame.
    pub fn next_tick(&self) -> u64 {
        match (self.frames.back(), &self.anchor) {
            (Some(f), _) => f.tick + 1,
            (None, Some(a)) => a.tick,
            (None, None) => 0,
        }
    }

    /// The anchor's tick, if there is one.
    pub fn anchor_tick(&self) -> Option<u64> {
        self.anchor.as_ref().map(|a| a.tick)
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Bytes of the anchor's payload.
    pub fn anchor_bytes(&self) -> usize {
        self.anchor.as_ref().map_or(0, |a| a.payload.len())
    }

    /// What rebuilds a peer now: `None` while the log has no anchor.
    pub fn catch_up(&self) -> Option<CatchUp<I>> {
        let base = self.anchor.clone()?;
        Some(CatchUp {
            base,
            frames: self.frames.iter().cloned().collect(),
        })
    }

    /// Drops every frame after `tick` (the level ended there).
    pub fn truncate_after(&mut self, tick: u64) {
        while self.frames.back().is_some_and(|f| f.tick >= tick) {
            self.frames.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(tick: u64) -> Snapshot {
        Snapshot {
            epoch: 1,
            tick,
            roster: BTreeMap::new(),
            payload: Arc::from(vec![tick as u8]),
        }
    }

    fn frame(tick: u64) -> Arc<Frame<u8>> {
        Arc::new(Frame {
            epoch: 1,
            tick,
            roster: Arc::from([]),
            inputs: Box::from([]),
            held: Vec::new(),
            add: BTreeMap::new(),
            remove: Vec::new(),
        })
    }

    #[test]
    fn a_verified_snapshot_drops_the_frames_before_it() {
        let mut log = InputLog::new(snap(0), 100);
        for t in 0..30 {
            log.push(frame(t));
        }
        assert!(log.anchor_at(snap(20)));
        let c = log.catch_up().unwrap();
        assert_eq!(c.base.tick, 20);
        let ticks: Vec<u64> = c.frames.iter().map(|f| f.tick).collect();
        assert_eq!(ticks, (20..30).collect::<Vec<_>>());
        assert!(!log.anchor_at(snap(10)), "an older snapshot is ignored");
        assert!(
            !log.anchor_at(snap(31)),
            "a snapshot past the log is ignored"
        );
        assert!(log.anchor_at(snap(30)), "the next tick's snapshot is fine");
        assert!(log.is_empty());
    }

    #[test]
    fn past_the_cap_the_log_forgets_its_anchor_until_a_snapshot_verifies() {
        let mut log = InputLog::new(snap(0), 10);
        for t in 0..11 {
            log.push(frame(t));
        }
        assert_eq!(log.len(), 10);
        assert!(log.catch_up().is_none(), "frame 0 is gone: no rebuild");
        assert!(log.anchor_at(snap(5)));
        assert_eq!(log.catch_up().unwrap().frames.len(), 6);
    }

    #[test]
    fn truncating_at_the_level_end_drops_later_frames() {
        let mut log = InputLog::new(snap(0), 100);
        for t in 0..10 {
            log.push(frame(t));
        }
        log.truncate_after(7);
        assert_eq!(log.next_tick(), 7);
    }
}
