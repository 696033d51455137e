//! The control API's routes (`/api/...`), its OpenAPI document
//! (`/openapi.json`) and the dashboard (`/`), on one axum router.
//!
//! With a token configured, every `/api` call needs it as `Authorization:
//! Bearer`; the dashboard's page and script are public (they hold
//! nothing), and the page asks for the token. Bodies are small and
//! bounded, event streams are counted, and every error is the lobby's
//! JSON error shape.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use protocol::api::{ErrorBody, ErrorCode};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::StreamExt;
use tokio_stream::wrappers::WatchStream;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::hub::{ControlHub, OpenRefused};
use super::token::ControlToken;
use super::view::{DaemonInfo, OpenRequest, Opened, SessionList, SessionView};

/// The largest request body taken, bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// Event streams open at once.
pub const MAX_EVENT_STREAMS: usize = 16;

/// The fastest an event stream repeats the session list.
pub const EVENTS_EVERY: Duration = Duration::from_millis(250);

/// What every route shares.
#[derive(Clone)]
pub struct ControlState {
    /// The sessions.
    pub hub: ControlHub,
    /// The token `/api` calls need, if any.
    pub token: Option<Arc<ControlToken>>,
    /// What `/api/daemon` says.
    pub info: Arc<DaemonInfo>,
    /// Places for event streams.
    pub streams: Arc<Semaphore>,
}

/// An error as the lobby's API spells it: status, stable code, sentence.
#[derive(Debug)]
pub struct ControlError(ErrorCode, String);

impl ControlError {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self(code, message.into())
    }

    fn no_such_session(code: &str) -> Self {
        Self::new(
            ErrorCode::NoSuchSession,
            format!("this daemon runs no session {code} and keeps no report of it"),
        )
    }
}

impl IntoResponse for ControlError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ErrorBody {
            error: self.0,
            message: self.1,
        };
        (status, Json(body)).into_response()
    }
}

/// The caller of an `/api` route, checked against the token when there is
/// one.
pub struct Tester;

impl FromRequestParts<ControlState> for Tester {
    type Rejection = ControlError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ControlState,
    ) -> Result<Self, Self::Rejection> {
        let Some(token) = &state.token else {
            return Ok(Tester);
        };
        let presented = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match presented {
            Some(t) if token.matches(t) => Ok(Tester),
            _ => Err(ControlError::new(
                ErrorCode::WrongToken,
                "missing or wrong control token (Authorization: Bearer)",
            )),
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "campfire host-daemon control API",
        description = "Testers list a daemon's sessions live, open one now, end one, and fetch a \
                       finished one's report and replay files. See docs/api.md.",
        version = "1"
    ),
    modifiers(&TokenScheme),
    components(schemas(ErrorBody, ErrorCode))
)]
struct ControlDoc;

struct TokenScheme;

impl utoipa::Modify for TokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "control_token",
                SecurityScheme::Http(
                    HttpBuilder::new()
                        .scheme(HttpAuthScheme::Bearer)
                        .description(Some(
                            "The daemon's --control-token-file (needed when it listens beyond loopback)",
                        ))
                        .build(),
                ),
            );
    }
}

/// The refusals every `/api` route may answer.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code, reason = "describes responses; ControlError builds them")]
enum Refusals {
    /// Missing or wrong control token
    #[response(status = 403)]
    WrongToken(ErrorBody),
}

/// The `/api` routes and their document.
fn api() -> OpenApiRouter<ControlState> {
    OpenApiRouter::with_openapi(ControlDoc::openapi())
        .routes(routes!(daemon_info))
        .routes(routes!(list_sessions, open_session))
        .routes(routes!(get_session, end_session))
        .routes(routes!(session_report))
        .routes(routes!(replay_file))
        .routes(routes!(events))
}

