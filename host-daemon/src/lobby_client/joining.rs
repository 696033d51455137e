//! The joiner's calls: read a session (with its open round), post an answer.
//! `crate::joining` drives them by `protocol::joining`'s steps.

use protocol::api::{AnswerView, PostAnswerRequest, SessionView};
use reqwest::Method;

use super::http::Ctx;
use super::{LobbyClient, SignalingError};

impl LobbyClient {
    /// A session's public view (joiners).
    pub async fn get_session(&self, code: &str) -> Result<SessionView, SignalingError> {
        let path = format!("/session/{}", code.trim());
        let (_, body) = self
            .call::<(), SessionView>(Method::GET, &path, None, None, Ctx::Session(code))
            .await?;
        body.ok_or_else(|| SignalingError::Protocol("empty session response".into()))
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
