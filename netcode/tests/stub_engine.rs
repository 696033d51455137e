//! The sessions know only the `Game` trait: a tiny stand-in engine (a
//! counter world that finishes a level after a fixed number of ticks) on
//! the toy game's wire (`game_api::toy`, no type of the raycaster) goes
//! through setup, ticks, reconciliation, a repaired desync, a transition
//! and the end table, host and guests alike.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use game_api::toy::{Count, Rounds, Start, Toy};
use game_api::{
    Game, IdleBot, LevelPlan, LevelSetup, LevelSpec, LevelStatus, PlayerId, PlayerScore,
};
use netcode::guest::{GuestConfig, GuestEnd, GuestFault};
use netcode::host::{HostConfig, HostOutput, HostSession};
use netcode::sim::{LinkConfig, Scenario, final_hash_matches, run};
use protocol::peer::{EndReason, HostMessage, RefusalReason};
use protocol::tick::RECONCILE_INTERVAL_TICKS;

/// Ticks a stub level lasts.
const LEVEL_TICKS: u64 = 100;

/// Why the stub refused something.
#[derive(Debug, thiserror::Error)]
enum StubError {
    #[error("a level needs players")]
    EmptyRoster,
    #[error("snapshot of tick {snapshot}, world at {world}")]
    TickMismatch { snapshot: u64, world: u64 },
    #[error("not a saved stub world: {0}")]
    BadState(String),
}

/// `levels` levels, each starting its count at its index.
#[derive(Debug)]
struct Counting {
    levels: u32,
}

impl LevelPlan<Toy> for Counting {
    fn level_count(&self) -> u32 {
        self.levels
    }
    fn level(&self, index: u32, _: u32) -> LevelSpec<Toy> {
        LevelSpec {
            head: Start {
                start: u64::from(index),
            },
            body: Vec::new(),
        }
    }
}

/// A world that folds every input into one number.
#[derive(Clone, Debug)]
struct CounterWorld {
    tick: u64,
    acc: u64,
    roster: Vec<PlayerId>,
    presses: BTreeMap<PlayerId, u32>,
}

impl Game for CounterWorld {
    type Wire = Toy;
    type Error = StubError;
    type Bot = IdleBot;
    fn default_plan() -> Arc<dyn LevelPlan<Toy>> {
        Arc::new(Counting { levels: 1 })
    }
    fn campaign_level(campaign: &Rounds, index: u32, player_count: u32) -> LevelSpec<Toy> {
        Counting {
            levels: u32::from(campaign.rounds),
        }
        .level(index, player_count)
    }
    fn new_level(setup: LevelSetup<Toy>) -> Result<Self, StubError> {
        if setup.roster.is_empty() {
            return Err(StubError::EmptyRoster);
        }
        Ok(Self {
            tick: 0,
            acc: setup.head.start,
            presses: setup.roster.iter().map(|p| (p.clone(), 0)).collect(),
            roster: setup.roster,
        })
    }
    fn advance(&mut self, inputs: &BTreeMap<PlayerId, u8>, remove: &[PlayerId]) {
        self.roster.retain(|p| !remove.contains(p));
        for (i, id) in self.roster.iter().enumerate() {
            let pressed = inputs.get(id).is_some_and(|x| *x != 0);
            self.acc = self
                .acc
                .wrapping_mul(31)
                .wrapping_add(u64::from(pressed) + i as u64);
            if pressed {
                *self.presses.entry(id.clone()).or_default() += 1;
            }
        }
        self.tick += 1;
    }
    fn snapshot(&mut self) -> Count {
        Count {
            tick: self.tick,
            total: self.acc,
        }
    }
    fn apply_snapshot(&mut self, s: &Count) -> Result<(), StubError> {
        if s.tick != self.tick {
            return Err(StubError::TickMismatch {
                snapshot: s.tick,
                world: self.tick,
            });
        }
        self.acc = s.total;
        Ok(())
    }
    fn world_hash(&self) -> u64 {
        self.tick.rotate_left(32) ^ self.acc
    }
    fn status(&self) -> LevelStatus {
        if self.tick >= LEVEL_TICKS {
            LevelStatus::Complete
        } else {
            LevelStatus::Running
        }
    }
    fn tick(&self) -> u64 {
        self.tick
    }
    fn roster(&self) -> Vec<PlayerId> {
        self.roster.clone()
    }
    fn carryovers(&self) -> BTreeMap<PlayerId, u64> {
        BTreeMap::new()
    }
    fn scores(&self) -> BTreeMap<PlayerId, PlayerScore> {
        self.presses
            .iter()
            .map(|(id, n)| {
                let score = PlayerScore {
                    kill_score: *n,
                    kills: 0,
                };
                (id.clone(), score)
            })
            .collect()
    }
    fn add_player(&mut self, player: &PlayerId, _: u64) {
        if let Err(at) = self.roster.binary_search(player) {
            self.roster.insert(at, player.clone());
            self.presses.entry(player.clone()).or_default();
        }
    }
    fn save_exact(&self) -> Result<Vec<u8>, StubError> {
        Ok(format!("{} {}", self.tick, self.acc).into_bytes())
    }
    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), StubError> {
        let state = String::from_utf8_lossy(bytes);
        let mut parts = state.split(' ').map(str::parse::<u64>);
        match (parts.next(), parts.next()) {
            (Some(Ok(tick)), Some(Ok(acc))) => {
                (self.tick, self.acc) = (tick, acc);
                Ok(())
            }
            _ => Err(StubError::BadState(state.into_owned())),
        }
    }
    fn scramble(&mut self, _: Option<&PlayerId>) -> Result<(), String> {
        self.acc ^= 0xDEAD_BEEF;
        Ok(())
    }
}

