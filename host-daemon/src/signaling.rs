//! A client for the lobby server's signaling API (`docs/api.md`).
//!
//! Hosts: [`LobbyClient::create_session`], then one
//! [`LobbyClient::publish_round`] per joiner with a complete offer,
//! [`LobbyClient::wait_answer`] (one long-poll) or
//! [`LobbyClient::await_answer`] (long-polls until a deadline) for its
//! answer, [`LobbyClient::refresh`] to keep the session alive,
//! [`LobbyClient::set_public`] `false` when the level starts, and
//! [`LobbyClient::delete`] at the end. Joiners:
//! [`LobbyClient::join_offer`] (the open round, or
//! [`SignalingError::FullOrStarted`]) and [`LobbyClient::post_answer`].
//!
//! Network errors, `5xx` and `429` are retried with exponential backoff, a
//! bounded number of times ([`RetryPolicy`]); everything else maps to a
//! typed [`SignalingError`] at once. Note that a retried create can, if the
//! first response was lost, leave an extra session behind (it expires by
//! TTL), and a retried answer can come back as
//! [`SignalingError::RoundTaken`] when the first attempt actually won.

use std::time::Duration;

use protocol::api::{
    AnswerView, ErrorBody, ErrorCode, IceServer, PostAnswerRequest, PutSessionRequest,
    PutSessionResponse, SessionView,
};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
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
    /// Unknown round (404 `no_such_round`): not the open round nor the latest answered one.
    #[error("session {code} has no round {round}")]
    NoSuchRound {
        /// The session.
        code: String,
        /// The round asked for.
        round: u32,
    },
    /// No round is open: the session is full or has started.
    #[error("session {0} is full or has already started")]
    FullOrStarted(String),
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

