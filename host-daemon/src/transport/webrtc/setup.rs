//! The two ways a connection is set up: the host's offer and the guest's
//! answer.

use tokio::sync::{mpsc, oneshot};

use super::conn::Conn;
use super::endpoint::Endpoint;
use super::link::make_link;
use super::shared::{Command, Opened};
use super::{WebRtcError, WebRtcLink};
use crate::transport::PeerEvent;

async fn open(
    endpoint: &Endpoint,
    ask: impl FnOnce(oneshot::Sender<Result<Opened, WebRtcError>>) -> Command,
) -> Result<(Conn, mpsc::UnboundedReceiver<PeerEvent>, String), WebRtcError> {
    let opened = endpoint.ask(ask).await.ok_or(WebRtcError::EndpointGone)??;
    Ok((
        Conn::new(endpoint, opened.shared),
        opened.events,
        opened.sdp,
    ))
}

/// The serving side (a host or a relay) of one connection, its offer open
/// until a joiner answers: the connection exists in the endpoint, its
/// channels are declared, the offer is complete. Answered, it becomes an
/// [`AnsweredOffer`].
pub struct OpenOffer {
    conn: Conn,
    events: mpsc::UnboundedReceiver<PeerEvent>,
    offer: String,
}

impl std::fmt::Debug for OpenOffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOffer").finish_non_exhaustive()
    }
}

impl OpenOffer {
    /// A new connection on `endpoint` with the `input` and `reconciliation`
    /// channels (reliable, ordered) and `input-unreliable` (unordered, no
    /// retransmissions), and its complete offer.
    pub async fn new(endpoint: &Endpoint) -> Result<Self, WebRtcError> {
        let (conn, events, offer) = open(endpoint, Command::Offer).await?;
        Ok(OpenOffer {
            conn,
            events,
            offer,
        })
    }

    /// The complete offer SDP, candidates included.
    pub fn offer_sdp(&self) -> &str {
        &self.offer
    }

    /// Applies the joiner's answer and waits until every channel is open.
    /// On failure the connection is closed.
    pub async fn accept(self, answer_sdp: &str) -> Result<WebRtcLink, WebRtcError> {
        self.apply_answer(answer_sdp).await?.open().await
    }

    /// Applies the joiner's answer: ICE checks start. On failure the
    /// connection is closed.
    pub async fn apply_answer(self, answer_sdp: &str) -> Result<AnsweredOffer, WebRtcError> {
        let id = self.conn.shared.id;
        let answer = answer_sdp.to_owned();
        let applied = self
            .conn
            .endpoint
            .ask(|r| Command::ApplyAnswer(id, answer, r))
            .await
            .unwrap_or(Err(WebRtcError::EndpointGone));
        if let Err(e) = applied {
            self.close().await;
            return Err(e);
        }
        Ok(AnsweredOffer {
            conn: self.conn,
            events: self.events,
        })
    }

    /// Gives the offer up (nobody answered): closes the connection.
    pub async fn close(self) {
        self.conn.close_and_wait().await;
    }
}

/// The host's side of one connection once the joiner's answer is applied:
/// ICE is checking; the channels are not open yet.
pub struct AnsweredOffer {
    conn: Conn,
    events: mpsc::UnboundedReceiver<PeerEvent>,
}

impl std::fmt::Debug for AnsweredOffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnsweredOffer").finish_non_exhaustive()
    }
}

impl AnsweredOffer {
    /// Resolves once ICE found a working pair with the joiner (its checks
    /// arrived and were answered); never, if the connection fails first.
    pub async fn ice_connected(&self) {
        let mut progress = self.conn.shared.progress.subscribe();
        let connected = progress
            .wait_for(|p| p.ice_connected || p.failed)
            .await
            .is_ok_and(|p| p.ice_connected);
        if !connected {
            std::future::pending::<()>().await;
        }
    }

    /// Waits until every channel is open (at most the connect timeout).
    /// On failure the connection is closed.
    pub async fn open(self) -> Result<WebRtcLink, WebRtcError> {
        if let Err(e) = self.opened().await {
            self.close().await;
            return Err(e);
        }
        Ok(self.into_link())
    }

    /// Resolves once every channel is open, or with the error once the
    /// connection failed or the connect timeout (counted from this call)
    /// passed. Leaves the connection as it is.
    pub async fn opened(&self) -> Result<(), WebRtcError> {
        self.conn
            .opened(self.conn.endpoint.opts.connect_timeout)
            .await
    }

    /// The link, once [`Self::opened`] succeeded.
    pub fn into_link(self) -> WebRtcLink {
        make_link(self.conn, self.events)
    }

    /// Gives the join up: closes the connection.
    pub async fn close(self) {
        self.conn.close_and_wait().await;
    }
}

/// The guest's side of one connection: the host's offer is applied, the
/// answer is complete.
pub struct GuestAnswer {
    conn: Conn,
    events: mpsc::UnboundedReceiver<PeerEvent>,
    answer: String,
}

impl std::fmt::Debug for GuestAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestAnswer").finish_non_exhaustive()
    }
}

impl GuestAnswer {
    /// A new connection on `endpoint` answering the host's offer.
    pub async fn new(endpoint: &Endpoint, offer_sdp: &str) -> Result<Self, WebRtcError> {
        let offer = offer_sdp.to_owned();
        let (conn, events, answer) = open(endpoint, |r| Command::Answer(offer, r)).await?;
        Ok(GuestAnswer {
            conn,
            events,
            answer,
        })
    }

    /// The complete answer SDP, candidates included.
    pub fn answer_sdp(&self) -> &str {
        &self.answer
    }

    /// Waits (once the answer is published) for the host's channels to
    /// arrive and open. On failure the connection is closed.
    pub async fn connect(self) -> Result<WebRtcLink, WebRtcError> {
        if let Err(e) = self
            .conn
            .opened(self.conn.endpoint.opts.connect_timeout)
            .await
        {
            self.close().await;
            return Err(e);
        }
        Ok(make_link(self.conn, self.events))
    }

    /// Gives up: closes the connection.
    pub async fn close(self) {
        self.conn.close_and_wait().await;
    }
}
