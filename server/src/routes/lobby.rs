//! `/lobby`: the public listing, paged, and its live change feed (SSE).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use protocol::api::{ErrorBody, HostKind, LobbyEvent, LobbyPage};
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::error::AppError;
use crate::extract::ApiQuery;
use crate::lobby_index::{Cursor, PageQuery};
use crate::state::AppState;

/// Default and largest page sizes of `GET /lobby`.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 100;

/// Query of `GET /lobby`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct LobbyQuery {
    /// Only sessions of this build.
    build: Option<String>,
    /// `true`: only sessions with a free slot.
    has_space: Option<bool>,
    /// Only sessions hosted by `player` or `daemon`.
    host_kind: Option<String>,
    /// Page size, 1 to 100 (default 50).
    limit: Option<usize>,
    /// `nextCursor` of the previous page.
    cursor: Option<String>,
}

impl LobbyQuery {
    fn parse(self) -> Result<PageQuery, AppError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AppError::invalid_field(
                "limit",
                format!("must be between 1 and {MAX_LIMIT}"),
            ));
        }
        let host_kind = match self.host_kind.as_deref() {
            None => None,
            Some(k) => Some(HostKind::parse(k).ok_or_else(|| {
                AppError::invalid_field("hostKind", "must be \"player\" or \"daemon\"")
            })?),
        };
        let after = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(c) => Some(Cursor::parse(c).ok_or_else(|| {
                AppError::invalid_field("cursor", "not a cursor this server handed out")
            })?),
        };
        Ok(PageQuery {
            build: self.build,
            has_space: self.has_space.unwrap_or(false),
            host_kind,
            limit,
            after,
        })
    }
}

/// Public, unexpired sessions, newest first, filtered and paged.
#[utoipa::path(
    get, path = "/lobby", tag = "lobby",
    params(LobbyQuery),
    responses(
        (status = 200, description = "One page of sessions", body = LobbyPage),
        (status = 400, description = "Bad filter, limit or cursor", body = ErrorBody),
    )
)]
pub async fn get_lobby(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<LobbyQuery>,
) -> Result<Response, AppError> {
    let query = query.parse()?;
    let body = state.lobby.page(&query, state.now());
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// Live lobby changes as Server-Sent Events.
///
/// Event names are `added` and `updated` (data: a lobby entry) and
/// `removed` (data: `{"code": ...}`); `resync` (no data) means events were
/// missed and the client should reload `GET /lobby`. Subscribe first, then
/// load the listing, and apply events by code, so nothing falls between.
#[utoipa::path(
    get, path = "/lobby/events", tag = "lobby",
    responses((status = 200, description = "An event stream (text/event-stream)", content_type = "text/event-stream", body = String))
)]
pub async fn lobby_events(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let events = BroadcastStream::new(state.lobby.subscribe()).map(|item| Ok(to_sse(item)));
    let shutdown = state.shutdown.clone().cancelled_owned();
    Sse::new(events.take_until(shutdown)).keep_alive(KeepAlive::default())
}

fn to_sse(item: Result<Arc<LobbyEvent>, BroadcastStreamRecvError>) -> Event {
    match item {
        Ok(event) => {
            let data = match event.as_ref() {
                LobbyEvent::Added(e) | LobbyEvent::Updated(e) => serde_json::to_string(e),
                LobbyEvent::Removed(r) => serde_json::to_string(r),
            };
            Event::default()
                .event(event.name())
                .data(data.unwrap_or_else(|_| "{}".into()))
        }
        Err(BroadcastStreamRecvError::Lagged(_)) => Event::default().event("resync").data(""),
    }
}
