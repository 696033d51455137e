//! What the predicted view costs: a guest of a 5-player session on a 75 ms
//! link (its fitted input delay and the one-way latency put several ticks
//! between its newest input and the confirmed engine), the prediction run
//! from its state at tick 200 of a generated level.
//!
//! `cargo bench -p netcode --bench predict`

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use engine::plan::GeneratedCampaign;
use engine::{Game, RaycasterEngine};
use netcode::guest::GuestConfig;
use netcode::host::HostConfig;
use netcode::sim::{LinkConfig, Scenario, Sim};

fn predicted_view(c: &mut Criterion) {
    let mut sim: Sim<RaycasterEngine> = Sim::new(Scenario {
        host: HostConfig {
            plan: Arc::new(GeneratedCampaign {
                seed: 11,
                levels: 1,
            }),
            bots: 3,
            expected_guests: 1,
            ..HostConfig::default()
        },
        guests: vec![(
            GuestConfig::default(),
            LinkConfig {
                latency: Duration::from_millis(75),
                seed: 1,
                ..LinkConfig::default()
            },
        )],
        events: vec![],
    });
    while sim
        .guest(0)
        .and_then(|g| g.engine())
        .is_none_or(|e| e.tick() < 200)
    {
        assert!(sim.step(), "the session ended before tick 200");
    }
    // The moment just after a bundle was applied: the most ticks pending.
    let guest = sim.guest(0).expect("one guest");
    let confirmed = guest.engine().expect("running");
    let ahead = guest.predicted_tick().expect("pending inputs") - confirmed.tick();
    c.bench_function(
        &format!("predicted view, 5 players, {ahead} ticks ahead"),
        |b| b.iter(|| guest.predicted()),
    );
    c.bench_function("copy of the confirmed engine alone", |b| {
        b.iter(|| confirmed.clone())
    });
}

criterion_group!(benches, predicted_view);
criterion_main!(benches);
