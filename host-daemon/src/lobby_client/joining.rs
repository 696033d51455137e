//! The joiner's calls: read a session and its open round, post an answer.

use protocol::api::{AnswerView, PostAnswerRequest, SessionView};
use reqwest::Method;

use super::http::Ctx;
use super::{LobbyClient, OpenRound, SignalingError};

impl LobbyClient {
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
}
