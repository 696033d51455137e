//! An offline bot campaign: every player is a bot, levels come from the
//! generator, one JSON line per level and a final summary line. The
//! campaign itself is `engine::campaign`; the browser's
//! `web/tools/botmatch.mjs` runs the same code in WebAssembly.
//!
//! `cargo run -p engine --release --example botmatch -- --seed S --players N --levels L [--difficulty D] [--max-ticks T]`

use std::time::Instant;

use engine::Difficulty;
use engine::campaign::{Campaign, CampaignSpec};
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
    let mut campaign = Campaign::new(CampaignSpec {
        seed: args.seed,
        players: args.players,
        levels: args.levels,
        difficulty: args.difficulty,
        max_ticks: args.max_ticks,
    });
    let started = Instant::now();
    let mut sim_seconds = 0.0f64;
    while let Some(level) = campaign.next_level() {
        let engine = match level {
            Ok(e) => e,
            Err(e) => {
                eprintln!("botmatch: {e}");
                std::process::exit(1);
            }
        };
        let level_start = Instant::now();
        let record = campaign.play(engine);
        sim_seconds += level_start.elapsed().as_secs_f64();
        println!("{}", json!(record));
    }
    let summary = campaign.summary();
    let elapsed = started.elapsed().as_secs_f64();
    let mut line = json!(summary);
    line["ticksPerSecond"] = json!(if sim_seconds > 0.0 {
        (summary.ticks as f64 / sim_seconds).round()
    } else {
        0.0
    });
    line["elapsedSeconds"] = json!(elapsed);
    println!("{line}");
}
