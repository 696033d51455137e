//! The cursor: a position in the lobby order, as `createdMs.CODE`.

use protocol::code::{CODE_ALPHABET, CODE_LEN, SessionCode};

use super::entry::{IndexKey, PackedCode};
use crate::clock::Millis;

/// A position in the lobby order (opaque to clients: `createdMs.CODE`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub(super) created_at: Millis,
    pub(super) code: PackedCode,
}

/// Digits of a cursor's `createdMs`: up to 18, so any such number fits
/// [`Millis`] (an `i64`), and every creation time since 1970 has them.
const CURSOR_MS_MAX_DIGITS: usize = 18;

/// What [`Cursor::parse`] accepts, as published in `/openapi.json`: the
/// creation time in ms (1 to 18 digits), a dot, and a session code in its
/// canonical form (as the server writes it).
pub const CURSOR_PATTERN: &str = r"^[0-9]{1,18}\.[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$";

/// The longest cursor: 18 digits, the dot and the code.
pub const CURSOR_MAX_CHARS: usize = CURSOR_MS_MAX_DIGITS + 1 + CODE_LEN;

impl Cursor {
    /// Parses a `cursor=` value: any position of the form the server hands
    /// out is one, whether or not a session was created there.
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, code) = text.split_once('.')?;
        let ms_ok = (1..=CURSOR_MS_MAX_DIGITS).contains(&ms.len())
            && ms.bytes().all(|b| b.is_ascii_digit());
        let code_ok = code.len() == CODE_LEN && code.bytes().all(|b| CODE_ALPHABET.contains(&b));
        if !(ms_ok && code_ok) {
            return None;
        }
        Some(Self {
            created_at: ms.parse().ok()?,
            code: PackedCode::new(&SessionCode::parse(code).ok()?),
        })
    }

    pub(super) fn encode(key: &IndexKey) -> String {
        format!("{}.{}", key.0.0, key.1.text())
    }
}
