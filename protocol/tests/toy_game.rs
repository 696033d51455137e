//! The envelope carries any game: a toy game whose input is one byte and
//! whose snapshot is a counter travels in both wire forms, with no type of
//! the raycaster in sight.

use std::collections::BTreeMap;

use game_api::{GameWire, PlayerId};
use protocol::peer::{
    GuestMessage, HostMessage, ReconciliationSnapshotMessage, TickInput, TickInputBundle,
    TickInputs,
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

impl GameWire for Counter {
    type Input = u8;
    type Snapshot = Count;
    type CompactInput = u8;

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
