//! The API's error type: every failure a handler can return, rendered as
//! `{"error": "<code>", "message": "<text>"}` with the matching status.
//!
//! Internal details (database errors) go to the log, never to the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lobby_api::api::{ErrorBody, ErrorCode};

use crate::store::StoreError;

/// An error a handler returns to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    /// The stable error code (also decides the status).
    pub code: ErrorCode,
    /// A sentence for people.
    pub message: String,
    /// For `rate_limited`: seconds until a retry can succeed.
    pub retry_after_secs: Option<u64>,
}

impl AppError {
    /// An error with `code` and `message`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// `404 no_such_session`.
    pub fn no_such_session() -> Self {
        Self::new(
            ErrorCode::NoSuchSession,
            "no session has this code, or it has expired",
        )
    }

    /// `429 rate_limited` with a `Retry-After` of `secs`.
    pub fn rate_limited(what: &str, secs: u64) -> Self {
        let secs = secs.max(1);
        Self {
            code: ErrorCode::RateLimited,
            message: format!("too many {what} from this address; retry in {secs} s"),
            retry_after_secs: Some(secs),
        }
    }

    /// `400 invalid_field` naming the field.
    pub fn invalid_field(field: &str, why: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::InvalidField, format!("{field}: {why}"))
    }
}

impl From<StoreError> for AppError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Unavailable(detail) => {
                tracing::warn!(error = %detail, "database unavailable");
                AppError::new(
                    ErrorCode::Unavailable,
                    "the lobby database is unreachable; try again shortly",
                )
            }
            StoreError::Corrupt(detail) => {
                tracing::error!(error = %detail, "unreadable row in the database");
                AppError::new(
                    ErrorCode::Internal,
                    "internal error; the details are in the server log",
                )
            }
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ErrorBody {
            error: self.code,
            message: self.message,
        };
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
