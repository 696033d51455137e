//! Verifying a replay file in the browser: `host-daemon replay FILE`'s
//! check ([`netcode::replay`]) on text the page holds, answering the same
//! JSON as the daemon's line, so a page and a script read one shape.

use engine::RaycasterEngine;
use netcode::replay::{Replay, ReplayVerdict};

/// Reads a replay file's text and re-simulates every recorded tick on the
/// engine the daemon runs. A file that is not a replay of this build's
/// format, or whose level cannot be built, is an error naming the line;
/// a file that reads but does not reproduce its end is `matches: false`.
pub fn verify(text: &str) -> Result<ReplayVerdict, String> {
    Replay::parse(text)
        .and_then(|replay| replay.verdict::<RaycasterEngine>(None))
        .map_err(|e| format!("replay: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level recorded by `host-daemon host --record` (how: the header of
    /// `web/test/replay.test.mjs`).
    const FIXTURE: &str = include_str!("../../web/test/fixtures/short-level.replay");

    /// The `{"end": …}` record on the fixture's last line.
    fn recorded_end() -> serde_json::Value {
        let last = FIXTURE.lines().last().expect("a last line");
        serde_json::from_str::<serde_json::Value>(last).expect("JSON")["end"].clone()
    }

    #[test]
    fn a_recorded_level_reproduces_its_end() {
        let verdict = verify(FIXTURE).expect("a replay");
        let end = recorded_end();
        assert_eq!(verdict.matches, Some(true), "{verdict:?}");
        assert_eq!(Some(verdict.ticks), end["ticks"].as_u64());
        assert_eq!(
            Some(verdict.final_world_hash.as_str()),
            end["finalWorldHash"].as_str()
        );
        assert_eq!(
            verdict.recorded_world_hash,
            Some(verdict.final_world_hash.clone())
        );
        assert_eq!(verdict.level_epoch, 1);
    }

    #[test]
    fn the_answer_has_the_daemons_field_names() {
        let json = serde_json::to_value(verify(FIXTURE).expect("a replay")).expect("JSON");
        let mut keys: Vec<&str> = json
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "build",
                "finalWorldHash",
                "levelEpoch",
                "levelIndex",
                "matches",
                "recordedWorldHash",
                "roster",
                "ticks",
                "type",
            ]
        );
        assert_eq!(json["type"], "replay");
    }

    #[test]
    fn a_wrong_recorded_hash_does_not_match() {
        let recorded = recorded_end()["finalWorldHash"]
            .as_str()
            .expect("a hash")
            .to_owned();
        let verdict = verify(&FIXTURE.replace(&recorded, "0123456789abcdef")).expect("a replay");
        assert_eq!(verdict.matches, Some(false));
        assert_eq!(
            verdict.recorded_world_hash.as_deref(),
            Some("0123456789abcdef")
        );
    }

    #[test]
    fn without_its_end_record_a_replay_neither_matches_nor_fails() {
        let cut: Vec<&str> = FIXTURE.lines().collect();
        let verdict = verify(&cut[..cut.len() - 1].join("\n")).expect("a replay");
        assert_eq!(verdict.matches, None);
        assert_eq!(verdict.recorded_world_hash, None);
    }

    #[test]
    fn junk_is_an_error_naming_the_line_not_a_panic() {
        let header = FIXTURE.lines().next().expect("a header");
        let cases = [
            String::new(),
            "not a replay".to_owned(),
            "{\"end\":{\"ticks\":1,\"finalWorldHash\":\"00\"}}".to_owned(),
            "{\"replay\":{\"format\":1}}".to_owned(),
            header.replace("\"format\":1", "\"format\":99"),
            format!("{header}\n~AAAA\n"),
            format!("{header}\n{{\"type\":\"hello\"}}\n"),
            format!("{header}\n{{\"end\":{{\"ticks\":0,\"finalWorldHash\":\"x\"}}}}\nmore"),
            "\u{0}\u{fffd}\n\n~".to_owned(),
        ];
        for junk in &cases {
            let err = verify(junk).expect_err(junk);
            assert!(err.starts_with("replay: "), "{err}");
        }
        assert!(verify("").expect_err("empty").contains("line 1"));
        assert!(
            verify(&format!("{header}\n~AAAA"))
                .expect_err("a bad bundle")
                .contains("line 2")
        );
    }

    #[test]
    fn a_level_that_cannot_be_built_is_an_error() {
        let header = FIXTURE.lines().next().expect("a header");
        let mut value: serde_json::Value = serde_json::from_str(header).expect("JSON");
        value["replay"]["roster"] = serde_json::json!([]);
        let err = verify(&value.to_string()).expect_err("an empty roster");
        assert!(err.contains("could not be built"), "{err}");
    }
}
