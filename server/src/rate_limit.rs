//! Per-client-address rate limits on creates, answers and code misses
//! (GCRA from the `governor` crate).
//!
//! Misses are special: the limiter is charged only when a lookup misses, but
//! once an address is over its budget *every* lookup from it is refused
//! until the budget refills, hits included; otherwise an enumerator would
//! still learn which codes exist.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use crate::config::Config;
use crate::error::AppError;

/// Which budget a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// `PUT /session` creates.
    Creates,
    /// `POST /session/{code}/answer`.
    Answers,
}

/// The server's rate limiters (all `None` when limits are switched off).
pub struct RateLimits {
    creates: Option<DefaultKeyedRateLimiter<IpAddr>>,
    answers: Option<DefaultKeyedRateLimiter<IpAddr>>,
    misses: Option<DefaultKeyedRateLimiter<IpAddr>>,
    blocked_until: DashMap<IpAddr, Instant>,
    clock: DefaultClock,
}

fn limiter(per_minute: u32, enabled: bool) -> Option<DefaultKeyedRateLimiter<IpAddr>> {
    let n = NonZeroU32::new(per_minute).filter(|_| enabled)?;
    Some(RateLimiter::keyed(Quota::per_minute(n)))
}

impl RateLimits {
    /// Limits as configured.
    pub fn from_config(config: &Config) -> Self {
        let on = !config.disable_rate_limits;
        Self {
            creates: limiter(config.creates_per_minute, on),
            answers: limiter(config.answers_per_minute, on),
            misses: limiter(config.misses_per_minute, on),
            blocked_until: DashMap::new(),
            clock: DefaultClock::default(),
        }
    }

    /// Charges one request to `budget`; `429` when the address is over it.
    pub fn check(&self, budget: Budget, ip: IpAddr) -> Result<(), AppError> {
        let (limiter, what) = match budget {
            Budget::Creates => (&self.creates, "session creates"),
            Budget::Answers => (&self.answers, "answers"),
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            AppError::rate_limited(what, wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Refuses every code lookup from an address that used up its misses.
    pub fn check_not_blocked(&self, ip: IpAddr) -> Result<(), AppError> {
        if let Some(until) = self.blocked_until.get(&ip) {
            let now = Instant::now();
            if *until > now {
                let secs = (*until - now).as_secs_f64().ceil() as u64;
                return Err(AppError::rate_limited("lookups of unknown codes", secs));
            }
        }
        Ok(())
    }

    /// Charges a lookup that missed; `429` if it used up the budget.
    pub fn record_miss(&self, ip: IpAddr) -> Result<(), AppError> {
        let Some(limiter) = &self.misses else {
            return Ok(());
        };
        limiter.check_key(&ip).map_err(|not_until| {
            let wait: Duration = not_until.wait_time_from(self.clock.now());
            self.blocked_until.insert(ip, Instant::now() + wait);
            AppError::rate_limited("lookups of unknown codes", wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Forgets addresses whose budgets are full again (bounded memory).
    pub fn forget_idle(&self) {
        for limiter in [&self.creates, &self.answers, &self.misses]
            .into_iter()
            .flatten()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        let now = Instant::now();
        self.blocked_until.retain(|_, until| *until > now);
    }
}
