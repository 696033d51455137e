//! Admin tokens: read once from `--admin-token-file`, kept only as SHA-256
//! hashes with their names, compared in constant time.
//!
//! The file holds one token per line, `NAME:TOKEN`, or a bare `TOKEN`
//! named `admin`; blank lines and lines starting with `#` are skipped. A
//! name says who acted in the audit log, so each moderator gets their own.

use std::path::Path;

use crate::token::{hash_token, hashes_match};

/// The shortest token accepted: a guessable token would be the whole
/// lobby's moderation in a stranger's hands.
pub const MIN_TOKEN_LEN: usize = 20;

/// The longest name accepted.
pub const MAX_NAME_LEN: usize = 40;

/// The admin tokens the server accepts.
pub struct AdminTokens {
    /// `(name, SHA-256 of the token)`.
    hashes: Vec<(String, Vec<u8>)>,
}

impl std::fmt::Debug for AdminTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.hashes.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("AdminTokens")
            .field("names", &names)
            .finish()
    }
}

/// Why a token file was refused (the server does not start).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("cannot read the admin token file: {0}")]
    Unreadable(String),
    /// It names no token.
    #[error("the admin token file holds no token")]
    Empty,
    /// A token is too short (the line number is 1-based).
    #[error("line {0}: an admin token needs at least {MIN_TOKEN_LEN} characters")]
    TooShort(usize),
    /// A name has characters other than letters, digits, `.`, `_`, `-`,
    /// or is too long.
    #[error("line {0}: a name is 1 to {MAX_NAME_LEN} letters, digits, '.', '_' or '-'")]
    BadName(usize),
    /// Two lines give one name.
    #[error("line {0}: the name {1:?} is given twice")]
    DuplicateName(usize, String),
}

impl AdminTokens {
    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokenFileError::Unreadable(format!("{}: {e}", path.display())))?;
        Self::parse(&text)
    }

    /// Parses a token file's text.
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        let mut hashes: Vec<(String, Vec<u8>)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, token) = line.split_once(':').unwrap_or(("admin", line));
            let (name, token) = (name.trim(), token.trim());
            let name_ok = !name.is_empty()
                && name.len() <= MAX_NAME_LEN
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !name_ok {
                return Err(TokenFileError::BadName(line_no));
            }
            if token.chars().count() < MIN_TOKEN_LEN {
                return Err(TokenFileError::TooShort(line_no));
            }
            if hashes.iter().any(|(n, _)| n == name) {
                return Err(TokenFileError::DuplicateName(line_no, name.to_owned()));
            }
            hashes.push((name.to_owned(), hash_token(token)));
        }
        if hashes.is_empty() {
            return Err(TokenFileError::Empty);
        }
        Ok(Self { hashes })
    }

    /// The name of the token `presented` is, if any. Every token is
    /// compared, each in constant time, so the time taken says nothing of
    /// which one (or how much of one) matched.
    pub fn holder(&self, presented: &str) -> Option<&str> {
        let hash = hash_token(presented);
        let mut found = None;
        for (name, stored) in &self.hashes {
            if hashes_match(&hash, stored) && found.is_none() {
                found = Some(name.as_str());
            }
        }
        found
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether there are none (never, once parsed).
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_bare_tokens_are_recognised_by_their_holders() {
        let tokens = AdminTokens::parse(
            "# moderators\n\nalice:aaaaaaaaaaaaaaaaaaaaaaaa\n  bob : bbbbbbbbbbbbbbbbbbbbbbbbbbbb \n",
        )
        .unwrap();
        assert_eq!(tokens.len(), 2);
        assert_eq!(tokens.holder("aaaaaaaaaaaaaaaaaaaaaaaa"), Some("alice"));
        assert_eq!(tokens.holder("bbbbbbbbbbbbbbbbbbbbbbbbbbbb"), Some("bob"));
        assert_eq!(tokens.holder("aaaaaaaaaaaaaaaaaaaaaaab"), None);
        assert_eq!(tokens.holder(""), None);
        let bare = AdminTokens::parse("cccccccccccccccccccccccc").unwrap();
        assert_eq!(bare.holder("cccccccccccccccccccccccc"), Some("admin"));
    }

    #[test]
    fn weak_or_muddled_files_are_refused() {
        assert_eq!(
            AdminTokens::parse("# none\n").unwrap_err(),
            TokenFileError::Empty
        );
        assert_eq!(
            AdminTokens::parse("\nshort").unwrap_err(),
            TokenFileError::TooShort(2)
        );
        assert_eq!(
            AdminTokens::parse("a b:dddddddddddddddddddddddd").unwrap_err(),
            TokenFileError::BadName(1)
        );
        assert_eq!(
            AdminTokens::parse("x:dddddddddddddddddddddddd\nx:eeeeeeeeeeeeeeeeeeeeeeee")
                .unwrap_err(),
            TokenFileError::DuplicateName(2, "x".into())
        );
        assert!(matches!(
            AdminTokens::load(Path::new("/nonexistent/campfire-admin-tokens")),
            Err(TokenFileError::Unreadable(_))
        ));
    }

    #[test]
    fn the_debug_form_names_holders_and_hides_hashes() {
        let tokens = AdminTokens::parse("alice:aaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
        let shown = format!("{tokens:?}");
        assert!(shown.contains("alice"));
        assert!(!shown.contains("aaaa"));
    }
}
