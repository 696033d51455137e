//! What a reconciliation snapshot costs on the wire, and what a delta
//! against the previous one would: five bots play level 7 of seed 11
//! (hard), a snapshot every 30 ticks, and each is measured as the wire's
//! `compact` form sends it today (JSON, deflated) and in the forms a delta
//! encoding could take.
//!
//! `cargo run --release -p engine --example snapshot_bytes -- [PLAYERS] [TICKS] [SEED] [LEVEL]`
//! (default 5 players, 3,000 ticks, level 7 of seed 11). `DEPTH=N` splits
//! the XOR variant's sections N levels down (default 2);
//! `SNAPSHOT_FIELDS=1` prints each field's deflated size at the last tick.
//! The delta snapshots on the wire (`protocol::delta`) are the
//! `binaryDelta` form.

use std::collections::BTreeMap;

use engine::wire::input::InputSnapshot;
use engine::wire::raycaster::{LevelSeed, Settings};
use engine::{BotController, Difficulty, Game, LevelSetup, LevelStatus, RaycasterEngine};
use game_api::PlayerId;

fn deflated(bytes: &[u8]) -> usize {
    miniz_oxide::deflate::compress_to_vec(bytes, 6).len()
}

/// A self-delimiting binary form of a JSON value, every number in eight
/// bytes, so an unchanged value writes the same bytes at the same place.
fn binary(v: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.push(1 + u8::from(*b)),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(3);
                out.extend(u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                out.push(4);
                out.extend(i.to_le_bytes());
            } else {
                out.push(5);
                out.extend(n.as_f64().unwrap_or(0.0).to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(6);
            out.extend((s.len() as u32).to_le_bytes());
            out.extend(s.as_bytes());
        }
        Value::Array(a) => {
            out.push(7);
            out.extend((a.len() as u32).to_le_bytes());
            for x in a {
                binary(x, out);
            }
        }
        Value::Object(o) => {
            out.push(8);
            out.extend((o.len() as u32).to_le_bytes());
            for (k, x) in o {
                out.extend((k.len() as u32).to_le_bytes());
                out.extend(k.as_bytes());
                binary(x, out);
            }
        }
    }
}

/// The snapshot's sections, each in the binary form: objects and arrays
/// are split `depth` levels down, so a part that changes its length
/// misaligns only itself.
fn sections(v: &serde_json::Value, depth: u32, out: &mut Vec<Vec<u8>>) {
    use serde_json::Value;
    match v {
        Value::Object(o) if depth > 0 => {
            out.push((o.len() as u32).to_le_bytes().to_vec());
            for (k, x) in o {
                out.push(k.as_bytes().to_vec());
                sections(x, depth - 1, out);
            }
        }
        Value::Array(a) if depth > 0 => {
            out.push((a.len() as u32).to_le_bytes().to_vec());
            for x in a {
                sections(x, depth - 1, out);
            }
        }
        _ => {
            let mut b = Vec::new();
            binary(v, &mut b);
            out.push(b);
        }
    }
}

/// Each section XORed with the base's when both are as long, else as it
/// is; deflated together.
fn xor_delta(base: &[Vec<u8>], now: &[Vec<u8>]) -> usize {
    let mut out = Vec::new();
    for (i, s) in now.iter().enumerate() {
        match base.get(i).filter(|b| b.len() == s.len()) {
            Some(b) => out.extend(s.iter().zip(b).map(|(x, y)| x ^ y)),
            None => out.extend(s),
        }
    }
    deflated(&out)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let players: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let ticks: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(3_000);
    let seed: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(11);
    let level: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    let mut world = RaycasterEngine::new_level(LevelSetup {
        body: engine::level_gen::generate(seed, level, players),
        roster: (0..players)
            .map(|i| PlayerId::new(format!("guest-{i}")))
            .collect(),
        head: LevelSeed { gameplay_seed: 5 },
        settings: Settings {
            difficulty: Difficulty::Hard,
        },
        player_count: players,
        carryovers: BTreeMap::new(),
        input_delays: BTreeMap::new(),
    })
    .expect("level 7 of seed 11");
    let bots: Vec<BotController> = world.roster().into_iter().map(BotController::new).collect();
    let mut previous: Option<Vec<u8>> = None;
    let mut previous_sections: Option<Vec<Vec<u8>>> = None;
    let (mut binary_deflated, mut xor, mut binary_dict) = (0usize, 0usize, 0usize);
    let (mut n, mut json_deflated, mut json_raw, mut dict_delta) = (0usize, 0usize, 0usize, 0usize);
    while world.tick() < ticks && world.status() == LevelStatus::Running {
        let inputs: BTreeMap<PlayerId, InputSnapshot> = bots
            .iter()
            .map(|b| (b.player_id().clone(), b.decide(&world)))
            .collect();
        world.advance(&inputs, &[]);
        if world.tick() % 30 != 0 {
            continue;
        }
        let snapshot = world.snapshot();
        let json = serde_json::to_vec(&snapshot).expect("json");
        n += 1;
        json_raw += json.len();
        json_deflated += deflated(&json);
        // A delta as deflate with the previous snapshot for a dictionary
        // would send it: what the current one adds to the previous one's
        // deflated stream.
        if let Some(prev) = &previous {
            let both = [prev.as_slice(), json.as_slice()].concat();
            dict_delta += deflated(&both).saturating_sub(deflated(prev));
        }
        let value = serde_json::to_value(&snapshot).expect("value");
        let depth = std::env::var("DEPTH")
            .ok()
            .and_then(|d| d.parse().ok())
            .unwrap_or(2);
        let mut now = Vec::new();
        sections(&value, depth, &mut now);
        binary_deflated += deflated(&now.concat());
        if let Some(base) = &previous_sections {
            xor += xor_delta(base, &now);
            let (b, c) = (base.concat(), now.concat());
            binary_dict +=
                deflated(&[b.as_slice(), c.as_slice()].concat()).saturating_sub(deflated(&b));
        }
        previous_sections = Some(now);
        previous = Some(json);
        if std::env::var_os("SNAPSHOT_FIELDS").is_some() && world.tick() == ticks {
            let v: serde_json::Value =
                serde_json::from_slice(previous.as_deref().unwrap_or_default()).expect("json");
            let mut parts: Vec<(String, usize)> = Vec::new();
            for (k, x) in v.as_object().into_iter().flatten() {
                if k == "residual" {
                    for (rk, rx) in x.as_object().into_iter().flatten() {
                        let b = serde_json::to_vec(rx).expect("json");
                        parts.push((format!("residual.{rk}"), deflated(&b)));
                    }
                } else {
                    let b = serde_json::to_vec(x).expect("json");
                    parts.push((k.clone(), deflated(&b)));
                }
            }
            eprintln!("{parts:?}");
        }
    }
    println!(
        "{{\"players\":{players},\"ticks\":{},\"snapshots\":{n},\"jsonBytes\":{},\"jsonDeflated\":{},\"deltaAgainstPrevious\":{},\"binaryDeflated\":{},\"xorDelta\":{},\"binaryDelta\":{}}}",
        world.tick(),
        json_raw / n.max(1),
        json_deflated / n.max(1),
        dict_delta / n.saturating_sub(1).max(1),
        binary_deflated / n.max(1),
        xor / n.saturating_sub(1).max(1),
        binary_dict / n.saturating_sub(1).max(1),
    );
}
