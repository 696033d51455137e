//! The public lobby as an in-memory read model, with its search index.
//!
//! # Layout
//!
//! - `entry`: one listed session (entry, JSON, words, lobby order).
//! - `search`: filters, search words and word prefixes.
//! - `listings`: the B-trees (lobby order, per filter, per prefix, by code, by expiry).
//! - `page`: page queries and the rendered-page cache.
//! - `cursor`: where a page goes on from, read from a lobby position
//!   (`lobby_api::lobby_order`).
//! - `feed`: changes as `GET /lobby/events` subscribers see them.
//! - here: [`LobbyIndex`], which keeps them together and walks pages.
//!
//! `GET /lobby` is the hottest read, so every replica keeps the listed
//! sessions in B-trees ordered newest first, each entry with its JSON
//! pre-rendered; a page costs a range scan of the page, not a query over
//! every session. The index is built from the store at start and kept
//! current by the same code paths that write the store; every change is
//! also published as a [`LobbyChange`] for `GET /lobby/events`.
//!
//! Filters and search are answered from the same structure (see
//! `docs/decisions.md`, "Lobby search and counts"): besides the listing of
//! everything, each session is kept in one listing per filter combination it
//! satisfies (build, has a free slot, host kind: at most 7 more) and in one
//! posting listing per word prefix of its name and host name (prefixes of
//! 1 to [`PREFIX_MAX_CHARS`] characters, lower-cased). A page walks the
//! smallest listing that every match must be in and checks the rest on each
//! candidate, so its cost follows the page; counts are the sizes of those
//! listings (exact), or, for a search that needs checking on each
//! candidate, a scan bounded by [`COUNT_SCAN_LIMIT`].
//!
//! A page examines at most [`PAGE_SCAN_PER_RESULT`] candidates per session
//! it may hold: when the conditions rarely hold together, the page comes
//! back short (even empty) with a `nextCursor` at the last candidate
//! examined, so no query walks the whole listing.
//!
//! Expired sessions leave the index at the first read after their expiry,
//! or at the sweep, whichever comes first (published as `removed`), so
//! counts never include them.
//!
//! Host updates reach subscribers paced per session (see [`crate::coalesce`]):
//! at most one `updated` change per session per interval, the latest state
//! winning; creates and removals go out at once, a removal after the update
//! it holds back.
//!
//! Rendered pages are kept for up to [`PAGE_CACHE_MS`] in a small cache keyed
//! by the query, and served again only while nothing listed has changed
//! visibly since and no entry of the page has expired; the only thing a
//! cached page can show stale is an `expiresAt` moved by a host's refresh
//! during that second.

mod cursor;
mod entry;
mod feed;
mod listings;
mod page;
mod search;

use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use lobby_api::code::SessionCode;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use cursor::{CURSOR_MAX_CHARS, CURSOR_PATTERN, Cursor};
pub use entry::{Listed, lobby_entry};
use entry::{render, visible_change};
pub use feed::LobbyChange;
use listings::Index;
use page::{CachedPage, PAGE_CACHE_ENTRIES, PageCache};
pub use page::{PAGE_CACHE_BYTES, PAGE_CACHE_MS, PageQuery};
pub use search::{LobbyFilter, PREFIX_MAX_CHARS, SEARCH_MAX_CHARS, SEARCH_MAX_WORDS};

use crate::clock::{Millis, to_datetime};
use crate::coalesce::UpdateCoalescer;
use crate::store::SessionRecord;

/// Most candidates a count looks at when it cannot be read off a listing's
/// size, divided among the search's words (each word is checked against
/// each candidate); past this, `totalCapped` is set.
pub const COUNT_SCAN_LIMIT: usize = 10_000;

/// Most candidates a page examines per session it may hold, divided among
/// the search's words like [`COUNT_SCAN_LIMIT`] (so a page of the largest
/// size, 100, examines at most as many as a count, and the dearest search
/// costs what a one-word search does). A page that runs out of them comes
/// back short, with a cursor to go on from.
pub const PAGE_SCAN_PER_RESULT: usize = 100;

