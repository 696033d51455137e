//! One request with bounded retries, and how a failed response maps to a
//! [`SignalingError`].

use std::time::Duration;

use protocol::api::{ErrorBody, ErrorCode};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{LobbyClient, SignalingError};

/// What a request's context says about a 404 or 409.
#[derive(Clone, Copy)]
pub(super) enum Ctx<'a> {
    Session(&'a str),
    Round(&'a str, u32),
    None,
}

impl LobbyClient {
    pub(super) async fn call<B: Serialize, T: DeserializeOwned>(
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
    pub(super) async fn call_with_timeout<B: Serialize, T: DeserializeOwned>(
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
        (410, _) => SignalingError::EndedByModerator(session),
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
    use crate::lobby_client::RetryPolicy;

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
                StatusCode::GONE,
                Some(ErrorCode::SessionEnded),
                String::new(),
                Ctx::Round("ABC", 3)
            ),
            SignalingError::EndedByModerator(c) if c == "ABC"
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
