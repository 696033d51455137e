//! The moderators' list of sessions: every live session, public or not,
//! hidden or not, filtered and paged newest first.
//!
//! Moderators ask rarely and the live sessions are capped
//! (`--max-sessions`), so a page is cut from the whole set read afresh,
//! not from an index of its own.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;
use protocol::api::HostKind;
use protocol::api::admin::{AdminSessionPage, AdminSessionView};
use protocol::code::SessionCode;

use crate::clock::Millis;
use crate::lobby_index::lobby_entry;
use crate::store::SessionRecord;

/// The most sessions one page holds.
pub const MAX_PAGE: usize = 200;

/// What a moderator looks for.
#[derive(Clone, Debug, Default)]
pub struct SessionFilter {
    /// Words each of which the name or host name holds (any case).
    pub words: Vec<String>,
    /// Only sessions of this host kind.
    pub host_kind: Option<HostKind>,
    /// Only hidden (or only unhidden) sessions.
    pub hidden: Option<bool>,
    /// Only sessions created from inside this prefix.
    pub creator: Option<IpNet>,
}

impl SessionFilter {
    fn matches(&self, record: &SessionRecord, hidden: bool) -> bool {
        let summary = &record.fields.summary;
        let text = format!("{} {}", summary.name, summary.host_name).to_lowercase();
        self.words.iter().all(|w| text.contains(w.as_str()))
            && self.host_kind.is_none_or(|k| k == summary.host_kind)
            && self.hidden.is_none_or(|h| h == hidden)
            && self.creator.is_none_or(|prefix| {
                creator_net(&record.creator).is_some_and(|n| prefix.contains(&n))
            })
    }
}

/// The network a session's creator label names (an address, or an IPv6
/// network such as `2001:db8:1:200::/56`).
fn creator_net(label: &str) -> Option<IpNet> {
    label
        .parse::<IpNet>()
        .ok()
        .or_else(|| label.parse::<IpAddr>().ok().map(IpNet::from))
}

/// Where a page starts: after this session in the order (newest first,
/// then by code).
fn position(record: &SessionRecord) -> (std::cmp::Reverse<Millis>, String) {
    (
        std::cmp::Reverse(record.created_at),
        record.code.as_str().to_owned(),
    )
}

/// A page's cursor: `CREATED_AT_MS-CODE` of its last session.
fn cursor_of(record: &SessionRecord) -> String {
    format!("{}-{}", record.created_at, record.code)
}

/// Reads a cursor; `None` when it is not one.
pub fn parse_cursor(text: &str) -> Option<(std::cmp::Reverse<Millis>, String)> {
    let (at, code) = text.split_once('-')?;
    let at: Millis = at.parse().ok()?;
    let code = SessionCode::parse(code).ok()?;
    Some((std::cmp::Reverse(at), code.as_str().to_owned()))
}

/// The page of `records` that `filter` keeps, after `after` (a parsed
/// cursor), at most `limit` long.
pub fn page(
    records: Vec<SessionRecord>,
    hidden: &HashSet<SessionCode>,
    filter: &SessionFilter,
    after: Option<&(std::cmp::Reverse<Millis>, String)>,
    limit: usize,
) -> AdminSessionPage {
    let mut kept: Vec<(SessionRecord, bool)> = records
        .into_iter()
        .map(|r| {
            let is_hidden = hidden.contains(&r.code);
            (r, is_hidden)
        })
        .filter(|(r, h)| filter.matches(r, *h))
        .collect();
    kept.sort_by_key(|(r, _)| position(r));
    let total = kept.len() as u64;
    let start = after.map_or(0, |a| kept.partition_point(|(r, _)| position(r) <= *a));
    let rest = kept.len().saturating_sub(start);
    let shown: Vec<&(SessionRecord, bool)> = kept.iter().skip(start).take(limit).collect();
    let next_cursor = shown
        .last()
        .filter(|_| rest > limit)
        .map(|(r, _)| cursor_of(r));
    AdminSessionPage {
        sessions: shown.into_iter().map(|(r, h)| view(r, *h)).collect(),
        total,
        next_cursor,
    }
}

/// A session as moderators see it.
pub fn view(record: &SessionRecord, hidden: bool) -> AdminSessionView {
    AdminSessionView {
        entry: lobby_entry(record),
        public: record.fields.public,
        hidden,
        round: record.round,
        round_open: record.open_round().is_some(),
        answered_round: record.answered.as_ref().map(|a| a.round),
        creator: record.creator.clone(),
    }
}
