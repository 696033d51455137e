//! The envelope carries any game: the toy game (`game_api::toy`), whose
//! input is one byte and whose snapshot is a counter, travels in both wire
//! forms, with no type of the raycaster in sight.

use std::collections::BTreeMap;

use game_api::PlayerId;
use game_api::toy::{Count, Rounds, Speed, Start, Toy};
use protocol::chunk::split;
use protocol::peer::{
    GuestMessage, HostMessage, JoinPayload, ReconciliationSnapshotMessage, RelayLevel, SessionInit,
    TickInput, TickInputBundle, TickInputs, TransitionPayload,
};
use protocol::tick::FIXED_DT;
use protocol::wire::WireFormat;

fn both<M>(msg: &M, encode: impl Fn(&M, WireFormat) -> String) -> [String; 2] {
    [
        encode(msg, WireFormat::Json),
        encode(msg, WireFormat::Compact),
    ]
}

#[test]
fn a_toy_games_messages_travel_in_both_forms() {
    let a = PlayerId::new("a");
    let bundle = HostMessage::<Toy>::TickInputBundle(TickInputBundle {
        tick: 9,
        dt: FIXED_DT,
        level_epoch: 1,
        inputs: BTreeMap::from([(a.clone(), 3), (PlayerId::new("b"), 0)]),
        held_input_fallback: vec![a.clone()],
        roster_remove: None,
        roster_add: None,
    });
    let snapshot = HostMessage::<Toy>::ReconciliationSnapshot(ReconciliationSnapshotMessage {
        level_epoch: 1,
        snapshot: Count { tick: 9, total: 42 },
    });
    for msg in [bundle, snapshot] {
        let [json, compact] = both(&msg, |m, f| m.encode(f).unwrap());
        assert!(
            json.starts_with('{') && compact.starts_with('~'),
            "{json} {compact}"
        );
        assert_eq!(HostMessage::<Toy>::decode(&json).unwrap(), msg);
        assert_eq!(HostMessage::<Toy>::decode(&compact).unwrap(), msg);
    }
    let json = HostMessage::<Toy>::ReconciliationSnapshot(ReconciliationSnapshotMessage {
        level_epoch: 1,
        snapshot: Count { tick: 9, total: 42 },
    })
    .to_json()
    .unwrap();
    assert_eq!(
        json,
        r#"{"type":"reconciliation-snapshot","levelEpoch":1,"tick":9,"total":42}"#
    );
    let input = GuestMessage::<Toy>::TickInput(TickInput {
        tick: 9,
        player_id: a.clone(),
        input: 7,
    });
    let inputs = GuestMessage::<Toy>::TickInputs(TickInputs {
        player_id: a,
        level_epoch: 1,
        first_tick: 7,
        inputs: vec![1, 2, 3],
        hash_report: None,
        snapshot_ack: None,
    });
    for msg in [input, inputs] {
        for text in both(&msg, |m, f| m.encode(f).unwrap()) {
            assert_eq!(GuestMessage::<Toy>::decode(&text).unwrap(), msg);
        }
    }
}

#[test]
fn a_compact_input_the_game_refuses_is_an_error() {
    let bad = GuestMessage::<Toy>::TickInput(TickInput {
        tick: 1,
        player_id: PlayerId::new("a"),
        input: 255,
    });
    let compact = bad.encode(WireFormat::Compact).unwrap();
    let err = GuestMessage::<Toy>::decode(&compact).unwrap_err();
    assert!(err.to_string().contains("255 is not a move"), "{err}");
}

