//! Sends: each waits in its channel's queue until the channel has room
//! (fewer than [`WebRtcOptions::send_buffer_limit`] bytes unacknowledged),
//! then is written; whoever sent it hears how it went.
//!
//! [`WebRtcOptions::send_buffer_limit`]: crate::transport::webrtc::WebRtcOptions::send_buffer_limit

use std::sync::atomic::Ordering;

use super::Peer;
use crate::transport::webrtc::shared::{CHANNELS, SendReply, Shared};
use crate::transport::{Payload, TransportError};

/// A send that waits for room in its channel.
pub(super) type WaitingSend = (Payload, SendReply);

impl Peer {
    /// Queues `payload` on channel `idx`, to be written once it has room
    /// (at the connection's next [`Peer::settle`]); `reply` hears how it
    /// went. Refused at once, and `false`, when the channel is not open or
    /// the message is over the data channel's limit.
    pub(in crate::transport::webrtc) fn queue_send(
        &mut self,
        idx: usize,
        payload: Payload,
        reply: SendReply,
    ) -> bool {
        let label = CHANNELS[idx].label();
        if self.closing.is_some() || self.done || !self.shared.is_open(idx) {
            answer(
                &self.shared,
                idx,
                reply,
                Err(TransportError::NotOpen(label)),
            );
            return false;
        }
        if payload.len() > self.opts.max_message_bytes {
            tracing::error!(
                channel = label,
                bytes = payload.len(),
                max = self.opts.max_message_bytes,
                "refusing a message larger than the data channel's limit"
            );
            answer(
                &self.shared,
                idx,
                reply,
                Err(TransportError::NotOpen(label)),
            );
            return false;
        }
        self.waiting[idx].push_back((payload, reply));
        true
    }

    /// Writes every waiting send that has room, channel by channel, before
    /// the output is drained once: the messages of one turn share SCTP
    /// packets. Whether anything was written or refused.
    pub(super) fn write_all_waiting(&mut self) -> bool {
        let mut any = false;
        for idx in 0..CHANNELS.len() {
            // Bounded: each write takes a send from the queue.
            while !self.waiting[idx].is_empty() && self.write_waiting(idx) {
                any = true;
            }
        }
        any
    }

    /// Writes the oldest waiting send of channel `idx` if it has room.
    fn write_waiting(&mut self, idx: usize) -> bool {
        let limit = self.opts.send_buffer_limit;
        let label = CHANNELS[idx].label();
        let Some(mut channel) = self.channels[idx].and_then(|id| self.rtc.channel(id)) else {
            for (_, reply) in self.waiting[idx].drain(..) {
                answer(
                    &self.shared,
                    idx,
                    reply,
                    Err(TransportError::NotOpen(label)),
                );
            }
            return false;
        };
        if channel.buffered_amount() > limit {
            return false;
        }
        let Some((text, _)) = self.waiting[idx].front() else {
            return false;
        };
        let binary = matches!(text, Payload::Binary(_));
        let result = channel.write(binary, text.as_bytes());
        match result {
            Ok(false) => false,
            Ok(true) => {
                self.written += 1;
                if let Some((_, reply)) = self.waiting[idx].pop_front() {
                    answer(&self.shared, idx, reply, Ok(()));
                }
                true
            }
            Err(e) => {
                tracing::debug!(error = %e, channel = label, "a write was refused");
                if let Some((_, reply)) = self.waiting[idx].pop_front() {
                    answer(
                        &self.shared,
                        idx,
                        reply,
                        Err(TransportError::NotOpen(label)),
                    );
                }
                true
            }
        }
    }

    /// Nothing this side sent is unacknowledged.
    pub(super) fn flushed(&mut self) -> bool {
        if self.waiting.iter().any(|w| !w.is_empty()) {
            return false;
        }
        let ids = self.channels;
        ids.into_iter().flatten().all(|id| {
            self.rtc
                .channel(id)
                .is_none_or(|mut c| c.buffered_amount() == 0)
        })
    }
}

/// Tells how a send on channel `idx` ended: to the sender waiting for it,
/// or (a fired send) by taking it off the connection's count.
pub(super) fn answer(
    shared: &Shared,
    idx: usize,
    reply: SendReply,
    result: Result<(), TransportError>,
) {
    match reply {
        SendReply::Wait(tx) => {
            let _ = tx.send(result);
        }
        SendReply::Fired => {
            shared.fired[idx].fetch_sub(1, Ordering::SeqCst);
        }
    }
}
