//! The two ways a connection is set up: the host's offer and the guest's
//! answer.

use std::sync::Arc;

use ::webrtc::data_channel::DataChannel;
use ::webrtc::peer_connection::RTCSessionDescription;
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout_at};

use super::connection::{ClosingPc, build_pc, close_pc, gathered_sdp, make_link, wait_open};
use super::shared::{CHANNELS, Handler, Shared, channel_index, channel_init, spawn_pump};
use super::{WebRtcError, WebRtcLink, WebRtcOptions};
use crate::transport::PeerEvent;

/// The host's side of one connection before a joiner answered: the
/// connection exists, its channels are created, ICE gathering is complete.
pub struct HostOffer {
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 3],
    events: mpsc::UnboundedReceiver<PeerEvent>,
    offer: String,
    opts: WebRtcOptions,
}

impl std::fmt::Debug for HostOffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOffer").finish_non_exhaustive()
    }
}

impl HostOffer {
    /// Builds a connection, creates the `input` and `reconciliation`
    /// channels (reliable, ordered) and `input-unreliable` (unordered, no
    /// retransmissions), and gathers ICE completely.
    pub async fn new(opts: &WebRtcOptions) -> Result<Self, WebRtcError> {
        let (shared, events) = Shared::new();
        let (incoming, _) = mpsc::unbounded_channel();
        let handler = Arc::new(Handler {
            shared: shared.clone(),
            incoming,
        });
        let pc = build_pc(opts, handler).await?;
        let guard = ClosingPc { pc, shared };
        let mut dcs = Vec::with_capacity(CHANNELS.len());
        for channel in CHANNELS {
            let dc = guard
                .pc
                .create_data_channel(channel.label(), Some(channel_init(channel)))
                .await?;
            spawn_pump(dc.clone(), channel, guard.shared.clone());
            dcs.push(dc);
        }
        let offer = guard.pc.create_offer(None).await?;
        guard.pc.set_local_description(offer).await?;
        let offer = gathered_sdp(&guard.pc, &guard.shared, opts).await?;
        let dcs: [Arc<dyn DataChannel>; 3] = [dcs[0].clone(), dcs[1].clone(), dcs[2].clone()];
        Ok(HostOffer {
            guard,
            dcs,
            events,
            offer,
            opts: opts.clone(),
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
        let answer = match RTCSessionDescription::answer(answer_sdp.to_owned()) {
            Ok(a) => a,
            Err(e) => {
                self.close().await;
                return Err(e.into());
            }
        };
        if let Err(e) = self.guard.pc.set_remote_description(answer).await {
            self.close().await;
            return Err(e.into());
        }
        Ok(AnsweredOffer {
            guard: self.guard,
            dcs: self.dcs,
            events: self.events,
            opts: self.opts,
        })
    }

    /// Gives the offer up (nobody answered): closes the connection.
    pub async fn close(self) {
        close_pc(&self.guard).await;
    }
}

/// The host's side of one connection once the joiner's answer is applied:
/// ICE is checking; the channels are not open yet.
pub struct AnsweredOffer {
    guard: ClosingPc,
    dcs: [Arc<dyn DataChannel>; 3],
    events: mpsc::UnboundedReceiver<PeerEvent>,
    opts: WebRtcOptions,
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
        let mut progress = self.guard.shared.progress.subscribe();
        if progress.wait_for(|p| p.ice_connected).await.is_err() {
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
        wait_open(&self.guard.shared, self.opts.connect_timeout).await
    }

    /// The link, once [`Self::opened`] succeeded.
    pub fn into_link(self) -> WebRtcLink {
        make_link(self.guard, self.dcs, self.events, &self.opts)
    }

    /// Gives the join up: closes the connection.
    pub async fn close(self) {
        close_pc(&self.guard).await;
    }
}

/// The guest's side of one connection: the host's offer is applied, the
/// answer is complete.
pub struct GuestAnswer {
    guard: ClosingPc,
    /// The negotiated channels this side created, by channel index.
    negotiated: [Option<Arc<dyn DataChannel>>; 3],
    incoming: mpsc::UnboundedReceiver<Arc<dyn DataChannel>>,
    events: mpsc::UnboundedReceiver<PeerEvent>,
    answer: String,
    opts: WebRtcOptions,
}

impl std::fmt::Debug for GuestAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestAnswer").finish_non_exhaustive()
    }
}

