//! `host-daemon swarm`: many light guests (no engine) joining sessions
//! through the lobby from one process: the load tool that pushes one
//! daemon to a thousand guests. Prints one JSON line at the end.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use tokio::task::JoinSet;

use super::ice::IceArgs;
use crate::joining::{self, JoinConfig};
use crate::swarm::{self, Recording, SwarmGuestReport};

/// `swarm` flags.
#[derive(Args, Debug)]
pub struct SwarmArgs {
    /// Session codes to join.
    #[arg(required = true)]
    codes: Vec<String>,
    /// Lobby server base URL.
    #[arg(long, env = "CAMPFIRE_SERVER")]
    server: String,
    /// Guests per session code.
    #[arg(long, default_value_t = 4)]
    per_session: usize,
    /// Inputs to play, from a replay file (`host --record`); default: a
    /// walk that turns and fires.
    #[arg(long, value_name = "REPLAY")]
    inputs: Option<std::path::PathBuf>,
    /// Stop after this many seconds (every guest leaves).
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Threads of the swarm's runtime (1: everything on one thread).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[command(flatten)]
    ice: IceArgs,
}

/// The swarm's report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    guests: usize,
    connected: usize,
    failed_joins: usize,
    bundles: u64,
    inputs: u64,
    input_messages: u64,
    pongs: u64,
    unreadable: u64,
    ended_normally: usize,
}

/// Tries of a whole join (each with `joining::connect`'s own retries)
/// before a swarm guest gives up.
const JOIN_TRIES: u32 = 3;

/// Joins as `joining::connect` does, trying the whole join again when it
/// fails (a loaded daemon's rounds come slowly); `None` after
/// [`JOIN_TRIES`] failures, each logged.
async fn connect(config: &JoinConfig) -> Option<crate::transport::webrtc::WebRtcLink> {
    for attempt in 1..=JOIN_TRIES {
        match joining::connect(config).await {
            Ok(link) => return Some(link),
            Err(e) => {
                tracing::warn!(guest = %config.name, attempt, error = %e, "a swarm guest's join failed")
            }
        }
    }
    None
}

/// Runs `host-daemon swarm`.
pub fn run(args: SwarmArgs) -> anyhow::Result<()> {
    if args.per_session == 0 || args.codes.len() * args.per_session > 5_000 {
        bail!("--per-session times the codes must be 1 to 5000 guests");
    }
    let recording = match &args.inputs {
        None => Recording::walking(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            let replay = netcode::replay::Replay::parse(&text)
                .with_context(|| format!("{} is not a replay", path.display()))?;
            Recording::from_replay(&replay).context("the replay holds no inputs")?
        }
    };
    let webrtc = args.ice.webrtc_options()?;
    // One thread: a current-thread runtime, where the hand-offs between a
    // guest's tasks and the run loop wake no other thread (as the daemon).
    let rt = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    }
    .context("building the runtime")?;
    let report = rt.block_on(async move {
        let mut guests = JoinSet::new();
        let mut n = 0u64;
        for code in &args.codes {
            // A session's swarm guests join one after another, as players
            // trickling in do: racing each other for its one open round
            // would only spend their retry budgets.
            let turn = Arc::new(tokio::sync::Mutex::new(()));
            for _ in 0..args.per_session {
                let config = JoinConfig {
                    server: args.server.clone(),
                    code: code.clone(),
                    name: format!("swarm-{n}"),
                    bot: false,
                    webrtc: webrtc.clone(),
                    leave_after: None,
                    resume_file: None,
                    spectate: false,
                    game: crate::game::GameName::Raycaster,
                };
                let recording = recording.clone();
                let offset = n * 7;
                let turn = Arc::clone(&turn);
                guests.spawn(async move {
                    let link = {
                        let _turn = turn.lock().await;
                        connect(&config).await?
                    };
                    Some(swarm::play(link, &config.name, &recording, offset).await)
                });
                n += 1;
            }
        }
        let guests_total = n as usize;
        let stop = tokio::time::sleep(Duration::from_secs(args.seconds));
        tokio::pin!(stop);
        let mut reports: Vec<Option<SwarmGuestReport>> = Vec::new();
        loop {
            tokio::select! {
                done = guests.join_next() => match done {
                    Some(r) => reports.push(r.ok().flatten()),
                    None => break,
                },
                _ = &mut stop => {
                    guests.abort_all();
                    while let Some(r) = guests.join_next().await {
                        reports.push(r.ok().flatten());
                    }
                    break;
                }
            }
        }
        let ok: Vec<&SwarmGuestReport> = reports.iter().flatten().collect();
        Report {
            guests: guests_total,
            connected: ok.len(),
            failed_joins: reports.iter().filter(|r| r.is_none()).count(),
            bundles: ok.iter().map(|r| r.bundles).sum(),
            inputs: ok.iter().map(|r| r.inputs).sum(),
            input_messages: ok.iter().map(|r| r.input_messages).sum(),
            pongs: ok.iter().map(|r| r.pongs).sum(),
            unreadable: ok.iter().map(|r| r.unreadable).sum(),
            ended_normally: ok.iter().filter(|r| r.end_reason.is_some()).count(),
        }
    });
    println!(
        "{}",
        serde_json::to_string(&report).context("encoding the report")?
    );
    Ok(())
}
