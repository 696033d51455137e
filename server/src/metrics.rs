//! Prometheus metrics of one server instance (a registry per instance, no
//! global recorder, so tests can run several servers in one process).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of the per-request series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The route pattern (`/session/{code}`), or `unmatched`.
    pub route: String,
    /// HTTP method.
    pub method: String,
    /// Response status code.
    pub status: u16,
}

/// Labels of rejected answers.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RejectLabels {
    /// The error code returned.
    pub reason: String,
}

fn latency_histogram() -> Histogram {
    Histogram::new([
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
        5.0, 10.0, 30.0,
    ])
}

/// The method as a label: one of the standard methods, or `other`. The
/// method is client-chosen text (any token, any length); as a label as is,
/// each invented one would be a new series forever.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::HEAD, "HEAD"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, label)| label)
}

/// The metrics the server exports.
pub struct Metrics {
    registry: Registry,
    /// Live (unexpired) sessions, refreshed at each scrape.
    pub sessions_live: Gauge,
    /// Offer rounds published.
    pub rounds_published: Counter,
    /// Answers that won a round.
    pub answers_accepted: Counter,
    /// Admin actions that changed something (blocks placed and lifted).
    pub admin_actions: Counter,
    /// Creates, updates and answers refused for a moderator's block.
    pub blocked_requests: Counter,
    /// Players' reports of sessions stored.
    pub reports: Counter,
    /// Answers refused, by reason.
    pub answers_rejected: Family<RejectLabels, Counter>,
    /// Answer long-polls in flight.
    pub long_poll_waiters: Gauge,
    /// Connections turned away at a connection cap.
    pub connections_refused: Counter,
    /// Requests by route, method and status.
    pub requests: Family<RouteLabels, Counter>,
    /// Request latency by route, method and status.
    pub request_seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every series registered.
    pub fn new() -> Self {
        let sessions_live = Gauge::default();
        let rounds_published = Counter::default();
        let answers_accepted = Counter::default();
        let admin_actions = Counter::default();
        let blocked_requests = Counter::default();
        let reports = Counter::default();
        let answers_rejected = Family::default();
        let long_poll_waiters = Gauge::default();
        let connections_refused = Counter::default();
        let requests = Family::default();
        let request_seconds = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let mut registry = Registry::with_prefix("lobby");
        registry.register(
            "sessions_live",
            "Live (unexpired) sessions",
            sessions_live.clone(),
        );
        registry.register(
            "rounds_published",
            "Offer rounds published",
            rounds_published.clone(),
        );
        registry.register(
            "answers_accepted",
            "Answers that won their round",
            answers_accepted.clone(),
        );
        registry.register(
            "admin_actions",
            "Admin actions that changed something (blocks placed and lifted)",
            admin_actions.clone(),
        );
        registry.register(
            "blocked_requests",
            "Creates, updates and answers refused for a moderator's block",
            blocked_requests.clone(),
        );
        registry.register(
            "reports",
            "Players' reports of sessions stored",
            reports.clone(),
        );
        registry.register(
            "answers_rejected",
            "Answers refused, by reason",
            answers_rejected.clone(),
        );
        registry.register(
            "long_poll_waiters",
            "Answer long-polls in flight",
            long_poll_waiters.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections turned away at the total or per-address cap",
            connections_refused.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests by route, method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route, method and status",
            request_seconds.clone(),
        );
        Metrics {
            registry,
            sessions_live,
            rounds_published,
            answers_accepted,
            admin_actions,
            blocked_requests,
            reports,
            answers_rejected,
            long_poll_waiters,
            connections_refused,
            requests,
            request_seconds,
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Runs `request` through `next`, recording its count and latency by
    /// route, method and status (the body of the request-tracking middleware).
    pub async fn track(&self, request: Request, next: Next) -> Response {
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map_or("unmatched", |p| p.as_str())
            .to_owned();
        let method = method_label(request.method()).to_owned();
        let start = Instant::now();
        let response = next.run(request).await;
        let labels = RouteLabels {
            route,
            method,
            status: response.status().as_u16(),
        };
        self.request_seconds
            .get_or_create(&labels)
            .observe(start.elapsed().as_secs_f64());
        self.requests.get_or_create(&labels).inc();
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Method;

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::DELETE), "DELETE");
        let invented = Method::from_bytes("X".repeat(8_000).as_bytes()).expect("a token");
        assert_eq!(method_label(&invented), "other");
        let other = Method::from_bytes(b"FROBNICATE").expect("a token");
        assert_eq!(method_label(&other), "other");
    }
}
