//! A new connection in the run loop: its `Rtc` with the endpoint's one
//! candidate and fresh ICE credentials, its channels, and the SDP of the
//! offer this side makes or of its answer to the other side's offer.

use std::sync::Arc;
use std::time::Instant;

use protocol::peer::Channel;
use str0m::change::SdpOffer;
use str0m::channel::{ChannelConfig, Reliability};
use str0m::{Candidate, IceCreds, Rtc};
use tokio::sync::mpsc;

use super::run_loop::RunLoop;
use crate::transport::PeerEvent;
use crate::transport::webrtc::WebRtcError;
use crate::transport::webrtc::peer::Peer;
use crate::transport::webrtc::shared::{CHANNELS, ConnId, Opened, Shared, channel_index};
use crate::transport::webrtc::sources::few_candidates;

impl RunLoop {
    /// A connection's shared state, under a fresh id (`None` once every
    /// handle is gone).
    fn new_shared(&mut self) -> Option<(Arc<Shared>, mpsc::UnboundedReceiver<PeerEvent>)> {
        let commands = self.commands.upgrade()?;
        let id = ConnId(self.next_id);
        self.next_id += 1;
        let (shared, events) = Shared::new(id, commands);
        Some((Arc::new(shared), events))
    }

    /// A new `Rtc` with the endpoint's candidate and fresh ICE credentials.
    fn new_rtc(&self) -> (Rtc, IceCreds) {
        let creds = IceCreds::new();
        let mut rtc = self
            .config
            .clone()
            .set_local_ice_credentials(creds.clone())
            .build(Instant::now());
        if let Ok(c) = Candidate::host(self.advertised, "udp") {
            rtc.add_local_candidate(c);
        }
        (rtc, creds)
    }

    /// A new host-side connection and its offer.
    pub(super) fn offer(&mut self, now: Instant) -> Result<Opened, WebRtcError> {
        let (shared, events) = self.new_shared().ok_or(WebRtcError::EndpointGone)?;
        let (mut rtc, creds) = self.new_rtc();
        let ufrag = creds.ufrag.clone();
        let mut sdp = rtc.sdp_api();
        let mut channels = [None; 3];
        for channel in CHANNELS {
            channels[channel_index(channel)] =
                Some(sdp.add_channel_with_config(channel_config(channel)));
        }
        let Some((offer, pending)) = sdp.apply() else {
            return Err(WebRtcError::Sdp("nothing to offer".into()));
        };
        let mut peer = Peer::new(
            rtc,
            creds,
            shared.clone(),
            channels,
            self.advertised,
            self.opts.clone(),
        );
        peer.pending_offer = Some(pending);
        self.insert(shared.id, ufrag, peer, now);
        Ok(Opened {
            shared,
            events,
            sdp: offer.to_sdp_string(),
        })
    }

    /// A new guest-side connection from the other side's `offer`, and
    /// its answer.
    pub(super) fn answer(&mut self, now: Instant, offer: &str) -> Result<Opened, WebRtcError> {
        let offer_sdp = few_candidates(offer);
        let offer =
            SdpOffer::from_sdp_string(&offer_sdp).map_err(|e| WebRtcError::Sdp(e.to_string()))?;
        let (shared, events) = self.new_shared().ok_or(WebRtcError::EndpointGone)?;
        let (mut rtc, creds) = self.new_rtc();
        let ufrag = creds.ufrag.clone();
        let mut channels = [None; 3];
        // The negotiated channel: both sides create it.
        for channel in CHANNELS.into_iter().filter(|c| c.negotiated_id().is_some()) {
            channels[channel_index(channel)] = Some(
                rtc.direct_api()
                    .create_data_channel(channel_config(channel)),
            );
        }
        let answer = rtc
            .sdp_api()
            .accept_offer(offer)
            .map_err(|e| WebRtcError::Sdp(e.to_string()))?;
        let mut peer = Peer::new(
            rtc,
            creds,
            shared.clone(),
            channels,
            self.advertised,
            self.opts.clone(),
        );
        peer.learn_remote_ufrag(&offer_sdp);
        self.insert(shared.id, ufrag, peer, now);
        Ok(Opened {
            shared,
            events,
            sdp: answer.to_sdp_string(),
        })
    }
}

/// How `channel` is created: the spec's two reliable and ordered, in band
/// (the host creates them, the guest accepts them); the unreliable one
/// unordered, never retransmitted, negotiated (both sides create it).
fn channel_config(channel: Channel) -> ChannelConfig {
    ChannelConfig {
        label: channel.label().to_owned(),
        ordered: channel.reliable(),
        reliability: if channel.reliable() {
            Reliability::Reliable
        } else {
            Reliability::MaxRetransmits { retransmits: 0 }
        },
        negotiated: channel.negotiated_id(),
        protocol: String::new(),
    }
}
