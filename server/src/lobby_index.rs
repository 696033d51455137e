//! The public lobby as an in-memory read model, with its search index.
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

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;

use protocol::api::{HostKind, LobbyEntry};
use protocol::code::{CODE_ALPHABET, CODE_LEN, SessionCode};
use protocol::name::sanitize_label;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::{Millis, to_datetime};
use crate::coalesce::UpdateCoalescer;
use crate::store::SessionRecord;

/// A session code packed into its 8 ASCII bytes, big-endian, so that it
/// orders like the code itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct PackedCode(u64);

impl PackedCode {
    fn new(code: &SessionCode) -> Self {
        let mut bytes = [0u8; 8];
        for (b, c) in bytes.iter_mut().zip(code.as_str().bytes()) {
            *b = c;
        }
        Self(u64::from_be_bytes(bytes))
    }

    fn text(self) -> String {
        let bytes = self.0.to_be_bytes();
        bytes
            .iter()
            .filter(|b| **b != 0)
            .map(|b| *b as char)
            .collect()
    }
}

/// Newest first, ties broken by code.
type IndexKey = (Reverse<Millis>, PackedCode);

/// Sessions in lobby order.
type Listing = BTreeMap<IndexKey, Arc<Listed>>;

/// One listed session, rendered.
pub struct Listed {
    entry: LobbyEntry,
    expires_at: Millis,
    json: String,
    /// Lower-cased words of the name and host name, for search.
    words: Vec<String>,
}

/// The filters of one listing: `(build, has a free slot, host kind)`.
type FilterKey = (Option<String>, bool, Option<HostKind>);

/// Longest search (`q=`), in characters; longer is refused.
pub const SEARCH_MAX_CHARS: usize = 64;

/// Most distinct words in a search; more are refused (each word is checked
/// against every word of each candidate, so words multiply a page's cost).
pub const SEARCH_MAX_WORDS: usize = 8;

/// Longest word prefix with its own posting listing; longer search words
/// walk the listing of their first [`PREFIX_MAX_CHARS`] characters.
pub const PREFIX_MAX_CHARS: usize = 8;

/// Most candidates a count looks at when it cannot be read off a listing's
/// size; past this, `totalCapped` is set.
pub const COUNT_SCAN_LIMIT: usize = 10_000;

/// Most candidates a page examines per session it may hold (so a page of
/// the largest size, 100, examines at most as many as a count). A page
/// that runs out of them comes back short, with a cursor to go on from.
pub const PAGE_SCAN_PER_RESULT: usize = 100;

/// The lower-cased words of a text: runs of letters and digits.
fn words_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The posting-listing key of a word: its first [`PREFIX_MAX_CHARS`] characters.
fn posting_key(word: &str) -> &str {
    match word.char_indices().nth(PREFIX_MAX_CHARS) {
        Some((i, _)) => &word[..i],
        None => word,
    }
}

/// Every prefix of `word` that has a posting listing.
fn prefixes(word: &str) -> impl Iterator<Item = &str> {
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
    words: Vec<String>,
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

    fn key(&self) -> FilterKey {
        (self.build.clone(), self.has_space, self.host_kind)
    }

    /// Whether a listed session passes (expiry aside).
    fn matches(&self, l: &Listed) -> bool {
        self.build.as_deref().is_none_or(|b| l.entry.build == b)
            && (!self.has_space || l.entry.players < l.entry.max_players)
            && self.host_kind.is_none_or(|k| l.entry.host_kind == k)
            && self
                .words
                .iter()
                .all(|w| l.words.iter().any(|lw| lw.starts_with(w.as_str())))
    }

    /// Whether this filter lets everything through.
    pub fn is_everything(&self) -> bool {
        self.build.is_none() && !self.has_space && self.host_kind.is_none() && self.words.is_empty()
    }
}

/// Every filter listing a session belongs to (the unfiltered one aside).
fn filter_keys(entry: &LobbyEntry) -> Vec<FilterKey> {
    let mut keys = Vec::with_capacity(7);
    let space = entry.players < entry.max_players;
    for build in [None, Some(entry.build.clone())] {
        for has_space in [false, true] {
            if has_space && !space {
                continue;
            }
            for kind in [None, Some(entry.host_kind)] {
                if build.is_none() && !has_space && kind.is_none() {
                    continue;
                }
                keys.push((build.clone(), has_space, kind));
            }
        }
    }
    keys
}

#[derive(Default)]
struct Index {
    by_order: Listing,
    by_filter: HashMap<FilterKey, Listing>,
    by_prefix: HashMap<String, Listing>,
    by_code: HashMap<SessionCode, IndexKey>,
    by_expiry: BTreeSet<(Millis, IndexKey)>,
}

