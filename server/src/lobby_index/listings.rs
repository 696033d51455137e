//! The listings: every listed session in lobby order, and again in one
//! listing per filter combination and per word prefix it belongs to, by
//! code and by expiry.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use lobby_api::code::SessionCode;

use super::entry::{IndexKey, Listed, Listing};
use super::search::{FilterKey, LobbyFilter, PREFIX_MAX_CHARS, filter_keys, posting_key, prefixes};
use crate::clock::Millis;

#[derive(Default)]
pub(super) struct Index {
    pub(super) by_order: Listing,
    pub(super) by_filter: HashMap<FilterKey, Listing>,
    pub(super) by_prefix: HashMap<String, Listing>,
    pub(super) by_code: HashMap<SessionCode, IndexKey>,
    pub(super) by_expiry: BTreeSet<(Millis, IndexKey)>,
    /// Sessions moderators hid: never listed while in here.
    pub(super) hidden: HashSet<SessionCode>,
}

impl Index {
    pub(super) fn insert(&mut self, key: IndexKey, listed: Arc<Listed>) {
        for fk in filter_keys(&listed.entry) {
            self.by_filter
                .entry(fk)
                .or_default()
                .insert(key, listed.clone());
        }
        let prefixes: HashSet<&str> = listed.words.iter().flat_map(|w| prefixes(w)).collect();
        for p in prefixes {
            self.by_prefix
                .entry(p.to_owned())
                .or_default()
                .insert(key, listed.clone());
        }
        self.by_expiry.insert((listed.expires_at, key));
        self.by_code.insert(listed.entry.code.clone(), key);
        self.by_order.insert(key, listed);
    }

    pub(super) fn remove(&mut self, code: &SessionCode) -> Option<Arc<Listed>> {
        let key = self.by_code.remove(code)?;
        let listed = self.by_order.remove(&key)?;
        for fk in filter_keys(&listed.entry) {
            if let Some(set) = self.by_filter.get_mut(&fk) {
                set.remove(&key);
                if set.is_empty() {
                    self.by_filter.remove(&fk);
                }
            }
        }
        let prefixes: HashSet<&str> = listed.words.iter().flat_map(|w| prefixes(w)).collect();
        for p in prefixes {
            if let Some(set) = self.by_prefix.get_mut(p) {
                set.remove(&key);
                if set.is_empty() {
                    self.by_prefix.remove(p);
                }
            }
        }
        self.by_expiry.remove(&(listed.expires_at, key));
        Some(listed)
    }

    /// The smallest listing every match of `filter` is in, and whether
    /// each of its entries matches without checking (so its size is the count).
    /// `None` when nothing can match.
    pub(super) fn narrowest(&self, filter: &LobbyFilter) -> Option<(&Listing, bool)> {
        let key = filter.key();
        let filtered = key != (None, false, None);
        let mut best = if filtered {
            self.by_filter.get(&key)?
        } else {
            &self.by_order
        };
        let mut exact = filter.words.is_empty();
        for w in &filter.words {
            let posting = self.by_prefix.get(posting_key(w))?;
            if posting.len() < best.len() {
                best = posting;
            }
        }
        if let [w] = filter.words.as_slice() {
            exact = !filtered && w.chars().count() <= PREFIX_MAX_CHARS;
        }
        Some((best, exact))
    }
}
