//! Latency histograms per request type and the throughput report.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// Request types the report distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// `PUT /session` (create with an offer).
    Create,
    /// `GET /session/{code}` (joiner reads the offer).
    ReadOffer,
    /// `POST /session/{code}/answer`.
    Answer,
    /// `GET /session/{code}/answer` (host long-poll, until the answer arrives).
    ReceiveAnswer,
    /// `DELETE /session/{code}` (cleanup after the exchange).
    Delete,
    /// A whole exchange, create to answer received.
    Exchange,
    /// `GET /lobby` page.
    LobbyPage,
    /// `GET /healthz`.
    Healthz,
}

impl Op {
    /// Name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create (PUT /session)",
            Op::ReadOffer => "read offer (GET /session/{code})",
            Op::Answer => "answer (POST .../answer)",
            Op::ReceiveAnswer => "receive answer (GET .../answer)",
            Op::Delete => "delete (DELETE /session/{code})",
            Op::Exchange => "complete exchange",
            Op::LobbyPage => "GET /lobby page of 50",
            Op::Healthz => "GET /healthz",
        }
    }
}

/// Histograms (microseconds) and error counts, shared by workers.
#[derive(Default)]
pub struct Recorder {
    hists: Mutex<BTreeMap<Op, Histogram<u64>>>,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl Recorder {
    /// Records one latency.
    pub fn record(&self, op: Op, took: Duration) {
        let micros = took.as_micros().clamp(1, 60_000_000) as u64;
        if let Ok(mut hists) = self.hists.lock() {
            let h = hists.entry(op).or_insert_with(|| {
                Histogram::new_with_bounds(1, 60_000_000, 3)
                    .unwrap_or_else(|_| Histogram::new(3).expect("histogram"))
            });
            let _ = h.record(micros);
        }
    }

    /// Counts one unexpected outcome.
    pub fn error(&self, what: String) {
        if let Ok(mut errors) = self.errors.lock() {
            *errors.entry(what).or_default() += 1;
        }
    }

    /// Per-op summary over `elapsed`, as JSON.
    pub fn summary(&self, elapsed: Duration) -> Value {
        let hists = self.hists.lock().map(|h| h.clone()).unwrap_or_default();
        let mut ops = serde_json::Map::new();
        for (op, h) in &hists {
            ops.insert(
                op.name().to_string(),
                json!({
                    "count": h.len(),
                    "perSecond": h.len() as f64 / elapsed.as_secs_f64(),
                    "p50Ms": h.value_at_quantile(0.50) as f64 / 1000.0,
                    "p99Ms": h.value_at_quantile(0.99) as f64 / 1000.0,
                    "maxMs": h.max() as f64 / 1000.0,
                }),
            );
        }
        let errors = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        json!({"seconds": elapsed.as_secs_f64(), "ops": ops, "errors": errors})
    }
}

/// Prints a summary as a table.
pub fn print_table(title: &str, summary: &Value) {
    println!(
        "\n{title} ({:.1} s)",
        summary["seconds"].as_f64().unwrap_or(0.0)
    );
    println!(
        "  {:<36} {:>9} {:>11} {:>9} {:>9}",
        "request", "count", "per second", "p50 ms", "p99 ms"
    );
    if let Some(ops) = summary["ops"].as_object() {
        for (name, s) in ops {
            println!(
                "  {:<36} {:>9} {:>11.0} {:>9.2} {:>9.2}",
                name,
                s["count"].as_u64().unwrap_or(0),
                s["perSecond"].as_f64().unwrap_or(0.0),
                s["p50Ms"].as_f64().unwrap_or(0.0),
                s["p99Ms"].as_f64().unwrap_or(0.0),
            );
        }
    }
    if let Some(errors) = summary["errors"].as_object() {
        for (what, n) in errors {
            println!("  ERROR {what}: {n}");
        }
    }
}
