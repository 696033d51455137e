//! The SQLite backend's group-commit journal: the changes waiting for the
//! next commit (at most one per session), the sessions with a change in
//! flight (*busy*: their next change waits), and what each creator holds
//! (sessions and bytes) for the per-address caps. Bookkeeping only, under
//! one lock; the writer in `sqlite` does the I/O.

use std::collections::{HashMap, HashSet};

use lobby_api::code::SessionCode;
use tokio::sync::oneshot;

use super::{CreatorLimits, SessionRecord, StoreError};

/// Changes not yet committed.
#[derive(Default)]
pub(super) struct Journal {
    /// What the next commit writes, one entry per session.
    pub(super) staged: HashMap<SessionCode, Pending>,
    /// Sessions with a change staged or committing.
    pub(super) busy: HashSet<SessionCode>,
    /// What each creator holds: its stored sessions (live, or expired and
    /// not yet swept) plus what its changes being committed reserved, so
    /// the per-address caps cost one lookup, not a scan, and racing
    /// changes cannot overshoot them.
    creators: HashMap<String, CreatorUsage>,
    /// No more changes are taken (the store is closing or closed).
    pub(super) closed: bool,
}

/// Sessions and bytes one creator holds.
#[derive(Debug, Default, Clone, Copy)]
struct CreatorUsage {
    sessions: u32,
    bytes: u64,
}

/// Why a change does not fit under its creator's caps.
pub(super) enum OverCap {
    /// Too many sessions.
    Sessions,
    /// Too many bytes.
    Bytes,
}

impl Journal {
    /// Adds `sessions` and `bytes` to `creator`'s usage if they fit under `limits`.
    pub(super) fn reserve(
        &mut self,
        creator: &str,
        limits: CreatorLimits,
        sessions: u32,
        bytes: u64,
    ) -> Result<(), OverCap> {
        let held = self.creators.get(creator).copied().unwrap_or_default();
        if sessions > 0
            && limits
                .sessions
                .is_some_and(|cap| held.sessions + sessions > cap)
        {
            return Err(OverCap::Sessions);
        }
        if bytes > 0 && limits.bytes.is_some_and(|cap| held.bytes + bytes > cap) {
            return Err(OverCap::Bytes);
        }
        if sessions > 0 || bytes > 0 {
            let usage = self.creators.entry(creator.to_owned()).or_default();
            usage.sessions += sessions;
            usage.bytes += bytes;
        }
        Ok(())
    }

    /// Takes `sessions` and `bytes` off `creator`'s usage (forgetting
    /// creators with nothing, so the map stays as small as the sessions).
    pub(super) fn release(&mut self, creator: &str, sessions: u32, bytes: u64) {
        if let Some(usage) = self.creators.get_mut(creator) {
            usage.sessions = usage.sessions.saturating_sub(sessions);
            usage.bytes = usage.bytes.saturating_sub(bytes);
            if usage.sessions == 0 && usage.bytes == 0 {
                self.creators.remove(creator);
            }
        }
    }
}

/// How a change moves its creator's usage.
#[derive(Default)]
pub(super) struct UsageChange {
    pub(super) creator: String,
    /// Added when staged; given back if the commit fails.
    pub(super) reserved_sessions: u32,
    pub(super) reserved_bytes: u64,
    /// Taken off once committed.
    pub(super) freed_bytes: u64,
}

/// One session's entry in the next commit.
pub(super) enum Pending {
    /// A change a request waits for, applied in memory only once committed.
    Change(Change),
    /// Write the row as memory holds it, or delete it if memory has none
    /// (a refresh, a sweep); retried until it commits.
    Flush,
}

/// A change of one session, waiting for its commit.
pub(super) struct Change {
    /// The record after the change; `None` deletes the session.
    pub(super) after: Option<Box<SessionRecord>>,
    /// How it moves its creator's usage.
    pub(super) usage: UsageChange,
    /// Answers the request that made it.
    pub(super) done: oneshot::Sender<Result<(), StoreError>>,
}

/// A change staged for the next commit; resolves once it settled.
pub(super) struct Staged(oneshot::Receiver<Result<(), StoreError>>);

