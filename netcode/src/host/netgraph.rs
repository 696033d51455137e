//! What the host's netgraph shows: each guest's link, from the session's
//! own counts.

use std::time::Duration;

use game_api::Game;

use super::HostSession;
use crate::netgraph::{HostNetgraph, LinkNetgraph};

impl<E: Game> HostSession<E> {
    /// The netgraph at `now`: a line per player or spectator the host has
    /// sent messages to, in id order.
    pub fn netgraph(&self, now: Duration) -> HostNetgraph {
        let stats = self.stats();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let links = stats
            .sent
            .iter()
            .map(|(id, flow)| {
                let rtt = stats.rtt.get(id);
                LinkNetgraph {
                    player: id.as_str().to_owned(),
                    name: self
                        .names()
                        .get(id)
                        .or_else(|| self.spectator_names.get(id))
                        .cloned()
                        .unwrap_or_default(),
                    rtt_ms: rtt.and_then(|r| r.smoothed()).map(ms),
                    rtt_jitter_ms: rtt.filter(|r| r.samples() > 0).map(|r| ms(r.variation())),
                    input_delay: self.input_delay(id),
                    down: flow.reading(now),
                    held_inputs: stats.held_per_player.get(id).copied().unwrap_or(0),
                    desyncs: stats.desyncs.get(id).copied().unwrap_or(0),
                }
            })
            .collect();
        HostNetgraph {
            tick: self.engine.as_ref().map_or(0, Game::tick),
            snapshots: stats.snapshots,
            links,
        }
    }
}
