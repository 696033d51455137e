//! The router: every route, its middleware, and the OpenAPI document
//! generated from the same route list.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::config::Config;
use crate::error::AppError;
use crate::routes::{admin, lobby, ops, report, session};
use crate::state::AppState;
use lobby_api::api::ErrorCode;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "campfire lobby and signaling API",
        description = "Hosts publish sessions with SDP offer rounds; joiners read an offer and \
                       post an answer; a public lobby lists open sessions. See docs/api.md.",
        version = "1"
    ),
    modifiers(&HostTokenScheme),
    tags(
        (name = "admin", description = "The operator's admin API: every session (hide, end), blocks and the audit log. \
                                         Takes an admin token from --admin-token-file; answers 404 without one."),
    ),
    components(schemas(lobby_api::api::ErrorBody, lobby_api::api::ErrorCode, lobby_api::api::LobbyEntry, lobby_api::api::RemovedEntry))
)]
struct ApiDoc;

struct HostTokenScheme;

impl utoipa::Modify for HostTokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "host_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A token from the server's --admin-token-file"))
                    .build(),
            ),
        );
    }
}

/// The API routes and the OpenAPI document describing exactly them.
fn api_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(session::put_session))
        .routes(routes!(session::get_session, session::delete_session))
        .routes(routes!(session::post_answer, session::get_answer))
        .routes(routes!(report::report_session))
        .routes(routes!(lobby::get_lobby))
        .routes(routes!(lobby::lobby_events))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .merge(admin_routes())
        .split_for_parts()
}

/// The admin API, none of whose responses may be cached.
fn admin_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(admin::list_sessions))
        .routes(routes!(admin::get_session))
        .routes(routes!(admin::hide_session))
        .routes(routes!(admin::end_session))
        .routes(routes!(admin::list_blocks, admin::place_block))
        .routes(routes!(admin::lift_block))
        .routes(routes!(admin::audit_log))
        .routes(routes!(admin::reload_words))
        .layer(middleware::map_response(admin::no_store))
}

/// The OpenAPI document of the API, as `/openapi.json` serves it with the
/// default flags.
pub fn openapi() -> serde_json::Value {
    let config = <Config as clap::Parser>::parse_from(["lobby-server"]);
    serde_json::from_str(&openapi_json(&api_routes().1, &config)).unwrap_or_default()
}

fn cors(config: &Config) -> CorsLayer {
    let origins: Vec<HeaderValue> = config
        .cors_origins
        .iter()
        .map(|o| o.trim())
        .filter(|o| !o.is_empty() && *o != "*")
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    let allow_origin = if config.cors_origins.iter().any(|o| o.trim() == "*") || origins.is_empty()
    {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins)
    };
    CorsLayer::new()
        .allow_origin(allow_origin)
        .allow_methods([Method::GET, Method::PUT, Method::POST, Method::DELETE])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .expose_headers([
            header::LOCATION,
            header::RETRY_AFTER,
            HeaderName::from_static("content-type"),
        ])
        .max_age(Duration::from_secs(600))
}

async fn not_found() -> AppError {
    AppError::new(ErrorCode::NotFound, "no such route; see /openapi.json")
}

async fn method_not_allowed() -> AppError {
    AppError::new(
        ErrorCode::MethodNotAllowed,
        "this route does not take that method; see /openapi.json",
    )
}

/// Records every request in the server's metrics.
async fn track_requests(State(state): State<AppState>, request: Request, next: Next) -> Response {
    state.metrics.track(request, next).await
}

/// The OpenAPI document as served. utoipa 5.5 writes a link object's
/// fields in snake case (`operation_id`); the specification spells them
/// `operationId`, `operationRef` and `requestBody`, and clients following
/// links (Schemathesis's stateful tests) look for those. The limits that
/// are flags are this server's (see [`configured_limits`]).
fn openapi_json(doc: &utoipa::openapi::OpenApi, config: &Config) -> String {
    let Ok(mut value) = serde_json::to_value(doc) else {
        return "{}".into();
    };
    configured_limits(&mut value, config);
    if let Some(paths) = value.get_mut("paths").and_then(|p| p.as_object_mut()) {
        let responses = paths
            .values_mut()
            .filter_map(|item| item.as_object_mut())
            .flat_map(|item| item.values_mut())
            .filter_map(|op| op.get_mut("responses").and_then(|r| r.as_object_mut()))
            .flat_map(|r| r.values_mut());
        for response in responses {
            let Some(links) = response.get_mut("links").and_then(|l| l.as_object_mut()) else {
                continue;
            };
            for link in links.values_mut().filter_map(|l| l.as_object_mut()) {
                for (snake, camel) in [
                    ("operation_id", "operationId"),
                    ("operation_ref", "operationRef"),
                    ("request_body", "requestBody"),
                ] {
                    if let Some(v) = link.remove(snake) {
                        link.insert(camel.to_owned(), v);
                    }
                }
            }
        }
    }
    serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into())
}

/// The schema states what this server accepts: the types declare the
/// default `--max-sdp-bytes` and `--max-players`; a server started with
/// other values publishes those. (SDP is ASCII, so its bytes are its
/// characters, which `maxLength` counts.)
fn configured_limits(doc: &mut serde_json::Value, config: &Config) {
    for (schema, field, keyword, limit) in [
        (
            "PutSessionRequest",
            "offer",
            "maxLength",
            config.max_sdp_bytes as u64,
        ),
        (
            "PostAnswerRequest",
            "answer",
            "maxLength",
            config.max_sdp_bytes as u64,
        ),
        (
            "PutSessionRequest",
            "maxPlayers",
            "maximum",
            u64::from(config.max_players),
        ),
    ] {
        let path = format!("/components/schemas/{schema}/properties/{field}");
        if let Some(property) = doc.pointer_mut(&path).and_then(|p| p.as_object_mut()) {
            property.insert(keyword.to_owned(), limit.into());
        }
    }
}

/// The whole HTTP application over `state`.
pub fn router(state: AppState) -> Router {
    let (api, doc) = api_routes();
    let doc_json = Arc::new(openapi_json(&doc, &state.config));
    api.route(
        "/openapi.json",
        axum::routing::get(move || {
            let doc_json = doc_json.clone();
            async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    doc_json.as_str().to_owned(),
                )
            }
        }),
    )
    .merge(crate::web::router(
        &state.config.game_url,
        state.moderation.tokens.is_some(),
    ))
    .fallback(not_found)
    .method_not_allowed_fallback(method_not_allowed)
    .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
    .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(
        std::time::Duration::from_millis(state.config.body_timeout_ms.max(1)),
    ))
    .layer(middleware::from_fn_with_state(
        state.clone(),
        track_requests,
    ))
    .layer(cors(&state.config))
    .with_state(state)
}
