//! The protocol facts every peer shares, and the sanitizers a page applies
//! to what a player types, exported so the browser never keeps its own
//! copies.
//!
//! The facts reach the browser twice, from this one list: the module answers
//! them at run time (`cf_facts`), and [`module_text`] renders them as
//! `web/lib/facts.js`, the file the pages import before any module is
//! loaded. That file is generated: `web-bindings/tests/facts_module.rs`
//! fails when it differs from [`module_text`] and rewrites it when run with
//! `CAMPFIRE_WRITE_FACTS=1`.

use std::collections::BTreeMap;

use engine::rules::COUNTDOWN_TICKS;
use engine::wire::input::{InputSnapshot, MAX_MOUSE_DELTA_X, WEAPON_SLOT_COUNT};
use engine::wire::map::Tile;
use engine::wire::snapshot::{CORRECTION_SMOOTH_MS, SNAP_THRESHOLD_TILES};
use netcode::host::rounds;
use netcode::link::ConnectionState;
use protocol::chunk::{CHUNK_SIZE_BYTES, MAX_PAYLOAD_BYTES};
use protocol::code::{CODE_ALPHABET, CODE_LEN, CODE_SEPARATORS};
use protocol::name::{DISPLAY_NAME_MAX_CHARS, SESSION_NAME_MAX_CHARS, sanitize_display_name};
use protocol::peer::{Channel, PEER_PROTOCOL_VERSION, UNRELIABLE_CHANNEL_ID};
use protocol::tick::{
    DISCONNECT_GRACE_MS, FIXED_DT, HASH_REPORT_INTERVAL_TICKS, INPUT_DELAY_TICKS,
    RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ,
};
use serde::Serialize;

use crate::view::tile_char;

/// The ABI's connection states, by their number (the index) and the
/// `RTCPeerConnection.connectionState` that names them in the page.
pub const CONNECTION_STATES: [(&str, ConnectionState); 4] = [
    ("connected", ConnectionState::Connected),
    ("disconnected", ConnectionState::Disconnected),
    ("failed", ConnectionState::Failed),
    ("closed", ConnectionState::Closed),
];

/// One shared fact: its name in JavaScript, what it says, its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    /// The name `web/lib/facts.js` exports it under.
    pub name: &'static str,
    /// One sentence for the generated doc comment.
    pub doc: &'static str,
    /// The value as JSON text (also a JavaScript literal).
    pub json: String,
}

fn fact(name: &'static str, doc: &'static str, value: impl Serialize) -> Fact {
    let json = serde_json::to_string(&value).unwrap_or_else(|_| "null".to_owned());
    Fact { name, doc, json }
}

