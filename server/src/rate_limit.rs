//! Per-client-address rate limits on creates, answers, session reads, code
//! misses and lobby pages rendered afresh; per session and client address
//! on answers; and per-session limits on host updates (GCRA from the
//! `governor` crate).
//!
//! A client address is its IPv4 address, or its IPv6 network
//! ([`ClientKeys`]: a /56 unless configured): one subscriber usually holds
//! a whole network, so keying by the full address would give each of them
//! 2^64 budgets.
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

use lobby_api::code::SessionCode;

use crate::client_addr::ClientKeys;
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
    /// `GET /session/{code}` of existing sessions (misses have their own).
    SessionReads,
    /// Every admin call, charged before its token is checked (so guessing
    /// tokens is as slow as this).
    Admin,
    /// `POST /session/{code}/report`.
    Reports,
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
    session_reads: Option<DefaultKeyedRateLimiter<IpAddr>>,
    admin: Option<DefaultKeyedRateLimiter<IpAddr>>,
    reports: Option<DefaultKeyedRateLimiter<IpAddr>>,
    session_answers: Option<DefaultKeyedRateLimiter<(SessionCode, IpAddr)>>,
    misses: Option<DefaultKeyedRateLimiter<IpAddr>>,
    updates: Option<DefaultKeyedRateLimiter<SessionCode>>,
    answer_polls: Option<DefaultKeyedRateLimiter<SessionCode>>,
    blocked_until: DashMap<IpAddr, Instant>,
    /// Sessions whose rounds an address may not answer before then.
    rounds_blocked_until: DashMap<(SessionCode, IpAddr), Instant>,
    keys: ClientKeys,
    clock: DefaultClock,
}

fn limiter<K: std::hash::Hash + Eq + Clone>(
    per_minute: u32,
    enabled: bool,
) -> Option<DefaultKeyedRateLimiter<K>> {
    let n = NonZeroU32::new(per_minute).filter(|_| enabled)?;
    Some(RateLimiter::keyed(Quota::per_minute(n)))
}

/// A limiter of `per_minute` with bursts of `burst` (0: as many as per
/// minute).
fn bursty_limiter<K: std::hash::Hash + Eq + Clone>(
    per_minute: u32,
    burst: u32,
    enabled: bool,
) -> Option<DefaultKeyedRateLimiter<K>> {
    let n = NonZeroU32::new(per_minute).filter(|_| enabled)?;
    let burst = NonZeroU32::new(burst).unwrap_or(n);
    Some(RateLimiter::keyed(Quota::per_minute(n).allow_burst(burst)))
}

impl RateLimits {
    /// Limits as configured.
    pub fn from_config(config: &Config) -> Self {
        let on = !config.disable_rate_limits;
        Self {
            creates: limiter(config.creates_per_minute, on),
            answers: limiter(config.answers_per_minute, on),
            lobby_pages: bursty_limiter(config.lobby_pages_per_minute, config.lobby_page_burst, on),
            session_reads: bursty_limiter(
                config.session_reads_per_minute,
                config.session_read_burst,
                on,
            ),
            admin: limiter(config.admin_requests_per_minute, on),
            reports: limiter(config.reports_per_minute, on),
            session_answers: limiter(config.answers_per_session_per_minute, on),
            misses: limiter(config.misses_per_minute, on),
            updates: limiter(config.updates_per_minute, on),
            answer_polls: limiter(config.answer_polls_per_minute, on),
            blocked_until: DashMap::new(),
            rounds_blocked_until: DashMap::new(),
            keys: config.client_keys(),
            clock: DefaultClock::default(),
        }
    }

    /// Charges one request to `budget`; `429` when the address is over it.
    pub fn check(&self, budget: Budget, ip: IpAddr) -> Result<(), AppError> {
        let (limiter, what) = match budget {
            Budget::Creates => (&self.creates, "session creates"),
            Budget::Answers => (&self.answers, "answers"),
            Budget::LobbyPages => (&self.lobby_pages, "uncached lobby pages"),
            Budget::SessionReads => (&self.session_reads, "session reads"),
            Budget::Admin => (&self.admin, "admin requests"),
            Budget::Reports => (&self.reports, "reports"),
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        limiter.check_key(&self.keys.key(ip)).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            AppError::rate_limited(what, wait.as_secs_f64().ceil() as u64)
        })
    }

    /// Refuses an answer from `ip` to session `code` while that address
    /// has won that session's rounds past its budget (so the fastest
    /// poller cannot take round after round: a real joiner from another
    /// address gets the next one). Only won rounds count
    /// ([`Self::won_round`]): joiners behind one address who lose races to
    /// each other spend nothing.
    pub fn check_session_answer(&self, code: &SessionCode, ip: IpAddr) -> Result<(), AppError> {
        let key = (code.clone(), self.keys.key(ip));
        if let Some(until) = self.rounds_blocked_until.get(&key) {
            let now = Instant::now();
            if *until > now {
                let secs = (*until - now).as_secs_f64().ceil() as u64;
                return Err(AppError::rate_limited("rounds won of this session", secs));
            }
        }
        Ok(())
    }

    /// Charges a round of session `code` that `ip`'s answer won; once the
    /// address is past its budget, its next answers to the session are
    /// refused until it refills.
    pub fn won_round(&self, code: &SessionCode, ip: IpAddr) {
        let Some(limiter) = &self.session_answers else {
            return;
        };
        let key = (code.clone(), self.keys.key(ip));
        if let Err(not_until) = limiter.check_key(&key) {
            let wait: Duration = not_until.wait_time_from(self.clock.now());
            self.rounds_blocked_until.insert(key, Instant::now() + wait);
        }
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
        if let Some(until) = self.blocked_until.get(&self.keys.key(ip)) {
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
        let key = self.keys.key(ip);
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
            &self.session_reads,
            &self.misses,
            &self.admin,
            &self.reports,
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
        if let Some(limiter) = &self.session_answers {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        let now = Instant::now();
        self.blocked_until.retain(|_, until| *until > now);
        self.rounds_blocked_until.retain(|_, until| *until > now);
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
            let addr = ip(&format!("2001:db8:7:{i:x}::{i:x}"));
            assert!(limits.check(Budget::Creates, addr).is_ok());
        }
        assert!(
            limits
                .check(Budget::Creates, ip("2001:db8:7:ff:ffff::9"))
                .is_err(),
            "one /56"
        );
        assert!(
            limits
                .check(Budget::Creates, ip("2001:db8:7:100::1"))
                .is_ok()
        );
    }

    #[test]
    fn rounds_won_of_one_session_are_budgeted_per_address() {
        let mut config = Config::for_tests("sqlite://unused.db");
        config.answers_per_session_per_minute = 2;
        let limits = RateLimits::from_config(&config);
        let code = SessionCode::parse("ABCD2345").expect("code");
        let other = SessionCode::parse("ABCD2346").expect("code");
        let grabber = ip("192.0.2.66");
        for _ in 0..3 {
            assert!(limits.check_session_answer(&code, grabber).is_ok());
            limits.won_round(&code, grabber);
        }
        let refused = limits
            .check_session_answer(&code, grabber)
            .expect_err("past two rounds won (the third tipped it)");
        assert_eq!(refused.code, lobby_api::api::ErrorCode::RateLimited);
        assert!(
            limits.check_session_answer(&other, grabber).is_ok(),
            "another session"
        );
        assert!(
            limits.check_session_answer(&code, ip("192.0.2.67")).is_ok(),
            "another address"
        );
    }
}
