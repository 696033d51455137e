//! Publishing a session, the calls of the lobby entry's owner (the API's
//! "host"): create, update, rounds, answers, refresh, delete.

use std::time::Duration;

use protocol::api::{AnswerView, PutSessionRequest, PutSessionResponse};
use reqwest::{Method, StatusCode};

use super::http::Ctx;
use super::{LobbyClient, PublishedSession, SignalingError};

impl LobbyClient {
    /// Creates a session (`req.code` is ignored); with `req.offer`, round 1
    /// opens at once.
    pub async fn create_session(
        &self,
        req: &PutSessionRequest,
    ) -> Result<PublishedSession, SignalingError> {
        let mut req = req.clone();
        req.code = None;
        let (_, resp) = self
            .call::<_, PutSessionResponse>(Method::PUT, "/session", None, Some(&req), Ctx::None)
            .await?;
        let resp = resp.ok_or_else(|| SignalingError::Protocol("empty create response".into()))?;
        let token = resp
            .host_token
            .ok_or_else(|| SignalingError::Protocol("create response without a token".into()))?;
        Ok(PublishedSession {
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
        session: &PublishedSession,
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
        session: &PublishedSession,
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
        session: &PublishedSession,
    ) -> Result<PutSessionResponse, SignalingError> {
        self.update(session, &PutSessionRequest::default()).await
    }

    /// Lists or unlists the session (`false` when the level starts and
    /// admits nobody more).
    pub async fn set_public(
        &self,
        session: &PublishedSession,
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
        session: &PublishedSession,
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
        session: &PublishedSession,
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
    pub async fn delete(&self, session: &PublishedSession) -> Result<(), SignalingError> {
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
}
