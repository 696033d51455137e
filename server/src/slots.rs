//! Counted places per key (an address, a session), each held by a guard
//! that gives it back when dropped: how the server caps what a client may
//! hold open at once (connections, event streams, long-polls).

use std::hash::Hash;
use std::sync::Arc;

use dashmap::DashMap;

/// Open places per key; a key leaves the map with its last place.
pub struct Slots<K: Hash + Eq + Clone>(Arc<DashMap<K, usize>>);

impl<K: Hash + Eq + Clone> Default for Slots<K> {
    fn default() -> Self {
        Self(Arc::new(DashMap::new()))
    }
}

/// One place of a key, held until dropped.
pub struct Slot<K: Hash + Eq + Clone> {
    counts: Arc<DashMap<K, usize>>,
    key: K,
}

impl<K: Hash + Eq + Clone> Slots<K> {
    /// A place for `key` if it holds fewer than `max`.
    pub fn try_take(&self, key: K, max: usize) -> Option<Slot<K>> {
        let mut count = self.0.entry(key.clone()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        drop(count);
        Some(Slot {
            counts: self.0.clone(),
            key,
        })
    }

    /// Places `key` holds now.
    pub fn held(&self, key: &K) -> usize {
        self.0.get(key).map_or(0, |n| *n)
    }

    /// Keys holding at least one place.
    pub fn keys(&self) -> usize {
        self.0.len()
    }
}

impl<K: Hash + Eq + Clone> Drop for Slot<K> {
    fn drop(&mut self) {
        self.counts.remove_if_mut(&self.key, |_, n| {
            *n = n.saturating_sub(1);
            *n == 0
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_counted_per_key_and_freed_by_their_guards() {
        let slots = Slots::default();
        let first = slots.try_take("a", 2).expect("first");
        let second = slots.try_take("a", 2).expect("second");
        assert!(slots.try_take("a", 2).is_none(), "a third is over the cap");
        assert!(slots.try_take("b", 2).is_some(), "another key has its own");
        assert_eq!(slots.held(&"a"), 2);
        drop(first);
        let third = slots.try_take("a", 2).expect("a freed place is reusable");
        drop((second, third));
        assert_eq!(slots.keys(), 0, "no entry is left for a gone key");
    }
}
