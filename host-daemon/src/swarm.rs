//! A swarm of light guests: many WebRTC guest connections in one process,
//! with no engine, so one machine can load a daemon with a thousand
//! guests (`host-daemon swarm`, `scripts/bench-daemon --swarm`).
//!
//! A swarm guest joins through the lobby like `join` (its own endpoint and
//! socket: two one-socket endpoints carry one connection between them) and
//! speaks the guest side of the peer protocol just far enough to hold a
//! seat and play: it names back the features it understands (`ping`,
//! `compact`, delta snapshots, placed bundles, redundant inputs and input
//! runs), acknowledges the map and every level transition, answers pings,
//! and for every tick bundle it receives samples its input for the tick
//! `input delay` ticks later, taken in turn from a recording. On input
//! runs it sends the last eight only when the input changed, for two
//! ticks after, and as a keep-alive (the guest session's rule,
//! `lockstep::runs`); to a host without them, every input alone. It
//! never simulates, so it sends no hash reports (the host judges no one by
//! their absence) and it cannot tell a desync.

use engine::wire::Raycaster;
use std::sync::Arc;

use engine::wire::input::InputSnapshot;
use engine::wire::{GuestMessage, HostMessage};
use engine::wire::{TickInput, TickInputs};
use game_api::PlayerId;
use lockstep::runs::InputRuns;
use protocol::BUILD_VERSION;
use protocol::peer::{
    EndReason, FEATURE_BINARY, FEATURE_COMPACT, FEATURE_DELTA_SNAPSHOTS, FEATURE_INPUT_RUNS,
    FEATURE_PING, FEATURE_PLACED_BUNDLES, FEATURE_REDUNDANT_INPUTS, Feature, GuestHello,
    PlacedBundle, REDUNDANT_INPUTS, TickInputBundle,
};
use protocol::wire::WireFormat;
use serde::Serialize;

use crate::transport::{ConnectionState, PeerEvent, PeerLink, PeerReceiver, PeerSender};

/// What one swarm guest saw.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SwarmGuestReport {
    /// Its player, once the session said.
    pub player_id: Option<String>,
    /// Tick bundles received.
    pub bundles: u64,
    /// Ticks whose input it sampled.
    pub inputs: u64,
    /// Input messages sent (on input runs, fewer than the inputs).
    pub input_messages: u64,
    /// Pings answered.
    pub pongs: u64,
    /// Level transitions acknowledged.
    pub transitions: u64,
    /// Messages it could not read.
    pub unreadable: u64,
    /// How the session ended for it (none: the link was lost or it left).
    pub end_reason: Option<EndReason>,
}

/// A recording of inputs the swarm plays in turn.
#[derive(Clone, Debug)]
pub struct Recording(Arc<Vec<InputSnapshot>>);

impl Recording {
    /// The inputs one player sent through a recorded level (the first
    /// player of a replay file's bundles), or `None` when it holds none.
    pub fn from_replay(replay: &netcode::replay::Replay<Raycaster>) -> Option<Self> {
        let player = replay
            .bundles
            .iter()
            .find_map(|b| b.inputs.keys().next().cloned())?;
        let inputs: Vec<InputSnapshot> = replay
            .bundles
            .iter()
            .filter_map(|b| b.inputs.get(&player).cloned())
            .collect();
        (!inputs.is_empty()).then(|| Recording(Arc::new(inputs)))
    }

    /// A stand-in when no replay is given: a walk that turns and fires,
    /// one input per tick over four seconds, as varied as keys make it.
    pub fn walking() -> Self {
        let inputs = (0..120u32)
            .map(|i| {
                let mut input = InputSnapshot::NEUTRAL;
                input.move_forward = i % 40 < 30;
                input.turn_left = i % 40 >= 30;
                input.fire = i % 15 == 0;
                input
            })
            .collect();
        Recording(Arc::new(inputs))
    }

    fn at(&self, i: u64) -> &InputSnapshot {
        let n = self.0.len() as u64;
        &self.0[(i % n) as usize]
    }
}

/// How a swarm guest sends its inputs: one message a tick, or runs.
struct Sending {
    /// The host took up input runs (and redundant inputs with them).
    runs: Option<InputRuns>,
    /// The level the last sampled tick belongs to.
    level_epoch: u32,
}