impl Staged {
    /// Waits until the change settled: `Ok` once committed and applied.
    pub(super) async fn committed(self) -> Result<(), StoreError> {
        self.0
            .await
            .map_err(|_| StoreError::Unavailable("the database writer stopped".into()))?
    }
}

impl Journal {
    /// Adds a creator's stored session (when loading the file at start).
    pub(super) fn count_stored(&mut self, record: &SessionRecord) {
        let usage = self.creators.entry(record.creator.clone()).or_default();
        usage.sessions += 1;
        usage.bytes += record.held_bytes();
    }

    /// How changing `before` into `after` moves its creator's usage: growth
    /// reserved now if it fits under `creator_bytes` (`None` if it does
    /// not), shrinkage taken off once committed.
    pub(super) fn usage_change(
        &mut self,
        before: &SessionRecord,
        after: &SessionRecord,
        creator_bytes: Option<u64>,
    ) -> Option<UsageChange> {
        let (old, new) = (before.held_bytes(), after.held_bytes());
        let grows = new.saturating_sub(old);
        let limits = CreatorLimits {
            sessions: None,
            bytes: creator_bytes,
        };
        self.reserve(&before.creator, limits, 0, grows).ok()?;
        Some(UsageChange {
            creator: before.creator.clone(),
            reserved_sessions: 0,
            reserved_bytes: grows,
            freed_bytes: old.saturating_sub(new),
        })
    }

    /// Stages a change of `code` (not busy) for the next commit and marks
    /// it busy.
    pub(super) fn stage(
        &mut self,
        code: &SessionCode,
        after: Option<SessionRecord>,
        usage: UsageChange,
    ) -> Staged {
        let after = after.map(Box::new);
        let (done, settled) = oneshot::channel();
        self.busy.insert(code.clone());
        self.staged
            .insert(code.clone(), Pending::Change(Change { after, usage, done }));
        Staged(settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoredAnswer;

    fn record(offer: usize, creator: &str) -> SessionRecord {
        let mut r = crate::store::test_record("ABCD2345");
        r.token_hash = Vec::new();
        r.fields.meta = Some("{}".into());
        r.offer = Some("x".repeat(offer));
        r.creator = creator.into();
        r
    }

    const BOTH: CreatorLimits = CreatorLimits {
        sessions: Some(2),
        bytes: Some(100),
    };

    #[test]
    fn a_creator_is_refused_past_either_cap_and_forgotten_when_empty() {
        let mut journal = Journal::default();
        assert!(journal.reserve("a", BOTH, 1, 60).is_ok());
        assert!(matches!(
            journal.reserve("a", BOTH, 1, 41),
            Err(OverCap::Bytes)
        ));
        assert!(journal.reserve("a", BOTH, 1, 40).is_ok());
        assert!(matches!(
            journal.reserve("a", BOTH, 1, 0),
            Err(OverCap::Sessions)
        ));
        // Another creator has caps of its own; a refusal holds nothing.
        assert!(matches!(
            journal.reserve("b", BOTH, 1, 101),
            Err(OverCap::Bytes)
        ));
        assert!(!journal.creators.contains_key("b"));
        journal.release("a", 2, 100);
        assert!(journal.creators.is_empty());
    }

    #[test]
    fn growth_is_reserved_at_once_and_shrinkage_freed_later() {
        let mut journal = Journal::default();
        let before = record(40, "a");
        journal.count_stored(&before);
        assert_eq!(before.held_bytes(), 42, "offer and meta");
        let mut answered = before.clone();
        answered.offer = None;
        answered.answered = Some(StoredAnswer {
            round: 1,
            answer: "y".repeat(90),
            name: "jo".into(),
        });
        // 42 held + 52 more would pass 90.
        assert!(journal.usage_change(&before, &answered, Some(90)).is_none());
        let grow = journal
            .usage_change(&before, &answered, Some(100))
            .expect("fits");
        assert_eq!((grow.reserved_bytes, grow.freed_bytes), (52, 0));
        assert_eq!(journal.creators["a"].bytes, 94);
        let shrink = journal
            .usage_change(&answered, &before, Some(0))
            .expect("shrinking always fits");
        assert_eq!((shrink.reserved_bytes, shrink.freed_bytes), (0, 52));
        assert_eq!(journal.creators["a"].bytes, 94, "freed only once committed");
    }
}
