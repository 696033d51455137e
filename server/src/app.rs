//! Shared state and the router: every route, its middleware, and the
//! OpenAPI document generated from the same route list.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware;
use tokio_util::sync::CancellationToken;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::clock::{Clock, Millis};
use crate::config::Config;
use crate::error::AppError;
use crate::ice::IceConfig;
use crate::lobby_index::LobbyIndex;
use crate::metrics::Metrics;
use crate::rate_limit::RateLimits;
use crate::routes::{lobby, ops, session};
use crate::store::{Store, StoreError};
use crate::waiters::AnswerWaiters;
use protocol::api::ErrorCode;

/// Everything a handler can reach.
pub struct AppInner {
    /// Configuration the server started with.
    pub config: Config,
    /// Session storage.
    pub store: Store,
    /// Wall-clock time (injectable for tests).
    pub clock: Arc<dyn Clock>,
    /// The public lobby read model and its change feed.
    pub lobby: LobbyIndex,
    /// Hosts long-polling for answers.
    pub waiters: AnswerWaiters,
    /// Per-address rate limits.
    pub limits: RateLimits,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// ICE servers for session views.
    pub ice: IceConfig,
    /// Cancelled when the server begins shutting down.
    pub shutdown: CancellationToken,
}

/// Cheaply clonable handle to the shared state.
#[derive(Clone)]
pub struct AppState(Arc<AppInner>);

impl Deref for AppState {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl AppState {
    /// State over an opened store.
    pub fn new(config: Config, store: Store, clock: Arc<dyn Clock>) -> Self {
        Self(Arc::new(AppInner {
            ice: IceConfig::from_config(&config),
            limits: RateLimits::from_config(&config),
            lobby: LobbyIndex::new(),
            waiters: AnswerWaiters::default(),
            metrics: Metrics::new(),
            shutdown: CancellationToken::new(),
            store,
            clock,
            config,
        }))
    }

    /// Now, from the injected clock.
    pub fn now(&self) -> Millis {
        self.clock.now_ms()
    }

    /// The expiry a host call made at `now` grants.
    pub fn expiry_from(&self, now: Millis) -> Millis {
        let ttl_ms = self.config.ttl().as_millis().min(i64::MAX as u128) as i64;
        now.saturating_add(ttl_ms)
    }

    /// Fills the lobby index from the store (at start).
    pub async fn load_lobby(&self) -> Result<usize, StoreError> {
        let records = self.store.list_public(self.now()).await?;
        for record in &records {
            self.lobby.upsert(record);
        }
        Ok(records.len())
    }

    /// Rebuilds the lobby index from the store (after missed notifications).
    pub async fn resync_lobby(&self) -> Result<(), StoreError> {
        let records = self.store.list_public(self.now()).await?;
        let live: std::collections::HashSet<_> = records.iter().map(|r| r.code.clone()).collect();
        for code in self.lobby.codes() {
            if !live.contains(&code) {
                self.lobby.remove(&code);
            }
        }
        for record in &records {
            self.lobby.upsert(record);
        }
        Ok(())
    }

    /// Deletes expired sessions, unlists them, ends their long-polls, and
    /// forgets idle rate-limit entries. Returns how many were deleted.
    pub async fn sweep_once(&self) -> Result<usize, StoreError> {
        let expired = self.store.delete_expired(self.now()).await?;
        for code in &expired {
            self.lobby.remove(code);
            self.waiters.wake(code);
        }
        self.limits.forget_idle();
        Ok(expired.len())
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "campfire lobby and signaling API",
        description = "Hosts publish sessions with SDP offer rounds; joiners read an offer and \
                       post an answer; a public lobby lists open sessions. See docs/api.md.",
        version = "1"
    ),
    modifiers(&HostTokenScheme),
    components(schemas(protocol::api::ErrorBody, protocol::api::ErrorCode, protocol::api::LobbyEntry, protocol::api::RemovedEntry))
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
    }
}

/// The API routes and the OpenAPI document describing exactly them.
fn api_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(session::put_session))
        .routes(routes!(session::get_session, session::delete_session))
        .routes(routes!(session::post_answer, session::get_answer))
        .routes(routes!(lobby::get_lobby))
        .routes(routes!(lobby::lobby_events))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .split_for_parts()
}

/// The OpenAPI document of the API.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api_routes().1
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

/// The whole HTTP application over `state`.
pub fn router(state: AppState) -> Router {
    let (api, doc) = api_routes();
    let doc_json = Arc::new(doc.to_pretty_json().unwrap_or_else(|_| "{}".into()));
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
    .merge(crate::web::router(&state.config.game_url))
    .fallback(not_found)
    .method_not_allowed_fallback(method_not_allowed)
    .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
    .layer(middleware::from_fn_with_state(
        state.clone(),
        crate::metrics::track,
    ))
    .layer(cors(&state.config))
    .with_state(state)
}
