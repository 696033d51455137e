//! The control token (`--control-token-file`): one secret line, compared
//! in constant time.

use std::path::Path;

use anyhow::{Context, bail};
use subtle::ConstantTimeEq;

/// The shortest token taken, characters.
pub const MIN_TOKEN_CHARS: usize = 16;

/// The secret `/api` calls present as `Authorization: Bearer`.
#[derive(Debug)]
pub struct ControlToken(String);

impl ControlToken {
    /// Reads the token from the file's first line; refuses a short one.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--control-token-file {}", path.display()))?;
        Self::parse(text.lines().next().unwrap_or_default())
    }

    /// A token from its text; refuses a short one.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let token = text.trim();
        if token.chars().count() < MIN_TOKEN_CHARS {
            bail!("the control token must be at least {MIN_TOKEN_CHARS} characters");
        }
        Ok(Self(token.to_owned()))
    }

    /// The token's text, for a client to present.
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is the token.
    pub fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_matches_only_itself_and_a_short_one_is_refused() {
        let t = ControlToken::parse("  0123456789abcdef \n").unwrap();
        assert!(t.matches("0123456789abcdef"));
        assert!(!t.matches("0123456789abcdeg"));
        assert!(!t.matches("0123456789abcde"));
        assert!(!t.matches(""));
        assert!(ControlToken::parse("short").is_err());
    }
}
