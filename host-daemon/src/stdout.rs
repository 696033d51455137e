//! What `host-daemon host` and `relay` print on stdout for testers and
//! tests: one `session CODE` line per session opened, and one
//! `session-report` (host) or `relay-report` (relay) JSON line per session
//! that ended. Logs go to stderr.

use netcode::host::SessionReport;
use serde::Serialize;

/// One line on stdout, flushed at once (testers and tests read it live).
pub fn line(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// The `session-report` line: `{"type":"session-report","code":...,` then
/// the report's fields.
#[derive(Serialize)]
struct ReportLine<'a, R: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'a str,
    #[serde(flatten)]
    report: &'a R,
}

/// Prints a finished relay session's report as one JSON line on stdout.
pub fn relay_report(code: &str, report: &crate::relaying::RelayReport) {
    report_line("relay-report", code, report);
}

/// Prints a finished session's report as one JSON line on stdout.
pub fn session_report(code: &str, report: &SessionReport) {
    report_line("session-report", code, report);
}

fn report_line<R: Serialize>(kind: &'static str, code: &str, report: &R) {
    match serde_json::to_string(&ReportLine { kind, code, report }) {
        Ok(text) => line(&text),
        Err(e) => tracing::error!(error = %e, kind, "could not encode the report"),
    }
}
