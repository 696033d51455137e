//! What the lobby shows: its entries, pages and live changes
//! (`GET /lobby`, `GET /lobby/events`).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::HostKind;
use crate::code::SessionCode;
use crate::lobby_order::LobbyPosition;

/// What the lobby shows of a session, as its host sets it: the one
/// definition of the lobby's fields, which the server stores and every
/// lobby entry carries (flattened into it on the wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session's name.
    pub name: String,
    /// The host player's display name.
    pub host_name: String,
    /// Players in the session now, host included.
    pub players: u32,
    /// Most players the session admits.
    pub max_players: u32,
    /// The host's build ref.
    pub build: String,
    /// The session's difficulty label, if the host gave one.
    pub difficulty: Option<String>,
    /// The campaign played, if the host gave one.
    pub campaign: Option<String>,
    /// Who runs the host.
    pub host_kind: HostKind,
    /// The session has started and admits players into its running game
    /// (late join).
    #[serde(default)]
    pub in_progress: bool,
    /// Seats held by bots the host runs (counted in `players`).
    #[serde(default)]
    pub bots: u32,
    /// The player count the session starts at by itself (host included);
    /// absent when a person starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<u32>,
}

/// One entry of `GET /lobby`: what a lobby page shows of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LobbyEntry {
    /// The session's code.
    pub code: SessionCode,
    /// The lobby's fields.
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// When the session was created.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: OffsetDateTime,
    /// When the session expires unless the host calls again.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: OffsetDateTime,
    /// The session's place in the lobby order, as text that orders byte-wise
    /// as the lobby does (a page's `nextCursor` is one too). Always present
    /// from servers of this build; absent from older ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, pattern = r"^[0-9]{13}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$"))]
    pub position: Option<LobbyPosition>,
    /// The host's small free-form metadata object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

/// `GET /lobby` response: one page of public, unexpired sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LobbyPage {
    /// The page, newest session first.
    pub sessions: Vec<LobbyEntry>,
    /// Pass as `cursor=` for the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// How many sessions match the search and filters (every page, not
    /// just this one). Exact unless `total_capped`.
    #[serde(default)]
    pub total: u64,
    /// `true` when counting stopped early (a multi-word or filtered search
    /// over a very common word): `total` is then a lower bound.
    #[serde(default)]
    pub total_capped: bool,
}

/// A change to the public lobby, as sent on `GET /lobby/events`.
///
/// On the SSE stream the variant is the event name (`added`, `updated`,
/// `removed`) and the data is the entry, or `{"code": ...}` for `removed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "lowercase")]
pub enum LobbyEvent {
    /// A session became listed (created public, or made public).
    Added(LobbyEntry),
    /// A listed session changed (players, name, expiry, ...).
    Updated(LobbyEntry),
    /// A session left the listing (deleted, expired, or made private).
    Removed(RemovedEntry),
}

impl LobbyEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            LobbyEvent::Added(_) => "added",
            LobbyEvent::Updated(_) => "updated",
            LobbyEvent::Removed(_) => "removed",
        }
    }

    /// The code of the session the event is about.
    pub fn code(&self) -> &SessionCode {
        match self {
            LobbyEvent::Added(e) | LobbyEvent::Updated(e) => &e.code,
            LobbyEvent::Removed(r) => &r.code,
        }
    }
}

/// One event of `GET /lobby/events`, as an SSE parser reads it: the event
/// name and its data, a JSON document of the component that name carries
/// (`resync` has empty data).
///
/// OpenAPI 3.1 has no place for the schema of one event of a stream (3.2
/// adds `itemSchema`); as tools read a 3.1 event stream's `schema` as that
/// of each event (`{event, data, id?, retry?}`), this is what the stream's
/// `schema` holds, with `contentMediaType` and `contentSchema` (JSON Schema
/// 2020-12) for the data.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for LobbyEvent {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::extensions::Extensions;
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};

        let event = |name: &str, component: Option<&str>| {
            let data = ObjectBuilder::new().schema_type(Type::String);
            let data = match component {
                Some(component) => {
                    let mut data = data.content_media_type("application/json").build();
                    // utoipa 5 has no `contentSchema`; extensions are written
                    // flat into the schema object, which is where it belongs.
                    let mut keywords = Extensions::default();
                    keywords.insert(
                        "contentSchema".into(),
                        serde_json::json!({ "$ref": format!("#/components/schemas/{component}") }),
                    );
                    data.extensions = Some(keywords);
                    data
                }
                None => data.enum_values(Some([""])).build(),
            };
            ObjectBuilder::new()
                .title(Some(name))
                .property(
                    "event",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([name])),
                )
                .required("event")
                .property("data", data)
                .required("data")
                .build()
        };
        OneOfBuilder::new()
            .description(Some(
                "One event: `added` and `updated` carry a LobbyEntry, `removed` a \
                 RemovedEntry (JSON in `data`); `resync` (empty data) means events were \
                 missed: reload `GET /lobby`.",
            ))
            .item(event("added", Some("LobbyEntry")))
            .item(event("updated", Some("LobbyEntry")))
            .item(event("removed", Some("RemovedEntry")))
            .item(event("resync", None))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for LobbyEvent {}

/// Data of a `removed` lobby event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RemovedEntry {
    /// The session that left the listing.
    pub code: SessionCode,
}
