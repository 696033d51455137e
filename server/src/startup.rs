//! Building and running the server: open the store, fill the lobby index,
//! bind (recording the real port), serve until the shutdown future fires,
//! then drain.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app::router;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::moderating;
use crate::moderation::Moderation;
use crate::moderation::tokens::AdminTokens;
use crate::moderation::words::WordList;
use crate::replica;
use crate::serve::ConnectionLimits;
use crate::sessions;
use crate::state::AppState;
use crate::store::{Store, StoreChange, StoreChanges};

/// A bound, ready-to-run server.
pub struct Application {
    listener: TcpListener,
    state: AppState,
    changes: StoreChanges,
}

impl Application {
    /// Opens the database, loads the lobby and binds the listener.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// Like [`Application::build`] with an injected clock (tests).
    pub async fn build_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let tokens = match &config.admin_token_file {
            Some(path) => Some(AdminTokens::load(path)?),
            None => None,
        };
        let words = match &config.word_list_file {
            Some(path) => WordList::load(path).map_err(anyhow::Error::msg)?,
            None => WordList::default(),
        };
        let settings = config.store_settings();
        let (store, changes) = Store::connect(&settings)
            .await
            .with_context(|| format!("opening the database {}", redact(&settings.url)))?;
        let listen = config.listen;
        let state = AppState::new(config, store, clock, Moderation::new(tokens, words));
        sessions::load_lobby(&state)
            .await
            .context("loading the lobby from the database")?;
        moderating::reload(&state)
            .await
            .context("loading the moderators' blocks and hidden and ended sessions")?;
        state
            .recount_live()
            .await
            .context("counting the live sessions")?;
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        Ok(Self {
            listener,
            state,
            changes,
        })
    }

    /// The address actually bound (the real port when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The shared state (tests drive the sweep and the clock through it).
    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// Serves until `shutdown` completes; then stops accepting, answers
    /// pending long-polls and event streams, lets in-flight requests finish,
    /// stops the sweeper and the feed's pacing and closes the database.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Application {
            listener,
            state,
            changes,
        } = self;
        let addr = listener.local_addr()?;
        let sweeper = tokio::spawn(run_sweeper(state.clone()));
        let hangups = tokio::spawn(reload_words_on_hangup(state.clone()));
        let feed = {
            let state = state.clone();
            tokio::spawn(async move {
                let shutdown = state.shutdown.clone();
                state.lobby.send_held_updates(shutdown).await;
            })
        };
        let follower = changes.map(|changes| tokio::spawn(follow_changes(state.clone(), changes)));
        let app = router(state.clone());
        tracing::info!("listening on http://{addr}");
        let cancel = state.shutdown.clone();
        let mut limits = ConnectionLimits::from_config(&state.config);
        // After the line above, which tools read first to find the port.
        limits.max_connections = crate::descriptors::fit_connections(
            limits.max_connections,
            crate::descriptors::reserved_for(state.config.db_max_connections),
        );
        limits.max_connections_per_address = limits
            .max_connections_per_address
            .min(limits.max_connections);
        let refused = state.metrics.connections_refused.clone();
        crate::serve::serve(
            listener,
            app,
            limits,
            async move {
                shutdown.await;
                tracing::info!("shutting down: no new connections, draining requests");
                // Long-polls and event streams end now.
                cancel.cancel();
            },
            move |_| {
                refused.inc();
            },
        )
        .await;
        state.shutdown.cancel();
        if let Err(err) = sweeper.await {
            tracing::warn!(error = %err, "the sweeper task failed");
        }
        hangups.abort();
        if let Err(err) = feed.await {
            tracing::warn!(error = %err, "the lobby feed's pacing task failed");
        }
        if let Some(Err(err)) = match follower {
            Some(task) => Some(task.await),
            None => None,
        } {
            tracing::warn!(error = %err, "the change follower failed");
        }
        state.store.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Deletes expired sessions every `sweep_interval` until shutdown.
async fn run_sweeper(state: AppState) {
    let period = Duration::from_secs(state.config.sweep_interval.max(1));
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            () = state.shutdown.cancelled() => return,
        }
        match sessions::sweep(&state).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "swept expired sessions"),
            Err(err) => tracing::warn!(error = %err, "sweep failed; will retry"),
        }
    }
}

/// Reloads the word list on every SIGHUP, until shutdown.
async fn reload_words_on_hangup(state: AppState) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; the word list reloads only by the admin API");
        return;
    };
    loop {
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            got = hangups.recv() => if got.is_none() { return },
        }
        if state.config.word_list_file.is_some()
            && let Err(why) = crate::moderating::reload_words(&state)
        {
            tracing::warn!(%why, "SIGHUP: the word list stays as it was");
        }
    }
}

/// Applies the changes other replicas made, until shutdown.
async fn follow_changes(state: AppState, mut changes: tokio::sync::mpsc::Receiver<StoreChange>) {
    loop {
        let change = tokio::select! {
            () = state.shutdown.cancelled() => return,
            change = changes.recv() => match change {
                Some(change) => change,
                None => return,
            },
        };
        replica::apply_change(&state, change).await;
    }
}

/// The database URL without its password, for error messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://<credentials>@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}
