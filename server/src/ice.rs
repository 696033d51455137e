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

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use protocol::api::IceServer;
use sha1::Sha1;

use crate::config::Config;

/// What the server knows about ICE servers.
#[derive(Clone)]
pub struct IceConfig {
    stun_urls: Vec<String>,
    turn_urls: Vec<String>,
    turn_secret: Option<String>,
    credential_ttl_secs: i64,
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
        }
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
        let user = match grant {
            TurnGrant::Nothing => None,
            TurnGrant::Host(code) => Some(format!("{code}:host")),
            TurnGrant::Round(code, round) => Some(format!("{code}:r{round}")),
        };
        if let (Some(user), false, Some(secret)) =
            (user, self.turn_urls.is_empty(), &self.turn_secret)
        {
            let username = format!("{}:{user}", self.expiry(now_secs));
            servers.push(IceServer {
                urls: self.turn_urls.clone(),
                credential: Some(turn_password(secret, &username)),
                username: Some(username),
            });
        }
        servers
    }

    /// When a credential handed out at `now_secs` expires: the end of the
    /// lifetime window after the current one, so it lives between one and
    /// two lifetimes and is the same throughout a window.
    fn expiry(&self, now_secs: i64) -> i64 {
        let ttl = self.credential_ttl_secs.max(1);
        now_secs
            .div_euclid(ttl)
            .saturating_add(2)
            .saturating_mul(ttl)
    }
}

/// Who a TURN credential is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnGrant<'a> {
    /// Nobody about to connect: STUN only.
    Nothing,
    /// The host of the session with this code (its own responses).
    Host(&'a str),
    /// The joiners of this session's open round (a read while it is open).
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