/// The facts of this build, in the order `web/lib/facts.js` lists them.
pub fn facts() -> Vec<Fact> {
    let tiles = (0..=u8::MAX).filter_map(Tile::from_code);
    vec![
        fact(
            "BUILD_VERSION",
            "This build's identifier (the lobby's `build`).",
            protocol::BUILD_VERSION,
        ),
        fact("TICK_RATE_HZ", "Simulation ticks per second.", TICK_RATE_HZ),
        fact("FIXED_DT", "Seconds simulated by one tick.", FIXED_DT),
        fact(
            "INPUT_DELAY_TICKS",
            "Ticks between sampling an input and the tick it applies at.",
            INPUT_DELAY_TICKS,
        ),
        fact(
            "RECONCILE_INTERVAL_TICKS",
            "Ticks between two host reconciliation snapshots.",
            RECONCILE_INTERVAL_TICKS,
        ),
        fact(
            "COUNTDOWN_TICKS",
            "Ticks of the exit countdown before a level is complete.",
            COUNTDOWN_TICKS,
        ),
        fact(
            "DISCONNECT_GRACE_MS",
            "How long a lost peer keeps its seat before a synchronized removal.",
            DISCONNECT_GRACE_MS,
        ),
        fact(
            "SNAP_THRESHOLD_TILES",
            "Position corrections at or above this many tiles snap in rendering too.",
            SNAP_THRESHOLD_TILES,
        ),
        fact(
            "CORRECTION_SMOOTH_MS",
            "Rendering window over which a small correction decays to zero.",
            CORRECTION_SMOOTH_MS,
        ),
        fact(
            "PEER_PROTOCOL_VERSION",
            "Version of the peer protocol; peers with another version refuse each other.",
            PEER_PROTOCOL_VERSION,
        ),
        fact(
            "CHUNK_SIZE_BYTES",
            "Largest chunk payload in bytes (UTF-8).",
            CHUNK_SIZE_BYTES,
        ),
        fact(
            "MAX_PAYLOAD_BYTES",
            "Largest reassembled payload accepted by default.",
            MAX_PAYLOAD_BYTES,
        ),
        fact(
            "HASH_REPORT_INTERVAL_TICKS",
            "Ticks between two world-hash reports.",
            HASH_REPORT_INTERVAL_TICKS,
        ),
        fact(
            "MAX_MOUSE_DELTA_X",
            "Largest mouse movement one tick's input may carry.",
            MAX_MOUSE_DELTA_X,
        ),
        fact(
            "WEAPON_SLOT_COUNT",
            "Weapon slots (selected by the digits 1 to this).",
            WEAPON_SLOT_COUNT,
        ),
        fact(
            "DISPLAY_NAME_MAX_CHARS",
            "Longest display name, in characters (code points).",
            DISPLAY_NAME_MAX_CHARS,
        ),
        fact(
            "SESSION_NAME_MAX_CHARS",
            "Longest session name the lobby keeps, in characters (code points).",
            SESSION_NAME_MAX_CHARS,
        ),
        fact(
            "NEUTRAL_INPUT",
            "The all-neutral input.",
            InputSnapshot::NEUTRAL,
        ),
        fact(
            "CHANNELS",
            "The data channels' labels, in the order the host creates them (the ABI's channel numbers).",
            Channel::ALL.iter().map(|c| c.label()).collect::<Vec<_>>(),
        ),
        fact(
            "UNRELIABLE_CHANNELS",
            "The channels created unordered, with no retransmissions.",
            Channel::ALL
                .iter()
                .filter(|c| !c.reliable())
                .map(|c| c.label())
                .collect::<Vec<_>>(),
        ),
        fact(
            "UNRELIABLE_CHANNEL_ID",
            "The SCTP stream id both sides give the negotiated unreliable channel.",
            UNRELIABLE_CHANNEL_ID,
        ),
        fact(
            "CONNECTION_STATES",
            "The ABI's connection-state numbers, by RTCPeerConnection state.",
            CONNECTION_STATES
                .iter()
                .enumerate()
                .map(|(n, (label, _))| (*label, n))
                .collect::<BTreeMap<_, _>>(),
        ),
        fact(
            "CODE_ALPHABET",
            "The symbols of a session code, in canonical (upper) case.",
            std::str::from_utf8(CODE_ALPHABET).unwrap_or_default(),
        ),
        fact("CODE_LEN", "Symbols in a session code.", CODE_LEN),
        fact(
            "CODE_SEPARATORS",
            "Characters a typed code may carry between its symbols.",
            CODE_SEPARATORS.iter().collect::<String>(),
        ),
        fact(
            "HOST_ANSWER_POLL_MS",
            "How long a host's answer long-poll waits (netcode::host::rounds).",
            rounds::ANSWER_POLL_MS,
        ),
        fact(
            "HOST_REFRESH_EVERY_MS",
            "How often a host refreshes its session's TTL besides its answer polls.",
            rounds::REFRESH_EVERY_MS,
        ),
        fact(
            "TILE",
            "Tile codes, by name (the protocol's `Tile`).",
            tiles
                .clone()
                .map(|t| (format!("{t:?}").to_ascii_uppercase(), t.code()))
                .collect::<BTreeMap<_, _>>(),
        ),
        fact(
            "TILE_OF_CHAR",
            "Tile codes, by their character in a view's grid rows.",
            tiles
                .map(|t| (tile_char(t), t.code()))
                .collect::<BTreeMap<_, _>>(),
        ),
    ]
}

/// The facts as one JSON object, by name (what `cf_facts` answers).
pub fn facts_json() -> String {
    let fields: Vec<String> = facts()
        .iter()
        .map(|f| {
            format!(
                "{}:{}",
                serde_json::to_string(f.name).unwrap_or_default(),
                f.json
            )
        })
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// The text of `web/lib/facts.js`: one frozen export per fact.
pub fn module_text() -> String {
    let mut out = String::from(
        "// @ts-check\n\
         // GENERATED from web-bindings/src/facts.rs; do not edit. The protocol facts\n\
         // every peer shares, for the pages (the WebAssembly module answers the same\n\
         // list). Regenerate: CAMPFIRE_WRITE_FACTS=1 cargo test -p web-bindings --test facts_module\n",
    );
    for f in facts() {
        let value = if f.json.starts_with(['[', '{']) {
            format!("Object.freeze({})", f.json)
        } else {
            f.json
        };
        out.push_str(&format!(
            "\n/** {} */\nexport const {} = {value};\n",
            f.doc, f.name
        ));
    }
    out
}

/// An input as the shared stream may carry it (JSON in, JSON out).
pub fn sanitize_input(input_json: &str) -> Result<String, String> {
    let input: InputSnapshot =
        serde_json::from_str(input_json).map_err(|e| format!("input: {e}"))?;
    serde_json::to_string(&input.sanitized()).map_err(|e| e.to_string())
}

/// A display name as every peer shows it.
pub fn sanitize_name(raw: &str) -> String {
    sanitize_display_name(raw)
}

/// A typed session code in its canonical form, or why it is none.
pub fn parse_code(typed: &str) -> Result<String, String> {
    protocol::code::SessionCode::parse(typed)
        .map(|c| c.as_str().to_owned())
        .map_err(|e| e.to_string())
}
