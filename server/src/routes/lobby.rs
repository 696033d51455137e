//! `/lobby`: the public listing, paged, and its live change feed (SSE).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use lobby_api::api::{ErrorBody, HostKind, LobbyPage};
use lobby_api::name::LABEL_MAX_CHARS;
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::error::AppError;
use crate::extract::{ApiQuery, ClientIp};
use crate::lobby_index::{
    Cursor, LobbyChange, LobbyFilter, PageQuery, SEARCH_MAX_CHARS, SEARCH_MAX_WORDS,
};
use crate::rate_limit::Budget;
use crate::state::AppState;

/// Default and largest page sizes of `GET /lobby`.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 100;

/// Query of `GET /lobby`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct LobbyQuery {
    /// Search: words (case-insensitive) that must each begin a word of the
    /// session name or the host name; sanitized like names; at most 64
    /// characters and 8 distinct words (runs of letters and digits).
    #[param(max_length = 64)]
    q: Option<String>,
    /// Only sessions of this build.
    #[param(max_length = 64)]
    build: Option<String>,
    /// `true`: only sessions with a free slot.
    has_space: Option<bool>,
    /// Only sessions hosted by `player` or `daemon`.
    #[param(value_type = Option<lobby_api::api::HostKind>)]
    host_kind: Option<String>,
    /// Page size, 1 to 100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<usize>,
    /// `nextCursor` of the previous page (of the same search and filters);
    /// a page may be short, even empty, and still have one. Empty: the
    /// first page. Any value of this form is a position in the listing.
    #[param(
        pattern = r"^([0-9]{13}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8})?$",
        max_length = 22
    )]
    cursor: Option<String>,
}

/// Query of `GET /lobby/events`: the same search and filters as `GET /lobby`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct LobbyEventsQuery {
    /// Search, as for `GET /lobby` (at most 64 characters and 8 words).
    #[param(max_length = 64)]
    q: Option<String>,
    /// Only sessions of this build.
    #[param(max_length = 64)]
    build: Option<String>,
    /// `true`: only sessions with a free slot.
    has_space: Option<bool>,
    /// Only sessions hosted by `player` or `daemon`.
    #[param(value_type = Option<lobby_api::api::HostKind>)]
    host_kind: Option<String>,
}

/// The search and filters shared by the listing and its feed.
fn parse_filter(
    q: Option<String>,
    build: Option<String>,
    has_space: Option<bool>,
    host_kind: Option<String>,
) -> Result<LobbyFilter, AppError> {
    let host_kind = match host_kind.as_deref() {
        None => None,
        Some(k) => Some(HostKind::parse(k).ok_or_else(|| {
            AppError::invalid_field("hostKind", "must be \"player\" or \"daemon\"")
        })?),
    };
    if build
        .as_deref()
        .is_some_and(|b| b.chars().count() > LABEL_MAX_CHARS)
    {
        // No session's build is longer: such a filter matches nothing.
        return Err(AppError::invalid_field(
            "build",
            format!("at most {LABEL_MAX_CHARS} characters"),
        ));
    }
    let filter = LobbyFilter::new(build, has_space.unwrap_or(false), host_kind);
    match q {
        None => Ok(filter),
        Some(q) if q.chars().count() > SEARCH_MAX_CHARS => Err(AppError::invalid_field(
            "q",
            format!("at most {SEARCH_MAX_CHARS} characters"),
        )),
        Some(q) => {
            let filter = filter.with_search(&q);
            if filter.search_words() > SEARCH_MAX_WORDS {
                return Err(AppError::invalid_field(
                    "q",
                    format!(
                        "at most {SEARCH_MAX_WORDS} words ({} given)",
                        filter.search_words()
                    ),
                ));
            }
            Ok(filter)
        }
    }
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
        let after = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(c) => Some(Cursor::parse(c).ok_or_else(|| {
                AppError::invalid_field(
                    "cursor",
                    "not a position of the form the server hands out; \
                     pass a page's nextCursor as it is",
                )
            })?),
        };
        Ok(PageQuery {
            filter: parse_filter(self.q, self.build, self.has_space, self.host_kind)?,
            limit,
            after,
        })
    }
}

