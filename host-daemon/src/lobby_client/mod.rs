//! A client for the lobby server's signaling API (`docs/api.md`).
//!
//! Publishing a session (the lobby entry's owner, the API's "host"):
//! [`LobbyClient::create_session`] (a [`PublishedSession`]), then one
//! [`LobbyClient::publish_round`] per joiner with a complete offer,
//! [`LobbyClient::wait_answer`] (one long-poll) or
//! [`LobbyClient::await_answer`] (long-polls until a deadline) for its
//! answer, [`LobbyClient::refresh`] to keep the session alive,
//! [`LobbyClient::update`] when the level starts (`inProgress`, or
//! [`LobbyClient::set_public`] `false` without late join), and
//! [`LobbyClient::delete`] at the end. Joiners:
//! [`LobbyClient::get_session`] (the open round is in the view) and
//! [`LobbyClient::post_answer`].
//!
//! Network errors, `5xx` and `429` are retried with exponential backoff, a
//! bounded number of times ([`RetryPolicy`]); everything else maps to a
//! typed [`SignalingError`] at once. Note that a retried create can, if the
//! first response was lost, leave an extra session behind (it expires by
//! TTL), and a retried answer can come back as
//! [`SignalingError::RoundTaken`] when the first attempt actually won.

mod http;
mod joining;
mod publishing;

use std::time::Duration;

use protocol::api::{ErrorCode, IceServer};
use thiserror::Error;
use time::OffsetDateTime;

/// How failed requests are retried.
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Tries in all (the first one included); at least 1.
    pub attempts: u32,
    /// Delay before the first retry; doubled for each further one.
    pub base_delay: Duration,
    /// Cap on one delay (and on a server's `Retry-After`).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }
}

/// Why a lobby call failed.
#[derive(Debug, Error)]
pub enum SignalingError {
    /// The server could not be reached (after retries).
    #[error("the lobby server at {url} is unreachable: {source}")]
    Unreachable {
        /// The server's base URL.
        url: String,
        /// The last network error.
        #[source]
        source: reqwest::Error,
    },
    /// The server rejected the host's token (403 `wrong_token`).
    #[error("the lobby server rejected the host token for session {0}")]
    Rejected(String),
    /// Unknown or expired session (404 `no_such_session`).
    #[error("no session {0} (unknown or expired)")]
    NoSuchSession(String),
    /// A moderator of the lobby ended the session (410 `session_ended`):
    /// it must not be published again.
    #[error("a moderator of the lobby ended session {0}")]
    EndedByModerator(String),
    /// Unknown round (404 `no_such_round`): not the open round nor the latest answered one.
    #[error("session {code} has no round {round}")]
    NoSuchRound {
        /// The session.
        code: String,
        /// The round asked for.
        round: u32,
    },
    /// Another joiner answered the round first (409 `round_taken`).
    #[error("round {round} of session {code} was taken by another joiner")]
    RoundTaken {
        /// The session.
        code: String,
        /// The round.
        round: u32,
    },
    /// Still rate limited after retries (429).
    #[error("rate limited by the lobby server")]
    RateLimited,
    /// Still failing with 5xx after retries.
    #[error("the lobby server is unavailable ({status}): {message}")]
    Unavailable {
        /// The last status.
        status: u16,
        /// The server's message.
        message: String,
    },
    /// Any other refusal (400, 413, ...).
    #[error("the lobby server refused the request ({status} {code:?}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The API error code, when the body had one.
        code: Option<ErrorCode>,
        /// The server's message.
        message: String,
    },
    /// A response the client cannot read.
    #[error("unexpected response from the lobby server: {0}")]
    Protocol(String),
}

impl SignalingError {
    /// The API's error code the lobby answered with, as the joining and
    /// hosting machines hear it (`None` for errors that are not the
    /// lobby's answer).
    pub fn api_code(&self) -> Option<ErrorCode> {
        match self {
            Self::NoSuchSession(_) => Some(ErrorCode::NoSuchSession),
            Self::EndedByModerator(_) => Some(ErrorCode::SessionEnded),
            Self::Rejected(_) => Some(ErrorCode::WrongToken),
            Self::NoSuchRound { .. } => Some(ErrorCode::NoSuchRound),
            Self::RoundTaken { .. } => Some(ErrorCode::RoundTaken),
            Self::RateLimited => Some(ErrorCode::RateLimited),
            Self::Unavailable { .. } => Some(ErrorCode::Unavailable),
            Self::Refused { code, .. } => *code,
            Self::Unreachable { .. } | Self::Protocol(_) => None,
        }
    }
}

/// A session this client published (created in the lobby): the code
/// players type, and the owner's bearer token (the API's `hostToken`;
/// never logged).
#[derive(Clone)]
pub struct PublishedSession {
    /// The session's code.
    pub code: String,
    token: String,
    /// The round opened at creation, if an offer was given.
    pub round: Option<u32>,
    /// When the session expires unless refreshed.
    pub expires_at: OffsetDateTime,
    /// ICE servers the lobby hands out.
    pub ice_servers: Vec<IceServer>,
}

impl std::fmt::Debug for PublishedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishedSession")
            .field("code", &self.code)
            .field("round", &self.round)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A client of one lobby server.
#[derive(Clone, Debug)]
pub struct LobbyClient {
    http: reqwest::Client,
    base: String,
    retry: RetryPolicy,
    timeout: Duration,
}

impl LobbyClient {
    /// A client for the server at `base_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(base_url: &str) -> Result<Self, SignalingError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| SignalingError::Protocol(format!("building the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: base_url.trim_end_matches('/').to_owned(),
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(15),
        })
    }

    /// Replaces the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }
}
