//! Rejoin tokens: a player's token is the HMAC-SHA256 of its player id and
//! a generation under the session's secret, truncated to 128 bits. Nobody
//! can forge another player's token without the secret, which the driver
//! draws at random for each session. The host session and the relay hand
//! them out and check them alike, through [`RejoinTokens`].
//!
//! A token is spent when it resumes its player: the generation moves on,
//! and the new connection's session init carries the next token, so a
//! token that leaked (a log, a resume file, a shared screen) takes a
//! player over at most once, and not at all once its owner has rejoined
//! with it. All that is stored is the generation of each player that
//! rejoined.

use std::collections::BTreeMap;

use game_api::PlayerId;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of the MAC a token keeps.
const TOKEN_BYTES: usize = 16;

fn mac(secret: &[u8; 32], player: &PlayerId, generation: u32) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    mac.update(b"campfire rejoin\0");
    mac.update(player.as_str().as_bytes());
    mac.update(b"\0");
    mac.update(&generation.to_be_bytes());
    Some(mac)
}

/// `player`'s token of `generation` under `secret`: 32 lowercase hex digits.
pub fn token(secret: &[u8; 32], player: &PlayerId, generation: u32) -> Option<String> {
    let tag = mac(secret, player, generation)?.finalize().into_bytes();
    Some(
        tag[..TOKEN_BYTES]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// Whether `presented` is `player`'s token of `generation` (compared in
/// constant time).
pub fn verify(secret: &[u8; 32], player: &PlayerId, generation: u32, presented: &str) -> bool {
    let Some(bytes) = parse_hex(presented) else {
        return false;
    };
    bytes.len() == TOKEN_BYTES
        && mac(secret, player, generation).is_some_and(|m| m.verify_truncated_left(&bytes).is_ok())
}

/// The rejoin tokens of one session: its secret and how many times each
/// player has rejoined.
#[derive(Clone, Debug)]
pub struct RejoinTokens {
    secret: [u8; 32],
    generations: BTreeMap<PlayerId, u32>,
}

impl RejoinTokens {
    /// Tokens under `secret`, none spent.
    pub fn new(secret: [u8; 32]) -> Self {
        Self {
            secret,
            generations: BTreeMap::new(),
        }
    }

    /// `player`'s current token.
    pub fn token(&self, player: &PlayerId) -> Option<String> {
        token(&self.secret, player, self.generation(player))
    }

    /// Whether `presented` is `player`'s current token.
    pub fn verify(&self, player: &PlayerId, presented: &str) -> bool {
        verify(&self.secret, player, self.generation(player), presented)
    }

    /// The first of `players` whose current token `presented` is.
    pub fn holder<'a>(
        &self,
        presented: &str,
        mut players: impl Iterator<Item = &'a PlayerId>,
    ) -> Option<&'a PlayerId> {
        players.find(|p| self.verify(p, presented))
    }

    /// `player` rejoined with its current token: that token is spent, and
    /// [`Self::token`] gives the next.
    pub fn spend(&mut self, player: &PlayerId) {
        let generation = self.generations.entry(player.clone()).or_default();
        *generation = generation.saturating_add(1);
    }

    fn generation(&self, player: &PlayerId) -> u32 {
        self.generations.get(player).copied().unwrap_or(0)
    }
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
    fn a_token_verifies_for_its_player_and_generation_only() {
        let secret = [7u8; 32];
        let (a, b) = (PlayerId::new("guest-1"), PlayerId::new("guest-2"));
        let t = token(&secret, &a, 0).unwrap();
        assert_eq!(t.len(), 32);
        assert!(verify(&secret, &a, 0, &t));
        assert!(!verify(&secret, &a, 1, &t));
        assert!(!verify(&secret, &b, 0, &t));
        assert!(!verify(&[8u8; 32], &a, 0, &t));
        assert!(!verify(&secret, &a, 0, &t[..30]));
        assert!(!verify(&secret, &a, 0, "zz"));
        assert!(!verify(&secret, &a, 0, &"é".repeat(16)));
        let next = token(&secret, &a, 1).unwrap();
        assert_ne!(next, t);
        assert!(verify(&secret, &a, 1, &next));
    }

    #[test]
    fn a_spent_token_resumes_nobody_and_the_next_one_does() {
        let mut tokens = RejoinTokens::new([3u8; 32]);
        let players = [PlayerId::new("guest-1"), PlayerId::new("guest-2")];
        let first = tokens.token(&players[1]).unwrap();
        assert_eq!(tokens.holder(&first, players.iter()), Some(&players[1]));
        tokens.spend(&players[1]);
        assert_eq!(tokens.holder(&first, players.iter()), None, "spent");
        let second = tokens.token(&players[1]).unwrap();
        assert_eq!(tokens.holder(&second, players.iter()), Some(&players[1]));
        // Another player's token is untouched by it.
        let other = tokens.token(&players[0]).unwrap();
        assert_eq!(tokens.holder(&other, players.iter()), Some(&players[0]));
    }
}