/// The router: the API, its document, the dashboard.
pub fn router(state: ControlState) -> axum::Router {
    let (api, doc) = api().split_for_parts();
    let doc = Arc::new(doc);
    api.route(
        "/openapi.json",
        axum::routing::get(move || {
            let doc = doc.clone();
            async move { Json(doc.as_ref().clone()) }
        }),
    )
    .route("/", axum::routing::get(dashboard_page))
    .route("/dashboard.js", axum::routing::get(dashboard_script))
    .fallback(|| async {
        ControlError::new(ErrorCode::NotFound, "no such route; see /openapi.json")
    })
    .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
    .with_state(state)
}

/// The OpenAPI document, as `/openapi.json` serves it.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().split_for_parts().1
}

async fn dashboard_page() -> Response {
    let mut res = Html(include_str!("dashboard.html")).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

async fn dashboard_script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        include_str!("dashboard.js"),
    )
        .into_response()
}

/// What this daemon is.
#[utoipa::path(
    get, path = "/api/daemon", tag = "control",
    security((), ("control_token" = [])),
    responses(
        (status = 200, description = "The daemon", body = DaemonInfo),
        Refusals,
    )
)]
async fn daemon_info(State(state): State<ControlState>, _t: Tester) -> Json<DaemonInfo> {
    Json(state.info.as_ref().clone())
}

/// Every running session, then the finished ones, newest first.
#[utoipa::path(
    get, path = "/api/sessions", tag = "control",
    security((), ("control_token" = [])),
    responses(
        (status = 200, description = "The sessions", body = SessionList),
        Refusals,
    )
)]
async fn list_sessions(State(state): State<ControlState>, _t: Tester) -> Json<SessionList> {
    Json(state.hub.list())
}

/// Opens a session now, with what the body sets over the daemon's flags.
/// Answers once the lobby lists it (or it is joinable by code).
#[utoipa::path(
    post, path = "/api/sessions", tag = "control",
    security((), ("control_token" = [])),
    request_body = OpenRequest,
    responses(
        (status = 201, description = "Opened", body = Opened),
        (status = 400, description = "A bad body, or what this daemon cannot do", body = ErrorBody),
        Refusals,
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 429, description = "As many tester sessions as allowed are running", body = ErrorBody),
        (status = 503, description = "The lobby did not take it, or the daemon is stopping", body = ErrorBody),
    )
)]
async fn open_session(
    State(state): State<ControlState>,
    _t: Tester,
    body: Result<Json<OpenRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Opened>), ControlError> {
    let Json(request) = body.map_err(|e| {
        let code = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ErrorCode::PayloadTooLarge
        } else {
            ErrorCode::InvalidJson
        };
        ControlError::new(code, e.body_text())
    })?;
    match state.hub.open(request).await {
        Ok(code) => Ok((StatusCode::CREATED, Json(Opened { code }))),
        Err(why @ OpenRefused::Invalid(_)) => {
            Err(ControlError::new(ErrorCode::InvalidField, why.to_string()))
        }
        Err(why @ OpenRefused::TooMany(_)) => {
            Err(ControlError::new(ErrorCode::RateLimited, why.to_string()))
        }
        Err(why) => Err(ControlError::new(ErrorCode::Unavailable, why.to_string())),
    }
}

/// One session, running or finished.
#[utoipa::path(
    get, path = "/api/sessions/{code}", tag = "control",
    security((), ("control_token" = [])),
    params(("code" = String, Path, description = "The session's lobby code")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        Refusals,
        (status = 404, description = "No such session", body = ErrorBody),
    )
)]
async fn get_session(
    State(state): State<ControlState>,
    _t: Tester,
    Path(code): Path<String>,
) -> Result<Json<SessionView>, ControlError> {
    state
        .hub
        .get(&code)
        .map(Json)
        .ok_or_else(|| ControlError::no_such_session(&code))
}