/// A session this client created: the code players type, and the host's
/// bearer token (never logged).
#[derive(Clone)]
pub struct HostedSession {
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

impl std::fmt::Debug for HostedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSession")
            .field("code", &self.code)
            .field("round", &self.round)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// An open round a joiner can answer.
#[derive(Clone, Debug)]
pub struct OpenRound {
    /// The round number to answer.
    pub round: u32,
    /// The host's complete offer SDP.
    pub offer: String,
    /// The whole session view (lobby fields, ICE servers).
    pub view: SessionView,
}

/// What a request's context says about a 404 or 409.
#[derive(Clone, Copy)]
enum Ctx<'a> {
    Session(&'a str),
    Round(&'a str, u32),
    None,
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

    /// Creates a session (`req.code` is ignored); with `req.offer`, round 1
    /// opens at once.
    pub async fn create_session(
        &self,
        req: &PutSessionRequest,
    ) -> Result<HostedSession, SignalingError> {
        let mut req = req.clone();
        req.code = None;
        let (_, resp) = self
            .call::<_, PutSessionResponse>(Method::PUT, "/session", None, Some(&req), Ctx::None)
            .await?;
        let resp = resp.ok_or_else(|| SignalingError::Protocol("empty create response".into()))?;
        let token = resp
            .host_token
            .ok_or_else(|| SignalingError::Protocol("create response without a token".into()))?;
        Ok(HostedSession {
            code: resp.code.to_string(),
            token,
            round: resp.round,
            expires_at: resp.expires_at,
            ice_servers: resp.ice_servers,
        })
    }

    /// Updates a session: any lobby field given in `req` (its `code` is
    /// set here), a new round when `req.offer` is present; refreshes the TTL.
    pub async fn update(
        &self,
        session: &HostedSession,
        req: &PutSessionRequest,
    ) -> Result<PutSessionResponse, SignalingError> {
        let mut req = req.clone();
        req.code = Some(session.code.clone());
        let (_, resp) = self
            .call::<_, PutSessionResponse>(
                Method::PUT,
                "/session",
                Some(&session.token),
                Some(&req),
                Ctx::Session(&session.code),
            )
            .await?;
        resp.ok_or_else(|| SignalingError::Protocol("empty update response".into()))
    }

    /// Publishes a new offer round (replacing an unanswered one); returns its number.
    pub async fn publish_round(
        &self,
        session: &HostedSession,
        offer: String,
    ) -> Result<u32, SignalingError> {
        let resp = self
            .update(
                session,
                &PutSessionRequest {
                    offer: Some(offer),
                    ..Default::default()
                },
            )
            .await?;
        resp.round
            .ok_or_else(|| SignalingError::Protocol("publish response without a round".into()))
    }

    /// Refreshes the session's TTL, changing nothing else.
    pub async fn refresh(
        &self,
        session: &HostedSession,
    ) -> Result<PutSessionResponse, SignalingError> {
        self.update(session, &PutSessionRequest::default()).await
    }

    /// Lists or unlists the session (`false` when the level starts).
    pub async fn set_public(
        &self,
        session: &HostedSession,
        public: bool,
    ) -> Result<PutSessionResponse, SignalingError> {
        self.update(
            session,
            &PutSessionRequest {
                public: Some(public),
                ..Default::default()
            },
        )
        .await
    }

    /// One long-poll for round `round`'s answer, up to `wait` (the server
    /// caps it): `Some` once answered, `None` when the wait ran out.
    pub async fn wait_answer(
        &self,
        session: &HostedSession,
        round: u32,
        wait: Duration,
    ) -> Result<Option<AnswerView>, SignalingError> {
        let path = format!(
            "/session/{}/answer?round={round}&waitMs={}",
            session.code,
            wait.as_millis()
        );
        let (status, body) = self
            .call_with_timeout::<(), AnswerView>(
                Method::GET,
                &path,
                Some(&session.token),
                None,
                Ctx::Round(&session.code, round),
                wait + self.timeout,
            )
            .await?;
        match status {
            StatusCode::NO_CONTENT => Ok(None),
            _ => body
                .map(Some)
                .ok_or_else(|| SignalingError::Protocol("empty answer response".into())),
        }
    }

    /// Long-polls round `round` until it is answered or `total` has passed
    /// (`None`), each poll at most `per_poll`. Each poll refreshes the TTL.
    pub async fn await_answer(
        &self,
        session: &HostedSession,
        round: u32,
        total: Duration,
        per_poll: Duration,
    ) -> Result<Option<AnswerView>, SignalingError> {
        let deadline = tokio::time::Instant::now() + total;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            if let Some(answer) = self.wait_answer(session, round, left.min(per_poll)).await? {
                return Ok(Some(answer));
            }
        }
    }

    /// Ends the session now (pending answer polls end with 404).
    pub async fn delete(&self, session: &HostedSession) -> Result<(), SignalingError> {
        let path = format!("/session/{}", session.code);
        self.call::<(), serde_json::Value>(
            Method::DELETE,
            &path,
            Some(&session.token),
            None,
            Ctx::Session(&session.code),
        )
        .await?;
        Ok(())
    }

    /// A session's public view (joiners).
    pub async fn get_session(&self, code: &str) -> Result<SessionView, SignalingError> {
        let path = format!("/session/{}", code.trim());
        let (_, body) = self
            .call::<(), SessionView>(Method::GET, &path, None, None, Ctx::Session(code))
            .await?;
        body.ok_or_else(|| SignalingError::Protocol("empty session response".into()))
    }

    /// The session's open round, or [`SignalingError::FullOrStarted`] when
    /// none is open.
    pub async fn join_offer(&self, code: &str) -> Result<OpenRound, SignalingError> {
        let view = self.get_session(code).await?;
        match (view.round, view.offer.clone()) {
            (Some(round), Some(offer)) => Ok(OpenRound { round, offer, view }),
            _ => Err(SignalingError::FullOrStarted(code.to_owned())),
        }
    }

    /// Claims round `round` with a complete answer.
    pub async fn post_answer(
        &self,
        code: &str,
        round: u32,
        answer: String,
        name: Option<String>,
    ) -> Result<AnswerView, SignalingError> {
        let path = format!("/session/{}/answer", code.trim());
        let req = PostAnswerRequest {
            round,
            answer,
            name,
        };
        let (_, body) = self
            .call::<_, AnswerView>(
                Method::POST,
                &path,
                None,
                Some(&req),
                Ctx::Round(code, round),
            )
            .await?;
        body.ok_or_else(|| SignalingError::Protocol("empty answer response".into()))
    }

    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&B>,
        ctx: Ctx<'_>,
    ) -> Result<(StatusCode, Option<T>), SignalingError> {
        self.call_with_timeout(method, path, token, body, ctx, self.timeout)
            .await
    }

