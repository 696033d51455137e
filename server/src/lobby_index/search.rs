//! Filters and search: which sessions a page or an event stream is limited
//! to, the words a session is found by, and the listings (one per filter
//! combination, one per word prefix) it belongs to.

use lobby_api::api::{HostKind, LobbyEntry};
use lobby_api::name::sanitize_label;

/// The filters of one listing: `(build, has a free slot, host kind)`.
pub(super) type FilterKey = (Option<String>, bool, Option<HostKind>);

/// Longest search (`q=`), in characters; longer is refused.
pub const SEARCH_MAX_CHARS: usize = 64;

/// Most distinct words in a search; more are refused (each word is checked
/// against every word of each candidate, so words multiply a page's cost).
pub const SEARCH_MAX_WORDS: usize = 8;

/// Longest word prefix with its own posting listing; longer search words
/// walk the listing of their first [`PREFIX_MAX_CHARS`] characters.
pub const PREFIX_MAX_CHARS: usize = 8;

/// The lower-cased words of a text: runs of letters and digits.
pub(super) fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The posting-listing key of a word: its first [`PREFIX_MAX_CHARS`] characters.
pub(super) fn posting_key(word: &str) -> &str {
    match word.char_indices().nth(PREFIX_MAX_CHARS) {
        Some((i, _)) => &word[..i],
        None => word,
    }
}

/// Every prefix of `word` that has a posting listing.
pub(super) fn prefixes(word: &str) -> impl Iterator<Item = &str> {
    word.char_indices()
        .skip(1)
        .map(|(i, _)| i)
        .chain(std::iter::once(word.len()))
        .take(PREFIX_MAX_CHARS)
        .map(move |end| &word[..end])
}

/// What one `GET /lobby` page or one event stream is limited to: filters
/// and a search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LobbyFilter {
    /// Only sessions of this build.
    pub build: Option<String>,
    /// Only sessions with a free slot.
    pub has_space: bool,
    /// Only sessions with this host kind.
    pub host_kind: Option<HostKind>,
    /// Search words: each must begin a word of the name or host name.
    pub(super) words: Vec<String>,
}

impl LobbyFilter {
    /// Filters without a search.
    pub fn new(build: Option<String>, has_space: bool, host_kind: Option<HostKind>) -> Self {
        Self {
            build,
            has_space,
            host_kind,
            words: Vec::new(),
        }
    }

    /// Adds a search: sanitized like names, split into words, lower-cased.
    /// A search with no letters or digits searches nothing.
    pub fn with_search(mut self, q: &str) -> Self {
        let clean = sanitize_label(q, SEARCH_MAX_CHARS);
        let mut words: Vec<String> = Vec::new();
        for w in words_of(&clean) {
            if !words.contains(&w) {
                words.push(w);
            }
        }
        self.words = words;
        self
    }

    /// Number of distinct search words.
    pub fn search_words(&self) -> usize {
        self.words.len()
    }

    pub(super) fn key(&self) -> FilterKey {
        (self.build.clone(), self.has_space, self.host_kind)
    }

    /// Whether a session passes (expiry aside), given the words it is
    /// found by ([`words_of`] its name and host name).
    pub(super) fn matches(&self, entry: &LobbyEntry, words: &[String]) -> bool {
        self.build
            .as_deref()
            .is_none_or(|b| entry.summary.build == b)
            && (!self.has_space || entry.summary.players < entry.summary.max_players)
            && self.host_kind.is_none_or(|k| entry.summary.host_kind == k)
            && self
                .words
                .iter()
                .all(|w| words.iter().any(|lw| lw.starts_with(w.as_str())))
    }

    /// Whether this filter lets everything through.
    pub fn is_everything(&self) -> bool {
        self.build.is_none() && !self.has_space && self.host_kind.is_none() && self.words.is_empty()
    }
}

/// Every filter listing a session belongs to (the unfiltered one aside).
pub(super) fn filter_keys(entry: &LobbyEntry) -> Vec<FilterKey> {
    let mut keys = Vec::with_capacity(7);
    let space = entry.summary.players < entry.summary.max_players;
    for build in [None, Some(entry.summary.build.clone())] {
        for has_space in [false, true] {
            if has_space && !space {
                continue;
            }
            for kind in [None, Some(entry.summary.host_kind)] {
                if build.is_none() && !has_space && kind.is_none() {
                    continue;
                }
                keys.push((build.clone(), has_space, kind));
            }
        }
    }
    keys
}