#[test]
fn a_toy_games_levels_travel_in_its_own_parts() {
    let a = PlayerId::new("a");
    let init = HostMessage::<Toy>::SessionInit(SessionInit {
        roster: vec![a.clone()],
        your_player_id: a.clone(),
        tick_rate_hz: 30,
        fixed_dt: FIXED_DT,
        input_delay_ticks: 3,
        reconcile_interval_ticks: 30,
        head: Start { start: 5 },
        settings: Speed { speed: 2 },
        player_count: 1,
        player_names: BTreeMap::from([(a.clone(), "Ada".to_owned())]),
        input_delays: BTreeMap::new(),
        join: None,
        rejoin_token: None,
        spectator: false,
    });
    let json = init.to_json().unwrap();
    assert!(
        json.contains(r#""reconcileIntervalTicks":30,"start":5,"speed":2,"playerCount":1,"#),
        "{json}"
    );
    assert_eq!(HostMessage::<Toy>::decode(&json).unwrap(), init);

    let ask = HostMessage::<Toy>::RelayAskLevel {
        level_epoch: 2,
        level_index: 1,
        roster: BTreeMap::from([(a.clone(), "Ada".to_owned())]),
        input_delays: BTreeMap::from([(a.clone(), 3)]),
        campaign: Rounds { rounds: 4 },
        levels: 2,
        settings: Speed { speed: 2 },
    };
    let json = ask.to_json().unwrap();
    assert_eq!(
        json,
        r#"{"type":"relay-ask-level","levelEpoch":2,"levelIndex":1,"roster":{"a":"Ada"},"inputDelays":{"a":3},"rounds":4,"levels":2,"speed":2}"#
    );
    assert_eq!(HostMessage::<Toy>::decode(&json).unwrap(), ask);

    let payload = TransitionPayload::<Toy> {
        level_index: 1,
        head: Start { start: 9 },
        roster: vec![a.clone()],
        player_count: 1,
        carryovers: BTreeMap::from([(a.clone(), 40)]),
        body: vec![1, 2, 3],
        input_delays: BTreeMap::new(),
    };
    let text = serde_json::to_string(&payload).unwrap();
    assert_eq!(
        text,
        r#"{"levelIndex":1,"start":9,"roster":["a"],"playerCount":1,"carryovers":{"a":40},"map":[1,2,3]}"#
    );
    let (chunks, end) = split(&text);
    let mut whole = protocol::chunk::Reassembler::default();
    for c in &chunks {
        whole.push(c).unwrap();
    }
    let back: TransitionPayload<Toy> = whole.finish_parse(&end).unwrap();
    assert_eq!(back, payload);

    let level = GuestMessage::<Toy>::RelayLevel {
        level_epoch: 2,
        level: Box::new(RelayLevel::new(payload, &[7, 7])),
    };
    assert_eq!(
        GuestMessage::<Toy>::decode(&level.to_json().unwrap()).unwrap(),
        level
    );
    let join = JoinPayload::<Toy>::new(vec![4], &[1]);
    assert_eq!(
        serde_json::to_string(&join).unwrap(),
        r#"{"map":[4],"state":"AQ=="}"#
    );
}

#[test]
fn a_bundle_by_place_names_its_players_again_only_with_the_same_ones() {
    let ids = [PlayerId::new("a"), PlayerId::new("b"), PlayerId::new("c")];
    let whole = TickInputBundle::<Toy> {
        tick: 12,
        dt: FIXED_DT,
        level_epoch: 2,
        inputs: ids.iter().cloned().zip([1u8, 2, 3]).collect(),
        held_input_fallback: vec![ids[2].clone()],
        roster_remove: None,
        roster_add: None,
    };
    let placed = whole.placed().expect("no roster change");
    assert_eq!(
        (placed.inputs.clone(), placed.held.clone()),
        (vec![1, 2, 3], vec![2])
    );
    let msg = HostMessage::<Toy>::PlacedBundle(placed.clone());
    for text in both(&msg, |m, f| m.encode(f).expect("encode")) {
        assert_eq!(HostMessage::<Toy>::decode(&text).expect("decode"), msg);
    }
    assert_eq!(placed.clone().named(&ids), Some(whole.clone()));
    // Other players than the last whole bundle's: not a bundle.
    assert_eq!(placed.clone().named(&ids[..2]), None);
    let bad_place = protocol::peer::PlacedBundle {
        held: vec![7],
        ..placed
    };
    assert_eq!(bad_place.named(&ids), None);
    // A roster change goes whole.
    let leaving = TickInputBundle {
        roster_remove: Some(vec![ids[1].clone()]),
        ..whole
    };
    assert!(leaving.placed().is_none());
}
