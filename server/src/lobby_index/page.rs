//! The rendered-page cache: what a `GET /lobby` page asks for, and pages
//! served again for a moment while nothing they show has changed.

use std::collections::HashMap;

use bytes::Bytes;

use super::cursor::Cursor;
use super::search::LobbyFilter;
use crate::clock::Millis;

/// How long a rendered page may be served again.
pub const PAGE_CACHE_MS: Millis = 1000;

/// Most pages kept in the cache (it is cleared when full).
pub(super) const PAGE_CACHE_ENTRIES: usize = 4096;
/// Most bytes of page bodies kept in the cache by default
/// (`--page-cache-bytes`; it is cleared when a new page would pass it): the
/// cache's keys are client-chosen (cursors, filters), so its size must not
/// be.
pub const PAGE_CACHE_BYTES: usize = 16 * 1024 * 1024;

/// The cached pages and the bytes their bodies hold.
#[derive(Default)]
pub(super) struct PageCache {
    pub(super) pages: HashMap<PageQuery, CachedPage>,
    pub(super) bytes: usize,
}

pub(super) struct CachedPage {
    pub(super) body: Bytes,
    pub(super) generation: u64,
    pub(super) rendered_at: Millis,
    /// The earliest expiry among the page's entries.
    pub(super) first_expiry: Millis,
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
