//! An offline bot campaign: every player is a bot, levels come from the
//! generator, one JSON line per level and a final summary line.
//!
//! `cargo run -p engine --release --example botmatch -- --seed S --players N --levels L [--difficulty D] [--max-ticks T]`

use std::collections::BTreeMap;
use std::time::Instant;

use engine::level_gen::generate;
use engine::{BotController, Difficulty, Engine, LevelSetup, LevelStatus, RaycasterEngine};
use protocol::input::PlayerId;
use serde_json::json;

const USAGE: &str = "usage: botmatch --seed S --players N(1-8) --levels L [--difficulty easy|normal|hard] [--max-ticks T]";

struct Args {
    seed: u32,
    players: u32,
    levels: u32,
    difficulty: Difficulty,
    max_ticks: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seed: 1,
        players: 2,
        levels: 3,
        difficulty: Difficulty::Normal,
        max_ticks: 9_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Err(USAGE.into());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--seed" => {
                args.seed = u32::try_from(num(&value)?).map_err(|e| format!("{flag}: {e}"))?
            }
            "--players" => {
                args.players = u32::try_from(num(&value)?).map_err(|e| format!("{flag}: {e}"))?
            }
            "--levels" => {
                args.levels = u32::try_from(num(&value)?).map_err(|e| format!("{flag}: {e}"))?
            }
            "--max-ticks" => args.max_ticks = num(&value)?,
            "--difficulty" => {
                args.difficulty = Difficulty::parse(&value)
                    .ok_or_else(|| format!("unknown difficulty {value}"))?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !(1..=8).contains(&args.players) {
        return Err("--players must be 1..=8".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("botmatch: {e}");
            if e != USAGE {
                eprintln!("{USAGE}");
            }
            std::process::exit(2);
        }
    };
    let roster: Vec<PlayerId> = (0..args.players)
        .map(|i| PlayerId::new(format!("bot-{i}")))
        .collect();
    let bots: Vec<BotController> = roster.iter().cloned().map(BotController::new).collect();
    let mut carryovers = BTreeMap::new();
    let mut total_ticks = 0u64;
    let mut completed = 0u32;
    let mut campaign_hash = 0u64;
    let started = Instant::now();
    let mut sim_seconds = 0.0f64;
    for level in 0..args.levels {
        let map = generate(args.seed, level, args.players);
        let gameplay_seed = args.seed.wrapping_mul(2_654_435_761).wrapping_add(level);
        let setup = LevelSetup {
            map,
            roster: roster.clone(),
            seed: gameplay_seed,
            difficulty: args.difficulty,
            player_count: args.players,
            carryovers: carryovers.clone(),
        };
        let mut engine = match RaycasterEngine::new_level(setup) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("botmatch: level {level}: {e}");
                std::process::exit(1);
            }
        };
        let level_start = Instant::now();
        while engine.tick() < args.max_ticks
            && matches!(
                engine.status(),
                LevelStatus::Running | LevelStatus::Countdown { .. }
            )
        {
            let inputs = bots
                .iter()
                .map(|b| (b.player_id().clone(), b.decide(&engine)))
                .collect();
            engine.advance(&inputs, &[]);
        }
        sim_seconds += level_start.elapsed().as_secs_f64();
        let status = engine.status();
        total_ticks += engine.tick();
        let hash = engine.world_hash();
        campaign_hash = campaign_hash.rotate_left(5) ^ hash;
        let kills: u32 = engine.state().players.values().map(|p| p.kills).sum();
        println!(
            "{}",
            json!({
                "level": level,
                "status": status,
                "ticks": engine.tick(),
                "kills": kills,
                "enemies": engine.map().enemies.len(),
                "worldHash": format!("{hash:016x}"),
            })
        );
        if status != LevelStatus::Complete {
            break;
        }
        completed += 1;
        carryovers = engine.carryovers();
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({
            "seed": args.seed,
            "players": args.players,
            "difficulty": args.difficulty,
            "levelsCompleted": completed,
            "levels": args.levels,
            "ticks": total_ticks,
            "worldHash": format!("{campaign_hash:016x}"),
            "ticksPerSecond": if sim_seconds > 0.0 { (total_ticks as f64 / sim_seconds).round() } else { 0.0 },
            "elapsedSeconds": elapsed,
        })
    );
}