impl Sending {
    /// The message, if any, for `player`'s input at `tick` of
    /// `level_epoch`, the `offset`-th guest playing `recording`.
    fn input(
        &mut self,
        player: &PlayerId,
        level_epoch: u32,
        tick: u64,
        recording: &Recording,
        offset: u64,
    ) -> Option<GuestMessage> {
        let input = |t: u64| recording.at(offset + t).clone();
        let Some(runs) = self.runs.as_mut() else {
            return Some(GuestMessage::TickInput(TickInput {
                tick,
                player_id: player.clone(),
                input: input(tick),
            }));
        };
        if level_epoch != self.level_epoch {
            self.level_epoch = level_epoch;
            runs.reset();
        }
        let changed = tick == 0 || input(tick) != input(tick - 1);
        if !runs.due(changed, tick) {
            return None;
        }
        let first_tick = tick.saturating_sub(REDUNDANT_INPUTS as u64 - 1);
        Some(GuestMessage::TickInputs(TickInputs {
            player_id: player.clone(),
            level_epoch,
            first_tick,
            inputs: (first_tick..=tick).map(input).collect(),
            hash_report: None,
            snapshot_ack: None,
        }))
    }
}

/// Plays one guest over `link` until the session ends or the link goes;
/// `offset` staggers where in the recording it starts.
pub async fn play<S: PeerSender, R: PeerReceiver>(
    link: PeerLink<S, R>,
    name: &str,
    recording: &Recording,
    offset: u64,
) -> SwarmGuestReport {
    let PeerLink {
        sender,
        mut receiver,
        ..
    } = link;
    let mut report = SwarmGuestReport::default();
    let mut format = WireFormat::Json;
    let mut me: Option<PlayerId> = None;
    let mut delay = 0u64;
    let mut sending = Sending {
        runs: None,
        level_epoch: 0,
    };
    while let Some(event) = receiver.recv().await {
        let payload = match event {
            PeerEvent::Message(_, payload) => payload,
            PeerEvent::State(ConnectionState::Closed | ConnectionState::Failed) => break,
            PeerEvent::State(_) => continue,
        };
        let decoded: Result<HostMessage, _> = HostMessage::decode_payload(&payload);
        let reply: Option<GuestMessage> = match decoded {
            Err(_) => {
                report.unreadable += 1;
                None
            }
            Ok(HostMessage::HostHello { features, .. }) => {
                // The guests' own hello, taking up the round trip probes
                // and the compact form (binary) when offered.
                let wants = [
                    FEATURE_PING,
                    FEATURE_COMPACT,
                    FEATURE_BINARY,
                    FEATURE_DELTA_SNAPSHOTS,
                    FEATURE_PLACED_BUNDLES,
                    FEATURE_REDUNDANT_INPUTS,
                    FEATURE_INPUT_RUNS,
                ]
                .map(str::to_owned);
                let (taken, hello) = GuestHello::taking(BUILD_VERSION, name, &features, &wants);
                format = taken.wire_format();
                sending.runs = (taken.has(Feature::RedundantInputs)
                    && taken.has(Feature::InputRuns))
                .then(InputRuns::default);
                Some(GuestMessage::GuestHello(hello))
            }
            Ok(HostMessage::SessionInit(init)) => {
                delay = init
                    .input_delays
                    .get(&init.your_player_id)
                    .copied()
                    .unwrap_or(init.input_delay_ticks);
                report.player_id = Some(init.your_player_id.to_string());
                me = Some(init.your_player_id);
                None
            }
            Ok(HostMessage::MapEnd(_)) => Some(GuestMessage::SetupAck),
            Ok(HostMessage::LevelTransitionEnd { level_epoch, .. }) => {
                report.transitions += 1;
                Some(GuestMessage::LevelTransitionAck { level_epoch })
            }
            Ok(HostMessage::Ping { id, .. }) => {
                report.pongs += 1;
                Some(GuestMessage::Pong { id })
            }
            Ok(HostMessage::TickInputBundle(TickInputBundle {
                tick, level_epoch, ..
            }))
            | Ok(HostMessage::PlacedBundle(PlacedBundle {
                tick, level_epoch, ..
            })) => {
                report.bundles += 1;
                me.as_ref().and_then(|player| {
                    report.inputs += 1;
                    sending.input(player, level_epoch, tick + delay, recording, offset)
                })
            }
            // Held as a base by a guest with an engine; a light guest
            // acknowledges it unread, so the host keeps sending deltas.
            Ok(HostMessage::SnapshotDelta(d)) => Some(GuestMessage::SnapshotAck {
                level_epoch: d.level_epoch,
                tick: d.tick,
            }),
            Ok(HostMessage::SessionEnd { reason, .. }) => {
                report.end_reason = Some(reason);
                break;
            }
            Ok(HostMessage::JoinRefused { .. }) => break,
            Ok(_) => None,
        };
        let Some(message) = reply else { continue };
        let Ok(payload) = message.encode_payload(format) else {
            continue;
        };
        if matches!(
            message,
            GuestMessage::TickInput(_) | GuestMessage::TickInputs(_)
        ) {
            report.input_messages += 1;
        }
        if sender.send(message.channel(), payload).await.is_err() {
            break;
        }
    }
    sender.close();
    report
}
