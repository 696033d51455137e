//! ICE servers handed to peers: configured STUN URLs, and TURN URLs with
//! short-lived credentials in coturn's `use-auth-secret` (TURN REST API)
//! scheme: username `expiry:tag`, password base64(HMAC-SHA1(secret, username)).

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

    /// The list for one session view; `tag` names the credential's user
    /// (the session code), `now_secs` is Unix time. TURN (with a fresh,
    /// short-lived credential) only `with_turn`: the host's own responses
    /// and a joiner's read of a session whose round is open, the only
    /// callers about to connect.
    pub fn servers(&self, tag: &str, now_secs: i64, with_turn: bool) -> Vec<IceServer> {
        let mut servers = Vec::with_capacity(2);
        if !self.stun_urls.is_empty() {
            servers.push(IceServer {
                urls: self.stun_urls.clone(),
                username: None,
                credential: None,
            });
        }
        if let (true, false, Some(secret)) =
            (with_turn, self.turn_urls.is_empty(), &self.turn_secret)
        {
            let username = format!(
                "{}:{tag}",
                now_secs.saturating_add(self.credential_ttl_secs)
            );
            servers.push(IceServer {
                urls: self.turn_urls.clone(),
                credential: Some(turn_password(secret, &username)),
                username: Some(username),
            });
        }
        servers
    }
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

    #[test]
    fn password_matches_a_known_vector() {
        // echo -n "1700000000:test" | openssl dgst -sha1 -hmac secret -binary | base64
        assert_eq!(
            turn_password("secret", "1700000000:test"),
            "Jek93IGytc6+tp2hiK0p/AkyVds="
        );
    }
}