impl GuestAnswer {
    /// Builds a connection, applies the host's offer, and gathers the
    /// complete answer.
    pub async fn new(opts: &WebRtcOptions, offer_sdp: &str) -> Result<Self, WebRtcError> {
        let offer = RTCSessionDescription::offer(offer_sdp.to_owned())?;
        let (shared, events) = Shared::new();
        let (incoming_tx, incoming) = mpsc::unbounded_channel();
        let handler = Arc::new(Handler {
            shared: shared.clone(),
            incoming: incoming_tx,
        });
        let pc = build_pc(opts, handler).await?;
        let guard = ClosingPc { pc, shared };
        guard.pc.set_remote_description(offer).await?;
        let mut negotiated: [Option<Arc<dyn DataChannel>>; 3] = [None, None, None];
        for channel in CHANNELS.into_iter().filter(|c| c.negotiated_id().is_some()) {
            let dc = guard
                .pc
                .create_data_channel(channel.label(), Some(channel_init(channel)))
                .await?;
            spawn_pump(dc.clone(), channel, guard.shared.clone());
            negotiated[channel_index(channel)] = Some(dc);
        }
        let answer = guard.pc.create_answer(None).await?;
        guard.pc.set_local_description(answer).await?;
        let answer = gathered_sdp(&guard.pc, &guard.shared, opts).await?;
        Ok(GuestAnswer {
            guard,
            negotiated,
            incoming,
            events,
            answer,
            opts: opts.clone(),
        })
    }

    /// The complete answer SDP, candidates included.
    pub fn answer_sdp(&self) -> &str {
        &self.answer
    }

    /// Waits (once the answer is published) for the host's channels to
    /// arrive and open. On failure the connection is closed.
    pub async fn connect(mut self) -> Result<WebRtcLink, WebRtcError> {
        let deadline = Instant::now() + self.opts.connect_timeout;
        let mut found = std::mem::take(&mut self.negotiated);
        let mut progress = self.guard.shared.progress.subscribe();
        let mut ignored: u64 = 0;
        while found.iter().any(Option::is_none) {
            let next = timeout_at(deadline, async {
                tokio::select! {
                    dc = self.incoming.recv() => dc,
                    _ = progress.wait_for(|p| p.failed) => None,
                }
            })
            .await;
            let dc = match next {
                Ok(Some(dc)) => dc,
                Ok(None) => {
                    close_pc(&self.guard).await;
                    return Err(WebRtcError::ConnectFailed);
                }
                Err(_) => {
                    close_pc(&self.guard).await;
                    return Err(WebRtcError::ConnectTimeout(self.opts.connect_timeout));
                }
            };
            let label = dc.label().await.unwrap_or_default();
            match CHANNELS.iter().find(|c| c.label() == label) {
                Some(&channel) if found[channel_index(channel)].is_none() => {
                    spawn_pump(dc.clone(), channel, self.guard.shared.clone());
                    found[channel_index(channel)] = Some(dc);
                }
                _ => {
                    // Logged at powers of two: a host could open thousands.
                    ignored += 1;
                    if u64::is_power_of_two(ignored) {
                        tracing::warn!(%label, ignored, "ignoring unexpected data channels");
                    }
                    let _ = dc.close().await;
                }
            }
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        let [Some(input), Some(recon), Some(unreliable)] = found else {
            close_pc(&self.guard).await;
            return Err(WebRtcError::ConnectTimeout(self.opts.connect_timeout));
        };
        if let Err(e) = wait_open(&self.guard.shared, remaining).await {
            close_pc(&self.guard).await;
            return Err(match e {
                WebRtcError::ConnectTimeout(_) => {
                    WebRtcError::ConnectTimeout(self.opts.connect_timeout)
                }
                e => e,
            });
        }
        Ok(make_link(
            self.guard,
            [input, recon, unreliable],
            self.events,
            &self.opts,
        ))
    }

    /// Gives up: closes the connection.
    pub async fn close(self) {
        close_pc(&self.guard).await;
    }
}
