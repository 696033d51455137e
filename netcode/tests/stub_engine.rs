//! The sessions know only the `Game` trait: a tiny stand-in engine (a
//! counter world that finishes a level after a fixed number of ticks) goes
//! through setup, ticks, reconciliation, a repaired desync, a transition
//! and the end table, host and guests alike.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engine::plan::GeneratedCampaign;
use engine::wire::input::{InputSnapshot, PlayerId};
use engine::wire::snapshot::{Carryover, PlayerScore, ReconciliationSnapshot};
use engine::{EngineError, Game, IdleBot, LevelSetup, LevelStatus};
use netcode::guest::{GuestConfig, GuestEnd, GuestFault};
use netcode::host::{HostConfig, HostSession};
use netcode::sim::{LinkConfig, Scenario, final_hash_matches, run};
use protocol::peer::EndReason;
use protocol::tick::RECONCILE_INTERVAL_TICKS;

/// Ticks a stub level lasts.
const LEVEL_TICKS: u64 = 100;

/// A world that folds every input into one number.
#[derive(Clone, Debug)]
struct CounterWorld {
    tick: u64,
    acc: u32,
    roster: Vec<PlayerId>,
    presses: BTreeMap<PlayerId, u32>,
}

impl Game for CounterWorld {
    type Wire = engine::wire::Raycaster;
    type Error = EngineError;
    type Bot = IdleBot;
    fn campaign_level(
        campaign: &engine::wire::raycaster::CampaignSeed,
        index: u32,
        player_count: u32,
    ) -> game_api::LevelSpec<engine::wire::Raycaster> {
        engine::RaycasterEngine::campaign_level(campaign, index, player_count)
    }
    fn new_level(setup: LevelSetup) -> Result<Self, EngineError> {
        if setup.roster.is_empty() {
            return Err(EngineError::BadRoster);
        }
        Ok(Self {
            tick: 0,
            acc: setup.head.gameplay_seed,
            presses: setup.roster.iter().map(|p| (p.clone(), 0)).collect(),
            roster: setup.roster,
        })
    }
    fn advance(&mut self, inputs: &BTreeMap<PlayerId, InputSnapshot>, remove: &[PlayerId]) {
        self.roster.retain(|p| !remove.contains(p));
        for (i, id) in self.roster.iter().enumerate() {
            let pressed = inputs.get(id).is_some_and(|x| x.move_forward);
            self.acc = self
                .acc
                .wrapping_mul(31)
                .wrapping_add(u32::from(pressed) + i as u32);
            if pressed {
                *self.presses.entry(id.clone()).or_default() += 1;
            }
        }
        self.tick += 1;
    }
    fn snapshot(&mut self) -> ReconciliationSnapshot {
        ReconciliationSnapshot {
            tick: self.tick,
            rng_state: self.acc,
            players: BTreeMap::new(),
            enemies: vec![],
            mines: vec![],
            loot_drops: vec![],
            pickups_collected: vec![],
            keys_collected: vec![],
            grid_version: 0,
            grid_delta: vec![],
            residual: None,
        }
    }
    fn apply_snapshot(&mut self, s: &ReconciliationSnapshot) -> Result<(), EngineError> {
        if s.tick != self.tick {
            return Err(EngineError::TickMismatch {
                snapshot: s.tick,
                engine: self.tick,
            });
        }
        self.acc = s.rng_state;
        Ok(())
    }
    fn world_hash(&self) -> u64 {
        (self.tick << 32) | u64::from(self.acc)
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
    fn carryovers(&self) -> BTreeMap<PlayerId, Carryover> {
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
    fn save_exact(&self) -> Result<Vec<u8>, EngineError> {
        Ok(format!("{} {}", self.tick, self.acc).into_bytes())
    }
    fn load_exact(&mut self, bytes: &[u8]) -> Result<(), EngineError> {
        let state = String::from_utf8_lossy(bytes);
        let mut parts = state.split(' ').map(str::parse::<u64>);
        match (parts.next(), parts.next()) {
            (Some(Ok(t)), Some(Ok(a))) => {
                self.acc = u32::try_from(a).map_err(|e| EngineError::BadState(e.to_string()))?;
                self.tick = t;
                Ok(())
            }
            _ => Err(EngineError::BadState(state.into_owned())),
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
            plan: Arc::new(GeneratedCampaign { seed: 3, levels: 2 }),
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
        netcode::host::HostOutput::Send(s, engine::wire::HostMessage::JoinRefused { reason: protocol::peer::RefusalReason::BadHandshake, .. }, _) if *s == slot
    )), "{out:?}");
    assert!(out.contains(&netcode::host::HostOutput::Close(slot)));
    assert_eq!(h.next_wakeup(), None);
}
