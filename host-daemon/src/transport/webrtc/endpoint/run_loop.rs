//! The run loop: the state of every connection of an endpoint, and its
//! turns: commands from the handles, datagrams from the socket, the
//! connections' timers, each bounded so the others get theirs.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use str0m::RtcConfig;
use str0m::change::SdpAnswer;
use str0m::crypto::Sha1HmacProvider;
use str0m::ice::TransId;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use crate::transport::TransportError;
use crate::transport::webrtc::peer::Peer;
use crate::transport::webrtc::shared::{CHANNELS, Command, ConnId, SendReply};
use crate::transport::webrtc::sources::few_candidates;
use crate::transport::webrtc::{MAX_DATAGRAM_BYTES, WebRtcError, WebRtcOptions};

/// The run loop's state: the socket, every connection, the routes to them
/// and their timers.
pub(super) struct RunLoop {
    pub(super) socket: UdpSocket,
    pub(super) advertised: SocketAddr,
    pub(super) config: RtcConfig,
    pub(super) opts: Arc<WebRtcOptions>,
    /// For the connections' shared state (weak, so the loop ends once
    /// every handle is gone).
    pub(super) commands: mpsc::WeakUnboundedSender<Command>,
    pub(super) rx: mpsc::UnboundedReceiver<Command>,
    pub(super) peers: HashMap<ConnId, Peer>,
    /// Datagrams from an address go to this connection.
    pub(super) by_addr: HashMap<SocketAddr, ConnId>,
    /// STUN requests naming this local username fragment go to this
    /// connection.
    pub(super) by_ufrag: HashMap<String, ConnId>,
    pub(super) ufrags: HashMap<ConnId, String>,
    /// Binding responses answering this transaction id go to this
    /// connection (the checks each connection remembers).
    pub(super) by_check: HashMap<TransId, ConnId>,
    /// HMAC-SHA1 for binding requests' MESSAGE-INTEGRITY.
    pub(super) hmac: &'static dyn Sha1HmacProvider,
    /// Every connection's next wake, ordered.
    pub(super) timers: BTreeSet<(Instant, ConnId)>,
    pub(super) next_id: u64,
    pub(super) connections: Arc<AtomicUsize>,
    /// How many addresses `by_addr` holds.
    pub(super) routed: Arc<AtomicUsize>,
    /// Scratch: addresses a connection just sent to.
    pub(super) routes: Vec<SocketAddr>,
    /// Connections with sends queued this turn, settled once at its end
    /// (so a tick's messages to one peer share its packets).
    pub(super) touched: Vec<ConnId>,
}

/// Commands, or datagrams, the run loop handles in one turn before it
/// looks at the others and at its timers.
const BATCH: usize = 32;

impl RunLoop {
    /// Runs until every handle is gone.
    pub(super) async fn run(mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM_BYTES];
        loop {
            let wake = self.timers.first().map(|(t, _)| *t);
            tokio::select! {
                biased;
                command = self.rx.recv() => match command {
                    Some(c) => {
                        self.command(c);
                        // More waiting are taken in one go (bounded, so
                        // datagrams and timers still get their turn).
                        for _ in 1..BATCH {
                            let Ok(c) = self.rx.try_recv() else { break };
                            self.command(c);
                        }
                        self.settle_touched();
                    }
                    None => break,
                },
                received = self.socket.recv_from(&mut buf) => match received {
                    Ok((n, source)) => {
                        self.datagram(source, &buf[..n]);
                        for _ in 1..BATCH {
                            let Ok((n, source)) = self.socket.try_recv_from(&mut buf) else {
                                break;
                            };
                            self.datagram(source, &buf[..n]);
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "UDP receive"),
                },
                _ = sleep_until(wake), if wake.is_some() => {}
            }
            self.expire(Instant::now());
        }
        tracing::debug!(local = %self.advertised, "WebRTC endpoint stopped");
    }

