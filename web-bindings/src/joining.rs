//! Joining a session by code for the browser (`web/lib/lobby-client.js`):
//! the daemon's joining machine ([`protocol::joining::Joining`]) with JSON
//! in and out, on the page's millisecond clock. The page does the steps
//! (fetch, RTCPeerConnection, setTimeout) and reports how each went.

use protocol::BUILD_VERSION;
use protocol::joining::{JoinEvent, Joining};
use serde::Deserialize;

use crate::guest::millis;

/// What the page asks for.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebJoinRequest {
    /// The code as typed.
    pub code: String,
    /// Watch instead of play (default false).
    #[serde(default)]
    pub spectate: bool,
    /// The page's build (default: this module's).
    pub build: Option<String>,
}

/// One joiner's way into a session, for the page.
#[derive(Clone, Debug)]
pub struct WebJoining {
    joining: Joining,
    /// The latest time seen: time never goes backwards for the machine.
    now: u64,
}

impl WebJoining {
    /// A joiner from the page's JSON request, at `now_ms`.
    pub fn new(request_json: &str, now_ms: f64) -> Result<Self, String> {
        let request: WebJoinRequest =
            serde_json::from_str(request_json).map_err(|e| format!("join request: {e}"))?;
        let now = whole_ms(now_ms);
        let build = request.build.as_deref().unwrap_or(BUILD_VERSION);
        Ok(Self {
            joining: Joining::new(&request.code, request.spectate, build, now),
            now,
        })
    }

    /// The first step, as JSON.
    pub fn start(&mut self) -> Result<String, String> {
        serde_json::to_string(&self.joining.start()).map_err(|e| e.to_string())
    }

    /// Takes the page's report (a JSON [`JoinEvent`]) and answers the next
    /// step as JSON; an unreadable or out-of-turn report is an error and
    /// changes nothing.
    pub fn on(&mut self, event_json: &str, now_ms: f64) -> Result<String, String> {
        let event: JoinEvent =
            serde_json::from_str(event_json).map_err(|e| format!("join event: {e}"))?;
        let now = self.now.max(whole_ms(now_ms));
        let step = self.joining.on(event, now).map_err(|e| e.to_string())?;
        self.now = now;
        serde_json::to_string(&step).map_err(|e| e.to_string())
    }
}

/// A page time in whole milliseconds (the sessions' clamping, `millis`).
fn whole_ms(ms: f64) -> u64 {
    u64::try_from(millis(ms).as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_drives_the_machine_in_json() {
        let mut j =
            WebJoining::new(r#"{"code":"abcd efgh","build":"b"}"#, 1_000.0).expect("request");
        assert_eq!(
            j.start().expect("json"),
            r#"{"step":"readSession","code":"ABCDEFGH"}"#
        );
        let step = j
            .on(
                r#"{"event":"session","public":true,"players":1,"maxPlayers":2,"build":"b","round":1,"offer":"o"}"#,
                1_010.0,
            )
            .expect("in turn");
        assert_eq!(
            step,
            r#"{"step":"answer","code":"ABCDEFGH","round":1,"offer":"o"}"#
        );
    }

    #[test]
    fn bad_requests_and_reports_are_refused_and_change_nothing() {
        assert!(WebJoining::new("nonsense", 0.0).is_err());
        assert!(WebJoining::new(r#"{"code":"x","other":1}"#, 0.0).is_err());
        let mut j = WebJoining::new(r#"{"code":"ABCDEFGH"}"#, f64::NAN).expect("request");
        j.start().expect("json");
        assert!(j.on("{}", 0.0).unwrap_err().starts_with("join event:"));
        assert!(
            j.on(r#"{"event":"connected"}"#, 0.0)
                .unwrap_err()
                .contains("cannot take an open connection")
        );
        // A time past any clock is clamped, not a panic.
        assert!(j.on(r#"{"event":"paused"}"#, 1e300).is_err());
        // Still reading: a refusal is taken.
        let step = j
            .on(r#"{"event":"refused","code":"no_such_session"}"#, -5.0)
            .expect("in turn");
        assert!(step.contains(r#""code":"no_such_session""#), "{step}");
    }
}