/// Ends a running session now (its players hear that the host shut it
/// down; its report follows).
#[utoipa::path(
    delete, path = "/api/sessions/{code}", tag = "control",
    security((), ("control_token" = [])),
    params(("code" = String, Path, description = "The session's lobby code")),
    responses(
        (status = 202, description = "Ending"),
        Refusals,
        (status = 404, description = "No such running session", body = ErrorBody),
    )
)]
async fn end_session(
    State(state): State<ControlState>,
    _t: Tester,
    Path(code): Path<String>,
) -> Result<StatusCode, ControlError> {
    if state.hub.end(&code) {
        Ok(StatusCode::ACCEPTED)
    } else {
        Err(ControlError::no_such_session(&code))
    }
}

/// A finished session's report: the `session-report` (host) or
/// `relay-report` (relay) line's fields.
#[utoipa::path(
    get, path = "/api/sessions/{code}/report", tag = "control",
    security((), ("control_token" = [])),
    params(("code" = String, Path, description = "The session's lobby code")),
    responses(
        (status = 200, description = "The report", body = Object),
        Refusals,
        (status = 404, description = "No such finished session", body = ErrorBody),
    )
)]
async fn session_report(
    State(state): State<ControlState>,
    _t: Tester,
    Path(code): Path<String>,
) -> Result<Json<serde_json::Value>, ControlError> {
    state.hub.report(&code).map(Json).ok_or_else(|| {
        ControlError::new(
            ErrorCode::NoSuchSession,
            format!("no finished session {code} (a running one has no report yet)"),
        )
    })
}

/// The replay file of one level of a finished session (`host-daemon
/// replay FILE` re-simulates it; /play opens it).
#[utoipa::path(
    get, path = "/api/sessions/{code}/replays/{level}", tag = "control",
    security((), ("control_token" = [])),
    params(
        ("code" = String, Path, description = "The session's lobby code"),
        ("level" = u32, Path, description = "The level epoch"),
    ),
    responses(
        (status = 200, description = "The replay file, one JSON record a line", content_type = "application/x-ndjson", body = String),
        Refusals,
        (status = 404, description = "No such recorded level", body = ErrorBody),
    )
)]
async fn replay_file(
    State(state): State<ControlState>,
    _t: Tester,
    Path((code, level)): Path<(String, u32)>,
) -> Result<Response, ControlError> {
    let missing = || {
        ControlError::new(
            ErrorCode::NotFound,
            format!("no replay of level {level} of {code} (is the daemon run with --record DIR?)"),
        )
    };
    let path = state.hub.replay_path(&code, level).ok_or_else(missing)?;
    let bytes = tokio::fs::read(&path).await.map_err(|_| missing())?;
    let disposition = format!(
        "attachment; filename=\"{}\"",
        super::hub::replay_name(&code, level)
    );
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        bytes,
    )
        .into_response())
}

/// The session list as server-sent events: one `sessions` event (the
/// list's JSON) now and after every change, at most four a second.
#[utoipa::path(
    get, path = "/api/events", tag = "control",
    security((), ("control_token" = [])),
    responses(
        (status = 200, description = "An event stream of `sessions` events", content_type = "text/event-stream", body = String),
        Refusals,
        (status = 429, description = "Too many event streams open", body = ErrorBody),
    )
)]
async fn events(State(state): State<ControlState>, _t: Tester) -> Result<Response, ControlError> {
    let permit: OwnedSemaphorePermit = state.streams.clone().try_acquire_owned().map_err(|_| {
        ControlError::new(
            ErrorCode::RateLimited,
            format!("{MAX_EVENT_STREAMS} event streams are open; close one"),
        )
    })?;
    let hub = state.hub.clone();
    let stream = WatchStream::new(hub.changes())
        .throttle(EVENTS_EVERY)
        .map(move |_| {
            let _held = &permit;
            let list = hub.list();
            Ok::<_, Infallible>(
                Event::default()
                    .event("sessions")
                    .json_data(&list)
                    .unwrap_or_else(|_| Event::default().comment("encoding failed")),
            )
        });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
