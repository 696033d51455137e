//! Building and running the server: open the store, fill the lobby index,
//! bind (recording the real port), serve until the shutdown future fires,
//! then drain.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app::{AppState, router};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::store::Store;

/// A bound, ready-to-run server.
pub struct Application {
    listener: TcpListener,
    state: AppState,
}

impl Application {
    /// Opens the database, loads the lobby and binds the listener.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        Self::build_with_clock(config, Arc::new(SystemClock)).await
    }

    /// Like [`Application::build`] with an injected clock (tests).
    pub async fn build_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let store = Store::connect(&config.database_url, &config)
            .await
            .with_context(|| format!("opening the database {}", config.database_url))?;
        let listen = config.listen;
        let state = AppState::new(config, store, clock);
        state
            .load_lobby()
            .await
            .context("loading the lobby from the database")?;
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        Ok(Self { listener, state })
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
    /// stops the sweeper and closes the database.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Application { listener, state } = self;
        let addr = listener.local_addr()?;
        let sweeper = tokio::spawn(run_sweeper(state.clone()));
        let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
        tracing::info!("listening on http://{addr}");
        let cancel = state.shutdown.clone();
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                tracing::info!("shutting down: no new connections, draining requests");
                cancel.cancel();
            })
            .await
            .context("serving HTTP")?;
        state.shutdown.cancel();
        if let Err(err) = sweeper.await {
            tracing::warn!(error = %err, "the sweeper task failed");
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
        match state.sweep_once().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "swept expired sessions"),
            Err(err) => tracing::warn!(error = %err, "sweep failed; will retry"),
        }
    }
}