/// Public, unexpired sessions, newest first, searched, filtered and paged,
/// with how many match in all (`total`).
///
/// A page examines at most 100 candidates per session it may hold; a
/// search or filter that rarely matches may therefore come back short, or
/// empty, with a `nextCursor` to go on from. Only a `null` `nextCursor`
/// means the end.
///
/// A page served from the server's page cache is free; each page rendered
/// afresh is charged to the client address's budget of lobby pages.
#[utoipa::path(
    get, path = "/lobby", tag = "lobby",
    params(LobbyQuery),
    responses(
        (status = 200, description = "One page of sessions", body = LobbyPage),
        (status = 400, description = "Bad search, filter, limit or cursor", body = ErrorBody),
        (status = 429, description = "Too many lobby pages rendered for this address (pages served from the cache are not counted)", body = ErrorBody),
    )
)]
pub async fn get_lobby(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiQuery(query): ApiQuery<LobbyQuery>,
) -> Result<Response, AppError> {
    let query = query.parse()?;
    let now = state.now();
    let body = match state.lobby.cached_page(&query, now) {
        Some(body) => body,
        None => {
            // Charged before the walk, so a refused page costs nothing.
            state.limits.check(Budget::LobbyPages, ip)?;
            state.lobby.rendered_page(&query, now)
        }
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// Live lobby changes as Server-Sent Events.
///
/// Event names are `added` and `updated` (data: a lobby entry) and
/// `removed` (data: `{"code": ...}`); `resync` (empty data) means events were
/// missed and the client should reload `GET /lobby`. Subscribe first, then
/// load the listing, and apply events by code, so nothing falls between.
///
/// With a search or filters, the stream is that listing's: `added` when a
/// session starts matching, `updated` while it keeps matching, `removed`
/// when it stops; so `added` and `removed` move the listing's `total` by
/// exactly one, and nothing is sent about sessions that match neither
/// before nor after.
#[utoipa::path(
    get, path = "/lobby/events", tag = "lobby",
    params(LobbyEventsQuery),
    responses(
        (status = 200, description = "An event stream (text/event-stream) of the events its schema describes, each on its own; it ends after the server's event-stream lifetime (`--event-stream-max-secs`, default 15 min), and the client reconnects", content_type = "text/event-stream", body = lobby_api::api::LobbyEvent),
        (status = 400, description = "Bad search or filter", body = ErrorBody),
        (status = 429, description = "Too many event streams open from this address", body = ErrorBody),
    )
)]
pub async fn lobby_events(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiQuery(query): ApiQuery<LobbyEventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, AppError> {
    let filter = parse_filter(query.q, query.build, query.has_space, query.host_kind)?;
    let slot = state
        .event_streams
        .try_take(
            state.config.client_keys().key(ip),
            state.config.event_streams_per_address(),
        )
        .ok_or_else(|| AppError::rate_limited("open lobby event streams from this address", 5))?;
    let events = BroadcastStream::new(state.lobby.subscribe()).filter_map(move |item| {
        // The stream holds its place under the cap until it is dropped.
        let _held = &slot;
        std::future::ready(to_sse(item, &filter).map(Ok))
    });
    // The stream ends at shutdown or after its lifetime (the client
    // reconnects and resyncs), so no connection is held for ever.
    let shutdown = state.shutdown.clone().cancelled_owned();
    let lifetime = tokio::time::sleep(state.config.event_stream_max_lifetime());
    let ended = async move {
        tokio::select! {
            () = shutdown => {}
            () = lifetime => {}
        }
    };
    Ok(Sse::new(events.take_until(ended)).keep_alive(KeepAlive::default()))
}

/// The event one subscriber gets for a change, if any.
fn to_sse(
    item: Result<Arc<LobbyChange>, BroadcastStreamRecvError>,
    filter: &LobbyFilter,
) -> Option<Event> {
    match item {
        Ok(change) => {
            let (name, data) = change.event_for(filter)?;
            Some(Event::default().event(name).data(data))
        }
        Err(BroadcastStreamRecvError::Lagged(_)) => Some(Event::default().event("resync").data("")),
    }
}
