//! The peer relay plays a game that is not the raycaster (issue 47): the
//! toy (`game_api::toy`), whose input is one byte and whose settings,
//! level head, level body and campaign are its own structs. The relay asks the authority for a
//! level in the toy's campaign and settings, hands the toy's level to the
//! other guest, sanitizes inputs by the toy's rule and bundles them in
//! both wire forms. Guests are played by hand on a virtual clock.

use std::time::Duration;

use game_api::PlayerId;
use game_api::toy::{NOT_A_MOVE, Rounds, Speed, Start, Toy};
use protocol::BUILD_VERSION;
use protocol::chunk::{Chunk, ChunkEnd, Reassembler};
use protocol::peer::{
    FEATURE_BINARY, FEATURE_COMPACT, FEATURE_RELAY, GuestHello, GuestMessage, HostMessage,
    PEER_PROTOCOL_VERSION, RelayLevel, SessionInit, TickInput, TransitionPayload,
};
use protocol::tick::INPUT_DELAY_TICKS;
use protocol::wire::WireFormat;

use lockstep::peer::{PeerOutput, PeerRelay, PeerRelayConfig};
use lockstep::relay::{RelayConfig, RelayPhase, Slot};

/// What the relay sent, by slot, in the form it was sent in.
fn sent(relay: &mut PeerRelay<Toy>) -> Vec<(Slot, HostMessage<Toy>, WireFormat)> {
    let mut out = Vec::new();
    for o in relay.drain_outbox() {
        match o {
            PeerOutput::Send(slot, msg, f) => out.push((slot, msg, f)),
            PeerOutput::Broadcast(slots, msg, f) => {
                out.extend(slots.into_iter().map(|s| (s, msg.clone(), f)));
            }
            PeerOutput::Close(slot) => panic!("the relay closed slot {slot}"),
        }
    }
    out
}

fn say(relay: &mut PeerRelay<Toy>, slot: Slot, msg: GuestMessage<Toy>, now: Duration) {
    relay.message(slot, &msg.to_json().expect("encodes").into(), now);
}

#[test]
fn the_relay_carries_a_toy_games_levels_settings_and_inputs() {
    let mut relay = PeerRelay::<Toy>::new(PeerRelayConfig {
        relay: RelayConfig {
            start_players: 3,
            ..RelayConfig::default()
        },
        campaign: Rounds { rounds: 7 },
        settings: Speed { speed: 3 },
        levels: 1,
        input_delay: Some(INPUT_DELAY_TICKS),
        ..PeerRelayConfig::default()
    });
    let mut now = Duration::ZERO;
    let binary = vec![FEATURE_COMPACT, FEATURE_BINARY];
    for (slot, features) in [
        (0, vec![FEATURE_RELAY]),
        (1, vec![FEATURE_COMPACT]),
        (2, binary),
    ] {
        relay.connected(slot, None, now);
        let hello = GuestHello {
            build_version: BUILD_VERSION.to_owned(),
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: format!("guest {slot}"),
            features: features.into_iter().map(str::to_owned).collect(),
            resume: None,
            spectate: false,
        };
        say(&mut relay, slot, GuestMessage::GuestHello(hello), now);
    }
    relay.poll(now);

    // The authority is asked for the first level in the toy's terms.
    let ask = sent(&mut relay)
        .into_iter()
        .find_map(|(slot, msg, _)| match msg {
            HostMessage::RelayAskLevel {
                campaign, settings, ..
            } if slot == 0 => Some((campaign, settings)),
            _ => None,
        })
        .expect("the authority is asked for a level");
    assert_eq!(ask, (Rounds { rounds: 7 }, Speed { speed: 3 }));

    let roster = relay.relay().roster();
    let level = RelayLevel::<Toy>::new(
        TransitionPayload {
            level_index: 0,
            head: Start { start: 40 },
            player_count: roster.len() as u32,
            roster,
            carryovers: Default::default(),
            body: vec![1, 2, 3],
            input_delays: Default::default(),
        },
        &[9, 9],
    );
    let level = GuestMessage::RelayLevel {
        level_epoch: 1,
        level: Box::new(level),
    };
    say(&mut relay, 0, level, now);

    // The other guest gets the toy's level as a host would send it.
    let mut init: Option<SessionInit<Toy>> = None;
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut end: Option<ChunkEnd> = None;
    for (slot, msg, _) in sent(&mut relay) {
        match msg {
            HostMessage::SessionInit(i) if slot == 1 => init = Some(i),
            HostMessage::MapChunk(c) if slot == 1 => chunks.push(c),
            HostMessage::MapEnd(e) if slot == 1 => end = Some(e),
            _ => {}
        }
    }
    let init = init.expect("guest 1 gets a session init");
    assert_eq!(init.head, Start { start: 40 });
    assert_eq!(init.settings, Speed { speed: 3 });
    let mut body = Reassembler::new(16);
    for c in &chunks {
        body.push(c).expect("a chunk in order");
    }
    let body: Vec<u8> = body
        .finish_parse(&end.expect("the chunks end"))
        .expect("the level body");
    assert_eq!(body, vec![1, 2, 3]);

    for slot in 0..3 {
        say(
            &mut relay,
            slot,
            GuestMessage::LevelTransitionAck { level_epoch: 1 },
            now,
        );
    }
    now += Duration::from_millis(10);
    relay.poll(now);
    assert_eq!(relay.relay().phase(), RelayPhase::Running);

    // Inputs go out sanitized by the toy's rule, in each guest's form.
    let tick = relay.relay().next_tick() + INPUT_DELAY_TICKS;
    for (slot, input) in [(0, NOT_A_MOVE), (1, 5), (2, 6)] {
        let input = GuestMessage::TickInput(TickInput {
            tick,
            player_id: PlayerId::new(format!("player-{}", slot + 1)),
            input,
        });
        say(&mut relay, slot, input, now);
    }
    let mut bundles = Vec::new();
    for _ in 0..200 {
        now += Duration::from_millis(5);
        relay.poll(now);
        for (slot, msg, format) in sent(&mut relay) {
            if let HostMessage::TickInputBundle(b) = &msg
                && b.tick == tick
            {
                let payload = msg.encode_payload(format).expect("encodes");
                bundles.push((slot, format, HostMessage::<Toy>::decode_payload(&payload)));
            }
        }
        if bundles.len() == 3 {
            break;
        }
    }
    bundles.sort_by_key(|(slot, ..)| *slot);
    let forms: Vec<(Slot, WireFormat)> = bundles.iter().map(|(s, f, _)| (*s, *f)).collect();
    let want = [WireFormat::Json, WireFormat::Compact, WireFormat::Binary];
    assert_eq!(forms, want.into_iter().enumerate().collect::<Vec<_>>());
    for (_, _, msg) in bundles {
        let Ok(HostMessage::TickInputBundle(b)) = msg else {
            panic!("a bundle reads back: {msg:?}");
        };
        let inputs: Vec<(PlayerId, u8)> = b.inputs.into_iter().collect();
        assert_eq!(
            inputs,
            vec![
                (PlayerId::new("player-1"), NOT_A_MOVE - 1),
                (PlayerId::new("player-2"), 5),
                (PlayerId::new("player-3"), 6)
            ]
        );
    }
}
