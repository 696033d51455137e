//! Prometheus metrics of `host-daemon host` (`--metrics-listen`).
//!
//! [`DaemonMetrics`] owns the registry and the daemon-wide series; each
//! hosted session holds a [`SessionMetrics`] handle that feeds them and,
//! when its last clone is dropped, takes the session and its guests back
//! out of the gauges. Counters only grow, so a scrape sees totals.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds of the tick lateness buckets, seconds.
const LATENESS_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.002, 0.004, 0.006, 0.008, 0.010, 0.012, 0.016, 0.024, 0.033, 0.066, 0.25, 1.0,
];

/// Upper bounds of the guest round-trip buckets, seconds (LAN to a bad
/// mobile link; a tick is 33 ms).
const RTT_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.010, 0.020, 0.033, 0.050, 0.075, 0.100, 0.150, 0.250, 0.500, 1.0,
];

/// The series every session feeds.
#[derive(Debug)]
struct Series {
    sessions: Gauge,
    guests: Gauge,
    ticks: Counter,
    tick_lateness: Histogram,
    held_inputs: Counter,
    desyncs: Counter,
    bytes_sent: Counter,
    guest_rtt: Histogram,
    connections: Gauge,
}

/// The daemon's metrics registry.
#[derive(Clone, Debug)]
pub struct DaemonMetrics {
    registry: Arc<Registry>,
    series: Arc<Series>,
}

impl Default for DaemonMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl DaemonMetrics {
    /// A registry with every series registered, all at zero.
    pub fn new() -> Self {
        let series = Series {
            sessions: Gauge::default(),
            guests: Gauge::default(),
            ticks: Counter::default(),
            // Fine around 10 ms (the alert threshold; a tick is 33 ms).
            tick_lateness: Histogram::new(LATENESS_BUCKETS.iter().copied()),
            held_inputs: Counter::default(),
            desyncs: Counter::default(),
            bytes_sent: Counter::default(),
            guest_rtt: Histogram::new(RTT_BUCKETS.iter().copied()),
            connections: Gauge::default(),
        };
        let mut registry = Registry::with_prefix("campfire_daemon");
        registry.register(
            "sessions",
            "Sessions open (waiting in the lobby or running)",
            series.sessions.clone(),
        );
        registry.register(
            "guests",
            "Guests admitted and connected, all sessions",
            series.guests.clone(),
        );
        registry.register(
            "ticks",
            "Simulation ticks run, all sessions",
            series.ticks.clone(),
        );
        registry.register(
            "tick_lateness_seconds",
            "How late each tick ran after its due time",
            series.tick_lateness.clone(),
        );
        registry.register(
            "held_inputs",
            "Player-ticks that used a held (last known) input because the real one was late",
            series.held_inputs.clone(),
        );
        registry.register(
            "desyncs",
            "Guest hash reports that disagreed with the host",
            series.desyncs.clone(),
        );
        registry.register(
            "guest_rtt_seconds",
            "Round trips of guests' input channels, measured with ping/pong",
            series.guest_rtt.clone(),
        );
        registry.register(
            "webrtc_connections",
            "WebRTC connections on the daemon's one UDP socket (offers waiting, open, closing)",
            series.connections.clone(),
        );
        registry.register(
            "sent_bytes",
            "Message bytes sent to guests over the data channels",
            series.bytes_sent.clone(),
        );
        Self {
            registry: Arc::new(registry),
            series: Arc::new(series),
        }
    }

