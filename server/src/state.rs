//! The state every handler shares: the configuration, the store, the
//! clock, the lobby index, the long-poll waiters, the rate limits, the
//! moderators' tokens and blocks, the metrics and the shutdown signal,
//! behind one cheaply clonable handle.

use std::net::IpAddr;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lobby_api::code::SessionCode;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, Millis};
use crate::config::Config;
use crate::ice::IceConfig;
use crate::lobby_index::LobbyIndex;
use crate::metrics::Metrics;
use crate::moderation::Moderation;
use crate::rate_limit::RateLimits;
use crate::slots::Slots;
use crate::store::{Store, StoreError};
use crate::waiters::AnswerWaiters;

/// Everything a handler can reach.
pub struct AppInner {
    /// Configuration the server started with.
    pub config: Config,
    /// Session storage.
    pub store: Store,
    /// Wall-clock time (injectable for tests).
    pub clock: Arc<dyn Clock>,
    /// The public lobby read model and its change feed.
    pub lobby: LobbyIndex,
    /// Hosts long-polling for answers.
    pub waiters: AnswerWaiters,
    /// Per-address rate limits.
    pub limits: RateLimits,
    /// Admin tokens and the moderators' blocks.
    pub moderation: Moderation,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// ICE servers for session views.
    pub ice: IceConfig,
    /// Cancelled when the server begins shutting down.
    pub shutdown: CancellationToken,
    /// Lobby event streams open per client address.
    pub event_streams: Slots<IpAddr>,
    /// Answer long-polls open per session.
    pub long_polls: Slots<SessionCode>,
    /// Live sessions as of the latest sweep, plus this replica's creates
    /// since: what the `--max-sessions` cap compares against.
    pub live_sessions: AtomicU64,
    /// Bytes the live sessions hold ([`crate::store::SessionRecord::held_bytes`])
    /// as of the latest sweep, plus this replica's changes since: what the
    /// `--max-session-bytes` cap compares against.
    pub live_bytes: AtomicU64,
    /// Creates and deletes hold it shared from their store call to their
    /// count; a recount holds it alone, so no change is counted twice or
    /// lost between the two.
    pub live_gate: tokio::sync::RwLock<()>,
}

/// Cheaply clonable handle to the shared state.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

impl Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl AppState {
    /// State over an opened store, with the moderators' levers (no
    /// blocks loaded yet: see [`crate::moderation::reload_blocks`]).
    pub fn new(
        config: Config,
        store: Store,
        clock: Arc<dyn Clock>,
        moderation: Moderation,
    ) -> Self {
        Self(Arc::new(AppInner {
            moderation,
            ice: IceConfig::from_config(&config),
            limits: RateLimits::from_config(&config),
            lobby: LobbyIndex::new(config.feed_update_interval(), config.page_cache_bytes),
            waiters: AnswerWaiters::default(),
            metrics: Metrics::new(),
            shutdown: CancellationToken::new(),
            event_streams: Slots::default(),
            long_polls: Slots::default(),
            live_sessions: AtomicU64::new(0),
            live_bytes: AtomicU64::new(0),
            live_gate: tokio::sync::RwLock::new(()),
            store,
            clock,
            config,
        }))
    }

    /// Now, from the injected clock.
    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    /// The expiry a host call made at `now` grants.
    pub fn expiry_from(&self, now: Millis) -> Millis {
        let ttl_ms = self.config.ttl().as_millis().min(i64::MAX as u128) as i64;
        now.saturating_add(ttl_ms)
    }

    /// Counts the live sessions and the bytes they hold again (all
    /// replicas' on PostgreSQL); returns the sessions.
    pub async fn recount_live(&self) -> Result<u64, StoreError> {
        let _alone = self.live_gate.write().await;
        let now = self.now();
        let n = self.store.count_live(now).await?;
        let bytes = self.store.held_bytes_live(now).await?;
        self.live_sessions.store(n, Ordering::Relaxed);
        self.live_bytes.store(bytes, Ordering::Relaxed);
        Ok(n)
    }

    /// Whether `more` bytes would take the live sessions past
    /// `--max-session-bytes`.
    pub fn lobby_bytes_full(&self, more: u64) -> bool {
        let cap = self.config.max_session_bytes;
        cap > 0 && more > 0 && self.live_bytes.load(Ordering::Relaxed).saturating_add(more) > cap
    }

    /// Counts bytes this replica's sessions gained or lost until the next
    /// recount.
    pub fn count_bytes(&self, before: u64, after: u64) {
        if after >= before {
            self.live_bytes.fetch_add(after - before, Ordering::Relaxed);
        } else {
            let _ = self
                .live_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(before - after))
                });
        }
    }

    /// Whether the lobby holds `--max-sessions` live sessions already.
    pub fn lobby_full(&self) -> bool {
        let cap = self.config.max_sessions;
        cap > 0 && self.live_sessions.load(Ordering::Relaxed) >= cap
    }

    /// Counts a session this replica created or deleted until the next recount.
    pub fn count_session(&self, created: bool) {
        if created {
            self.live_sessions.fetch_add(1, Ordering::Relaxed);
        } else {
            let _ = self
                .live_sessions
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    Some(n.saturating_sub(1))
                });
        }
    }
}
