//! The public lobby as an in-memory read model.
//!
//! `GET /lobby` is the hottest read, so every replica keeps the listed
//! sessions in a B-tree ordered newest first, each with its JSON
//! pre-rendered; a page costs a range scan of the page, not a query over
//! every session. The index is built from the store at start and kept
//! current by the same code paths that write the store; every change is
//! also published as a [`LobbyEvent`] for `GET /lobby/events`. Expiry is
//! checked at read time, so an expired session disappears at once.
//!
//! Rendered pages are kept for up to [`PAGE_CACHE_MS`] in a small cache keyed
//! by the query, and served again only while nothing listed has changed
//! visibly since and no entry of the page has expired; the only thing a
//! cached page can show stale is an `expiresAt` moved by a host's refresh
//! during that second.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use bytes::Bytes;

use protocol::api::{HostKind, LobbyEntry, LobbyEvent, RemovedEntry};
use protocol::code::SessionCode;
use tokio::sync::broadcast;

use crate::clock::{Millis, to_datetime};
use crate::store::SessionRecord;

/// Newest first, ties broken by code.
type IndexKey = (Reverse<Millis>, SessionCode);

struct Listed {
    entry: LobbyEntry,
    expires_at: Millis,
    json: String,
}

#[derive(Default)]
struct Index {
    by_order: BTreeMap<IndexKey, Arc<Listed>>,
    by_code: HashMap<SessionCode, IndexKey>,
}

/// How long a rendered page may be served again.
pub const PAGE_CACHE_MS: Millis = 1000;

/// Most pages kept in the cache (it is cleared when full).
const PAGE_CACHE_ENTRIES: usize = 4096;

struct CachedPage {
    body: Bytes,
    generation: u64,
    rendered_at: Millis,
    /// The earliest expiry among the page's entries.
    first_expiry: Millis,
}

/// Filters and position of one `GET /lobby` page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PageQuery {
    /// Only sessions of this build.
    pub build: Option<String>,
    /// Only sessions with a free slot.
    pub has_space: bool,
    /// Only sessions with this host kind.
    pub host_kind: Option<HostKind>,
    /// Page size.
    pub limit: usize,
    /// Continue after this position.
    pub after: Option<Cursor>,
}

/// A position in the lobby order (opaque to clients: `createdMs.CODE`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    created_at: Millis,
    code: SessionCode,
}

impl Cursor {
    /// Parses a `cursor=` value.
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, code) = text.split_once('.')?;
        Some(Self {
            created_at: ms.parse().ok()?,
            code: SessionCode::parse(code).ok()?,
        })
    }

    fn encode(key: &IndexKey) -> String {
        format!("{}.{}", key.0.0, key.1)
    }
}

/// The in-memory lobby listing plus its change feed.
pub struct LobbyIndex {
    index: RwLock<Index>,
    events: broadcast::Sender<Arc<LobbyEvent>>,
    /// Bumped by every visible change; cached pages of older generations are stale.
    generation: AtomicU64,
    pages: Mutex<HashMap<PageQuery, CachedPage>>,
}

impl Default for LobbyIndex {
    fn default() -> Self {
        Self::new()
    }
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
        created_at: to_datetime(record.created_at),
        expires_at: to_datetime(record.expires_at),
        meta: f.meta.as_deref().and_then(|m| serde_json::from_str(m).ok()),
    }
}

