//! Rejoin: every admitted guest gets a token with its session init (when
//! the host has a rejoin secret); a fresh connection whose hello presents
//! it, while that player is still in the roster (connected, or within its
//! disconnect grace), takes the player over. The old connection is
//! closed, and the new one gets the running level's exact state at the
//! next tick, like a late joiner, but without a roster add: the player's
//! entity, inventory and score are the ones it left. After a removal the
//! token resumes nothing, and the hello is an ordinary late join.
//!
//! The tokens are [`lockstep::rejoin::RejoinTokens`], shared with the
//! relay: the HMAC-SHA256 of the player id and a generation under the
//! host's secret, truncated to 128 bits. The driver draws the secret at
//! random for each session. A token resumes its player once: the resumed
//! connection's session init carries the next one.

use std::time::Duration;

use game_api::Game;
use game_api::PlayerId;
use protocol::name::sanitize_display_name;
use protocol::peer::Features;

use super::{HostEvent, HostOutput, HostSession};
use crate::stats::GuestSlot;
use protocol::peer::Feature;

impl<E: Game> HostSession<E> {
    /// `player`'s rejoin token, when the host takes rejoins.
    pub(super) fn rejoin_token(&self, player: &PlayerId) -> Option<String> {
        self.rejoins.as_ref()?.token(player)
    }

    /// The seat whose player `presented` resumes: admitted, not removed,
    /// its player in the running level's roster.
    pub(super) fn resume_target(&self, presented: &str) -> Option<GuestSlot> {
        let rejoins = self.rejoins.as_ref()?;
        let roster = self.roster();
        self.seats
            .entries()
            .find(|(_, seat)| {
                seat.admitted
                    && !seat.removed
                    && seat
                        .player
                        .as_ref()
                        .is_some_and(|p| roster.contains(p) && rejoins.verify(p, presented))
            })
            .map(|(slot, _)| slot)
    }

    /// Connection `slot` takes over seat `old`'s player: the old connection
    /// closes, and the new one gets the level's state at the next tick.
    pub(super) fn resume(
        &mut self,
        slot: GuestSlot,
        old: GuestSlot,
        agreed: Features,
        hello_sent: Option<Duration>,
        now: Duration,
    ) {
        let present = self.guests_present();
        let Some(old_seat) = self.seats.get_mut(old) else {
            return;
        };
        let Some(player) = old_seat.player.take() else {
            return;
        };
        let name = std::mem::take(&mut old_seat.name);
        old_seat.admitted = false;
        old_seat.joining = false;
        old_seat.connected = false;
        if !old_seat.closed {
            old_seat.closed = true;
            self.outbox.push(HostOutput::Close(old));
        }
        let ping = agreed.has(Feature::Ping);
        let Some(seat) = self.seats.get_mut(slot) else {
            return;
        };
        seat.admitted = true;
        seat.player = Some(player.clone());
        seat.name = sanitize_display_name(&name);
        seat.features = agreed;
        seat.admitted_at = Some(now);
        seat.setup_acked = true;
        seat.joining = true;
        seat.resuming = true;
        if let (true, Some(sent)) = (ping, hello_sent) {
            self.stats
                .rtt
                .entry(player.clone())
                .or_default()
                .sample(now.saturating_sub(sent));
        }
        *self.stats.rejoins.entry(player.clone()).or_default() += 1;
        // The token that resumed it is spent; its session init carries
        // the next.
        if let Some(rejoins) = &mut self.rejoins {
            rejoins.spend(&player);
        }
        self.events.push(HostEvent::PlayerResumed(slot, player));
        self.report_guests_present(present);
    }
}
