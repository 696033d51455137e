//! The offline bot campaign (`engine::campaign`) for the cross-build
//! determinism test: `web/tools/botmatch.mjs` runs it in WebAssembly and
//! compares its summary with the native `botmatch` example's.

use engine::Difficulty;
use engine::campaign::{Campaign, CampaignSpec, CampaignSummary, LevelRecord};
use serde::{Deserialize, Serialize};

/// What the page asks for (every field optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BotmatchRequest {
    /// Campaign seed.
    pub seed: Option<u32>,
    /// Bot players, 1 to 8.
    pub players: Option<u32>,
    /// Levels to attempt.
    pub levels: Option<u32>,
    /// `easy`, `normal` or `hard`.
    pub difficulty: Option<String>,
    /// Tick limit per level.
    pub max_ticks: Option<u64>,
}

/// Every level's record and the summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BotmatchResult {
    /// One record per level played.
    pub levels: Vec<LevelRecord>,
    /// The campaign's outcome.
    pub summary: CampaignSummary,
}

/// Runs a whole campaign.
pub fn botmatch(request_json: &str) -> Result<BotmatchResult, String> {
    let req: BotmatchRequest =
        serde_json::from_str(request_json).map_err(|e| format!("botmatch request: {e}"))?;
    let mut spec = CampaignSpec::default();
    if let Some(seed) = req.seed {
        spec.seed = seed;
    }
    if let Some(players) = req.players {
        if !(1..=8).contains(&players) {
            return Err("players must be 1..=8".into());
        }
        spec.players = players;
    }
    if let Some(levels) = req.levels {
        spec.levels = levels;
    }
    if let Some(d) = req.difficulty {
        spec.difficulty = Difficulty::parse(&d).ok_or_else(|| format!("unknown difficulty {d}"))?;
    }
    if let Some(t) = req.max_ticks {
        spec.max_ticks = t;
    }
    let mut campaign = Campaign::new(spec);
    let mut levels = Vec::new();
    while let Some(level) = campaign.next_level() {
        levels.push(campaign.play(level.map_err(|e| e.to_string())?));
    }
    Ok(BotmatchResult {
        levels,
        summary: campaign.summary(),
    })
}
