//! The `host-daemon` binary: logging to stderr, then one of the commands
//! in [`host_daemon::commands`].

use clap::Parser;
use host_daemon::commands::{Cli, run};

/// mimalloc instead of glibc's malloc: glibc kept the freed deflate states
/// of delta snapshots on its heap (docs/decisions.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new(
                    "warn,rtc=error,rtc_ice=error,rtc_dtls=error,webrtc=error",
                )
            }),
        )
        .init();
    run(Cli::parse())
}
