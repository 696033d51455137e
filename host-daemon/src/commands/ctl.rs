//! `host-daemon ctl`: the control API's command-line client. Each
//! subcommand is one call; answers print as JSON on stdout (`open` prints
//! the code alone, `replay` writes the file), refusals as the API's
//! message on stderr with a failing exit.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use reqwest::{Method, StatusCode};

use crate::control::view::{OpenRequest, Opened};

/// `ctl` flags.
#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The daemon's control address (`--control-listen`), e.g.
    /// http://127.0.0.1:7070.
    #[arg(
        long,
        env = "CAMPFIRE_CONTROL_URL",
        default_value = "http://127.0.0.1:7070"
    )]
    control: String,
    /// A file whose first line is the daemon's control token.
    #[arg(long, value_name = "FILE", env = "CAMPFIRE_CONTROL_TOKEN_FILE")]
    token_file: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    action: CtlAction,
}

/// What `ctl` does.
#[derive(Subcommand, Debug)]
pub enum CtlAction {
    /// The daemon's sessions, running then finished, as JSON.
    List,
    /// One session, as JSON.
    Show {
        /// Its code.
        code: String,
    },
    /// Opens a session now; prints its code.
    Open(OpenFlags),
    /// Ends a running session.
    End {
        /// Its code.
        code: String,
    },
    /// A finished session's report, as JSON.
    Report {
        /// Its code.
        code: String,
    },
    /// Downloads a finished session's replay of one level.
    Replay {
        /// Its code.
        code: String,
        /// The level (as the session's `replays` list names it).
        #[arg(long, default_value_t = 1)]
        level: u32,
        /// Where to write it (default: CODE-level-LEVEL.replay here).
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
}

/// What `ctl open` may set; the rest is the daemon's flags.
#[derive(Args, Debug)]
pub struct OpenFlags {
    /// Bot players besides the host's own.
    #[arg(long)]
    bots: Option<u32>,
    /// Levels in the generated campaign.
    #[arg(long)]
    levels: Option<u32>,
    /// easy, normal or hard.
    #[arg(long)]
    difficulty: Option<String>,
    /// Campaign seed.
    #[arg(long)]
    seed: Option<u32>,
    /// Its name in the lobby.
    #[arg(long)]
    name: Option<String>,
    /// Do not list it (join by code only).
    #[arg(long)]
    private: bool,
    /// Start once this many guests are in.
    #[arg(long)]
    start_when: Option<usize>,
    /// Most players, host and bots included.
    #[arg(long)]
    max_players: Option<u32>,
}

impl OpenFlags {
    fn request(&self) -> OpenRequest {
        OpenRequest {
            bots: self.bots,
            levels: self.levels,
            difficulty: self.difficulty.clone(),
            seed: self.seed,
            name: self.name.clone(),
            public: self.private.then_some(false),
            start_when: self.start_when,
            max_players: self.max_players,
        }
    }
}

/// Runs one `ctl` call.
pub fn run(args: CtlArgs) -> anyhow::Result<()> {
    let token = match &args.token_file {
        Some(path) => Some(
            crate::control::token::ControlToken::load(path)?
                .secret()
                .to_owned(),
        ),
        None => None,
    };
    let runtime = super::serving::runtime()?;
    runtime.block_on(call(&args, token.as_deref()))
}

async fn call(args: &CtlArgs, token: Option<&str>) -> anyhow::Result<()> {
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .context("HTTP client")?;
    let base = args.control.trim_end_matches('/');
    let request = |method: Method, path: &str| {
        let req = client.request(method, format!("{base}{path}"));
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    };
    let (req, expect) = match &args.action {
        CtlAction::List => (request(Method::GET, "/api/sessions"), StatusCode::OK),
        CtlAction::Show { code } => (
            request(Method::GET, &format!("/api/sessions/{code}")),
            StatusCode::OK,
        ),
        CtlAction::Open(flags) => (
            request(Method::POST, "/api/sessions").json(&flags.request()),
            StatusCode::CREATED,
        ),
        CtlAction::End { code } => (
            request(Method::DELETE, &format!("/api/sessions/{code}")),
            StatusCode::ACCEPTED,
        ),
        CtlAction::Report { code } => (
            request(Method::GET, &format!("/api/sessions/{code}/report")),
            StatusCode::OK,
        ),
        CtlAction::Replay { code, level, .. } => (
            request(
                Method::GET,
                &format!("/api/sessions/{code}/replays/{level}"),
            ),
            StatusCode::OK,
        ),
    };
    let res = req
        .send()
        .await
        .with_context(|| format!("cannot reach the control API at {base}"))?;
    let status = res.status();
    let body = res.bytes().await.context("reading the answer")?;
    if status != expect {
        let message = serde_json::from_slice::<protocol::api::ErrorBody>(&body)
            .map(|e| e.message)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned());
        bail!("{status}: {message}");
    }
    match &args.action {
        CtlAction::Open(_) => {
            let opened: Opened = serde_json::from_slice(&body).context("the answer")?;
            crate::stdout::line(&opened.code);
        }
        CtlAction::End { code } => crate::stdout::line(&format!("ending {code}")),
        CtlAction::Replay { code, level, out } => {
            let path = out
                .clone()
                .unwrap_or_else(|| crate::control::hub::replay_name(code, *level).into());
            std::fs::write(&path, &body).with_context(|| format!("writing {}", path.display()))?;
            crate::stdout::line(&path.display().to_string());
        }
        _ => crate::stdout::line(&String::from_utf8_lossy(&body)),
    }
    Ok(())
}
