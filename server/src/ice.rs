//! ICE servers handed to peers: configured STUN URLs, and TURN URLs with
//! short-lived credentials in coturn's `use-auth-secret` (TURN REST API)
//! scheme: username `expiry:user`, password base64(HMAC-SHA1(secret, username)).
//!
//! A credential names what it was granted for: `expiry:CODE:host` for a
//! session's host, `expiry:CODE:rN` for the joiners of its round N. The
//! expiry is rounded up to a whole number of credential lifetimes, so every
//! reader of one round within one lifetime gets the same username, and
//! coturn's per-user quota (`user-quota`) bounds the relay allocations of
//! all of them together, however often a stranger reads the round.
//!
//! A session hands out credentials for at most
//! `--turn-round-credentials-per-session` distinct rounds per lifetime
//! window; the readers of any later round in that window share one
//! overflow username, `expiry:CODE:rounds`. However fast a host opens
//! rounds, a session names at most that many plus two (its host and the
//! overflow) TURN users per window, so the TURN server's quotas bound it.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use dashmap::DashMap;
use hmac::{Hmac, Mac};
use lobby_api::api::IceServer;
use sha1::Sha1;

use crate::config::Config;

/// What the server knows about ICE servers.
#[derive(Clone)]
pub struct IceConfig {
    stun_urls: Vec<String>,
    turn_urls: Vec<String>,
    turn_secret: Option<String>,
    credential_ttl_secs: i64,
    /// Distinct round credentials one session may hand out per window.
    round_credentials_per_session: usize,
    /// The rounds each session handed credentials out for, this window.
    round_grants: Arc<DashMap<String, RoundGrants>>,
}

/// The rounds of one session that were granted their own credential in
/// one lifetime window.
#[derive(Debug, Default)]
struct RoundGrants {
    window: i64,
    rounds: Vec<u32>,
}

