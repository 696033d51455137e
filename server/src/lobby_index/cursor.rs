//! The cursor: a place in the lobby order as the index keys it, read from a
//! [`LobbyPosition`]'s text (the form every entry's `position` and every
//! page's `nextCursor` take).

use std::cmp::Reverse;

use lobby_api::lobby_order::{LobbyPosition, POSITION_LEN, POSITION_PATTERN};

use super::entry::{IndexKey, PackedCode};
use crate::clock::Millis;

/// A place in the lobby order, where a page goes on from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    pub(super) created_at: Millis,
    pub(super) code: PackedCode,
}

/// What [`Cursor::parse`] accepts, as published in `/openapi.json`.
pub const CURSOR_PATTERN: &str = POSITION_PATTERN;

/// The length of every cursor.
pub const CURSOR_MAX_CHARS: usize = POSITION_LEN;

impl Cursor {
    /// Parses a `cursor=` value: any position of the form the server hands
    /// out is one, whether or not a session was created there.
    pub fn parse(text: &str) -> Option<Self> {
        Some(Self::at(&LobbyPosition::parse(text)?))
    }

    /// The cursor at `position`.
    pub(super) fn at(position: &LobbyPosition) -> Self {
        Self {
            created_at: position.created_ms(),
            code: PackedCode::new(position.code()),
        }
    }

    /// The index key it stands for.
    pub(super) fn key(&self) -> IndexKey {
        (Reverse(self.created_at), self.code)
    }
}
