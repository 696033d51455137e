//! The moderators' list of sessions: every live session, public or not,
//! hidden or not, filtered and paged newest first or most reported first.
//!
//! Moderators ask rarely and the live sessions are capped
//! (`--max-sessions`), so a page is cut from the whole set read afresh,
//! not from an index of its own.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use ipnet::IpNet;
use lobby_api::api::HostKind;
use lobby_api::api::admin::{AdminSessionPage, AdminSessionView, ReportView};
use lobby_api::code::SessionCode;

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
    /// Only reported (or only unreported) sessions.
    pub reported: Option<bool>,
    /// Most reported first (then newest), instead of newest first.
    pub by_reports: bool,
}

impl SessionFilter {
    fn matches(&self, record: &SessionRecord, hidden: bool, reports: u32) -> bool {
        let summary = &record.fields.summary;
        let text = format!("{} {}", summary.name, summary.host_name).to_lowercase();
        self.words.iter().all(|w| text.contains(w.as_str()))
            && self.host_kind.is_none_or(|k| k == summary.host_kind)
            && self.hidden.is_none_or(|h| h == hidden)
            && self.reported.is_none_or(|r| r == (reports > 0))
            && self
                .creator
                .is_none_or(|prefix| created_inside(record, &prefix))
    }
}

/// Whether `record` was created from inside `prefix`.
pub fn created_inside(record: &SessionRecord, prefix: &IpNet) -> bool {
    creator_net(&record.creator).is_some_and(|n| prefix.contains(&n))
}

/// The network a session's creator label names (an address, or an IPv6
/// network such as `2001:db8:1:200::/56`).
fn creator_net(label: &str) -> Option<IpNet> {
    label
        .parse::<IpNet>()
        .ok()
        .or_else(|| label.parse::<IpAddr>().ok().map(IpNet::from))
}

/// A session's place in the list: most reported first when sorting by
/// reports (else every count is taken as 0), then newest, then by code.
type Position = (Reverse<u32>, Reverse<Millis>, String);

fn position(record: &SessionRecord, reports: u32, filter: &SessionFilter) -> Position {
    (
        Reverse(if filter.by_reports { reports } else { 0 }),
        Reverse(record.created_at),
        record.code.as_str().to_owned(),
    )
}

/// A page's cursor: `[REPORTS-]CREATED_AT_MS-CODE` of its last session.
fn cursor_of(at: &Position, filter: &SessionFilter) -> String {
    let (Reverse(reports), Reverse(created), code) = at;
    if filter.by_reports {
        format!("{reports}-{created}-{code}")
    } else {
        format!("{created}-{code}")
    }
}

/// Reads a cursor of a list in `filter`'s order; `None` when it is not one.
pub fn parse_cursor(text: &str, filter: &SessionFilter) -> Option<Position> {
    let (reports, rest) = if filter.by_reports {
        let (reports, rest) = text.split_once('-')?;
        (reports.parse().ok()?, rest)
    } else {
        (0, text)
    };
    let (at, code) = rest.split_once('-')?;
    let at: Millis = at.parse().ok()?;
    let code = SessionCode::parse(code).ok()?;
    Some((Reverse(reports), Reverse(at), code.as_str().to_owned()))
}

/// The page of `records` that `filter` keeps, after `after` (a parsed
/// cursor), at most `limit` long; `reports` counts each session's reports
/// by code.
pub fn page(
    records: Vec<SessionRecord>,
    hidden: &HashSet<SessionCode>,
    reports: &HashMap<String, u32>,
    filter: &SessionFilter,
    after: Option<&Position>,
    limit: usize,
) -> AdminSessionPage {
    let mut kept: Vec<(Position, SessionRecord, bool, u32)> = records
        .into_iter()
        .filter_map(|r| {
            let is_hidden = hidden.contains(&r.code);
            let count = reports.get(r.code.as_str()).copied().unwrap_or(0);
            filter
                .matches(&r, is_hidden, count)
                .then(|| (position(&r, count, filter), r, is_hidden, count))
        })
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    let total = kept.len() as u64;
    let start = after.map_or(0, |a| kept.partition_point(|k| k.0 <= *a));
    let rest = kept.len().saturating_sub(start);
    let shown = &kept[start.min(kept.len())..(start + limit).min(kept.len())];
    let next_cursor = shown
        .last()
        .filter(|_| rest > limit)
        .map(|k| cursor_of(&k.0, filter));
    AdminSessionPage {
        sessions: shown
            .iter()
            .map(|(_, r, h, n)| view(r, *h, *n, Vec::new()))
            .collect(),
        total,
        next_cursor,
    }
}

/// A session as moderators see it, with its count of reports and (for
/// one session's view) its latest ones.
pub fn view(
    record: &SessionRecord,
    hidden: bool,
    reports: u32,
    recent_reports: Vec<ReportView>,
) -> AdminSessionView {
    AdminSessionView {
        entry: lobby_entry(record),
        public: record.fields.public,
        hidden,
        round: record.round,
        round_open: record.open_round().is_some(),
        answered_round: record.answered.as_ref().map(|a| a.round),
        creator: record.creator.clone(),
        reports,
        recent_reports,
    }
}
