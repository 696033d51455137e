//! Request extractors whose failures speak the API's JSON error shape
//! (never axum's plain-text rejections), plus client address and bearer
//! token helpers.

use std::net::{IpAddr, SocketAddr};

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Request};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use lobby_api::api::ErrorCode;
use lobby_api::code::SessionCode;
use serde::de::DeserializeOwned;

use crate::client_addr::ClientAddr;
use crate::error::AppError;
use crate::state::AppState;

/// A JSON body; rejections become `invalid_json`, `payload_too_large` or
/// `unsupported_media_type` errors.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => AppError::new(
            ErrorCode::PayloadTooLarge,
            "the request body is larger than the server accepts",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => AppError::new(
            ErrorCode::UnsupportedMediaType,
            "send the body as JSON with Content-Type: application/json",
        ),
        _ => AppError::new(ErrorCode::InvalidJson, rejection.body_text()),
    }
}

/// Query parameters; a bad query is `invalid_field`.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(query_rejection(rejection)),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> AppError {
    AppError::new(ErrorCode::InvalidField, rejection.body_text())
}

/// The session code in the path, validated.
pub struct CodePath(pub SessionCode);

impl<S: Send + Sync> FromRequestParts<S> for CodePath {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(raw) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|r| AppError::new(ErrorCode::InvalidCode, r.body_text()))?;
        SessionCode::parse(&raw)
            .map(CodePath)
            .map_err(|e| AppError::new(ErrorCode::InvalidCode, e.to_string()))
    }
}

/// The client's address: the TCP peer, or the last `X-Forwarded-For` entry
/// when that peer is a trusted proxy (as the front door determined it, see
/// [`crate::client_addr`]).
pub struct ClientIp(pub IpAddr);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(ClientAddr(ip)) = parts.extensions.get::<ClientAddr>() {
            return Ok(ClientIp(*ip));
        }
        // Served without the front door (the router driven directly).
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip())
            .unwrap_or(IpAddr::from([0, 0, 0, 0]));
        Ok(ClientIp(
            state.config.forwarded_for().client(peer, &parts.headers),
        ))
    }
}

/// The bearer token of a host call, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}
