//! Engine throughput: ticks per second for 1, 5 and 8 players on a generated
//! level (inputs recorded from a bot team, so players move, fight and loot),
//! the bot controller's own cost, and snapshot encode/apply cost.
//!
//! `cargo bench -p engine --bench tick -- --warm-up-time 1 --measurement-time 3`

use engine::wire::raycaster::{LevelSeed, Settings};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use engine::level_gen::generate;
use engine::wire::input::InputSnapshot;
use engine::wire::snapshot::ReconciliationSnapshot;
use engine::{BotController, Difficulty, Game, LevelSetup, RaycasterEngine};
use game_api::PlayerId;

const TICKS: u64 = 600;

type Inputs = BTreeMap<PlayerId, InputSnapshot>;

fn level(players: u32) -> RaycasterEngine {
    let setup = LevelSetup {
        body: generate(1, 2, players),
        roster: (0..players)
            .map(|i| PlayerId::new(format!("p{i}")))
            .collect(),
        head: LevelSeed { gameplay_seed: 7 },
        settings: Settings {
            difficulty: Difficulty::Normal,
        },
        player_count: players,
        carryovers: BTreeMap::new(),
        input_delays: BTreeMap::new(),
    };
    RaycasterEngine::new_level(setup).expect("generated level is valid")
}

/// A fresh level and TICKS ticks of bot inputs recorded on it.
fn recorded(players: u32) -> (RaycasterEngine, Vec<Inputs>) {
    let start = level(players);
    let mut e = start.clone();
    let bots: Vec<BotController> = e.roster().into_iter().map(BotController::new).collect();
    let inputs = (0..TICKS)
        .map(|_| {
            let i: Inputs = bots
                .iter()
                .map(|b| (b.player_id().clone(), b.decide(&e)))
                .collect();
            e.advance(&i, &[]);
            i
        })
        .collect();
    (start, inputs)
}

fn ticks(c: &mut Criterion) {
    let mut g = c.benchmark_group("advance");
    g.throughput(Throughput::Elements(TICKS));
    for players in [1u32, 5, 8] {
        let (start, inputs) = recorded(players);
        g.bench_with_input(BenchmarkId::from_parameter(players), &players, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut e = start.clone();
                    let t = Instant::now();
                    for i in &inputs {
                        e.advance(black_box(i), &[]);
                    }
                    total += t.elapsed();
                    black_box(e.tick());
                }
                total
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("advance_with_bots");
    g.throughput(Throughput::Elements(TICKS));
    for players in [1u32, 5] {
        let start = level(players);
        let bots: Vec<BotController> = start.roster().into_iter().map(BotController::new).collect();
        g.bench_with_input(BenchmarkId::from_parameter(players), &players, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut e = start.clone();
                    let t = Instant::now();
                    for _ in 0..TICKS {
                        let i: Inputs = bots
                            .iter()
                            .map(|b| (b.player_id().clone(), b.decide(&e)))
                            .collect();
                        e.advance(&i, &[]);
                    }
                    total += t.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

fn snapshots(c: &mut Criterion) {
    let (start, inputs) = recorded(5);
    let mut e = start;
    for i in &inputs[..300] {
        e.advance(i, &[]);
    }
    let mut g = c.benchmark_group("snapshot_5p");
    g.bench_function("encode", |b| {
        b.iter(|| {
            let s = e.snapshot();
            black_box(serde_json::to_string(&s).expect("encode"))
        })
    });
    let wire = serde_json::to_string(&e.snapshot()).expect("encode");
    g.bench_function("decode_and_apply", |b| {
        let mut target = e.clone();
        b.iter(|| {
            let s: ReconciliationSnapshot = serde_json::from_str(black_box(&wire)).expect("decode");
            target.apply_snapshot(&s).expect("apply");
        })
    });
    g.bench_function("world_hash", |b| b.iter(|| black_box(e.world_hash())));
    g.finish();
    eprintln!("snapshot_5p wire size: {} bytes", wire.len());
}

criterion_group!(benches, ticks, snapshots);
criterion_main!(benches);
