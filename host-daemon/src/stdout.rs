//! What `host-daemon host` prints on stdout for testers and tests: one
//! `session CODE` line per session it opens, and one `session-report` JSON
//! line per session that ended. Logs go to stderr.

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
struct ReportLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    code: &'a str,
    #[serde(flatten)]
    report: &'a SessionReport,
}

/// Prints a finished session's report as one JSON line on stdout.
pub fn session_report(code: &str, report: &SessionReport) {
    let report_line = ReportLine {
        kind: "session-report",
        code,
        report,
    };
    match serde_json::to_string(&report_line) {
        Ok(text) => line(&text),
        Err(e) => tracing::error!(error = %e, "could not encode the session report"),
    }
}
