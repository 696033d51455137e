//! The `host-daemon` commands, one module each: its clap flags and its
//! `run`. `simulate` runs a host, bot players and bot guests in one process
//! over a simulated network and prints one JSON line; `host` hosts bot
//! sessions through a lobby server over WebRTC; `relay` serves relay
//! sessions the same way; `join` joins one as a (bot) guest; `swarm` joins
//! with many light guests at once; `replay` re-simulates a recorded level;
//! `ctl` drives a running daemon through its control API.

pub mod control;
pub mod ctl;
pub mod host;
pub mod ice;
pub mod join;
pub mod relay;
pub mod replay;
pub mod serving;
pub mod simulate;
pub mod swarm;

use clap::{Parser, Subcommand};

/// The command line.
#[derive(Parser, Debug)]
#[command(name = "host-daemon", about = "campfire netcode host daemon")]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a whole session in one process over the simulated network.
    Simulate(simulate::SimulateArgs),
    /// Host bot sessions through a lobby server over WebRTC. Prints
    /// `session CODE` on stdout for each session it opens.
    Host(host::HostArgs),
    /// Serve relay sessions through a lobby server over WebRTC: every
    /// player connects to the relay, which runs no engine. Prints `session
    /// CODE` for each session it opens and a `relay-report` line when it
    /// ends.
    Relay(relay::RelayArgs),
    /// Join a session through the lobby; prints one JSON line at the end.
    Join(join::JoinArgs),
    /// Re-simulate a recorded level; prints one JSON line.
    Replay(replay::ReplayArgs),
    /// Join sessions with many light guests (no engine) from one process:
    /// the load tool for one daemon. Prints one JSON line at the end.
    Swarm(swarm::SwarmArgs),
    /// Drive a running daemon through its control API (`--control-listen`):
    /// list, open, end, reports and replays.
    Ctl(ctl::CtlArgs),
}

/// Runs the command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Simulate(args) => simulate::run(&args),
        Command::Host(args) => host::run(args),
        Command::Join(args) => join::run(args),
        Command::Relay(args) => relay::run(args),
        Command::Replay(args) => replay::run(&args),
        Command::Swarm(args) => swarm::run(args),
        Command::Ctl(args) => ctl::run(args),
    }
}

/// Resolves on SIGTERM or Ctrl-C (Ctrl-C only where there are no Unix
/// signals).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;
    use netcode::sim::NetAction;

    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<netcode::sim::Scenario<engine::RaycasterEngine>> {
        let cli = Cli::try_parse_from(["host-daemon", "simulate"].iter().chain(args))?;
        let Command::Simulate(a) = cli.command else {
            anyhow::bail!("not simulate");
        };
        simulate::scenario(&a)
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
        assert_eq!(s.host.plan.level_count(), 3);
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

    fn host(args: &[&str]) -> anyhow::Result<crate::serving::ServingConfig> {
        let cli = Cli::try_parse_from(
            ["host-daemon", "host", "--server", "http://127.0.0.1:1"]
                .iter()
                .chain(args),
        )?;
        let Command::Host(a) = cli.command else {
            anyhow::bail!("not host");
        };
        host::serving_config(&a)
    }

    #[test]
    fn host_flags_build_the_config() {
        let c = host(&[
            "--bots",
            "2",
            "--start-when",
            "3",
            "--max-players",
            "6",
            "--private",
            "--levels",
            "2",
            "--udp-port",
            "40000",
            "--public-ip",
            "203.0.113.7",
            "--public-port",
            "30000",
            "--lobby-timeout",
            "30",
            "--hello-timeout",
            "2",
        ])
        .unwrap();
        assert!(!c.public);
        assert_eq!(c.guest_seats(), 3);
        assert_eq!(c.start_when, 3);
        assert_eq!(c.host.plan.level_count(), 2);
        assert_eq!(c.host.bots, 2);
        assert_eq!(c.lobby_timeout, Some(Duration::from_secs(30)));
        assert_eq!(c.host.hello_timeout, Duration::from_secs(2));
        assert_eq!(c.webrtc.udp_port, 40000);
        assert_eq!(c.webrtc.public_ip, Some("203.0.113.7".parse().unwrap()));
        assert_eq!(c.webrtc.public_port, Some(30000));
        assert_eq!(c.webrtc.bind_ip.to_string(), "127.0.0.1");
        let defaults = host(&[]).unwrap();
        assert!(defaults.public);
        assert!(defaults.host.late_join);
        assert!(!host(&["--no-late-join"]).unwrap().host.late_join);
        assert_eq!(defaults.host.hello_timeout, Duration::from_secs(5));
    }

    #[test]
    fn bad_host_flags_are_rejected() {
        assert!(host(&["--udp-port", "x"]).is_err());
        assert!(host(&["--bind-ip", "0.0.0.0"]).is_err());
        assert!(host(&["--public-port", "0"]).is_err());
        assert!(host(&["--bind-ip", "0.0.0.0", "--public-ip", "203.0.113.7"]).is_ok());
        assert!(host(&["--max-players", "3", "--start-when", "2"]).is_err());
        assert!(host(&["--difficulty", "nightmare"]).is_err());
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

    fn relay(args: &[&str]) -> anyhow::Result<crate::serving::ServingConfig> {
        let cli = Cli::try_parse_from(
            ["host-daemon", "relay", "--server", "http://127.0.0.1:1"]
                .iter()
                .chain(args),
        )?;
        let Command::Relay(a) = cli.command else {
            anyhow::bail!("not relay");
        };
        relay::serving_config(&a)
    }

    #[test]
    fn relay_flags_build_a_relay_config() {
        let c = relay(&[
            "--max-players",
            "6",
            "--start-when",
            "3",
            "--snapshot-every",
            "300",
            "--input-delay",
            "5",
            "--levels",
            "2",
            "--seed",
            "9",
            "--max-spectators",
            "2",
        ])
        .unwrap();
        let r = c.relay.as_ref().expect("a relay configuration");
        assert_eq!(c.guest_seats(), 6, "a relay has no player of its own");
        assert_eq!(c.start_when, 3);
        assert_eq!(r.relay.snapshot_interval, 300);
        assert_eq!(r.input_delay, Some(5));
        assert_eq!(
            relay(&[]).unwrap().relay.unwrap().input_delay,
            None,
            "fitted"
        );
        assert_eq!((r.levels, r.campaign.campaign_seed), (2, 9));
        assert_eq!(r.relay.max_spectators, 2);
        assert!(r.relay.late_join);
        assert!(
            !relay(&["--no-late-join"])
                .unwrap()
                .relay
                .unwrap()
                .relay
                .late_join
        );
        assert!(relay(&["--input-delay", "0"]).is_err());
        assert!(relay(&["--snapshot-every", "10"]).is_err());
        assert!(relay(&["--max-players", "2", "--start-when", "3"]).is_err());
    }
}
