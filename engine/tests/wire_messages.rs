//! The raycaster's messages against the netcode spec: each one's JSON
//! shape, the fast paths, and both wire forms reading back every message
//! (moved from `protocol` when the raycaster's wire types came to the
//! engine, issue 47).

use std::collections::BTreeMap;

use engine::wire::difficulty::Difficulty;
use engine::wire::input::InputSnapshot;
use engine::wire::raycaster::{LevelSeed, Settings};
use engine::wire::snapshot::{AmmoPools, PlayerSnapshot, ReconciliationSnapshot};
use engine::wire::{
    GuestMessage, HostMessage, ReconciliationSnapshotMessage, SessionInit, TickInput,
    TickInputBundle, TickInputs,
};
use game_api::{PlayerId, WorldHash};
use proptest::prelude::*;
use protocol::chunk::{Chunk, ChunkEnd};
use protocol::peer::{
    Channel, EndReason, FoldedHash, GuestHello, JoinPoint, LinkHealth, RefusalReason, RosterAdd,
    RoundTripReport, ScoreRow,
};

fn ids() -> impl Strategy<Value = Vec<PlayerId>> {
    proptest::collection::btree_set("[a-z0-9-]{1,8}", 1..5)
        .prop_map(|s| s.into_iter().map(PlayerId::new).collect())
}

fn snapshot(tick: u64, rng: u32, ids: &[PlayerId]) -> ReconciliationSnapshot {
    ReconciliationSnapshot {
        tick,
        rng_state: rng,
        players: ids
            .iter()
            .map(|id| {
                (
                    id.clone(),
                    PlayerSnapshot {
                        pos_x: 1.5,
                        pos_y: 2.25,
                        dir_x: 1.0,
                        dir_y: 0.0,
                        plane_x: 0.0,
                        plane_y: 0.66,
                        health: 100.0,
                        swap: 0.0,
                        ammo: AmmoPools::default(),
                        weapon_index: 1,
                        keys_held: 0,
                        owned_weapons: vec![0, 1, 2],
                        alive: true,
                        kill_score: 3,
                        kills: 1,
                    },
                )
            })
            .collect(),
        enemies: vec![],
        mines: vec![],
        loot_drops: vec![],
        pickups_collected: vec![1],
        keys_collected: vec![],
        grid_version: 2,
        grid_delta: vec![],
        residual: None,
    }
}

