//! A guest session fed the host's messages by hand, all at time zero:
//! the handshake, the level in chunks, then tick bundles.

use std::collections::BTreeMap;
use std::time::Duration;

use engine::wire::difficulty::Difficulty;
use engine::wire::input::InputSnapshot;
use engine::wire::raycaster::{LevelSeed, Settings};
use engine::wire::{HostMessage, SessionInit, TickInputBundle};
use game_api::PlayerId;
use netcode::guest::GuestConfig;
use netcode::link::PeerEvent;
use protocol::chunk::split;
use protocol::peer::{JoinPoint, PEER_PROTOCOL_VERSION};
use protocol::tick::{FIXED_DT, INPUT_DELAY_TICKS, RECONCILE_INTERVAL_TICKS, TICK_RATE_HZ};
use serde::Serialize;

use super::GuestSession;

/// `g` hears `m` on its channel, then polls.
pub fn feed(g: &mut GuestSession, m: HostMessage) {
    let text = m.to_json().expect("encodes");
    g.on_event(PeerEvent::Message(m.channel(), text.into()), Duration::ZERO);
    g.poll(Duration::ZERO);
}

/// A hello from a host of this build offering `features`.
pub fn host_hello(features: &[&str]) -> HostMessage {
    HostMessage::HostHello {
        build_version: protocol::BUILD_VERSION.into(),
        protocol_version: PEER_PROTOCOL_VERSION,
        features: features.iter().map(|f| (*f).to_owned()).collect(),
        game: None,
    }
}

/// The init of a session on the spec's fixed delays (seed 5, normal
/// difficulty) that makes the guest `me` among `roster`, joining at
/// `join` if the level already runs.
pub fn session_init(
    me: &PlayerId,
    roster: &[PlayerId],
    player_count: u32,
    join: Option<JoinPoint>,
) -> HostMessage {
    HostMessage::SessionInit(SessionInit {
        roster: roster.to_vec(),
        your_player_id: me.clone(),
        tick_rate_hz: TICK_RATE_HZ,
        fixed_dt: FIXED_DT,
        input_delay_ticks: INPUT_DELAY_TICKS,
        reconcile_interval_ticks: RECONCILE_INTERVAL_TICKS,
        head: LevelSeed { gameplay_seed: 5 },
        settings: Settings {
            difficulty: Difficulty::Normal,
        },
        player_count,
        player_names: BTreeMap::new(),
        input_delays: BTreeMap::new(),
        join,
        rejoin_token: None,
        spectator: false,
    })
}

/// A guest configured by `config` that heard a host hello offering no
/// feature, then `init`.
pub fn handshaken(config: GuestConfig, init: HostMessage) -> GuestSession {
    let mut g = GuestSession::new(config);
    feed(&mut g, host_hello(&[]));
    feed(&mut g, init);
    g
}

/// `g` hears `payload` (a map or a join payload) as map chunks and their end.
pub fn feed_chunked(g: &mut GuestSession, payload: &impl Serialize) {
    let (chunks, end) = split(&serde_json::to_string(payload).expect("encodes"));
    for chunk in chunks {
        feed(g, HostMessage::MapChunk(chunk));
    }
    feed(g, HostMessage::MapEnd(end));
}

/// The bundle of `tick` in level `epoch`: `inputs`, nothing held, no
/// roster change.
pub fn bundle(epoch: u32, tick: u64, inputs: &BTreeMap<PlayerId, InputSnapshot>) -> HostMessage {
    HostMessage::TickInputBundle(TickInputBundle {
        tick,
        dt: FIXED_DT,
        level_epoch: epoch,
        inputs: inputs.clone(),
        held_input_fallback: vec![],
        roster_remove: None,
        roster_add: None,
    })
}