    /// Sets the WebRTC connections the endpoint holds.
    pub fn set_webrtc_connections(&self, n: usize) {
        self.series
            .connections
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// A handle for one new session; the session counts as open until
    /// every clone of the handle is dropped.
    pub fn session(&self) -> SessionMetrics {
        self.series.sessions.inc();
        SessionMetrics {
            inner: Arc::new(SessionInner {
                series: self.series.clone(),
                guests: AtomicI64::new(0),
            }),
        }
    }

    /// The OpenMetrics text exposition of every series.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

#[derive(Debug)]
struct SessionInner {
    series: Arc<Series>,
    guests: AtomicI64,
}

impl Drop for SessionInner {
    fn drop(&mut self) {
        self.series.sessions.dec();
        self.series
            .guests
            .dec_by(self.guests.swap(0, Ordering::Relaxed));
    }
}

/// One session's handle on the daemon's metrics.
#[derive(Clone, Debug)]
pub struct SessionMetrics {
    inner: Arc<SessionInner>,
}

impl SessionMetrics {
    /// A handle on a private registry, for tests and `simulate`.
    pub fn detached() -> Self {
        DaemonMetrics::new().session()
    }

    /// One tick ran, `lateness_us` after its due time.
    pub fn tick(&self, lateness_us: u64) {
        let s = &self.inner.series;
        s.ticks.inc();
        s.tick_lateness.observe(lateness_us as f64 / 1e6);
    }

    /// `n` held-input fallbacks were used.
    pub fn held_inputs(&self, n: u64) {
        if n > 0 {
            self.inner.series.held_inputs.inc_by(n);
        }
    }

    /// A guest's hash report disagreed.
    pub fn desync(&self) {
        self.inner.series.desyncs.inc();
    }

    /// `n` bytes went out to a guest.
    pub fn bytes_sent(&self, n: usize) {
        self.inner.series.bytes_sent.inc_by(n as u64);
    }

    /// Counts what a host session reports.
    pub fn record<W: game_api::GameWire>(&self, event: &netcode::host::HostEvent<W>) {
        use netcode::host::HostEvent;
        match event {
            HostEvent::Ticked {
                lateness_us,
                held_inputs,
            } => {
                self.tick(*lateness_us);
                self.held_inputs(*held_inputs);
            }
            HostEvent::Desync { .. } => self.desync(),
            HostEvent::GuestsPresent(n) => self.set_guests(*n),
            HostEvent::RoundTrip { rtt, .. } => {
                self.inner.series.guest_rtt.observe(rtt.as_secs_f64());
            }
            _ => {}
        }
    }

    /// This session now has `n` guests connected.
    pub fn set_guests(&self, n: usize) {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        let before = self.inner.guests.swap(n, Ordering::Relaxed);
        self.inner.series.guests.inc_by(n - before);
    }
}

/// Serves `GET /metrics` on `listener` until the task is dropped.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: DaemonMetrics,
) -> std::io::Result<()> {
    use axum::http::header::CONTENT_TYPE;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [(
                        CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.encode(),
                )
            }
        }),
    );
    axum::serve(listener, app).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{series} missing from:\n{text}"))
    }

    #[test]
    fn a_session_counts_until_its_last_handle_drops() {
        let m = DaemonMetrics::new();
        let a = m.session();
        let a2 = a.clone();
        let b = m.session();
        a.set_guests(3);
        b.set_guests(1);
        a.set_guests(2);
        let text = m.encode();
        assert_eq!(value(&text, "campfire_daemon_sessions"), 2.0);
        assert_eq!(value(&text, "campfire_daemon_guests"), 3.0);
        drop(a);
        assert_eq!(value(&m.encode(), "campfire_daemon_sessions"), 2.0);
        drop(a2);
        let text = m.encode();
        assert_eq!(value(&text, "campfire_daemon_sessions"), 1.0);
        assert_eq!(value(&text, "campfire_daemon_guests"), 1.0);
    }

    #[test]
    fn ticks_lateness_and_counters_are_exported() {
        let m = DaemonMetrics::new();
        let s = m.session();
        s.tick(2_000);
        s.tick(40_000);
        s.held_inputs(0);
        s.held_inputs(5);
        s.desync();
        s.bytes_sent(120);
        let text = m.encode();
        assert_eq!(value(&text, "campfire_daemon_ticks_total"), 2.0);
        assert_eq!(
            value(&text, "campfire_daemon_tick_lateness_seconds_count"),
            2.0
        );
        assert_eq!(value(&text, "campfire_daemon_held_inputs_total"), 5.0);
        assert_eq!(value(&text, "campfire_daemon_desyncs_total"), 1.0);
        assert_eq!(value(&text, "campfire_daemon_sent_bytes_total"), 120.0);
        let sum = value(&text, "campfire_daemon_tick_lateness_seconds_sum");
        assert!((sum - 0.042).abs() < 1e-9, "{sum}");
    }
}
