use proptest::prelude::*;
use serde_json::json;

use super::*;

fn snapshot(x: f64, hp: u32, drops: usize) -> Value {
    json!({
        "tick": 3000u64,
        "players": {"guest-1": {"posX": x, "posY": -2.5, "health": hp, "alive": true}},
        "enemies": (0..40).map(|i| json!({"index": i, "x": f64::from(i) * 1.25, "y": 7.0, "hp": 20.0})).collect::<Vec<_>>(),
        "lootDrops": (0..drops).map(|i| json!({"id": format!("3:{i}"), "x": 1.0})).collect::<Vec<_>>(),
        "residual": null,
        "offset": -4i64,
    })
}

#[test]
fn the_binary_form_gives_back_exactly_what_went_in() {
    let v = snapshot(0.1 + 0.2, 90, 3);
    let bytes = to_binary(&v).expect("binary");
    assert_eq!(from_binary::<Value>(&bytes).expect("read"), v);
    // Bits, not digits: the float comes back as the same f64.
    let back: Value = from_binary(&bytes).expect("read");
    assert_eq!(back["players"]["guest-1"]["posX"].as_f64(), Some(0.1 + 0.2));
}

#[test]
fn a_delta_against_a_similar_base_is_small_and_decodes_only_against_it() {
    let base = to_binary(&snapshot(1.0, 90, 2)).expect("binary");
    let current = to_binary(&snapshot(1.5, 80, 3)).expect("binary");
    let full = encode(&current, None).expect("deflate");
    let delta = encode(&current, Some(&base)).expect("deflate");
    assert!(
        delta.len() * 3 < full.len(),
        "delta {} full {}",
        delta.len(),
        full.len()
    );
    assert_eq!(decode(&delta, Some(&base)).expect("inflate"), current);
    assert_eq!(decode(&full, None).expect("inflate"), current);
    // Against another base the bytes are not the snapshot: either the
    // stream fails or it gives other bytes, which the world hash check
    // catches; never a panic.
    let other = to_binary(&snapshot(9.0, 10, 0)).expect("binary");
    assert_ne!(decode(&delta, Some(&other)).ok(), Some(current));
}

#[test]
fn broken_input_is_an_error_not_a_panic_or_an_allocation() {
    assert!(matches!(
        decode(&[0xff, 0x00, 0x13], None),
        Err(DeltaError::Inflate(_))
    ));
    assert!(decode(&[], None).is_err());
    // A length of four billion with nothing behind it.
    assert!(matches!(
        from_binary::<Value>(&[ARRAY, 0xff, 0xff, 0xff, 0xff]),
        Err(DeltaError::Malformed(_))
    ));
    assert!(from_binary::<Value>(&[9]).is_err());
    assert!(from_binary::<Value>(&[NULL, NULL]).is_err());
    let deep: Vec<u8> = std::iter::repeat_n([ARRAY, 1, 0, 0, 0], 100)
        .flatten()
        .collect();
    assert!(matches!(
        from_binary::<Value>(&deep),
        Err(DeltaError::Malformed(_))
    ));
    // A bomb: a megabyte of zeros deflates to a kilobyte.
    let bomb = encode(&vec![0; MAX_PAYLOAD_BYTES + 1], None).expect("deflate");
    assert_eq!(decode(&bomb, None), Err(DeltaError::TooLarge));
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_value_survives_a_delta_against_any_base(current in json_value(), base in json_value()) {
        let (c, b) = (to_binary(&current).expect("binary"), to_binary(&base).expect("binary"));
        let back = decode(&encode(&c, Some(&b)).expect("deflate"), Some(&b)).expect("inflate");
        prop_assert_eq!(from_binary::<Value>(&back).expect("read"), current);
    }

    #[test]
    fn any_bytes_read_as_an_error_or_a_value(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = from_binary::<Value>(&bytes);
        let _ = decode(&bytes, Some(&bytes));
    }
}

#[test]
fn a_delta_message_reads_back_in_both_forms_and_compact_carries_raw_bytes() {
    use crate::peer::{HostMessage, SnapshotDelta};
    use crate::wire::WireFormat;
    type Msg = HostMessage<game_api::toy::Toy>;
    for base_tick in [Some(60), None] {
        let msg = Msg::SnapshotDelta(SnapshotDelta {
            level_epoch: 2,
            tick: 90,
            base_tick,
            delta: (0..=255).collect(),
        });
        let json = msg.encode(WireFormat::Json).expect("json");
        assert!(json.contains(r#""type":"snapshot-delta""#), "{json}");
        assert_eq!(
            json.contains(r#""baseTick":60"#),
            base_tick.is_some(),
            "{json}"
        );
        assert_eq!(Msg::decode(&json).expect("read"), msg);
        let compact = msg.encode(WireFormat::Compact).expect("compact");
        assert_eq!(Msg::decode(&compact).expect("read"), msg);
        // 256 bytes, a few of framing, base64 once: no base64 inside.
        assert!(compact.len() < 360, "{} chars", compact.len());
    }
}
