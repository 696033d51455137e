//! [`DelayAwareBot`]: the raycaster's bot corrected for the input delay,
//! the bot the sessions run ([`game_api::Game::Bot`]).
//!
//! A bot aims as if its input applied at once: it turns by the whole angle
//! to its target every tick. Under an input delay of `d` ticks the same
//! correction is issued `d + 1` times before the first one lands, so the aim overshoots and oscillates and bots stop finishing
//! levels. This wrapper subtracts the turns still in flight (a Smith
//! predictor), so the sum of pending turns equals the error the bot sees.

use std::collections::VecDeque;

use game_api::Bot;
use protocol::tick::INPUT_DELAY_TICKS;

use crate::bot::BotController;
use crate::wire::input::{InputSnapshot, MAX_MOUSE_DELTA_X};
use crate::world::RaycasterEngine;
use game_api::PlayerId;

/// A bot whose inputs are applied its input delay after it samples them.
pub struct DelayAwareBot {
    bot: BotController,
    in_flight: VecDeque<f64>,
    delay: u64,
}

impl std::fmt::Debug for DelayAwareBot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayAwareBot")
            .field("player", self.bot.player_id())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl Bot<RaycasterEngine> for DelayAwareBot {
    fn new(id: PlayerId) -> Self {
        Self {
            bot: BotController::new(id),
            in_flight: VecDeque::new(),
            delay: INPUT_DELAY_TICKS,
        }
    }

    fn player_id(&self) -> &PlayerId {
        self.bot.player_id()
    }

    /// Forgets turns in flight.
    fn start_level(&mut self, delay: u64) {
        self.in_flight.clear();
        self.delay = delay;
    }

    fn decide(&mut self, engine: &RaycasterEngine) -> InputSnapshot {
        let mut input = self.bot.decide(engine);
        let pending: f64 = self.in_flight.iter().sum();
        input.mouse_delta_x =
            (input.mouse_delta_x - pending).clamp(-MAX_MOUSE_DELTA_X, MAX_MOUSE_DELTA_X);
        self.in_flight.push_back(input.mouse_delta_x);
        while self.in_flight.len() > usize::try_from(self.delay).unwrap_or(usize::MAX) {
            self.in_flight.pop_front();
        }
        input
    }
}
