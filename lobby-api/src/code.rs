//! Session codes: the short, human-typable handle a joiner needs.
//!
//! Codes use an alphabet without look-alike characters (no `0`/`O`, no
//! `1`/`I`/`L`) and are case-insensitive. Eight characters from 31 symbols
//! give about 8.5 × 10¹¹ codes, so guessing one under the server's rate
//! limit on code misses is hopeless.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The symbols a code is made of, in canonical (upper) case.
pub const CODE_ALPHABET: &[u8; 31] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Number of symbols in a code.
pub const CODE_LEN: usize = 8;

/// Characters a typed code may carry between its symbols (`ABCD-EFGH`,
/// `abcd efgh`); they are not part of the code.
pub const CODE_SEPARATORS: &[char] = &['-', ' '];

/// What [`SessionCode::parse`] accepts, as a regular expression: the server
/// publishes it in its OpenAPI document (utoipa takes literals there, so
/// `server/tests/api.rs` checks the served copies against this one).
pub const CODE_PATTERN: &str = "^[- ]*([2-9A-HJKMNP-Za-hjkmnp-z][- ]*){8}$";

/// A validated, canonical (upper-case) session code.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionCode(String);

/// Why a string is not a session code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// The code has the wrong number of symbols.
    #[error("a session code has {CODE_LEN} characters, this one has {0}")]
    WrongLength(usize),
    /// The code contains a character outside the alphabet.
    #[error("a session code cannot contain {0:?}")]
    BadCharacter(char),
}

impl SessionCode {
    /// Parses user input: case-insensitive; spaces and dashes between
    /// groups (`ABCD-EFGH`) are ignored.
    pub fn parse(input: &str) -> Result<Self, CodeError> {
        let mut code = String::with_capacity(CODE_LEN);
        let mut len = 0usize;
        for c in input.chars() {
            if CODE_SEPARATORS.contains(&c) {
                continue;
            }
            let upper = c.to_ascii_uppercase();
            if !upper.is_ascii() || !CODE_ALPHABET.contains(&(upper as u8)) {
                return Err(CodeError::BadCharacter(c));
            }
            len += 1;
            if len <= CODE_LEN {
                code.push(upper);
            }
        }
        if len != CODE_LEN {
            return Err(CodeError::WrongLength(len));
        }
        Ok(Self(code))
    }

    /// Builds a uniformly random code from a source of random `u32`s
    /// (rejection sampling, so no symbol is favoured).
    pub fn generate(mut next_u32: impl FnMut() -> u32) -> Self {
        let n = CODE_ALPHABET.len() as u32;
        // Largest multiple of n that fits, so `x % n` is unbiased below it.
        let zone = u32::MAX - (u32::MAX % n);
        let mut code = String::with_capacity(CODE_LEN);
        while code.len() < CODE_LEN {
            let x = next_u32();
            if x < zone {
                code.push(CODE_ALPHABET[(x % n) as usize] as char);
            }
        }
        Self(code)
    }

    /// The canonical text of the code.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionCode({})", self.0)
    }
}

impl std::str::FromStr for SessionCode {
    type Err = CodeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for SessionCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for SessionCode {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some(
                "Eight characters from 23456789ABCDEFGHJKMNPQRSTUVWXYZ, case-insensitive",
            ))
            .examples([serde_json::json!("K7QH3MZD")])
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for SessionCode {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_pattern_says_what_parse_accepts(typed in "[- 0-9A-Za-z\u{e9}\t]{0,14}") {
            let pattern = regex::Regex::new(CODE_PATTERN).unwrap();
            prop_assert_eq!(pattern.is_match(&typed), SessionCode::parse(&typed).is_ok(), "{:?}", typed);
        }

        #[test]
        fn every_code_matches_the_pattern(code in proptest::collection::vec(0..CODE_ALPHABET.len(), CODE_LEN)) {
            let text: String = code.iter().map(|&i| CODE_ALPHABET[i] as char).collect();
            let pattern = regex::Regex::new(CODE_PATTERN).unwrap();
            prop_assert!(pattern.is_match(&text.to_lowercase()));
            let grouped = format!("{}-{}", &text[..4], &text[4..]);
            prop_assert!(pattern.is_match(&grouped));
        }
    }

    #[test]
    fn parse_is_case_insensitive_and_ignores_separators() {
        let code = SessionCode::parse("k7qh-3mzd").unwrap();
        assert_eq!(code.as_str(), "K7QH3MZD");
    }

    #[test]
    fn parse_rejects_look_alikes_and_bad_lengths() {
        assert_eq!(
            SessionCode::parse("K7QH3MZO"),
            Err(CodeError::BadCharacter('O'))
        );
        assert_eq!(
            SessionCode::parse("K7QH3MZ1"),
            Err(CodeError::BadCharacter('1'))
        );
        assert_eq!(
            SessionCode::parse("K7QH3MZ"),
            Err(CodeError::WrongLength(7))
        );
        assert_eq!(
            SessionCode::parse("K7QH3MZDD"),
            Err(CodeError::WrongLength(9))
        );
        assert_eq!(
            SessionCode::parse("K7QH3MZé"),
            Err(CodeError::BadCharacter('é'))
        );
    }

    proptest! {
        #[test]
        fn generated_codes_parse_back(seed in any::<u64>()) {
            let mut state = seed;
            let code = SessionCode::generate(|| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 32) as u32
            });
            prop_assert_eq!(SessionCode::parse(code.as_str()).unwrap(), code.clone());
            prop_assert_eq!(SessionCode::parse(&code.as_str().to_lowercase()).unwrap(), code);
        }
    }
}
