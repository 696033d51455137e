//! The envelope carries any game: a toy game whose input is one byte and
//! whose snapshot is a counter travels in both wire forms, with no type of
//! the raycaster in sight.

use std::collections::BTreeMap;

use game_api::{GameWire, PlayerId};
use protocol::chunk::split;
use protocol::peer::{
    GuestMessage, HostMessage, JoinPayload, ReconciliationSnapshotMessage, RelayLevel, SessionInit,
    TickInput, TickInputBundle, TickInputs, TransitionPayload,
};
use protocol::tick::FIXED_DT;
use protocol::wire::WireFormat;
use serde::{Deserialize, Serialize};

/// A game of one-byte inputs (255 is not a move).
#[derive(Clone, Debug, PartialEq)]
enum Counter {}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Count {
    total: u64,
}

/// How fast the counter counts (the session's settings).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Speed {
    speed: u8,
}

/// Where a level's count starts (its head).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Start {
    start: u64,
}

/// A counter has no campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct NoCampaign {}

impl GameWire for Counter {
    type Input = u8;
    type Snapshot = Count;
    type CompactInput = u8;
    type Settings = Speed;
    type LevelHead = Start;
    type LevelBody = Vec<u8>;
    type Carryover = u64;
    type Campaign = NoCampaign;

    fn sanitize(input: &u8) -> u8 {
        (*input).min(254)
    }

    fn compact_input(input: &u8) -> u8 {
        *input
    }

    fn input_from_compact(compact: u8) -> Result<u8, String> {
        (compact != 255)
            .then_some(compact)
            .ok_or_else(|| "255 is not a move".to_owned())
    }
}

fn both<M>(msg: &M, encode: impl Fn(&M, WireFormat) -> String) -> [String; 2] {
    [
        encode(msg, WireFormat::Json),
        encode(msg, WireFormat::Compact),
    ]
}

#[test]
fn a_toy_games_messages_travel_in_both_forms() {
    let a = PlayerId::new("a");
    let bundle = HostMessage::<Counter>::TickInputBundle(TickInputBundle {
        tick: 9,
        dt: FIXED_DT,
        level_epoch: 1,
        inputs: BTreeMap::from([(a.clone(), 3), (PlayerId::new("b"), 0)]),
        held_input_fallback: vec![a.clone()],
        roster_remove: None,
        roster_add: None,
    });
    let snapshot = HostMessage::<Counter>::ReconciliationSnapshot(ReconciliationSnapshotMessage {
        level_epoch: 1,
        snapshot: Count { total: 42 },
    });
    for msg in [bundle, snapshot] {
        let [json, compact] = both(&msg, |m, f| m.encode(f).unwrap());
        assert!(
            json.starts_with('{') && compact.starts_with('~'),
            "{json} {compact}"
        );
        assert_eq!(HostMessage::<Counter>::decode(&json).unwrap(), msg);
        assert_eq!(HostMessage::<Counter>::decode(&compact).unwrap(), msg);
    }
    let json = HostMessage::<Counter>::ReconciliationSnapshot(ReconciliationSnapshotMessage {
        level_epoch: 1,
        snapshot: Count { total: 42 },
    })
    .to_json()
    .unwrap();
    assert_eq!(
        json,
        r#"{"type":"reconciliation-snapshot","levelEpoch":1,"total":42}"#
    );
    let input = GuestMessage::<Counter>::TickInput(TickInput {
        tick: 9,
        player_id: a.clone(),
        input: 7,
    });
    let inputs = GuestMessage::<Counter>::TickInputs(TickInputs {
        player_id: a,
        level_epoch: 1,
        first_tick: 7,
        inputs: vec![1, 2, 3],
    });
    for msg in [input, inputs] {
        for text in both(&msg, |m, f| m.encode(f).unwrap()) {
            assert_eq!(GuestMessage::<Counter>::decode(&text).unwrap(), msg);
        }
    }
}

#[test]
fn a_compact_input_the_game_refuses_is_an_error() {
    let bad = GuestMessage::<Counter>::TickInput(TickInput {
        tick: 1,
        player_id: PlayerId::new("a"),
        input: 255,
    });
    let compact = bad.encode(WireFormat::Compact).unwrap();
    let err = GuestMessage::<Counter>::decode(&compact).unwrap_err();
    assert!(err.to_string().contains("255 is not a move"), "{err}");
}

#[test]
fn a_toy_games_levels_travel_in_its_own_parts() {
    let a = PlayerId::new("a");
    let init = HostMessage::<Counter>::SessionInit(SessionInit {
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
    assert_eq!(HostMessage::<Counter>::decode(&json).unwrap(), init);

    let ask = HostMessage::<Counter>::RelayAskLevel {
        level_epoch: 2,
        level_index: 1,
        roster: BTreeMap::from([(a.clone(), "Ada".to_owned())]),
        input_delays: BTreeMap::from([(a.clone(), 3)]),
        campaign: NoCampaign {},
        levels: 2,
        settings: Speed { speed: 2 },
    };
    let json = ask.to_json().unwrap();
    assert_eq!(
        json,
        r#"{"type":"relay-ask-level","levelEpoch":2,"levelIndex":1,"roster":{"a":"Ada"},"inputDelays":{"a":3},"levels":2,"speed":2}"#
    );
    assert_eq!(HostMessage::<Counter>::decode(&json).unwrap(), ask);

    let payload = TransitionPayload::<Counter> {
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
    let back: TransitionPayload<Counter> = whole.finish_parse(&end).unwrap();
    assert_eq!(back, payload);

    let level = GuestMessage::<Counter>::RelayLevel {
        level_epoch: 2,
        level: Box::new(RelayLevel::new(payload, &[7, 7])),
    };
    assert_eq!(
        GuestMessage::<Counter>::decode(&level.to_json().unwrap()).unwrap(),
        level
    );
    let join = JoinPayload::<Counter>::new(vec![4], &[1]);
    assert_eq!(
        serde_json::to_string(&join).unwrap(),
        r#"{"map":[4],"state":"AQ=="}"#
    );
}
