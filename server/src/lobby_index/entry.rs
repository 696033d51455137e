//! One listed session: the lobby entry built from a stored session, rendered
//! once to JSON, with the words it is found by and its place in the lobby
//! order (newest first, then by code).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use lobby_api::api::LobbyEntry;
use lobby_api::code::SessionCode;
use lobby_api::lobby_order::LobbyPosition;

use super::search::{LobbyFilter, words_of};
use crate::clock::{Millis, to_datetime};
use crate::store::SessionRecord;

/// A session code packed into its 8 ASCII bytes, big-endian, so that it
/// orders like the code itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct PackedCode(pub(super) u64);

impl PackedCode {
    pub(super) fn new(code: &SessionCode) -> Self {
        let mut bytes = [0u8; 8];
        for (b, c) in bytes.iter_mut().zip(code.as_str().bytes()) {
            *b = c;
        }
        Self(u64::from_be_bytes(bytes))
    }
}

/// Newest first, ties broken by code.
pub(super) type IndexKey = (Reverse<Millis>, PackedCode);

/// Sessions in lobby order.
pub(super) type Listing = BTreeMap<IndexKey, Arc<Listed>>;

/// One listed session, rendered.
pub struct Listed {
    pub(super) entry: LobbyEntry,
    pub(super) expires_at: Millis,
    pub(super) json: String,
    /// Lower-cased words of the name and host name, for search.
    pub(super) words: Vec<String>,
}

impl Listed {
    /// Its place in the lobby order (every entry the index renders carries
    /// it; derived again from the entry should one ever not).
    pub(super) fn position(&self) -> LobbyPosition {
        self.entry.position.clone().unwrap_or_else(|| {
            let ms = self.entry.created_at.unix_timestamp_nanos() / 1_000_000;
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            LobbyPosition::new(ms, self.entry.code.clone())
        })
    }

    /// Whether it passes `filter` (expiry aside).
    pub(super) fn passes(&self, filter: &LobbyFilter) -> bool {
        filter.matches(&self.entry, &self.words)
    }
}

/// A stored session's place in the lobby order.
fn position_of(record: &SessionRecord) -> LobbyPosition {
    LobbyPosition::new(record.created_at, record.code.clone())
}

/// Builds the lobby entry of a stored session.
pub fn lobby_entry(record: &SessionRecord) -> LobbyEntry {
    let f = &record.fields;
    LobbyEntry {
        code: record.code.clone(),
        summary: f.summary.clone(),
        created_at: to_datetime(record.created_at),
        expires_at: to_datetime(record.expires_at),
        position: Some(position_of(record)),
        meta: f.meta.as_deref().and_then(|m| serde_json::from_str(m).ok()),
    }
}

pub(super) fn render(entry: LobbyEntry, expires_at: Millis) -> Arc<Listed> {
    let json = serde_json::to_string(&entry).unwrap_or_else(|_| "null".into());
    let mut words: Vec<String> = Vec::new();
    for w in words_of(&entry.summary.name).chain(words_of(&entry.summary.host_name)) {
        if !words.contains(&w) {
            words.push(w);
        }
    }
    Arc::new(Listed {
        entry,
        expires_at,
        json,
        words,
    })
}

/// Whether two entries of one session differ in what a lobby page shows:
/// in anything but the expiry. (Destructured, so a new field must be
/// placed here.)
pub(super) fn visible_change(a: &LobbyEntry, b: &LobbyEntry) -> bool {
    let LobbyEntry {
        code,
        summary,
        created_at,
        expires_at: _,
        position,
        meta,
    } = a;
    (code, summary, created_at, position, meta)
        != (&b.code, &b.summary, &b.created_at, &b.position, &b.meta)
}
