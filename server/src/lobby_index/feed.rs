//! The change feed: one change to the listing as `GET /lobby/events`
//! subscribers receive it, and the event each subscriber's filter sees.

use std::sync::Arc;

use lobby_api::code::SessionCode;

use super::entry::Listed;
use super::search::LobbyFilter;

/// One change to the listing, as published to `GET /lobby/events`
/// subscribers: the session as it was listed before (if it was) and after
/// (if it still is). Each subscriber turns it into the event its own filter
/// sees, or into nothing.
pub struct LobbyChange {
    pub(super) before: Option<Arc<Listed>>,
    pub(super) after: Option<Arc<Listed>>,
    pub(super) code: SessionCode,
}

impl LobbyChange {
    /// This change followed by `later` (of the same session), as one: from
    /// the state before this one to the state after `later`.
    pub(super) fn then(self, later: LobbyChange) -> LobbyChange {
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
        let was = self.before.as_deref().is_some_and(|l| l.passes(filter));
        let is = self.after.as_deref().filter(|l| l.passes(filter));
        match (was, is) {
            (false, None) => None,
            (false, Some(l)) => Some(("added", l.json.clone())),
            (true, Some(l)) => Some(("updated", l.json.clone())),
            (true, None) => Some(("removed", format!(r#"{{"code":"{}"}}"#, self.code.as_str()))),
        }
    }
}
