//! A mine's state: spotted, armed (its fuse burning) or spent. What a mine
//! does each tick is [`crate::mine_system`].

use crate::wire::snapshot::MineSnapshot;
use serde::{Deserialize, Serialize};

/// One mine's state (index-aligned with `GameMap.mines`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mine {
    /// Not yet detonated.
    pub alive: bool,
    /// Spotted.
    pub visible: bool,
    /// Seconds until detonation once armed.
    pub fuse: Option<f64>,
}

impl Mine {
    /// The wire form.
    pub fn to_snapshot(&self, index: u32) -> MineSnapshot {
        MineSnapshot {
            index,
            alive: self.alive,
            visible: self.visible,
        }
    }
}
