//! The lobby order (newest first, ties by code) and the position text that
//! names a place in it: every lobby entry's `position` and every page's
//! `nextCursor`. The text orders byte-wise as the lobby does, so a client
//! sorts entries, and tells whether an entry comes before a cursor, by plain
//! string comparison, without knowing the rule.

use std::cmp::{Ordering, Reverse};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::code::{CODE_ALPHABET, CODE_LEN, SessionCode};

/// The latest creation time a position tells apart (ms since 1970, in the
/// year 2286); later times share its place.
pub const LATEST_MS: i64 = 9_999_999_999_999;

/// Digits of a position's time part: `LATEST_MS - createdMs`, zero-padded,
/// so that newer sessions come first in byte order.
const TIME_DIGITS: usize = 13;

/// The character between the time part and the code. Not `.`, which an
/// older build's cursors (`createdMs.CODE`) used: a replica of that build
/// refuses these positions rather than reading them as times.
const SEPARATOR: char = '-';

/// What [`LobbyPosition::parse`] accepts, as a regular expression: the
/// server publishes it in its OpenAPI document for `cursor=`.
pub const POSITION_PATTERN: &str = r"^[0-9]{13}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$";

/// Characters of a position.
pub const POSITION_LEN: usize = TIME_DIGITS + 1 + CODE_LEN;

/// A place in the lobby order: a creation time (ms since 1970, clamped to
/// `0..=LATEST_MS`) and a session code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LobbyPosition {
    created_ms: i64,
    code: SessionCode,
}

impl LobbyPosition {
    /// The place of a session created at `created_ms` with `code`.
    pub fn new(created_ms: i64, code: SessionCode) -> Self {
        Self {
            created_ms: created_ms.clamp(0, LATEST_MS),
            code,
        }
    }

    /// The creation time (clamped to `0..=LATEST_MS`).
    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }

    /// The session code.
    pub fn code(&self) -> &SessionCode {
        &self.code
    }

    /// Reads a position's text: any text of [`POSITION_PATTERN`] is a
    /// position, whether or not a session was created there.
    pub fn parse(text: &str) -> Option<Self> {
        let (time, code) = text.split_once(SEPARATOR)?;
        let time_ok = time.len() == TIME_DIGITS && time.bytes().all(|b| b.is_ascii_digit());
        let code_ok = code.len() == CODE_LEN && code.bytes().all(|b| CODE_ALPHABET.contains(&b));
        if !(time_ok && code_ok) {
            return None;
        }
        let before_latest: i64 = time.parse().ok()?;
        Some(Self {
            created_ms: LATEST_MS - before_latest,
            code: SessionCode::parse(code).ok()?,
        })
    }
}

impl fmt::Display for LobbyPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let before_latest = LATEST_MS - self.created_ms;
        write!(f, "{before_latest:0TIME_DIGITS$}{SEPARATOR}{}", self.code)
    }
}

impl Ord for LobbyPosition {
    /// The lobby order: newest first, then by code.
    fn cmp(&self, other: &Self) -> Ordering {
        (Reverse(self.created_ms), &self.code).cmp(&(Reverse(other.created_ms), &other.code))
    }
}

impl PartialOrd for LobbyPosition {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Serialize for LobbyPosition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LobbyPosition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a lobby position: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn code() -> impl Strategy<Value = SessionCode> {
        proptest::collection::vec(proptest::sample::select(CODE_ALPHABET.to_vec()), CODE_LEN)
            .prop_map(|b| SessionCode::parse(std::str::from_utf8(&b).unwrap()).unwrap())
    }

    proptest! {
        #[test]
        fn text_orders_as_the_lobby_does(
            a in (0..=LATEST_MS, code()), b in (0..=LATEST_MS, code()),
        ) {
            let (a, b) = (LobbyPosition::new(a.0, a.1), LobbyPosition::new(b.0, b.1));
            prop_assert_eq!(a.to_string().cmp(&b.to_string()), a.cmp(&b));
        }

        #[test]
        fn text_round_trips_and_matches_the_pattern(ms in any::<i64>(), code in code()) {
            let p = LobbyPosition::new(ms, code);
            let text = p.to_string();
            prop_assert_eq!(text.len(), POSITION_LEN);
            prop_assert!(regex::Regex::new(POSITION_PATTERN).unwrap().is_match(&text));
            prop_assert_eq!(LobbyPosition::parse(&text), Some(p));
        }

        #[test]
        fn parse_accepts_exactly_the_pattern(text in "[0-9A-Za-z.+ -]{0,24}") {
            let pattern = regex::Regex::new(POSITION_PATTERN).unwrap();
            prop_assert_eq!(LobbyPosition::parse(&text).is_some(), pattern.is_match(&text));
        }
    }

    #[test]
    fn newest_first_then_by_code() {
        let p = |ms, c: &str| LobbyPosition::new(ms, SessionCode::parse(c).unwrap());
        assert!(p(2_000, "ZZZZZZZZ") < p(1_000, "22222222"));
        assert!(p(1_000, "22222222") < p(1_000, "22222223"));
        assert_eq!(
            p(1_764_000_000_000, "K7QH3MZD").to_string(),
            "8235999999999-K7QH3MZD"
        );
        for bad in [
            "",
            "1764000000000.K7QH3MZD",
            "823599999999-K7QH3MZD",
            "8235999999999-k7qh3mzd",
            "8235999999999-K7QH3MZO",
            "8235999999999-K7QH3MZ",
            "+235999999999-K7QH3MZD",
            "\u{661}235999999999-K7QH3MZD",
        ] {
            assert_eq!(LobbyPosition::parse(bad), None, "{bad:?}");
        }
    }
}