    /// Carries out one command of a handle. Sends are only queued; the
    /// connections they touched settle at the end of the turn, or before
    /// any other command (which then sees them written).
    fn command(&mut self, command: Command) {
        let now = Instant::now();
        if !matches!(command, Command::Send(..)) {
            self.settle_touched();
        }
        match command {
            Command::Offer(reply) => {
                let _ = reply.send(self.offer(now));
            }
            Command::Answer(offer, reply) => {
                let _ = reply.send(self.answer(now, &offer));
            }
            Command::ApplyAnswer(id, answer, reply) => {
                // A joiner's answer may list any number of candidates; the
                // stack checks a handful.
                let answer_sdp = few_candidates(&answer);
                let result = match SdpAnswer::from_sdp_string(&answer_sdp) {
                    Err(e) => Err(WebRtcError::Sdp(e.to_string())),
                    Ok(answer) => self
                        .with_peer(id, now, |p, _, _| match p.pending_offer.take() {
                            None => Err(WebRtcError::Sdp("no offer waits for an answer".into())),
                            Some(pending) => {
                                p.learn_remote_ufrag(&answer_sdp);
                                p.rtc()
                                    .sdp_api()
                                    .accept_answer(pending, answer)
                                    .map_err(|e| WebRtcError::Sdp(e.to_string()))
                            }
                        })
                        .unwrap_or(Err(WebRtcError::ConnectFailed)),
                };
                let _ = reply.send(result);
            }
            Command::Send(id, idx, payload, reply) => match self.peers.get_mut(&id) {
                Some(p) => {
                    if p.queue_send(idx, payload, reply) && !p.touched {
                        p.touched = true;
                        self.touched.push(id);
                    }
                }
                None => {
                    if let SendReply::Wait(tx) = reply {
                        let _ = tx.send(Err(TransportError::NotOpen(CHANNELS[idx].label())));
                    }
                }
            },
            Command::CloseChannel(id, idx) => {
                if let Some(p) = self.peers.get_mut(&id) {
                    p.close_channel(&self.socket, &mut self.routes, now, idx);
                }
                self.after(id);
            }
            Command::Close(id, reply) => match self.peers.get_mut(&id) {
                Some(p) => {
                    p.close(&self.socket, &mut self.routes, now, reply);
                    self.after(id);
                }
                None => {
                    if let Some(r) = reply {
                        let _ = r.send(());
                    }
                }
            },
            Command::Resume(id) => {
                if let Some(p) = self.peers.get_mut(&id) {
                    p.resume(&self.socket, &mut self.routes, now);
                }
                self.after(id);
            }
        }
    }

    /// Settles every connection with sends queued this turn: their
    /// messages are written and go out.
    fn settle_touched(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut touched = std::mem::take(&mut self.touched);
        for id in touched.drain(..) {
            if let Some(p) = self.peers.get_mut(&id) {
                p.touched = false;
                p.settle(&self.socket, &mut self.routes, now);
            }
            self.after(id);
        }
        // The scratch list keeps its room for the next turn.
        self.touched = touched;
    }

    /// Runs `f` on a connection (its `Rtc` changed: it settles after).
    fn with_peer<T>(
        &mut self,
        id: ConnId,
        now: Instant,
        f: impl FnOnce(&mut Peer, &UdpSocket, Instant) -> T,
    ) -> Option<T> {
        let p = self.peers.get_mut(&id)?;
        let out = f(p, &self.socket, now);
        p.settle(&self.socket, &mut self.routes, now);
        self.after(id);
        Some(out)
    }

    /// Wakes every connection whose timer is due.
    fn expire(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            if let Some(p) = self.peers.get_mut(&id) {
                p.registered = None;
                p.timeout(&self.socket, &mut self.routes, now);
            }
            self.after(id);
        }
    }
}

/// Sleeps until `wake`, or forever.
async fn sleep_until(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
