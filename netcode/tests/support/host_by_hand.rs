//! A host session fed guests' hellos by hand.

use std::time::Duration;

use super::HostConfig;
use engine::wire::GuestMessage;
use netcode::link::PeerEvent;
use netcode::stats::GuestSlot;
use protocol::peer::{Channel, PEER_PROTOCOL_VERSION};

use super::HostSession;

/// A host configured by `config` without a lobby wait: it starts once its
/// expected guests are in, or when told to.
pub fn lobby_host(config: HostConfig) -> HostSession {
    HostSession::new(HostConfig {
        lobby_wait: None,
        ..config
    })
}

/// A guest connects to `h` at `now` and says `hello` at once; its slot.
pub fn seat(h: &mut HostSession, hello: impl Into<PeerEvent>, now: Duration) -> GuestSlot {
    let slot = h.add_guest(now);
    h.on_event(slot, hello.into(), now);
    slot
}

/// A guest's hello: from this build, taking up no feature, as a new
/// player, unless told otherwise.
#[derive(Clone, Debug)]
pub struct Hello {
    name: String,
    build: String,
    features: Vec<String>,
    resume: Option<String>,
    spectate: bool,
}

impl Hello {
    /// A hello from a guest named `name`.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            build: protocol::BUILD_VERSION.into(),
            features: vec![],
            resume: None,
            spectate: false,
        }
    }

    /// From build `build` instead.
    pub fn build(self, build: &str) -> Self {
        Self {
            build: build.into(),
            ..self
        }
    }

    /// Taking up `features`.
    pub fn taking(self, features: &[&str]) -> Self {
        Self {
            features: features.iter().map(|f| (*f).to_owned()).collect(),
            ..self
        }
    }

    /// Resuming the player `token` names.
    pub fn resuming(self, token: String) -> Self {
        Self {
            resume: Some(token),
            ..self
        }
    }

    /// Asking to watch.
    pub fn watching(self) -> Self {
        Self {
            spectate: true,
            ..self
        }
    }
}

impl From<Hello> for PeerEvent {
    fn from(h: Hello) -> Self {
        let text = GuestMessage::GuestHello(protocol::peer::GuestHello {
            build_version: h.build,
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: h.name,
            features: h.features,
            resume: h.resume,
            spectate: h.spectate,
        })
        .to_json()
        .expect("encode hello");
        PeerEvent::Message(Channel::Reconciliation, text.into())
    }
}

/// A plain hello from a guest named `name`.
pub fn hello(name: &str) -> PeerEvent {
    Hello::new(name).into()
}

/// A guest's word that it has built the level.
pub fn setup_ack() -> PeerEvent {
    PeerEvent::Message(Channel::Reconciliation, r#"{"type":"setup-ack"}"#.into())
}
