//! The joining machine against scripted lobby answers
//! (`tests/fixtures/joining-scripts.json`): every turn's event must give
//! the turn's step. `web/test/machines.test.mjs` runs the same scripts
//! through the wasm build, so the daemon and the browser join alike.

use lobby_api::joining::{JoinEvent, Joining};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Scripts {
    build: String,
    scripts: Vec<Script>,
}

#[derive(Deserialize)]
struct Script {
    name: String,
    typed: String,
    spectate: bool,
    start: Value,
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    at: u64,
    event: JoinEvent,
    step: Option<Value>,
    error: Option<String>,
}

#[test]
fn every_script_gives_its_steps() {
    let text = include_str!("fixtures/joining-scripts.json");
    let doc: Scripts = serde_json::from_str(text).expect("the scripts parse");
    assert!(doc.scripts.len() >= 10, "the scripts cover the rules");
    for script in doc.scripts {
        let name = &script.name;
        let mut joining = Joining::new(&script.typed, script.spectate, &doc.build, 0);
        let first = serde_json::to_value(joining.start()).expect("json");
        assert_eq!(first, script.start, "{name}: the first step");
        for (n, turn) in script.turns.into_iter().enumerate() {
            let got = joining.on(turn.event, turn.at);
            match (got, turn.step, turn.error) {
                (Ok(step), Some(want), None) => {
                    let step = serde_json::to_value(step).expect("json");
                    assert_eq!(step, want, "{name}: turn {n}");
                }
                (Err(e), None, Some(want)) => assert_eq!(e.to_string(), want, "{name}: turn {n}"),
                (got, step, error) => panic!(
                    "{name}: turn {n} answered {got:?}, the script wants step {step:?} or error {error:?}"
                ),
            }
        }
    }
}