fn render(entry: LobbyEntry, expires_at: Millis) -> Arc<Listed> {
    let json = serde_json::to_string(&entry).unwrap_or_else(|_| "null".into());
    Arc::new(Listed {
        entry,
        expires_at,
        json,
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
        || a.meta != b.meta
}

impl LobbyIndex {
    /// An empty index.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(1024);
        Self {
            index: RwLock::new(Index::default()),
            events,
            generation: AtomicU64::new(0),
            pages: Mutex::new(HashMap::new()),
        }
    }

    /// Subscribes to lobby changes.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LobbyEvent>> {
        self.events.subscribe()
    }

    fn publish(&self, event: LobbyEvent) {
        self.generation.fetch_add(1, Ordering::Release);
        // No subscribers is fine: nobody is watching.
        let _ = self.events.send(Arc::new(event));
    }

    /// Records the current state of a session: listed if public, unlisted
    /// otherwise. Publishes `added`, `updated` (only when something a lobby
    /// page shows changed) or `removed`.
    pub fn upsert(&self, record: &SessionRecord) {
        if !record.fields.public {
            self.remove(&record.code);
            return;
        }
        let key = (Reverse(record.created_at), record.code.clone());
        let listed = render(lobby_entry(record), record.expires_at);
        let previous = {
            let Ok(mut index) = self.index.write() else {
                return;
            };
            let previous = index.by_order.insert(key.clone(), listed.clone());
            index.by_code.insert(record.code.clone(), key);
            previous
        };
        match previous {
            None => self.publish(LobbyEvent::Added(listed.entry.clone())),
            Some(old) if visible_change(&old.entry, &listed.entry) => {
                self.publish(LobbyEvent::Updated(listed.entry.clone()))
            }
            Some(_) => {}
        }
    }

    /// Moves a listed session's expiry (no event: nothing visible changed).
    pub fn touch(&self, code: &SessionCode, expires_at: Millis) {
        let Ok(mut index) = self.index.write() else {
            return;
        };
        let Some(key) = index.by_code.get(code).cloned() else {
            return;
        };
        if let Some(listed) = index.by_order.get_mut(&key) {
            let mut entry = listed.entry.clone();
            entry.expires_at = to_datetime(expires_at);
            *listed = render(entry, expires_at);
        }
    }

    /// Unlists a session; publishes `removed` if it was listed.
    pub fn remove(&self, code: &SessionCode) {
        let removed = {
            let Ok(mut index) = self.index.write() else {
                return;
            };
            match index.by_code.remove(code) {
                Some(key) => index.by_order.remove(&key).is_some(),
                None => false,
            }
        };
        if removed {
            self.publish(LobbyEvent::Removed(RemovedEntry { code: code.clone() }));
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
        let generation = self.generation.load(Ordering::Acquire);
        if let Ok(pages) = self.pages.lock() {
            if let Some(page) = pages.get(query) {
                if page.generation == generation
                    && now < page.first_expiry
                    && now - page.rendered_at < PAGE_CACHE_MS
                {
                    return page.body.clone();
                }
            }
        }
        let (body, first_expiry) = self.render_page(query, now);
        let body = Bytes::from(body);
        if let Ok(mut pages) = self.pages.lock() {
            if pages.len() >= PAGE_CACHE_ENTRIES {
                pages.clear();
            }
            let page = CachedPage {
                body: body.clone(),
                generation,
                rendered_at: now,
                first_expiry,
            };
            pages.insert(query.clone(), page);
        }
        body
    }

    /// Renders one page; also returns the earliest expiry on it.
    fn render_page(&self, query: &PageQuery, now: Millis) -> (String, Millis) {
        let Ok(index) = self.index.read() else {
            return (r#"{"sessions":[],"nextCursor":null}"#.to_string(), now);
        };
        let start = match &query.after {
            Some(c) => std::ops::Bound::Excluded((Reverse(c.created_at), c.code.clone())),
            None => std::ops::Bound::Unbounded,
        };
        let matches = |l: &Listed| {
            l.expires_at > now
                && query.build.as_deref().is_none_or(|b| l.entry.build == b)
                && (!query.has_space || l.entry.players < l.entry.max_players)
                && query.host_kind.is_none_or(|k| l.entry.host_kind == k)
        };
        let mut body = String::with_capacity(64 + query.limit * 320);
        body.push_str(r#"{"sessions":["#);
        let mut taken = 0usize;
        let mut first_expiry = Millis::MAX;
        let mut last_key: Option<&IndexKey> = None;
        let mut more = false;
        for (key, listed) in index.by_order.range((start, std::ops::Bound::Unbounded)) {
            if !matches(listed) {
                continue;
            }
            if taken == query.limit {
                more = true;
                break;
            }
            if taken > 0 {
                body.push(',');
            }
            body.push_str(&listed.json);
            first_expiry = first_expiry.min(listed.expires_at);
            taken += 1;
            last_key = Some(key);
        }
        body.push_str(r#"],"nextCursor":"#);
        match (more, last_key) {
            (true, Some(key)) => {
                body.push('"');
                body.push_str(&Cursor::encode(key));
                body.push('"');
            }
            _ => body.push_str("null"),
        }
        body.push('}');
        (body, first_expiry)
    }
}
