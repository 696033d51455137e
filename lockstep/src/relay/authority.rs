//! The authority: which peer answers for the game, how it is chosen
//! (longest-connected first), and how the role passes on when it leaves,
//! falls silent or desyncs.

use super::{AskedSnapshot, Peer, Phase, Relay, RelayEvent, RelayMessage, RelayOutput, Slot};

impl<I: Clone + Default> Relay<I> {
    /// The authority's ranking: connected players that have the level,
    /// longest-connected first.
    fn candidates(&self) -> Vec<Slot> {
        let mut c: Vec<(u64, Slot)> = self
            .peers
            .iter()
            .filter(|(_, p)| p.connected && p.player().is_some())
            .filter(|(_, p)| {
                !p.receiving || p.loaded || matches!(self.phase, Phase::Starting { .. })
            })
            .filter(|(_, p)| p.player().is_some_and(|id| self.roster.contains(id)))
            .map(|(s, p)| (p.seniority, *s))
            .collect();
        c.sort_unstable();
        c.into_iter().map(|(_, s)| s).collect()
    }

    /// Keeps the authority if it may stay, else hands it to the best
    /// candidate (announced to everyone, from the next tick).
    pub(super) fn elect(&mut self) {
        let candidates = self.candidates();
        if self.authority.is_some_and(|a| candidates.contains(&a)) {
            return;
        }
        self.hand_authority(candidates.first().copied());
    }

    fn hand_authority(&mut self, to: Option<Slot>) {
        let before = self.authority;
        self.authority = to;
        let Some(slot) = to else { return };
        if before.is_some() {
            self.stats.handovers += 1;
        }
        let Some(player) = self.peers.get(&slot).and_then(Peer::player).cloned() else {
            return;
        };
        let tick = self.next_tick();
        self.events.push(RelayEvent::AuthorityChanged {
            epoch: self.epoch,
            tick,
            player: player.clone(),
        });
        let everyone = self.connected();
        self.broadcast(
            everyone,
            RelayMessage::Authority {
                epoch: self.epoch,
                player,
                from_tick: tick,
            },
        );
        // What the old authority owed, the new one answers.
        match self.phase {
            Phase::Asking { .. } => self.ask_level(),
            Phase::Running { .. } => {
                if let Some(AskedSnapshot {
                    tick, answer: None, ..
                }) = self.asked_snapshot
                {
                    self.outbox.push(RelayOutput::To(
                        slot,
                        RelayMessage::AskSnapshot {
                            epoch: self.epoch,
                            tick,
                        },
                    ));
                }
            }
            _ => {}
        }
    }

    /// The authority did not answer in time: the next candidate is asked.
    pub(super) fn authority_silent(&mut self) {
        let candidates = self.candidates();
        let next = match self
            .authority
            .and_then(|a| candidates.iter().position(|c| *c == a))
        {
            Some(i) => candidates.get(i + 1).or(candidates.first()).copied(),
            None => candidates.first().copied(),
        };
        if next.is_some() && next != self.authority {
            self.hand_authority(next);
        } else {
            self.ask_level();
        }
    }
}
