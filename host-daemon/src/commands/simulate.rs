//! `host-daemon simulate`: a host, its bot players and bot guests in one
//! process over a simulated network; prints one JSON summary line.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use engine::plan::GeneratedCampaign;
use engine::wire::raycaster::Settings;
use engine::{Difficulty, RaycasterEngine};
use netcode::guest::GuestConfig;
use netcode::host::HostConfig;
use netcode::sim::{LinkConfig, NetAction, NetEvent, Scenario, Summary};

/// `simulate` flags.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Bot players driven by the host (besides the host's own player).
    #[arg(long, default_value_t = 1)]
    bots: u32,
    /// Bot guests connecting over the simulated network.
    #[arg(long, default_value_t = 2)]
    guests: usize,
    /// One-way base latency per link, milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// One-way jitter per link (uniform 0..=J), milliseconds.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Share of messages (0 to 1) whose first transmission is lost; each
    /// arrives after --retransmit-ms more, later ones waiting behind it.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Extra delay of a lost message, milliseconds (its retransmission).
    #[arg(long, default_value_t = 200)]
    retransmit_ms: u64,
    /// Stall guest 1's link for this long, 3 s (90 ticks) into the run.
    #[arg(long, default_value_t = 0)]
    stall_ms: u64,
    /// Cut guest GUEST's link (1-based) once the host has simulated TICK ticks.
    #[arg(long, value_name = "GUEST@TICK")]
    disconnect: Vec<String>,
    /// Levels in the campaign.
    #[arg(long, default_value_t = 1)]
    levels: u32,
    /// Seed of the campaign and of the network's jitter.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Session difficulty: easy, normal or hard.
    #[arg(long, default_value = "normal")]
    difficulty: String,
    /// Safety stop per level, ticks.
    #[arg(long, default_value_t = 20_000)]
    max_ticks: u64,
    /// Pace the host at 30 ticks a second on the wall clock, through the
    /// daemon's drivers (tick lateness is then real); by default the run
    /// is on a virtual clock and takes as long as the CPU needs.
    #[arg(long)]
    realtime: bool,
}

fn parse_disconnect(s: &str, guests: usize) -> anyhow::Result<NetEvent> {
    let (g, t) = s.split_once('@').context("--disconnect takes GUEST@TICK")?;
    let g: usize = g.parse().context("GUEST must be a number")?;
    let t: u64 = t.parse().context("TICK must be a number")?;
    if g == 0 || g > guests {
        bail!("--disconnect guest {g} is not in 1..={guests}");
    }
    Ok(NetEvent {
        at_tick: t,
        action: NetAction::Disconnect(g - 1),
    })
}

/// The scenario the flags describe.
pub fn scenario(a: &SimulateArgs) -> anyhow::Result<Scenario<RaycasterEngine>> {
    let difficulty = Difficulty::parse(&a.difficulty).context("unknown --difficulty")?;
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss is a share of messages, from 0 up to (not including) 1");
    }
    let mut events = a
        .disconnect
        .iter()
        .map(|d| parse_disconnect(d, a.guests))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if a.stall_ms > 0 && a.guests > 0 {
        events.push(NetEvent {
            at_tick: 90,
            action: NetAction::Stall(0, Duration::from_millis(a.stall_ms)),
        });
    }
    let guests = (0..a.guests)
        .map(|i| {
            (
                GuestConfig {
                    display_name: format!("Guest {}", i + 1),
                    ..GuestConfig::default()
                },
                LinkConfig {
                    latency: Duration::from_millis(a.latency_ms),
                    jitter: Duration::from_millis(a.jitter_ms),
                    loss: a.loss,
                    retransmit: Duration::from_millis(a.retransmit_ms),
                    seed: u64::from(a.seed) * 1000 + i as u64,
                    ..LinkConfig::default()
                },
            )
        })
        .collect();
    Ok(Scenario {
        host: HostConfig {
            plan: Arc::new(GeneratedCampaign {
                seed: a.seed,
                levels: a.levels,
            }),
            settings: Settings { difficulty },
            bots: a.bots,
            expected_guests: a.guests,
            max_ticks_per_level: Some(a.max_ticks),
            ..HostConfig::default()
        },
        guests,
        events,
    })
}

/// Runs `host-daemon simulate` and prints its summary.
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let scenario = scenario(args)?;
    let outcome = if args.realtime {
        // Wall-clock time: the host paces 30 ticks a second, as in a real
        // session.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .context("building the runtime")?;
        rt.block_on(crate::realtime::run(scenario, None))
    } else {
        netcode::sim::run::<RaycasterEngine>(scenario)
    };
    let summary = Summary::of(&outcome.host, &outcome.guests)
        .with_traffic(&outcome.bytes_to_guests, outcome.elapsed);
    println!(
        "{}",
        serde_json::to_string(&summary).context("encoding the summary")?
    );
    Ok(())
}
