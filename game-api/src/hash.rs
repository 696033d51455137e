//! The world hash: a game's digest of everything its simulation depends
//! on, which peers compare to find a desync. On the wire (hash reports, a
//! relay's snapshots and level ends, replays) it is text, 16 lowercase hex
//! digits, since a u64 does not fit a JavaScript number.

use std::fmt;

/// A world hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorldHash(pub u64);

impl WorldHash {
    /// Reads the hex text of a hash (as peers have always read it: 1 to
    /// 16 hex digits, either case). `None` if it is not one.
    pub fn parse(text: &str) -> Option<WorldHash> {
        u64::from_str_radix(text, 16).ok().map(WorldHash)
    }
}

/// 16 lowercase hex digits, zero-padded.
impl fmt::Display for WorldHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_text_is_sixteen_lowercase_hex_digits() {
        assert_eq!(WorldHash(0xAB).to_string(), "00000000000000ab");
        assert_eq!(WorldHash(u64::MAX).to_string(), "ffffffffffffffff");
        assert_eq!(WorldHash::parse("00000000000000AB"), Some(WorldHash(0xab)));
        assert_eq!(WorldHash::parse("not hex"), None);
        assert_eq!(WorldHash::parse(""), None);
        assert_eq!(WorldHash::parse("1ffffffffffffffff"), None);
    }

    proptest! {
        #[test]
        fn text_round_trips(h in any::<u64>()) {
            prop_assert_eq!(WorldHash::parse(&WorldHash(h).to_string()), Some(WorldHash(h)));
        }
    }
}