#[test]
fn both_sessions_run_a_two_level_session_on_a_stub_engine() {
    let guest = |name: &str, fault| GuestConfig {
        display_name: name.into(),
        bot: false,
        record_ticks: true,
        fault,
        ..GuestConfig::default()
    };
    let link = |seed| LinkConfig {
        latency: Duration::from_millis(15),
        jitter: Duration::from_millis(10),
        seed,
        ..LinkConfig::default()
    };
    let corrupt_at = RECONCILE_INTERVAL_TICKS + 5;
    let o = run::<CounterWorld>(Scenario {
        host: HostConfig {
            plan: Arc::new(Counting { levels: 2 }),
            expected_guests: 2,
            bots: 1,
            ..HostConfig::default()
        },
        guests: vec![
            (guest("Steady", None), link(1)),
            (
                guest("Drifts", Some(GuestFault::CorruptAtTick(corrupt_at))),
                link(2),
            ),
        ],
        ..Scenario::default()
    });
    assert_eq!(o.host.ended(), Some(EndReason::Completed));
    assert_eq!(o.host.stats().levels_completed, 2);
    assert_eq!(o.host.stats().ticks, 2 * LEVEL_TICKS);
    for g in &o.guests {
        assert_eq!(g.ended(), Some(&GuestEnd::Ended(EndReason::Completed)));
        assert_eq!(g.stats().transitions, 1);
        assert!(final_hash_matches(&o.host, g));
        assert_eq!(g.final_scores().len(), 4, "host, bot and two guests");
    }
    let drifter = o.guests[1].player_id().expect("admitted").clone();
    let steady = o.guests[0].player_id().expect("admitted").clone();
    let desyncs = &o.host.stats().desyncs;
    assert!(
        desyncs.get(&drifter).copied().unwrap_or(0) > 0,
        "{desyncs:?}"
    );
    assert_eq!(desyncs.get(&steady), None);
    assert!(
        o.host.stats().persistent_desyncs.is_empty(),
        "the snapshot repaired it"
    );
    assert!(o.guests[1].stats().snapshot_mismatches > 0);
}

#[test]
fn a_silent_connection_loses_its_seat_at_the_hello_deadline() {
    let mut h = HostSession::<CounterWorld>::new(HostConfig {
        hello_timeout: Duration::from_secs(2),
        expected_guests: 2,
        ..HostConfig::default()
    });
    let t0 = Duration::from_secs(7);
    let slot = h.add_guest(t0);
    h.drain_outbox();
    assert_eq!(h.seats_taken(), 1);
    assert_eq!(h.next_wakeup(), Some(t0 + Duration::from_secs(2)));
    h.poll(t0 + Duration::from_millis(1_999));
    assert_eq!(h.seats_taken(), 1);
    assert!(h.drain_outbox().is_empty());
    h.poll(t0 + Duration::from_secs(2));
    assert_eq!(h.seats_taken(), 0, "the silent peer no longer holds a seat");
    let out = h.drain_outbox();
    assert!(out.iter().any(|o| matches!(
        o,
        HostOutput::Send(s, HostMessage::JoinRefused { reason: RefusalReason::BadHandshake, .. }, _) if *s == slot
    )), "{out:?}");
    assert!(out.contains(&HostOutput::Close(slot)));
    assert_eq!(h.next_wakeup(), None);
}