impl std::fmt::Debug for IceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IceConfig")
            .field("stun_urls", &self.stun_urls)
            .field("turn_urls", &self.turn_urls)
            .field(
                "turn_secret",
                &self.turn_secret.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl IceConfig {
    /// From the server configuration (empty URLs are ignored).
    pub fn from_config(config: &Config) -> Self {
        let clean = |urls: &[String]| {
            urls.iter()
                .map(|u| u.trim().to_string())
                .filter(|u| !u.is_empty())
                .collect()
        };
        Self {
            stun_urls: clean(&config.stun_urls),
            turn_urls: clean(&config.turn_urls),
            turn_secret: config.turn_secret.clone().filter(|s| !s.is_empty()),
            credential_ttl_secs: config.turn_credential_ttl.min(i64::MAX as u64) as i64,
            round_credentials_per_session: config.turn_round_credentials_per_session as usize,
            round_grants: Arc::default(),
        }
    }

    /// Whether TURN credentials are handed out at all.
    fn grants_turn(&self) -> bool {
        !self.turn_urls.is_empty() && self.turn_secret.is_some()
    }

    /// The list for one response at Unix time `now_secs`: the STUN URLs,
    /// and TURN with a credential for `grant`, if any (see the module docs).
    pub fn servers(&self, grant: TurnGrant<'_>, now_secs: i64) -> Vec<IceServer> {
        let mut servers = Vec::with_capacity(2);
        if !self.stun_urls.is_empty() {
            servers.push(IceServer {
                urls: self.stun_urls.clone(),
                username: None,
                credential: None,
            });
        }
        let Some(secret) = self.turn_secret.as_ref().filter(|_| self.grants_turn()) else {
            return servers;
        };
        let user = match grant {
            TurnGrant::Nothing => None,
            TurnGrant::Host(code) => Some(format!("{code}:host")),
            TurnGrant::Round(code, round) if self.grant_round(code, round, now_secs) => {
                Some(format!("{code}:r{round}"))
            }
            TurnGrant::Round(code, _) => Some(format!("{code}:rounds")),
        };
        if let Some(user) = user {
            let username = format!("{}:{user}", self.expiry(now_secs));
            servers.push(IceServer {
                urls: self.turn_urls.clone(),
                credential: Some(turn_password(secret, &username)),
                username: Some(username),
            });
        }
        servers
    }

    /// Whether `round` of session `code` gets a credential of its own at
    /// `now_secs`: it already has one this window, or the session has
    /// granted fewer rounds than its budget this window.
    fn grant_round(&self, code: &str, round: u32, now_secs: i64) -> bool {
        let window = self.window(now_secs);
        let mut grants = self.round_grants.entry(code.to_owned()).or_default();
        if grants.window != window {
            *grants = RoundGrants {
                window,
                rounds: Vec::new(),
            };
        }
        if grants.rounds.contains(&round) {
            return true;
        }
        if grants.rounds.len() < self.round_credentials_per_session {
            grants.rounds.push(round);
            return true;
        }
        false
    }

    /// Forgets the round grants of windows before the one at `now_secs`
    /// (bounded memory; called by the sweep).
    pub fn forget_old_grants(&self, now_secs: i64) {
        let window = self.window(now_secs);
        self.round_grants.retain(|_, g| g.window >= window);
        self.round_grants.shrink_to_fit();
    }

    /// Round grants kept (sessions that handed out round credentials in
    /// the current window).
    pub fn sessions_with_grants(&self) -> usize {
        self.round_grants.len()
    }

    /// The lifetime window `now_secs` falls in.
    fn window(&self, now_secs: i64) -> i64 {
        now_secs.div_euclid(self.credential_ttl_secs.max(1))
    }

    /// When a credential handed out at `now_secs` expires: the end of the
    /// lifetime window after the current one, so it lives between one and
    /// two lifetimes and is the same throughout a window.
    fn expiry(&self, now_secs: i64) -> i64 {
        let ttl = self.credential_ttl_secs.max(1);
        self.window(now_secs).saturating_add(2).saturating_mul(ttl)
    }
}

/// Who a TURN credential is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnGrant<'a> {
    /// Nobody about to connect: STUN only.
    Nothing,
    /// The host of the session with this code (its own responses).
    Host(&'a str),
    /// The joiners of this session's open round (a read while it is open);
    /// past the session's budget of rounds, the shared overflow user.
    Round(&'a str, u32),
}

/// base64(HMAC-SHA1(secret, username)), as coturn computes it.
pub fn turn_password(secret: &str, username: &str) -> String {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(username.as_bytes());
    STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_config(ttl: u64) -> IceConfig {
        let mut config = Config::for_tests("sqlite://unused.db");
        config.turn_urls = vec!["turn:127.0.0.1:3478".into()];
        config.turn_secret = Some("secret".into());
        config.turn_credential_ttl = ttl;
        IceConfig::from_config(&config)
    }

    fn username(servers: &[IceServer]) -> Option<&str> {
        servers.iter().find_map(|s| s.username.as_deref())
    }

    #[test]
    fn readers_of_one_round_within_a_lifetime_share_one_credential() {
        let ice = turn_config(300);
        let first = ice.servers(TurnGrant::Round("ABCD2345", 3), 1_700_000_150);
        let later = ice.servers(TurnGrant::Round("ABCD2345", 3), 1_700_000_399);
        assert_eq!(username(&first), Some("1700000700:ABCD2345:r3"));
        assert_eq!(first, later);
        let next_round = ice.servers(TurnGrant::Round("ABCD2345", 4), 1_700_000_399);
        let host = ice.servers(TurnGrant::Host("ABCD2345"), 1_700_000_399);
        assert_eq!(username(&next_round), Some("1700000700:ABCD2345:r4"));
        assert_eq!(username(&host), Some("1700000700:ABCD2345:host"));
        let next_window = ice.servers(TurnGrant::Round("ABCD2345", 3), 1_700_000_400);
        assert_eq!(username(&next_window), Some("1700001000:ABCD2345:r3"));
        assert_eq!(
            username(&ice.servers(TurnGrant::Nothing, 1_700_000_399)),
            None
        );
    }

    #[test]
    fn a_session_names_a_bounded_number_of_round_users_per_window() {
        let ice = turn_config(300);
        let budget = ice.round_credentials_per_session;
        let now = 1_700_000_100;
        let users: std::collections::BTreeSet<String> = (1..=200)
            .map(|round| {
                let servers = ice.servers(TurnGrant::Round("ABCD2345", round), now);
                username(&servers).expect("a TURN user").to_owned()
            })
            .collect();
        assert_eq!(users.len(), budget + 1, "{users:?}");
        assert!(users.contains("1700000700:ABCD2345:rounds"));
        // A granted round keeps its own user; another session has its own
        // budget; the next window starts a new one.
        let first = ice.servers(TurnGrant::Round("ABCD2345", 1), now);
        assert_eq!(username(&first), Some("1700000700:ABCD2345:r1"));
        let other = ice.servers(TurnGrant::Round("EFGH6789", 500), now);
        assert_eq!(username(&other), Some("1700000700:EFGH6789:r500"));
        let later = ice.servers(TurnGrant::Round("ABCD2345", 201), now + 300);
        assert_eq!(username(&later), Some("1700001000:ABCD2345:r201"));
        // The sweep forgets the windows gone by.
        assert_eq!(ice.sessions_with_grants(), 2);
        ice.forget_old_grants(now + 300);
        assert_eq!(ice.sessions_with_grants(), 1);
    }

    #[test]
    fn without_turn_nothing_is_kept_per_session() {
        let ice = IceConfig::from_config(&Config::for_tests("sqlite://unused.db"));
        for round in 1..=50 {
            assert!(username(&ice.servers(TurnGrant::Round("ABCD2345", round), 0)).is_none());
        }
        assert_eq!(ice.sessions_with_grants(), 0);
    }

    #[test]
    fn a_credential_lives_between_one_and_two_lifetimes() {
        let ice = turn_config(300);
        for now in [0, 1, 299, 300, 1_700_000_123] {
            let expiry = ice.expiry(now);
            assert!(
                expiry - now > 300 - 1 && expiry - now <= 600,
                "{now} -> {expiry}"
            );
        }
    }

    #[test]
    fn password_matches_a_known_vector() {
        // echo -n "1700000000:test" | openssl dgst -sha1 -hmac secret -binary | base64
        assert_eq!(
            turn_password("secret", "1700000000:test"),
            "Jek93IGytc6+tp2hiK0p/AkyVds="
        );
    }
}