/// The in-memory lobby listing plus its change feed.
pub struct LobbyIndex {
    index: RwLock<Index>,
    events: broadcast::Sender<Arc<LobbyChange>>,
    /// Bumped by every visible change; cached pages of older generations are stale.
    generation: AtomicU64,
    pages: Mutex<PageCache>,
    /// Most bytes of page bodies the cache keeps.
    page_cache_bytes: usize,
    /// Host updates held back from the feed, per session. Changes are sent
    /// while it is locked, so a held update and the removal that flushes it
    /// cannot pass each other.
    pacing: Mutex<UpdateCoalescer<SessionCode, LobbyChange>>,
    /// Signalled when an update is held that falls due before any other.
    held_earlier: Notify,
    /// Candidates examined by page walks since start.
    examined: AtomicU64,
}

impl LobbyIndex {
    /// An empty index whose feed sends at most one update per session
    /// per `update_interval` (zero: every update at once). Held updates go
    /// out only while [`LobbyIndex::send_held_updates`] runs.
    pub fn new(update_interval: Duration, page_cache_bytes: usize) -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            index: RwLock::new(Index::default()),
            events,
            generation: AtomicU64::new(0),
            pages: Mutex::new(PageCache::default()),
            page_cache_bytes,
            pacing: Mutex::new(UpdateCoalescer::new(update_interval)),
            held_earlier: Notify::new(),
            examined: AtomicU64::new(0),
        }
    }

    /// Subscribes to lobby changes.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LobbyChange>> {
        self.events.subscribe()
    }

    /// Subscriptions open now (tests check that an event stream is
    /// subscribed by the time its headers arrive).
    pub fn subscribers(&self) -> usize {
        self.events.receiver_count()
    }

    fn send(&self, change: LobbyChange) {
        // No subscribers is fine: nobody is watching.
        let _ = self.events.send(Arc::new(change));
    }

    /// Records a visible change: pages are stale at once; the feed gets it
    /// now, or, for an update of a session updated within the interval,
    /// merged into one held update.
    fn publish(&self, change: LobbyChange) {
        self.generation.fetch_add(1, Ordering::Release);
        let Ok(mut pacing) = self.pacing.lock() else {
            self.send(change);
            return;
        };
        match (&change.before, &change.after) {
            (Some(_), Some(_)) => {
                let due_before = pacing.next_due();
                let code = change.code.clone();
                match pacing.update(code, change, Instant::now(), LobbyChange::then) {
                    Some(change) => self.send(change),
                    None if pacing.next_due() != due_before => self.held_earlier.notify_one(),
                    None => {}
                }
            }
            (_, None) => {
                if let Some(held) = pacing.end(&change.code) {
                    self.send(held);
                }
                self.send(change);
            }
            (None, Some(_)) => self.send(change),
        }
    }

    /// Sends held host updates as they fall due, until `shutdown` (the
    /// server runs it as a background task).
    pub async fn send_held_updates(&self, shutdown: CancellationToken) {
        loop {
            let next = self.send_due(Instant::now());
            let wait = async move {
                match next {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.held_earlier.notified() => {}
                () = wait => {}
            }
        }
    }

    /// Sends the held updates due at `now`; returns when the next falls due.
    fn send_due(&self, now: Instant) -> Option<Instant> {
        let Ok(mut pacing) = self.pacing.lock() else {
            return None;
        };
        for change in pacing.take_due(now) {
            self.send(change);
        }
        pacing.next_due()
    }

    /// Records the current state of a session: listed if public and not
    /// hidden by a moderator, unlisted otherwise. Publishes `added`,
    /// `updated` (only when something a lobby page shows changed) or
    /// `removed`.
    pub fn upsert(&self, record: &SessionRecord) {
        if !record.fields.public {
            self.remove(&record.code);
            return;
        }
        let listed = render(lobby_entry(record), record.expires_at);
        let key = Cursor::at(&listed.position()).key();
        // Published under the index lock (then the pacing lock; nothing
        // takes them the other way round): a concurrent removal of the same
        // session cannot be published before this change.
        let Ok(mut index) = self.index.write() else {
            return;
        };
        // Judged under the lock, so a hide cannot pass a host's update.
        if index.hidden.contains(&record.code) {
            self.unlist(&mut index, &record.code);
            return;
        }
        let previous = index.remove(&record.code);
        index.insert(key, listed.clone());
        if previous
            .as_ref()
            .is_none_or(|old| visible_change(&old.entry, &listed.entry))
        {
            self.publish(LobbyChange {
                before: previous,
                after: Some(listed),
                code: record.code.clone(),
            });
        }
    }

    /// Moves a listed session's expiry (no event: nothing visible changed).
    pub fn touch(&self, code: &SessionCode, expires_at: Millis) {
        let Ok(mut index) = self.index.write() else {
            return;
        };
        let Some(key) = index.by_code.get(code).copied() else {
            return;
        };
        if let Some(old) = index.remove(code) {
            let mut entry = old.entry.clone();
            entry.expires_at = to_datetime(expires_at);
            index.insert(key, render(entry, expires_at));
        }
    }

    /// Unlists a session; publishes `removed` if it was listed.
    pub fn remove(&self, code: &SessionCode) {
        // Published under the index lock, as in `upsert`.
        let Ok(mut index) = self.index.write() else {
            return;
        };
        self.unlist(&mut index, code);
    }

    /// Unlists `code` from the locked `index`; publishes `removed` if it
    /// was listed.
    fn unlist(&self, index: &mut Index, code: &SessionCode) {
        if let Some(old) = index.remove(code) {
            self.publish(LobbyChange {
                before: Some(old),
                after: None,
                code: code.clone(),
            });
        }
    }

    /// The sessions moderators hid.
    pub fn hidden(&self) -> HashSet<SessionCode> {
        self.index
            .read()
            .map(|index| index.hidden.clone())
            .unwrap_or_default()
    }

    /// Whether moderators hid session `code`.
    pub fn is_hidden(&self, code: &SessionCode) -> bool {
        self.index
            .read()
            .is_ok_and(|index| index.hidden.contains(code))
    }

    /// Sets the sessions moderators hid: each leaves the listing now (its
    /// subscribers hear `removed`) and is not listed again while hidden.
    /// Returns the set it replaces; a session that left it is listed again
    /// at its next upsert.
    pub fn set_hidden(&self, hidden: HashSet<SessionCode>) -> HashSet<SessionCode> {
        let Ok(mut index) = self.index.write() else {
            return HashSet::new();
        };
        for code in &hidden {
            self.unlist(&mut index, code);
        }
        std::mem::replace(&mut index.hidden, hidden)
    }

    /// Unlists every session expired at `now` (each published as
    /// `removed`). Reads do it first; so does the sweep, whatever its
    /// store commit does.
    pub fn evict_expired(&self, now: Millis) {
        let due = |index: &Index| {
            index
                .by_expiry
                .first()
                .is_some_and(|(expires, _)| *expires <= now)
        };
        if !self.index.read().map(|i| due(&i)).unwrap_or(false) {
            return;
        }
        // Published under the index lock, as in `upsert`.
        let Ok(mut index) = self.index.write() else {
            return;
        };
        while due(&index) {
            let Some((_, key)) = index.by_expiry.pop_first() else {
                break;
            };
            let code = index.by_order.get(&key).map(|l| l.entry.code.clone());
            if let Some(old) = code.and_then(|c| index.remove(&c)) {
                let code = old.entry.code.clone();
                self.publish(LobbyChange {
                    before: Some(old),
                    after: None,
                    code,
                });
            }
        }
    }

    /// Codes of every listed session.
    pub fn codes(&self) -> Vec<SessionCode> {
        self.index
            .read()
            .map(|i| i.by_code.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of listed sessions (expired-but-unswept ones included).
    pub fn len(&self) -> usize {
        self.index.read().map(|i| i.by_order.len()).unwrap_or(0)
    }

    /// Whether nothing is listed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The JSON body of one `GET /lobby` page, from the cache when still valid.
    pub fn page(&self, query: &PageQuery, now: Millis) -> Bytes {
        self.cached_page(query, now)
            .unwrap_or_else(|| self.rendered_page(query, now))
    }

    /// The page from the cache, if it holds a valid one (cheap: the caller
    /// may serve it without charging a render).
    pub fn cached_page(&self, query: &PageQuery, now: Millis) -> Option<Bytes> {
        self.evict_expired(now);
        let generation = self.generation.load(Ordering::Acquire);
        let cache = self.pages.lock().ok()?;
        let page = cache.pages.get(query)?;
        (page.generation == generation
            && now < page.first_expiry
            && now - page.rendered_at < PAGE_CACHE_MS)
            .then(|| page.body.clone())
    }

    /// Renders the page afresh (a walk of up to [`PAGE_SCAN_PER_RESULT`] ×
    /// its limit candidates, divided among its search words) and keeps it
    /// in the cache.
    pub fn rendered_page(&self, query: &PageQuery, now: Millis) -> Bytes {
        self.evict_expired(now);
        let generation = self.generation.load(Ordering::Acquire);
        let (body, first_expiry) = self.render_page(query, now);
        let body = Bytes::from(body);
        if let Ok(mut cache) = self.pages.lock() {
            if cache.pages.len() >= PAGE_CACHE_ENTRIES
                || cache.bytes + body.len() > self.page_cache_bytes
            {
                cache.pages.clear();
                cache.bytes = 0;
            }
            let page = CachedPage {
                body: body.clone(),
                generation,
                rendered_at: now,
                first_expiry,
            };
            cache.bytes += body.len();
            if let Some(old) = cache.pages.insert(query.clone(), page) {
                cache.bytes -= old.body.len();
            }
        }
        body
    }

    /// Candidates examined by page walks since start (each page at most
    /// [`PAGE_SCAN_PER_RESULT`] × its limit).
    pub fn entries_examined(&self) -> u64 {
        self.examined.load(Ordering::Relaxed)
    }

    /// Bytes of page bodies in the cache now.
    pub fn cached_page_bytes(&self) -> usize {
        self.pages.lock().map_or(0, |c| c.bytes)
    }

    /// Renders one page; also returns the earliest expiry on it.
    fn render_page(&self, query: &PageQuery, now: Millis) -> (String, Millis) {
        const EMPTY: &str = r#"{"sessions":[],"nextCursor":null,"total":0,"totalCapped":false}"#;
        let Ok(index) = self.index.read() else {
            return (EMPTY.to_string(), now);
        };
        let Some((listing, exact)) = index.narrowest(&query.filter) else {
            return (EMPTY.to_string(), Millis::MAX);
        };
        let matches = |l: &Listed| l.expires_at > now && l.passes(&query.filter);
        let start = match &query.after {
            Some(c) => Bound::Excluded(c.key()),
            None => Bound::Unbounded,
        };
        let mut body = String::with_capacity(96 + query.limit * 320);
        body.push_str(r#"{"sessions":["#);
        // Work follows candidates times words: the budgets are shared out
        // among the words.
        let words = query.filter.search_words().max(1);
        let budget = query.limit.saturating_mul(PAGE_SCAN_PER_RESULT) / words;
        let count_limit = COUNT_SCAN_LIMIT / words;
        let mut examined = 0usize;
        let mut taken = 0usize;
        let mut first_expiry = Millis::MAX;
        let mut last_taken: Option<&Listed> = None;
        let mut last_examined: Option<&Listed> = None;
        // Where the next page goes on from, when there may be one.
        let mut next: Option<&Listed> = None;
        for listed in listing.range((start, Bound::Unbounded)).map(|(_, l)| &**l) {
            if examined == budget {
                // Out of candidates: the next page goes on after the last
                // one examined (none between it and the last taken matched).
                next = last_examined;
                break;
            }
            examined += 1;
            if !matches(listed) {
                last_examined = Some(listed);
                continue;
            }
            if taken == query.limit {
                next = last_taken;
                break;
            }
            if taken > 0 {
                body.push(',');
            }
            body.push_str(&listed.json);
            first_expiry = first_expiry.min(listed.expires_at);
            taken += 1;
            last_taken = Some(listed);
            last_examined = Some(listed);
        }
        self.examined.fetch_add(examined as u64, Ordering::Relaxed);
        body.push_str(r#"],"nextCursor":"#);
        match next {
            Some(listed) => {
                body.push('"');
                body.push_str(&listed.position().to_string());
                body.push('"');
            }
            None => body.push_str("null"),
        }
        let (total, capped) = if exact {
            (listing.len(), false)
        } else {
            let counted = listing
                .values()
                .take(count_limit)
                .filter(|l| matches(l))
                .count();
            (counted, listing.len() > count_limit)
        };
        body.push_str(&format!(r#","total":{total},"totalCapped":{capped}}}"#));
        (body, first_expiry)
    }
}

#[cfg(test)]
mod tests {
    use lobby_api::api::{HostKind, LobbyEntry, SessionSummary};
    use lobby_api::lobby_order::LobbyPosition;
    use std::cmp::Reverse;

    use super::entry::PackedCode;
    use super::search::{filter_keys, posting_key, prefixes};
    use super::*;

    #[test]
    fn prefixes_are_capped_and_char_safe() {
        assert_eq!(prefixes("abc").collect::<Vec<_>>(), ["a", "ab", "abc"]);
        assert_eq!(prefixes("héllo").nth(1), Some("hé"));
        assert_eq!(prefixes("abcdefghijkl").count(), PREFIX_MAX_CHARS);
        assert_eq!(posting_key("abcdefghijkl"), "abcdefgh");
    }

    #[test]
    fn a_cursor_is_a_position_and_keys_its_place() {
        // The position text's own rules are lobby_api::lobby_order's tests.
        let code = SessionCode::parse("K7QH3MZD").unwrap();
        let position = LobbyPosition::new(1_764_000_000_000, code.clone());
        let cursor = Cursor::parse(&position.to_string()).unwrap();
        assert_eq!(
            cursor.key(),
            (Reverse(1_764_000_000_000), PackedCode::new(&code))
        );
        assert_eq!(
            Cursor::parse("1764000000000.K7QH3MZD"),
            None,
            "older builds' form"
        );
        assert_eq!(CURSOR_MAX_CHARS, position.to_string().len());
    }

    #[test]
    fn packed_codes_order_like_codes() {
        let a = SessionCode::parse("ABCDEFGH").unwrap();
        let b = SessionCode::parse("ABCDEFGJ").unwrap();
        assert!(PackedCode::new(&a) < PackedCode::new(&b));
    }

    #[test]
    fn a_search_is_sanitized_into_lower_case_words() {
        let f = LobbyFilter::default().with_search("  Ada\u{202E}'s   CAMP\u{0007}fire ada ");
        assert_eq!(f.words, ["ada", "s", "campfire"]);
        assert!(LobbyFilter::default().with_search(" -- ").is_everything());
    }

    #[test]
    fn filter_keys_cover_each_combination_once() {
        let entry = |players| LobbyEntry {
            code: SessionCode::parse("ABCDEFGH").unwrap(),
            summary: SessionSummary {
                name: String::new(),
                host_name: String::new(),
                players,
                max_players: 4,
                build: "b".into(),
                difficulty: None,
                campaign: None,
                host_kind: HostKind::Player,
                in_progress: false,
                bots: 0,
                start_at: None,
            },
            created_at: to_datetime(0),
            expires_at: to_datetime(0),
            position: None,
            meta: None,
        };
        assert_eq!(filter_keys(&entry(1)).len(), 7);
        assert_eq!(filter_keys(&entry(4)).len(), 3);
    }

    fn record(players: u32) -> SessionRecord {
        use crate::store::LobbyFields;
        SessionRecord {
            code: SessionCode::parse("ABCDEFGH").unwrap(),
            token_hash: Vec::new(),
            fields: LobbyFields {
                public: true,
                summary: SessionSummary {
                    name: "Burst".into(),
                    host_name: "Ada".into(),
                    players,
                    max_players: 64,
                    build: "b1".into(),
                    difficulty: None,
                    campaign: None,
                    host_kind: HostKind::Player,
                    in_progress: false,
                    bots: 0,
                    start_at: None,
                },
                meta: None,
            },
            created_at: 0,
            expires_at: i64::MAX,
            round: 0,
            offer: None,
            answered: None,
            creator: String::new(),
        }
    }

    /// Issue 44, finding 6: words multiply a candidate's cost, so a
    /// search's page and count budgets are shared out among its words.
    #[test]
    fn a_searchs_candidates_are_shared_among_its_words() {
        const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
        // 2,000 sessions named `name(i)` and hosted by `host(i)`.
        let index_of = |name: &dyn Fn(usize) -> &'static str,
                        host: &dyn Fn(usize) -> &'static str| {
            let index = LobbyIndex::new(Duration::from_secs(1), PAGE_CACHE_BYTES);
            for i in 0..2_000usize {
                let mut r = record(1);
                let code: String = (0..8u32)
                    .map(|k| ALPHABET[(i / ALPHABET.len().pow(k)) % ALPHABET.len()] as char)
                    .collect();
                r.code = SessionCode::parse(&code).unwrap();
                r.fields.summary.name = format!("{} {i}", name(i));
                r.fields.summary.host_name = host(i).into();
                r.created_at = i as i64;
                index.upsert(&r);
            }
            index
        };
        let page = |index: &LobbyIndex, q: &str, limit: usize| {
            let query = PageQuery {
                filter: LobbyFilter::default().with_search(q),
                limit,
                after: None,
            };
            let before = index.entries_examined();
            let body = index.rendered_page(&query, 0);
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            (v, index.entries_examined() - before)
        };
        let all = index_of(
            &|_| "alpha bravo charlie delta echo foxtrot golf",
            &|_| "hotel",
        );
        let (one, _) = page(&all, "alpha", 100);
        assert_eq!(
            (one["total"].clone(), one["totalCapped"].clone()),
            (2_000.into(), false.into())
        );
        let (eight, _) = page(&all, "a b c d e f g h", 100);
        assert_eq!(eight["sessions"].as_array().unwrap().len(), 100);
        assert_eq!(
            (eight["total"].clone(), eight["totalCapped"].clone()),
            ((COUNT_SCAN_LIMIT / 8).into(), true.into()),
            "the count looks at 10,000 / 8 candidates"
        );
        // Every word matches a thousand sessions, all eight none: the page
        // stops at its share.
        let split = index_of(
            &|i| {
                if i % 2 == 0 {
                    "alpha bravo charlie delta echo foxtrot golf"
                } else {
                    "hotel"
                }
            },
            &|_| "zed",
        );
        let (none, examined) = page(&split, "a b c d e f g h", 10);
        assert_eq!(none["sessions"].as_array().unwrap().len(), 0);
        assert_eq!(examined as usize, 10 * PAGE_SCAN_PER_RESULT / 8);
    }

    /// Everything the feed has sent so far, as (event, players or code).
    fn drain(feed: &mut broadcast::Receiver<Arc<LobbyChange>>) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        while let Ok(change) = feed.try_recv() {
            if let Some((name, data)) = change.event_for(&LobbyFilter::default()) {
                let v: serde_json::Value = serde_json::from_str(&data).unwrap();
                let what = match name {
                    "removed" => v["code"].as_str().unwrap().to_owned(),
                    _ => v["players"].to_string(),
                };
                out.push((name, what));
            }
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_updates_reaches_the_feed_paced_and_the_removal_after_the_last() {
        let index = Arc::new(LobbyIndex::new(Duration::from_secs(1), PAGE_CACHE_BYTES));
        let shutdown = CancellationToken::new();
        let pacing = tokio::spawn({
            let (index, shutdown) = (index.clone(), shutdown.clone());
            async move { index.send_held_updates(shutdown).await }
        });
        let mut feed = index.subscribe();
        index.upsert(&record(1));
        // 300 updates, one every 10 ms: 3 s of a host updating flat out.
        for players in 2..302 {
            index.upsert(&record(players));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let sent = drain(&mut feed);
        assert_eq!(sent[0], ("added", "1".into()));
        assert_eq!(sent[1], ("updated", "2".into()), "the first update at once");
        let updates = sent.iter().filter(|(name, _)| *name == "updated").count();
        assert!(updates <= 4, "one update a second over 3 s: {sent:?}");
        // Nothing lost: the latest state goes out when due, and pages show it at once.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let last = drain(&mut feed);
        assert_eq!(last, vec![("updated", "301".into())]);
        let page = index.page(
            &PageQuery {
                limit: 1,
                ..PageQuery::default()
            },
            0,
        );
        assert!(String::from_utf8_lossy(&page).contains(r#""players":301"#));

        // After a quiet second an update goes out at once; the next is
        // held, and a removal sends it first, in order.
        index.upsert(&record(400));
        assert_eq!(drain(&mut feed), vec![("updated", "400".into())]);
        index.upsert(&record(401));
        index.upsert(&record(402));
        assert_eq!(drain(&mut feed), vec![]);
        index.remove(&SessionCode::parse("ABCDEFGH").unwrap());
        assert_eq!(
            drain(&mut feed),
            vec![("updated", "402".into()), ("removed", "ABCDEFGH".into())]
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(drain(&mut feed), vec![], "and nothing after the removal");
        shutdown.cancel();
        pacing.await.unwrap();
    }

    #[test]
    fn the_page_cache_keeps_within_the_configured_budget() {
        let index = LobbyIndex::new(Duration::ZERO, 2_000);
        index.upsert(&record(1));
        let mut served = 0;
        // Distinct keys (page sizes), each page a few hundred bytes.
        for limit in 1..=50 {
            let query = PageQuery {
                limit,
                ..PageQuery::default()
            };
            served += index.page(&query, 0).len();
            assert!(index.cached_page_bytes() <= 2_000);
        }
        assert!(served > 2_000, "the pages served exceed the budget");
    }

    #[test]
    fn without_an_interval_every_update_goes_out_at_once() {
        let index = LobbyIndex::new(Duration::ZERO, PAGE_CACHE_BYTES);
        let mut feed = index.subscribe();
        for players in 1..=5 {
            index.upsert(&record(players));
        }
        assert_eq!(drain(&mut feed).len(), 5);
    }
}
