//! `host-daemon join`: one (bot) guest joining a session through the
//! lobby; prints one JSON line at the end.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use protocol::peer::EndReason;

use super::ice::IceArgs;
use crate::game::GameName;
use crate::joining::{self, JoinConfig, JoinEnd};

/// `join` flags.
#[derive(Args, Debug)]
pub struct JoinArgs {
    /// The session's code.
    code: String,
    /// Lobby server base URL.
    #[arg(long, env = "CAMPFIRE_SERVER")]
    server: String,
    /// Display name.
    #[arg(long, default_value = "bot")]
    name: String,
    /// Play with the engine's bot (else idle input).
    #[arg(long)]
    bot: bool,
    /// Leave this many seconds after connecting (soak tests: join, then
    /// leave). The report's endReason is then "left".
    #[arg(long, value_name = "SECS")]
    leave_after: Option<f64>,
    /// Write the host's rejoin token to FILE once admitted; when FILE
    /// exists, present its token, to resume the same player after a crash
    /// or a lost connection (within the host's disconnect grace).
    #[arg(long, value_name = "FILE")]
    resume_file: Option<std::path::PathBuf>,
    /// Watch instead of play: no seat, no input (`--bot` is moot); the
    /// running level's state arrives at once and the report says
    /// `"spectator": true`.
    #[arg(long, conflicts_with = "resume_file")]
    spectate: bool,
    /// The game the session plays.
    #[arg(long, value_enum, env = "CAMPFIRE_GAME", default_value_t = GameName::Raycaster)]
    game: GameName,
    #[command(flatten)]
    ice: IceArgs,
}

/// Runs `host-daemon join`; exits 2 if the join failed, 3 if the session
/// ended abnormally (the report is printed first).
pub fn run(args: JoinArgs) -> anyhow::Result<()> {
    let config = JoinConfig {
        server: args.server.clone(),
        code: args.code.clone(),
        name: args.name.clone(),
        bot: args.bot,
        webrtc: args.ice.webrtc_options()?,
        leave_after: args
            .leave_after
            .map(|s| Duration::try_from_secs_f64(s).context("--leave-after takes seconds >= 0"))
            .transpose()?,
        resume_file: args.resume_file.clone(),
        spectate: args.spectate,
        game: args.game,
    };
    // One guest is light work: a single-threaded runtime costs the least
    // CPU (testers run hundreds of these on one machine).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the runtime")?;
    match rt.block_on(joining::join(config)) {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string(&report).context("encoding the report")?
            );
            // Lost the host or fell out of a transition: the report is
            // printed, but the run did not end normally.
            if matches!(
                report.end_reason,
                JoinEnd::Session(EndReason::HostDisconnected | EndReason::LevelTransitionFailed)
            ) {
                eprintln!(
                    "host-daemon join: session {} ended abnormally: {:?}",
                    report.code, report.end_reason
                );
                std::process::exit(3);
            }
            Ok(())
        }
        Err(e) => {
            eprintln!("host-daemon join: {e}");
            std::process::exit(2);
        }
    }
}