#[test]
fn wire_shapes_match_the_spec() {
    let b = HostMessage::TickInputBundle(TickInputBundle {
        tick: 5,
        dt: protocol::tick::FIXED_DT,
        level_epoch: 1,
        inputs: BTreeMap::from([(PlayerId::new("a"), InputSnapshot::NEUTRAL)]),
        held_input_fallback: vec![PlayerId::new("a")],
        roster_remove: None,
        roster_add: None,
    });
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(v["type"], "tick-input-bundle");
    assert_eq!(v["levelEpoch"], 1);
    assert_eq!(v["heldInputFallback"][0], "a");
    assert!(v.get("rosterRemove").is_none());
    assert_eq!(b.channel(), Channel::Input);

    let s = HostMessage::ReconciliationSnapshot(ReconciliationSnapshotMessage {
        level_epoch: 2,
        snapshot: snapshot(30, 7, &[PlayerId::new("a")]),
    });
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["type"], "reconciliation-snapshot");
    assert_eq!(v["levelEpoch"], 2);
    assert_eq!(v["rngState"], 7);
    assert_eq!(v["tick"], 30);
    assert_eq!(HostMessage::from_json(&s.to_json().unwrap()).unwrap(), s);

    let c = HostMessage::LevelTransitionChunk {
        level_epoch: 3,
        chunk: Chunk {
            index: 0,
            data: "{".into(),
        },
    };
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["type"], "level-transition-chunk");
    assert_eq!(v["index"], 0);
    assert_eq!(HostMessage::from_json(&c.to_json().unwrap()).unwrap(), c);

    let h = GuestMessage::GuestHello(GuestHello {
        build_version: "b".into(),
        protocol_version: 1,
        display_name: "".into(),
        features: vec![],
        resume: None,
        spectate: false,
    });
    let v = serde_json::to_value(&h).unwrap();
    assert_eq!(v["type"], "guest-hello");
    assert_eq!(v["displayName"], "");
    // No features: the spec's own hello, field and all.
    assert!(v.get("features").is_none());
    // A hello from a peer that knows no features still parses.
    let old = r#"{"type":"host-hello","buildVersion":"b","protocolVersion":1}"#;
    assert_eq!(
        HostMessage::from_json(old).unwrap(),
        HostMessage::HostHello {
            build_version: "b".into(),
            protocol_version: 1,
            features: vec![],
            game: None,
        }
    );
    let ping = HostMessage::Ping {
        id: 7,
        round_trip: None,
    };
    assert_eq!(ping.to_json().unwrap(), r#"{"type":"ping","id":7}"#);
    assert_eq!(ping.channel(), Channel::Unreliable);
    // `round-trip`: the host's measure rides the ping; an older guest
    // ignores the field, an older host's ping reads as having none.
    let told = HostMessage::Ping {
        id: 8,
        round_trip: Some(RoundTripReport {
            rtt_us: 1_250,
            jitter_us: 300,
        }),
    };
    let text = told.to_json().unwrap();
    assert_eq!(
        text,
        r#"{"type":"ping","id":8,"roundTrip":{"rttUs":1250,"jitterUs":300}}"#
    );
    assert_eq!(HostMessage::from_json(&text).unwrap(), told);
    let pong = GuestMessage::Pong { id: 7 };
    assert_eq!(pong.to_json().unwrap(), r#"{"type":"pong","id":7}"#);
    assert_eq!(
        GuestMessage::from_json(r#"{"type":"pong","id":7}"#).unwrap(),
        pong
    );
    assert_eq!(pong.channel(), Channel::Unreliable);
    let batch = GuestMessage::TickInputs(TickInputs {
        player_id: PlayerId::new("g"),
        level_epoch: 2,
        first_tick: 40,
        inputs: vec![InputSnapshot::NEUTRAL; 2],
        hash_report: None,
        snapshot_ack: None,
    });
    let v = serde_json::to_value(&batch).unwrap();
    assert_eq!(v["type"], "tick-inputs");
    assert_eq!(v["firstTick"], 40);
    assert_eq!(v["inputs"].as_array().map(Vec::len), Some(2));
    assert_eq!(batch.channel(), Channel::Unreliable);
    assert_eq!(
        GuestMessage::from_json(&batch.to_json().unwrap()).unwrap(),
        batch
    );
    assert!(
        Channel::ALL
            .iter()
            .filter(|c| !c.reliable())
            .eq([Channel::Unreliable].iter())
    );
    let e = HostMessage::SessionEnd {
        reason: EndReason::LevelTransitionFailed,
        scores: vec![],
        level_epoch: 1,
        final_tick: 9,
    };
    assert_eq!(
        serde_json::to_value(&e).unwrap()["reason"],
        "level-transition-failed"
    );
    let t = GuestMessage::TickInput(TickInput {
        tick: 9,
        player_id: PlayerId::new("g"),
        input: InputSnapshot::NEUTRAL,
    });
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(v["type"], "tick-input");
    assert_eq!(v["playerId"], "g");
    assert_eq!(t.channel(), Channel::Input);
}

#[test]
fn fast_path_and_tag_anywhere_agree() {
    let b = HostMessage::TickInputBundle(TickInputBundle {
        tick: 7,
        dt: protocol::tick::FIXED_DT,
        level_epoch: 2,
        inputs: BTreeMap::from([(PlayerId::new("a"), InputSnapshot::NEUTRAL)]),
        held_input_fallback: vec![],
        roster_remove: Some(vec![PlayerId::new("b")]),
        roster_add: None,
    });
    let text = b.to_json().unwrap();
    assert!(text.starts_with(r#"{"type":"tick-input-bundle","#));
    assert_eq!(HostMessage::from_json(&text).unwrap(), b);
    let moved = format!(
        r#"{{"tick":7,"dt":{},"levelEpoch":2,"inputs":{{"a":{{}}}},"heldInputFallback":[],"rosterRemove":["b"],"type":"tick-input-bundle"}}"#,
        protocol::tick::FIXED_DT
    );
    assert_eq!(HostMessage::from_json(&moved).unwrap(), b);
    let bad = r#"{"type":"tick-input-bundle","tick":"x"}"#;
    assert!(HostMessage::from_json(bad).is_err());
    let t = r#"{"type":"tick-input","tick":3,"playerId":"g","input":{"fire":true}}"#;
    let GuestMessage::TickInput(t) = GuestMessage::from_json(t).unwrap() else {
        panic!("not a tick input");
    };
    assert!(t.input.fire);
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    assert!(HostMessage::from_json("{\"type\":\"nope\"}").is_err());
    assert!(GuestMessage::from_json("[]").is_err());
    assert!(GuestMessage::from_json("{\"type\":\"hash-report\",\"tick\":-1}").is_err());
}

proptest! {
    #[test]
    fn host_messages_round_trip(
        ids in ids(),
        tick in any::<u32>(),
        epoch in any::<u16>(),
        seed in any::<u32>(),
        name in ".{0,20}",
        held in any::<bool>(),
    ) {
        let inputs = ids.iter().map(|i| (i.clone(), InputSnapshot { fire: held, ..InputSnapshot::NEUTRAL })).collect();
        let msgs = vec![
            HostMessage::TickInputBundle(TickInputBundle {
                tick: u64::from(tick),
                dt: protocol::tick::FIXED_DT,
                level_epoch: u32::from(epoch),
                inputs,
                held_input_fallback: if held { ids.clone() } else { vec![] },
                roster_remove: held.then(|| ids[..1].to_vec()),
                roster_add: (!held).then(|| ids.iter().map(|i| (i.clone(), RosterAdd { input_delay: u64::from(seed % 9), name: name.clone() })).collect()),
            }),
            HostMessage::SessionInit(SessionInit {
                roster: ids.clone(),
                your_player_id: ids[0].clone(),
                tick_rate_hz: protocol::tick::TICK_RATE_HZ,
                fixed_dt: protocol::tick::FIXED_DT,
                input_delay_ticks: protocol::tick::INPUT_DELAY_TICKS,
                reconcile_interval_ticks: protocol::tick::RECONCILE_INTERVAL_TICKS,
                head: LevelSeed { gameplay_seed: seed },
                settings: Settings { difficulty: Difficulty::Hard },
                player_count: ids.len() as u32,
                player_names: ids.iter().map(|i| (i.clone(), name.clone())).collect(),
                input_delays: ids.iter().map(|i| (i.clone(), 2)).collect(),
                join: held.then_some(JoinPoint { level_epoch: u32::from(epoch), level_index: seed, tick: u64::from(tick), resumed: seed % 2 == 1 }),
                rejoin_token: held.then(|| name.clone()),
                spectator: !held,
            }),
            HostMessage::Spectators { names: vec![name.clone(); (seed % 4) as usize] },
            HostMessage::WaitingRoom {
                players: vec![name.clone(); (seed % 5) as usize],
                max_players: held.then_some(seed),
                guests_needed: (!held).then_some(tick),
                you: held.then_some(seed % 5),
            },
            HostMessage::ReconciliationSnapshot(ReconciliationSnapshotMessage {
                level_epoch: u32::from(epoch),
                snapshot: snapshot(u64::from(tick), seed, &ids),
            }),
            HostMessage::JoinRefused { reason: RefusalReason::VersionMismatch, detail: name.clone() },
            HostMessage::SessionEnd {
                reason: EndReason::Completed,
                scores: ids.iter().map(|i| ScoreRow { player_id: i.clone(), name: name.clone(), kill_score: tick, kills: seed, disconnected: held, link: LinkHealth { desyncs: seed, persistent_desyncs: tick, held_inputs: u64::from(seed) } }).collect(),
                level_epoch: u32::from(epoch),
                final_tick: u64::from(tick),
            },
            HostMessage::LevelTransitionEnd { level_epoch: u32::from(epoch), end: ChunkEnd { total_bytes: u64::from(tick), chunk_count: seed, checksum: "00".into() } },
        ];
        for m in msgs {
            let back = HostMessage::from_json(&m.to_json().unwrap()).unwrap();
            prop_assert_eq!(&back, &m);
            // Either wire form reads back the same message.
            let compact = m.encode(protocol::wire::WireFormat::Compact).unwrap();
            prop_assert_eq!(HostMessage::decode(&compact).unwrap(), m);
        }
    }

    #[test]
    fn guest_messages_round_trip(tick in any::<u32>(), epoch in any::<u32>(), hash in any::<u64>(), name in ".{0,20}") {
        let msgs = vec![
            GuestMessage::GuestHello(GuestHello { build_version: name.clone(), protocol_version: epoch, display_name: name.clone(), features: vec![name.clone()], resume: (tick % 2 == 0).then(|| name.clone()), spectate: tick % 3 == 0 }),
            GuestMessage::SetupAck,
            GuestMessage::Pong { id: tick },
            GuestMessage::LevelTransitionAck { level_epoch: epoch },
            GuestMessage::HashReport { tick: u64::from(tick), level_epoch: epoch, hash: WorldHash(hash).to_string() },
            GuestMessage::TickInput(TickInput { tick: u64::from(tick), player_id: PlayerId::new(name.clone()), input: InputSnapshot { mouse_delta_x: f64::from(tick) / 8.0, ..InputSnapshot::NEUTRAL } }),
            GuestMessage::TickInputs(TickInputs { player_id: PlayerId::new(name.clone()), level_epoch: epoch, first_tick: u64::from(tick), inputs: vec![InputSnapshot { fire: true, mouse_delta_x: -f64::from(tick) / 4.0, ..InputSnapshot::NEUTRAL }; 3], hash_report: None, snapshot_ack: None }),
            // `folded-reports`: a report and an acknowledgement ride along.
            GuestMessage::TickInputs(TickInputs { player_id: PlayerId::new(name.clone()), level_epoch: epoch, first_tick: u64::from(tick), inputs: vec![InputSnapshot::NEUTRAL], hash_report: (tick % 2 == 1).then(|| FoldedHash { tick: u64::from(tick), hash: WorldHash(hash).to_string() }), snapshot_ack: (tick % 3 == 0).then_some(u64::from(epoch)) }),
        ];
        for m in msgs {
            let back = GuestMessage::from_json(&m.to_json().unwrap()).unwrap();
            prop_assert_eq!(&back, &m);
            let compact = m.encode(protocol::wire::WireFormat::Compact).unwrap();
            prop_assert_eq!(GuestMessage::decode(&compact).unwrap(), m);
        }
    }
}

fn bundle(players: usize, tick: u64) -> TickInputBundle {
    let inputs: BTreeMap<PlayerId, InputSnapshot> = (0..players)
        .map(|i| {
            let id = if i == 0 {
                "host".to_owned()
            } else {
                format!("guest-{i}")
            };
            let input = InputSnapshot {
                move_forward: true,
                fire: tick % 3 == 0,
                mouse_delta_x: -3.25 + i as f64,
                ..InputSnapshot::NEUTRAL
            };
            (PlayerId::new(id), input.sanitized())
        })
        .collect();
    TickInputBundle {
        tick,
        dt: protocol::tick::FIXED_DT,
        level_epoch: 1,
        held_input_fallback: inputs.keys().skip(1).take(1).cloned().collect(),
        inputs,
        roster_remove: None,
        roster_add: None,
    }
}

#[test]
fn a_five_player_bundle_is_a_small_fraction_of_its_json() {
    let b = HostMessage::TickInputBundle(bundle(5, 300));
    let json = b.encode(protocol::wire::WireFormat::Json).unwrap();
    let compact = b.encode(protocol::wire::WireFormat::Compact).unwrap();
    assert!(compact.starts_with('~'));
    assert!(
        compact.len() * 8 < json.len(),
        "{} bytes compact, {} JSON",
        compact.len(),
        json.len()
    );
    assert_eq!(HostMessage::decode(&compact).unwrap(), b);
}
