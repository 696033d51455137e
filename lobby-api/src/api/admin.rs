//! Bodies of the operator's admin API (`/admin/...`): every session,
//! hidden and ended sessions, blocks of addresses and prefixes, and the
//! audit log of what moderators did. Every call
//! takes an admin token as a bearer token; see `docs/api.md`, "Admin API".

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// `POST /admin/blocks`: refuse an address or prefix's creates, updates
/// and answers for a while.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlockRequest {
    /// An IPv4 or IPv6 address, or a CIDR prefix (`203.0.113.0/24`,
    /// `2001:db8:1200::/40`); host bits are cleared.
    #[cfg_attr(
        feature = "openapi",
        schema(example = "203.0.113.0/24", max_length = 64)
    )]
    pub prefix: String,
    /// How long the block lasts, in seconds (at most a year).
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 31_536_000, example = 86_400)
    )]
    pub duration_secs: u64,
    /// Why, for the audit log and the other moderators (not shown to the
    /// blocked client).
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 500, example = "junk sessions")
    )]
    pub reason: String,
    /// Also end every live session created from inside the prefix (each
    /// logged as an `end`).
    #[serde(default)]
    pub end_sessions: bool,
}

/// `POST /admin/blocks`'s answer: the block, and the sessions it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlockPlaced {
    /// The block.
    #[serde(flatten)]
    pub block: BlockView,
    /// Codes of the sessions ended with it (`endSessions`).
    #[serde(default)]
    pub ended: Vec<String>,
}

/// A block as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BlockView {
    /// The block's id (for `DELETE /admin/blocks/{id}`).
    pub id: i64,
    /// The prefix it covers, in CIDR form.
    pub prefix: String,
    /// Why it was placed.
    pub reason: String,
    /// The name of the admin token that placed it.
    pub created_by: String,
    /// When it was placed.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: OffsetDateTime,
    /// When it lapses.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub until: OffsetDateTime,
}

/// `GET /admin/blocks`: every block in force, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BlockList {
    /// The blocks.
    pub blocks: Vec<BlockView>,
}

/// One thing a moderator did, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Its place in the log (ascending with time).
    pub id: i64,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: OffsetDateTime,
    /// The name of the admin token used.
    pub actor: String,
    /// What was done (`block`, `unblock`, `hide`, `unhide`, `end`).
    pub action: String,
    /// What it was done to: a prefix, a block's id, a session's code.
    pub target: String,
    /// The reason the moderator gave.
    pub reason: String,
}

/// `GET /admin/audit`: a page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    /// The entries.
    pub entries: Vec<AuditEntry>,
    /// Pass as `before` for the next (older) page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<i64>,
}

/// A session as the admin API shows it: what the lobby shows, and what only
/// moderators see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdminSessionView {
    /// The lobby's view of it (listed or not).
    #[serde(flatten)]
    pub entry: super::LobbyEntry,
    /// Whether its host asked for it to be listed.
    pub public: bool,
    /// Whether a moderator hid it from the lobby.
    pub hidden: bool,
    /// The offer rounds its host has published.
    pub round: u32,
    /// Whether the latest round is open (an offer waiting for an answer).
    pub round_open: bool,
    /// The latest round answered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_round: Option<u32>,
    /// The client key of the address that created it (an IPv4 address, or
    /// an IPv6 network).
    pub creator: String,
    /// Players' reports of it.
    pub reports: u32,
    /// Its latest reports, newest first (one session's view only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_reports: Vec<ReportView>,
}

/// `GET /admin/sessions`: a page of every live session, public or not,
/// newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdminSessionPage {
    /// The page.
    pub sessions: Vec<AdminSessionView>,
    /// How many sessions match the filters.
    pub total: u64,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `POST /admin/sessions/{code}/hide`: unlist a session from the lobby
/// and its feed (it stays joinable by code), or list it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HideRequest {
    /// `true` hides, `false` lists it again (if its host wants it listed).
    pub hidden: bool,
    /// Why, for the audit log.
    #[cfg_attr(feature = "openapi", schema(max_length = 500))]
    #[serde(default)]
    pub reason: String,
}

/// `POST /admin/sessions/{code}/end`: end a session now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EndRequest {
    /// Why, for the audit log (not shown to the host).
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 500, example = "offensive name")
    )]
    pub reason: String,
}

/// Why a player reports a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReportReason {
    /// Its name, host name or metadata is offensive.
    OffensiveName,
    /// Junk or advertising.
    Spam,
    /// Someone in it cheats.
    Cheating,
    /// Someone in it harasses players.
    Harassment,
    /// Something else (say what in `text`).
    Other,
}

impl ReportReason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportReason::OffensiveName => "offensive_name",
            ReportReason::Spam => "spam",
            ReportReason::Cheating => "cheating",
            ReportReason::Harassment => "harassment",
            ReportReason::Other => "other",
        }
    }
}

/// `POST /session/{code}/report`: a player tells the lobby's moderators
/// about a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportRequest {
    /// Why.
    pub reason: ReportReason,
    /// What happened, in the player's words.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 500))]
    pub text: Option<String>,
}

/// A player's report as moderators see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportView {
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: OffsetDateTime,
    /// Why (a [`ReportReason`]'s wire name).
    pub reason: String,
    /// What the player wrote ("" for nothing).
    pub text: String,
}

/// `POST /admin/words/reload`: the word list as read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WordsReloaded {
    /// Entries the list now holds.
    pub entries: u64,
}
