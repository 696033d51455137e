//! Host tokens: 256 random bits, stored only as a SHA-256 hash, compared in
//! constant time, never logged.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A freshly minted host token (handed to the host once, at create).
pub struct HostToken(String);

impl HostToken {
    /// Mints a token from the operating system's random source.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The token text, to return to the host.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The hash to store.
    pub fn hash(&self) -> Vec<u8> {
        hash_token(&self.0)
    }
}

impl std::fmt::Debug for HostToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostToken(<redacted>)")
    }
}

/// SHA-256 of a token's text.
pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Whether `presented` (from an `Authorization` header) matches the stored
/// hash; the comparison takes the same time wherever the bytes differ.
pub fn token_matches(presented: Option<&str>, stored_hash: &[u8]) -> bool {
    let Some(presented) = presented else {
        return false;
    };
    hashes_match(&hash_token(presented), stored_hash)
}

/// Whether two token hashes are equal, in the same time wherever they differ.
pub fn hashes_match(candidate: &[u8], stored_hash: &[u8]) -> bool {
    candidate.len() == stored_hash.len() && bool::from(candidate.ct_eq(stored_hash))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_only_its_own_hash() {
        let token = HostToken::generate();
        let hash = token.hash();
        let text = token.into_string();
        assert!(token_matches(Some(&text), &hash));
        assert!(!token_matches(Some("nope"), &hash));
        assert!(!token_matches(None, &hash));
        assert_ne!(hash_token(&HostToken::generate().into_string()), hash);
    }
}