    /// One API call with retries; `Ok` for 2xx (with the decoded body
    /// unless 204), a typed error otherwise.
    async fn call_with_timeout<B: Serialize, T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&B>,
        ctx: Ctx<'_>,
        timeout: Duration,
    ) -> Result<(StatusCode, Option<T>), SignalingError> {
        let url = format!("{}{}", self.base, path);
        let attempts = self.retry.attempts.max(1);
        let mut delay = self.retry.base_delay;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= attempts;
            let mut req = self.http.request(method.clone(), &url).timeout(timeout);
            if let Some(token) = token {
                req = req.bearer_auth(token);
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            let resp = match req.send().await {
                Ok(resp) => resp,
                Err(e) => {
                    if last {
                        return Err(SignalingError::Unreachable {
                            url: self.base.clone(),
                            source: e,
                        });
                    }
                    tracing::debug!(%url, attempt, error = %e, "lobby call failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(self.retry.max_delay);
                    continue;
                }
            };
            let status = resp.status();
            if status.is_success() {
                if status == StatusCode::NO_CONTENT {
                    return Ok((status, None));
                }
                let bytes = resp.bytes().await.map_err(|e| {
                    SignalingError::Protocol(format!("reading the response of {path}: {e}"))
                })?;
                if bytes.is_empty() {
                    return Ok((status, None));
                }
                let value = serde_json::from_slice(&bytes).map_err(|e| {
                    SignalingError::Protocol(format!("decoding the response of {path}: {e}"))
                })?;
                return Ok((status, Some(value)));
            }
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let text = resp.text().await.unwrap_or_default();
            let parsed: Option<ErrorBody> = serde_json::from_str(&text).ok();
            let (code, message) = match parsed {
                Some(b) => (Some(b.error), b.message),
                None => (None, text.chars().take(200).collect()),
            };
            let retryable = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
            if retryable && !last {
                let wait = retry_after.unwrap_or(delay).min(self.retry.max_delay);
                tracing::debug!(%url, attempt, %status, "lobby call failed; retrying");
                tokio::time::sleep(wait).await;
                delay = (delay * 2).min(self.retry.max_delay);
                continue;
            }
            return Err(classify(status, code, message, ctx));
        }
    }
}

fn classify(
    status: StatusCode,
    code: Option<ErrorCode>,
    message: String,
    ctx: Ctx<'_>,
) -> SignalingError {
    let session = match ctx {
        Ctx::Session(c) | Ctx::Round(c, _) => c.to_owned(),
        Ctx::None => String::new(),
    };
    match (status.as_u16(), code) {
        (403, _) => SignalingError::Rejected(session),
        (404, Some(ErrorCode::NoSuchRound)) => match ctx {
            Ctx::Round(c, round) => SignalingError::NoSuchRound {
                code: c.to_owned(),
                round,
            },
            _ => SignalingError::NoSuchSession(session),
        },
        (404, Some(ErrorCode::NoSuchSession)) => SignalingError::NoSuchSession(session),
        (409, _) => match ctx {
            Ctx::Round(c, round) => SignalingError::RoundTaken {
                code: c.to_owned(),
                round,
            },
            _ => SignalingError::Refused {
                status: 409,
                code,
                message,
            },
        },
        (429, _) => SignalingError::RateLimited,
        (s, _) if s >= 500 => SignalingError::Unavailable { status: s, message },
        (s, code) => SignalingError::Refused {
            status: s,
            code,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_by_status_and_code() {
        assert!(matches!(
            classify(
                StatusCode::FORBIDDEN,
                Some(ErrorCode::WrongToken),
                String::new(),
                Ctx::Session("ABC")
            ),
            SignalingError::Rejected(c) if c == "ABC"
        ));
        assert!(matches!(
            classify(
                StatusCode::CONFLICT,
                Some(ErrorCode::RoundTaken),
                String::new(),
                Ctx::Round("ABC", 3)
            ),
            SignalingError::RoundTaken { round: 3, .. }
        ));
        assert!(matches!(
            classify(
                StatusCode::NOT_FOUND,
                Some(ErrorCode::NoSuchRound),
                String::new(),
                Ctx::Round("ABC", 3)
            ),
            SignalingError::NoSuchRound { round: 3, .. }
        ));
        assert!(matches!(
            classify(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(ErrorCode::Unavailable),
                "db".into(),
                Ctx::None
            ),
            SignalingError::Unavailable { status: 503, .. }
        ));
    }

    #[tokio::test]
    async fn an_unreachable_server_is_reported_after_bounded_retries() {
        // A port nothing listens on: bind one, note it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = LobbyClient::new(&format!("http://127.0.0.1:{port}"))
            .unwrap()
            .with_retry(RetryPolicy {
                attempts: 3,
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(20),
            });
        let started = std::time::Instant::now();
        let err = client.get_session("ABCDEFGH").await.unwrap_err();
        assert!(matches!(err, SignalingError::Unreachable { .. }), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