impl Index {
    fn insert(&mut self, key: IndexKey, listed: Arc<Listed>) {
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

    fn remove(&mut self, code: &SessionCode) -> Option<Arc<Listed>> {
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
    fn narrowest(&self, filter: &LobbyFilter) -> Option<(&Listing, bool)> {
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

/// How long a rendered page may be served again.
pub const PAGE_CACHE_MS: Millis = 1000;

/// Most pages kept in the cache (it is cleared when full).
const PAGE_CACHE_ENTRIES: usize = 4096;
/// Most bytes of page bodies kept in the cache by default
/// (`--page-cache-bytes`; it is cleared when a new page would pass it): the
/// cache's keys are client-chosen (cursors, filters), so its size must not
/// be.
pub const PAGE_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The cached pages and the bytes their bodies hold.
#[derive(Default)]
struct PageCache {
    pages: HashMap<PageQuery, CachedPage>,
    bytes: usize,
}

struct CachedPage {
    body: Bytes,
    generation: u64,
    rendered_at: Millis,
    /// The earliest expiry among the page's entries.
    first_expiry: Millis,
}

/// Filters, search and position of one `GET /lobby` page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PageQuery {
    /// What the page is limited to.
    pub filter: LobbyFilter,
    /// Page size.
    pub limit: usize,
    /// Continue after this position.
    pub after: Option<Cursor>,
}

/// A position in the lobby order (opaque to clients: `createdMs.CODE`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    created_at: Millis,
    code: PackedCode,
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

    fn encode(key: &IndexKey) -> String {
        format!("{}.{}", key.0.0, key.1.text())
    }
}

/// One change to the listing, as published to `GET /lobby/events`
/// subscribers: the session as it was listed before (if it was) and after
/// (if it still is). Each subscriber turns it into the event its own filter
/// sees, or into nothing.
pub struct LobbyChange {
    before: Option<Arc<Listed>>,
    after: Option<Arc<Listed>>,
    code: SessionCode,
}

impl LobbyChange {
    /// This change followed by `later` (of the same session), as one: from
    /// the state before this one to the state after `later`.
    fn then(self, later: LobbyChange) -> LobbyChange {
        LobbyChange {
            before: self.before,
            after: later.after,
            code: later.code,
        }
    }

    /// The SSE event (name, data) a subscriber limited to `filter` gets:
    /// `added` when the session starts matching, `updated` while it keeps
    /// matching, `removed` when it stops; `None` when it matches neither
    /// before nor after. So `added` and `removed` move that subscriber's
    /// count by exactly one.
    pub fn event_for(&self, filter: &LobbyFilter) -> Option<(&'static str, String)> {
        let was = self.before.as_deref().is_some_and(|l| filter.matches(l));
        let is = self.after.as_deref().filter(|l| filter.matches(l));
        match (was, is) {
            (false, None) => None,
            (false, Some(l)) => Some(("added", l.json.clone())),
            (true, Some(l)) => Some(("updated", l.json.clone())),
            (true, None) => Some(("removed", format!(r#"{{"code":"{}"}}"#, self.code.as_str()))),
        }
    }
}

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

/// Builds the lobby entry of a stored session.
pub fn lobby_entry(record: &SessionRecord) -> LobbyEntry {
    let f = &record.fields;
    LobbyEntry {
        code: record.code.clone(),
        name: f.name.clone(),
        host_name: f.host_name.clone(),
        players: f.players,
        max_players: f.max_players,
        build: f.build.clone(),
        difficulty: f.difficulty.clone(),
        campaign: f.campaign.clone(),
        host_kind: f.host_kind,
        in_progress: f.in_progress,
        created_at: to_datetime(record.created_at),
        expires_at: to_datetime(record.expires_at),
        meta: f.meta.as_deref().and_then(|m| serde_json::from_str(m).ok()),
    }
}

fn render(entry: LobbyEntry, expires_at: Millis) -> Arc<Listed> {
    let json = serde_json::to_string(&entry).unwrap_or_else(|_| "null".into());
    let mut words: Vec<String> = Vec::new();
    for w in words_of(&entry.name).chain(words_of(&entry.host_name)) {
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

/// Whether two entries differ in what a lobby page shows (expiry aside).
fn visible_change(a: &LobbyEntry, b: &LobbyEntry) -> bool {
    a.name != b.name
        || a.host_name != b.host_name
        || a.players != b.players
        || a.max_players != b.max_players
        || a.build != b.build
        || a.difficulty != b.difficulty
        || a.campaign != b.campaign
        || a.host_kind != b.host_kind
        || a.in_progress != b.in_progress
        || a.meta != b.meta
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

    /// Records the current state of a session: listed if public, unlisted
    /// otherwise. Publishes `added`, `updated` (only when something a lobby
    /// page shows changed) or `removed`.
    pub fn upsert(&self, record: &SessionRecord) {
        if !record.fields.public {
            self.remove(&record.code);
            return;
        }
        let key = (Reverse(record.created_at), PackedCode::new(&record.code));
        let listed = render(lobby_entry(record), record.expires_at);
        // Published under the index lock (then the pacing lock; nothing
        // takes them the other way round): a concurrent removal of the same
        // session cannot be published before this change.
        let Ok(mut index) = self.index.write() else {
            return;
        };
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
        if let Some(old) = index.remove(code) {
            self.publish(LobbyChange {
                before: Some(old),
                after: None,
                code: code.clone(),
            });
        }
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
    /// its limit candidates) and keeps it in the cache.
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
        let matches = |l: &Listed| l.expires_at > now && query.filter.matches(l);
        let start = match &query.after {
            Some(c) => Bound::Excluded((Reverse(c.created_at), c.code)),
            None => Bound::Unbounded,
        };
        let mut body = String::with_capacity(96 + query.limit * 320);
        body.push_str(r#"{"sessions":["#);
        let budget = query.limit.saturating_mul(PAGE_SCAN_PER_RESULT);
        let mut examined = 0usize;
        let mut taken = 0usize;
        let mut first_expiry = Millis::MAX;
        let mut last_taken: Option<&IndexKey> = None;
        let mut last_examined: Option<&IndexKey> = None;
        // Where the next page goes on from, when there may be one.
        let mut next: Option<&IndexKey> = None;
        for (key, listed) in listing.range((start, Bound::Unbounded)) {
            if examined == budget {
                // Out of candidates: the next page goes on after the last
                // one examined (none between it and the last taken matched).
                next = last_examined;
                break;
            }
            examined += 1;
            if !matches(listed) {
                last_examined = Some(key);
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
            last_taken = Some(key);
            last_examined = Some(key);
        }
        self.examined.fetch_add(examined as u64, Ordering::Relaxed);
        body.push_str(r#"],"nextCursor":"#);
        match next {
            Some(key) => {
                body.push('"');
                body.push_str(&Cursor::encode(key));
                body.push('"');
            }
            None => body.push_str("null"),
        }
        let (total, capped) = if exact {
            (listing.len(), false)
        } else {
            let counted = listing
                .values()
                .take(COUNT_SCAN_LIMIT)
                .filter(|l| matches(l))
                .count();
            (counted, listing.len() > COUNT_SCAN_LIMIT)
        };
        body.push_str(&format!(r#","total":{total},"totalCapped":{capped}}}"#));
        (body, first_expiry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_capped_and_char_safe() {
        assert_eq!(prefixes("abc").collect::<Vec<_>>(), ["a", "ab", "abc"]);
        assert_eq!(prefixes("héllo").nth(1), Some("hé"));
        assert_eq!(prefixes("abcdefghijkl").count(), PREFIX_MAX_CHARS);
        assert_eq!(posting_key("abcdefghijkl"), "abcdefgh");
    }

    #[test]
    fn cursors_are_exactly_the_published_pattern() {
        // CURSOR_PATTERN, spelled out: the dialect-neutral check of it is
        // in app.rs, against the served document.
        for good in [
            "0.22222222",
            "1764000000000.K7QH3MZD",
            "999999999999999999.ZZZZZZZZ",
            "000000000000000001.ABCDEFGH",
        ] {
            assert!(Cursor::parse(good).is_some(), "{good:?}");
            assert!(good.len() <= CURSOR_MAX_CHARS);
        }
        for bad in [
            "",
            ".K7QH3MZD",
            "1764000000000",
            "1764000000000.",
            "1764000000000.k7qh3mzd",
            "1764000000000.K7QH-3MZD",
            "1764000000000.K7QH3MZ",
            "1764000000000.K7QH3MZDD",
            "1764000000000.K7QH3MZO",
            "+1764000000000.K7QH3MZD",
            "-1.K7QH3MZD",
            " 1.K7QH3MZD",
            "1.K7QH3MZD ",
            "1000000000000000000.K7QH3MZD",
            "9223372036854775807.K7QH3MZD",
            "1.2.K7QH3MZD",
            "\u{661}.K7QH3MZD",
        ] {
            assert!(Cursor::parse(bad).is_none(), "{bad:?}");
        }
        let code = PackedCode::new(&SessionCode::parse("K7QH3MZD").unwrap());
        let key: IndexKey = (Reverse(1_764_000_000_000), code);
        assert_eq!(
            Cursor::parse(&Cursor::encode(&key)),
            Some(Cursor {
                created_at: 1_764_000_000_000,
                code
            })
        );
    }

    #[test]
    fn packed_codes_order_like_codes() {
        let a = SessionCode::parse("ABCDEFGH").unwrap();
        let b = SessionCode::parse("ABCDEFGJ").unwrap();
        assert!(PackedCode::new(&a) < PackedCode::new(&b));
        assert_eq!(PackedCode::new(&a).text(), "ABCDEFGH");
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
            name: String::new(),
            host_name: String::new(),
            players,
            max_players: 4,
            build: "b".into(),
            difficulty: None,
            campaign: None,
            host_kind: HostKind::Player,
            in_progress: false,
            created_at: to_datetime(0),
            expires_at: to_datetime(0),
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
                name: "Burst".into(),
                host_name: "Ada".into(),
                players,
                max_players: 64,
                build: "b1".into(),
                difficulty: None,
                campaign: None,
                host_kind: HostKind::Player,
                in_progress: false,
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
