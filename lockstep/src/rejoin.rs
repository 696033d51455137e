//! Rejoin tokens: a player's token is the HMAC-SHA256 of its player id
//! under the session's secret, truncated to 128 bits. Nothing is stored,
//! and nobody can forge another player's token without the secret, which
//! the driver draws at random for each session. The host session and the
//! relay hand them out and check them alike.

use hmac::{Hmac, Mac};
use protocol::input::PlayerId;
use sha2::Sha256;

/// Bytes of the MAC a token keeps.
const TOKEN_BYTES: usize = 16;

fn mac(secret: &[u8; 32], player: &PlayerId) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    mac.update(b"campfire rejoin\0");
    mac.update(player.as_str().as_bytes());
    Some(mac)
}

/// `player`'s token under `secret`: 32 lowercase hex digits.
pub fn token(secret: &[u8; 32], player: &PlayerId) -> Option<String> {
    let tag = mac(secret, player)?.finalize().into_bytes();
    Some(
        tag[..TOKEN_BYTES]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Whether `presented` is `player`'s token (compared in constant time).
pub fn verify(secret: &[u8; 32], player: &PlayerId, presented: &str) -> bool {
    let Some(bytes) = parse_hex(presented) else {
        return false;
    };
    bytes.len() == TOKEN_BYTES
        && mac(secret, player).is_some_and(|m| m.verify_truncated_left(&bytes).is_ok())
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != TOKEN_BYTES * 2 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_for_its_player_only() {
        let secret = [7u8; 32];
        let (a, b) = (PlayerId::new("guest-1"), PlayerId::new("guest-2"));
        let t = token(&secret, &a).unwrap();
        assert_eq!(t.len(), 32);
        assert!(verify(&secret, &a, &t));
        assert!(!verify(&secret, &b, &t));
        assert!(!verify(&[8u8; 32], &a, &t));
        assert!(!verify(&secret, &a, &t[..30]));
        assert!(!verify(&secret, &a, "zz"));
        assert!(!verify(&secret, &a, &"é".repeat(16)));
    }
}
