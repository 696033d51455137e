//! The hosting machine against scripted lobby answers and session news
//! (`tests/fixtures/hosting-scripts.json`), through the same JSON the page
//! uses: every turn's event must give the turn's commands.
//! `web/test/machines.test.mjs` runs the same scripts through the wasm
//! build, so the daemon's round loop and the browser host decide alike.

use campfire::hosting::WebHosting;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Scripts {
    scripts: Vec<Script>,
}

#[derive(Deserialize)]
struct Script {
    name: String,
    settings: Value,
    start: Value,
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    at: f64,
    event: Value,
    commands: Option<Value>,
    error: Option<String>,
    /// Absent: not checked; `null`: no wake-up.
    #[serde(default, deserialize_with = "present")]
    wake: Option<Option<f64>>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

#[test]
fn every_script_gives_its_commands() {
    let text = include_str!("fixtures/hosting-scripts.json");
    let doc: Scripts = serde_json::from_str(text).expect("the scripts parse");
    assert!(doc.scripts.len() >= 7, "the scripts cover the rules");
    for script in doc.scripts {
        let name = &script.name;
        let mut h = WebHosting::new(&script.settings.to_string()).expect("settings");
        let first: Value = serde_json::from_str(&h.start(0.0).expect("json")).expect("json");
        assert_eq!(first, script.start, "{name}: the first commands");
        for (n, turn) in script.turns.into_iter().enumerate() {
            let got = h.on(&turn.event.to_string(), turn.at);
            match (got, turn.commands, turn.error) {
                (Ok(text), Some(want), None) => {
                    let commands: Value = serde_json::from_str(&text).expect("json");
                    assert_eq!(commands, want, "{name}: turn {n}");
                }
                (Err(e), None, Some(want)) => assert_eq!(e, want, "{name}: turn {n}"),
                (got, commands, error) => panic!(
                    "{name}: turn {n} answered {got:?}, the script wants {commands:?} or error {error:?}"
                ),
            }
            if let Some(wake) = turn.wake {
                assert_eq!(h.next_wake(turn.at), wake, "{name}: turn {n}'s wake-up");
            }
        }
    }
}
