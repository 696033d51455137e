//! The operator's levers on a public lobby: admin tokens, blocks of
//! addresses and prefixes, and the audit log of every admin action.
//!
//! # Layout
//!
//! - here: [`Moderation`], what a replica holds of the moderators'
//!   decisions: the tokens, the blocks in force, the sessions moderators
//!   ended, the refused words. Hidden sessions are kept by the lobby index
//!   itself (`LobbyIndex::set_hidden`), which judges them under its own
//!   lock. The moderators' actions, which change these through the store,
//!   are `crate::moderating`.
//! - [`tokens`]: the admin token file, kept as hashes.
//! - [`blocks`]: the blocks in force, in memory, and prefix parsing.
//! - [`listing`]: the moderators' list of every session, filtered and
//!   paged.
//! - [`words`]: the refused-words list names are checked against.
//!
//! The tables live in the store (`store::moderation`); other replicas hear
//! of a change through the change feed and reload theirs.

pub mod blocks;
pub mod listing;
pub mod tokens;
pub mod words;

use std::collections::HashMap;
use std::sync::RwLock;

use lobby_api::api::PutSessionRequest;
use lobby_api::code::SessionCode;

use crate::clock::Millis;
use blocks::Blocklist;
use tokens::AdminTokens;
use words::WordList;

/// The longest block a moderator may place: a year.
pub const MAX_BLOCK_SECS: u64 = 365 * 24 * 3600;

/// The longest reason kept, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// How long the code of a session a moderator ended is remembered, so its
/// host and joiners hear why it is gone: a day.
pub const ENDED_REMEMBERED_MS: Millis = 24 * 3600 * 1000;

/// The admin tokens (none: the admin API is off), the blocks in force and
/// the sessions moderators ended.
#[derive(Debug, Default)]
pub struct Moderation {
    /// Who may use the admin API.
    pub tokens: Option<AdminTokens>,
    /// The blocks every create, update and answer is checked against.
    pub blocks: Blocklist,
    /// Sessions moderators ended, and until when that is remembered.
    ended: RwLock<HashMap<SessionCode, Millis>>,
    /// Words refused in names and metadata.
    words: RwLock<WordList>,
}

impl Moderation {
    /// With `tokens` (or none), refusing `words`, and nothing loaded from
    /// the store yet (see `moderating::reload`).
    pub fn new(tokens: Option<AdminTokens>, words: WordList) -> Self {
        Self {
            tokens,
            words: RwLock::new(words),
            ..Self::default()
        }
    }

    /// Entries in the refused-words list.
    pub fn refused_words(&self) -> usize {
        self.words.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether a moderator ended session `code` (and it is remembered at
    /// `now`).
    pub fn was_ended(&self, code: &SessionCode, now: Millis) -> bool {
        self.ended
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(code)
            .is_some_and(|forget_at| *forget_at > now)
    }

    /// Replaces the sessions moderators ended (code: when forgotten).
    pub fn set_ended(&self, ended: HashMap<SessionCode, Millis>) {
        *self.ended.write().unwrap_or_else(|p| p.into_inner()) = ended;
    }

    /// Replaces the refused words.
    pub fn set_words(&self, words: WordList) {
        *self.words.write().unwrap_or_else(|p| p.into_inner()) = words;
    }

    /// The first field of `req` (`name`, `hostName`, `meta`) that holds a
    /// refused word, if any. Only the fields a request sends are judged.
    pub fn refused_field(&self, req: &PutSessionRequest) -> Option<&'static str> {
        let words = self.words.read().unwrap_or_else(|p| p.into_inner());
        if req.name.as_deref().is_some_and(|n| words.refuses(n)) {
            Some("name")
        } else if req.host_name.as_deref().is_some_and(|n| words.refuses(n)) {
            Some("hostName")
        } else if req.meta.as_ref().is_some_and(|m| words.refuses_json(m)) {
            Some("meta")
        } else {
            None
        }
    }
}
