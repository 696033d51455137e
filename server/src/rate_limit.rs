//! Per-client-address rate limits on creates, answers, code misses and
//! lobby pages rendered afresh, and per-session limits on host updates
//! (GCRA from the `governor` crate).
//!
//! A client address is its IPv4 address, or its IPv6 /64 network: one
//! subscriber usually holds a whole /64, so keying by the full address
//! would give each of them 2^64 budgets.
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

use protocol::code::SessionCode;

use crate::client_addr::client_key;
use crate::config::Config;
use crate::error::AppError;

/// Which budget a request draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// `PUT /session` creates.
    Creates,
    /// `POST /session/{code}/answer`.
    Answers,
    /// `GET /lobby` pages not served from the page cache (a render walks
    /// up to 10,000 candidates; a cached page costs next to nothing).
    LobbyPages,
}

/// Which per-session budget an authenticated host call draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionBudget {
    /// `PUT /session` with a code.
    Updates,
    /// `GET /session/{code}/answer`.
    AnswerPolls,
}

/// The server's rate limiters (all `None` when limits are switched off).
pub struct RateLimits {
    creates: Option<DefaultKeyedRateLimiter<IpAddr>>,
    answers: Option<DefaultKeyedRateLimiter<IpAddr>>,
    lobby_pages: Option<DefaultKeyedRateLimiter<IpAddr>>,
    misses: Option<DefaultKeyedRateLimiter<IpAddr>>,
    updates: Option<DefaultKeyedRateLimiter<SessionCode>>,
    answer_polls: Option<DefaultKeyedRateLimiter<SessionCode>>,
    blocked_until: DashMap<IpAddr, Instant>,
    clock: DefaultClock,
}

fn limiter<K: std::hash::Hash + Eq + Clone>(
    per_minute: u32,
    enabled: bool,
) -> Option<DefaultKeyedRateLimiter<K>> {
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
            lobby_pages: NonZeroU32::new(config.lobby_pages_per_minute)
                .filter(|_| on)
                .map(|n| {
                    let burst = NonZeroU32::new(config.lobby_page_burst).unwrap_or(n);
                    RateLimiter::keyed(Quota::per_minute(n).allow_burst(burst))
                }),
            misses: limiter(config.misses_per_minute, on),
            updates: limiter(config.updates_per_minute, on),
            answer_polls: limiter(config.answer_polls_per_minute, on),
            blocked_until: DashMap::new(),
            clock: DefaultClock::default(),
        }
    }

    /// Charges one request to `budget`; `429` when the address is over it.
    pub fn check(&self, budget: Budget, ip: IpAddr) -> Result<(), AppError> {
        let (limiter, what) = match budget {
            Budget::Creates => (&self.creates, "session creates"),
            Budget::Answers => (&self.answers, "answers"),
            Budget::LobbyPages => (&self.lobby_pages, "uncached lobby pages"),
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter.check_key(&client_key(ip)).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            AppError::rate_limited(what, wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Charges one authenticated host call of session `code` to `budget`;
    /// `429` when the host calls faster than it. Charged after the token
    /// check, so a stranger cannot spend a host's budget. (An update is a
    /// commit, a lobby-page invalidation and an event to every subscriber;
    /// a poll with no wait is cheap to send and refreshes the TTL, so
    /// neither may be free.)
    pub fn check_session(&self, budget: SessionBudget, code: &SessionCode) -> Result<(), AppError> {
        let (limiter, what) = match budget {
            SessionBudget::Updates => (&self.updates, "updates of this session"),
            SessionBudget::AnswerPolls => (&self.answer_polls, "answer polls of this session"),
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter.check_key(code).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            AppError::rate_limited(what, wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Refuses every code lookup from an address that used up its misses.
    pub fn check_not_blocked(&self, ip: IpAddr) -> Result<(), AppError> {
        if let Some(until) = self.blocked_until.get(&client_key(ip)) {
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
        let key = client_key(ip);
        limiter.check_key(&key).map_err(|not_until| {
            let wait: Duration = not_until.wait_time_from(self.clock.now());
            self.blocked_until.insert(key, Instant::now() + wait);
            AppError::rate_limited("lookups of unknown codes", wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Forgets addresses whose budgets are full again (bounded memory).
    pub fn forget_idle(&self) {
        for limiter in [
            &self.creates,
            &self.answers,
            &self.lobby_pages,
            &self.misses,
        ]
        .into_iter()
        .flatten()
        {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        for limiter in [&self.updates, &self.answer_polls].into_iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        let now = Instant::now();
        self.blocked_until.retain(|_, until| *until > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("address")
    }

    #[test]
    fn creates_from_one_ipv6_network_draw_on_one_budget() {
        let mut config = Config::for_tests("sqlite://unused.db");
        config.creates_per_minute = 3;
        let limits = RateLimits::from_config(&config);
        for i in 1..=3 {
            let addr = ip(&format!("2001:db8:7:7::{i:x}"));
            assert!(limits.check(Budget::Creates, addr).is_ok());
        }
        assert!(
            limits
                .check(Budget::Creates, ip("2001:db8:7:7:ffff::9"))
                .is_err()
        );
        assert!(limits.check(Budget::Creates, ip("2001:db8:7:8::1")).is_ok());
    }
}
