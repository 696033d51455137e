//! The `host-daemon` binary: `simulate` runs a host, bot players and bot
//! guests in one process over the simulated network and prints one JSON
//! line. (The WebRTC work adds `host` and `join`.)

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use engine::Difficulty;
use host_daemon::guest::GuestConfig;
use host_daemon::host::HostConfig;
use host_daemon::simnet::LinkConfig;
use host_daemon::simulate::{NetAction, NetEvent, Scenario, Summary, run};

#[derive(Parser, Debug)]
#[command(name = "host-daemon", about = "campfire netcode host daemon")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a whole session in one process over the simulated network.
    Simulate(SimulateArgs),
}

#[derive(Args, Debug)]
struct SimulateArgs {
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

fn scenario(a: &SimulateArgs) -> anyhow::Result<Scenario> {
    let difficulty = Difficulty::parse(&a.difficulty).context("unknown --difficulty")?;
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
                    seed: u64::from(a.seed) * 1000 + i as u64,
                    ..LinkConfig::default()
                },
            )
        })
        .collect();
    Ok(Scenario {
        host: HostConfig {
            seed: a.seed,
            levels: a.levels,
            difficulty,
            bots: a.bots,
            expected_guests: a.guests,
            max_ticks_per_level: Some(a.max_ticks),
            ..HostConfig::default()
        },
        guests,
        events,
    })
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Simulate(args) => {
            let scenario = scenario(&args)?;
            // Wall-clock time: the host paces 30 ticks a second, as in a
            // real session (the tests run the same code on paused time).
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .context("building the runtime")?;
            let outcome = rt.block_on(run(scenario));
            let summary = Summary::of(&outcome);
            println!(
                "{}",
                serde_json::to_string(&summary).context("encoding the summary")?
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Scenario> {
        let cli = Cli::try_parse_from(["host-daemon", "simulate"].iter().chain(args))?;
        let Command::Simulate(a) = cli.command;
        scenario(&a)
    }

    #[test]
    fn simulate_flags_build_the_scenario() {
        let s = parse(&[
            "--bots",
            "2",
            "--guests",
            "3",
            "--latency-ms",
            "40",
            "--jitter-ms",
            "10",
            "--stall-ms",
            "500",
            "--disconnect",
            "2@120",
            "--levels",
            "3",
            "--seed",
            "9",
        ])
        .unwrap();
        assert_eq!(s.guests.len(), 3);
        assert_eq!(s.host.bots, 2);
        assert_eq!(s.host.levels, 3);
        assert_eq!(s.host.expected_guests, 3);
        assert_eq!(s.guests[0].1.latency, Duration::from_millis(40));
        assert!(
            s.events
                .iter()
                .any(|e| e.at_tick == 120 && matches!(e.action, NetAction::Disconnect(1)))
        );
        assert!(s.events.iter().any(
            |e| matches!(e.action, NetAction::Stall(0, d) if d == Duration::from_millis(500))
        ));
    }

    #[test]
    fn bad_disconnect_specs_are_rejected() {
        for bad in ["0@10", "4@10", "x@1", "2", "2@-1"] {
            assert!(
                parse(&["--guests", "3", "--disconnect", bad]).is_err(),
                "{bad}"
            );
        }
        assert!(parse(&["--difficulty", "nightmare"]).is_err());
    }
}
