//! How peer messages are written on a data channel: JSON, as the netcode
//! spec has it, or the compact form of the `compact` hello feature (issue
//! 15) for the messages that are most of the traffic.
//!
//! The compact form is text: `~` and the unpadded URL-safe base64 of a
//! [postcard] record (the binary form below sends the record's bytes).
//! Postcard writes integers as varints and strings and lists with a length
//! prefix; on top of that:
//!
//! - an input is the game's own compact record
//!   ([`GameWire::CompactInput`]; the raycaster's is a varint of flag bits,
//!   the weapon slot and the mouse movement as a count of 1/64 pixels);
//! - a tick bundle lists each player's id and input once, and names the held
//!   inputs by their place in that list; `dt` is implied (it is always
//!   `FIXED_DT`);
//! - a reconciliation snapshot is its JSON deflated (most of it is the same
//!   few field names and small numbers again and again).
//!
//! Every compact record stands alone (no delta against an earlier message),
//! so a host encodes a broadcast once, and a message decodes without
//! context. A JSON message starts with `{`, a compact one with `~`:
//! [`HostMessage::decode`] and [`GuestMessage::decode`] read either.
//!
//! With the `binary` hello feature as well ([`WireFormat::Binary`], issue
//! 48) a compact record goes as a binary data-channel message: its postcard
//! bytes as they are, a quarter smaller than their base64. A data channel
//! tells text and binary messages apart, so a [`Payload`] is one or the
//! other; [`HostMessage::decode_payload`] and [`GuestMessage::decode_payload`]
//! read all three forms. Replay files and logs keep the text forms.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use game_api::GameWire;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::chunk::MAX_PAYLOAD_BYTES;
use crate::peer::{
    FoldedHash, GuestMessage, HostMessage, PeerMessageError, PlacedBundle,
    ReconciliationSnapshotMessage, RoundTripReport, SnapshotDelta, TickInput, TickInputBundle,
    TickInputs,
};
use crate::tick::FIXED_DT;
use game_api::{PlayerId, WorldHash};

mod payload;

pub use payload::{Payload, WireFormat};

/// The first character of a compact message.
const MARK: char = '~';

/// A message as written: JSON text, or a compact record's bytes.
enum Written {
    Json(String),
    Record(Vec<u8>),
}

impl Written {
    /// As a text message (a record as `~` and base64).
    fn into_text(self) -> String {
        match self {
            Written::Json(json) => json,
            Written::Record(bytes) => {
                let mut text = String::with_capacity(1 + bytes.len().div_ceil(3) * 4);
                text.push(MARK);
                URL_SAFE_NO_PAD.encode_string(bytes, &mut text);
                text
            }
        }
    }

    /// As a message in `format`: a record binary in [`WireFormat::Binary`].
    fn into_payload(self, format: WireFormat) -> Payload {
        match (format, self) {
            (WireFormat::Binary, Written::Record(bytes)) => Payload::Binary(bytes),
            (_, written) => Payload::Text(written.into_text()),
        }
    }
}

/// A compact record, its inputs in the game's compact form `C`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum Record<C> {
    Bundle(Bundle<C>),
    Snapshot {
        level_epoch: u32,
        deflated: Vec<u8>,
    },
    Input(u64, String, C),
    Inputs(String, u32, u64, Vec<C>),
    /// Postcard numbers variants by their place: new ones go last. Its
    /// own fields (postcard writes every field; the JSON form skips an
    /// absent base).
    Delta {
        level_epoch: u32,
        tick: u64,
        base_tick: Option<u64>,
        delta: Vec<u8>,
    },
    /// A bundle by places: `(tick, level epoch, inputs, held places)`.
    Placed(u64, u32, Vec<C>, Vec<u16>),
    /// Redundant inputs with folded reports: `Inputs`' fields, then the
    /// hash report `(tick, hash)` and the acknowledged snapshot's tick.
    Folded(String, u32, u64, Vec<C>, Option<(u64, u64)>, Option<u64>),
    /// A ping `(id, round trip)`: written in [`WireFormat::Binary`] only,
    /// whose peers all read it (the compact text form keeps pings JSON for
    /// peers from before it).
    Ping(u32, Option<RoundTripReport>),
    /// A pong: in [`WireFormat::Binary`] only, as `Ping`.
    Pong(u32),
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Bundle<C> {
    tick: u64,
    level_epoch: u32,
    /// Every player's input, in id order.
    inputs: Vec<(String, C)>,
    /// Places in `inputs` of the players whose input was held.
    held: Vec<u16>,
    removed: Option<Vec<String>>,
}

fn compact_error(what: impl std::fmt::Display) -> PeerMessageError {
    PeerMessageError::Compact(what.to_string())
}

fn write<C: Serialize>(record: &Record<C>) -> Result<Written, PeerMessageError> {
    postcard::to_allocvec(record)
        .map(Written::Record)
        .map_err(compact_error)
}

/// The record a text message carries (`None`: it is JSON).
fn read_text<C: DeserializeOwned>(text: &str) -> Option<Result<Record<C>, PeerMessageError>> {
    let body = text.strip_prefix(MARK)?;
    Some(
        URL_SAFE_NO_PAD
            .decode(body)
            .map_err(compact_error)
            .and_then(|bytes| read(&bytes)),
    )
}

fn read<C: DeserializeOwned>(bytes: &[u8]) -> Result<Record<C>, PeerMessageError> {
    let (record, rest) = postcard::take_from_bytes(bytes).map_err(compact_error)?;
    if !rest.is_empty() {
        return Err(compact_error("trailing bytes"));
    }
    Ok(record)
}

/// A hash report's hex text as its number, when the number writes the
/// same text back.
fn canonical_hash(hex: &str) -> Option<u64> {
    let h = u64::from_str_radix(hex, 16).ok()?;
    (WorldHash(h).to_string() == hex).then_some(h)
}

fn bundle_record<W: GameWire>(b: &TickInputBundle<W>) -> Option<Record<W::CompactInput>> {
    // A bundle with a roster add (one per late joiner) goes as JSON: the
    // compact record stays as it was, so replays recorded before late join
    // still read.
    if b.dt != FIXED_DT || b.roster_add.is_some() {
        return None;
    }
    let ids: Vec<&PlayerId> = b.inputs.keys().collect();
    let held = b
        .held_input_fallback
        .iter()
        .map(|p| ids.iter().position(|id| *id == p)?.try_into().ok())
        .collect::<Option<Vec<u16>>>()?;
    Some(Record::Bundle(Bundle {
        tick: b.tick,
        level_epoch: b.level_epoch,
        inputs: b
            .inputs
            .iter()
            .map(|(id, i)| (id.0.clone(), W::compact_input(i)))
            .collect(),
        held,
        removed: b
            .roster_remove
            .as_ref()
            .map(|r| r.iter().map(|p| p.0.clone()).collect()),
    }))
}

/// The input a compact record carries.
fn input_of<W: GameWire>(c: W::CompactInput) -> Result<W::Input, PeerMessageError> {
    W::input_from_compact(c).map_err(compact_error)
}

/// The inputs of a record, in order.
fn inputs_of<W: GameWire>(c: Vec<W::CompactInput>) -> Result<Vec<W::Input>, PeerMessageError> {
    c.into_iter().map(input_of::<W>).collect()
}

fn bundle_of<W: GameWire>(
    b: Bundle<W::CompactInput>,
) -> Result<TickInputBundle<W>, PeerMessageError> {
    let ids: Vec<PlayerId> = b.inputs.iter().map(|(id, _)| PlayerId::new(id)).collect();
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(compact_error("bundle inputs out of order"));
    }
    let held = b
        .held
        .iter()
        .map(|n| ids.get(usize::from(*n)).cloned())
        .collect::<Option<Vec<PlayerId>>>()
        .ok_or_else(|| compact_error("held input of a player not in the bundle"))?;
    Ok(TickInputBundle {
        tick: b.tick,
        dt: FIXED_DT,
        level_epoch: b.level_epoch,
        inputs: b
            .inputs
            .into_iter()
            .map(|(id, i)| Ok((PlayerId::new(id), input_of::<W>(i)?)))
            .collect::<Result<_, PeerMessageError>>()?,
        held_input_fallback: held,
        roster_remove: b
            .removed
            .map(|r| r.into_iter().map(PlayerId::new).collect()),
        roster_add: None,
    })
}

fn snapshot_record<W: GameWire>(
    s: &ReconciliationSnapshotMessage<W>,
) -> Result<Record<W::CompactInput>, PeerMessageError> {
    let json = serde_json::to_vec(&s.snapshot)?;
    Ok(Record::Snapshot {
        level_epoch: s.level_epoch,
        deflated: miniz_oxide::deflate::compress_to_vec(&json, 6),
    })
}

fn snapshot_of<W: GameWire>(
    level_epoch: u32,
    deflated: &[u8],
) -> Result<ReconciliationSnapshotMessage<W>, PeerMessageError> {
    let json = miniz_oxide::inflate::decompress_to_vec_with_limit(deflated, MAX_PAYLOAD_BYTES)
        .map_err(|e| compact_error(format!("snapshot: {e}")))?;
    Ok(ReconciliationSnapshotMessage {
        level_epoch,
        snapshot: serde_json::from_slice(&json)?,
    })
}

impl<W: GameWire> HostMessage<W> {
    /// The message as text in `format` (the compact form only for tick
    /// bundles and snapshots; JSON for everything else and for a bundle
    /// the compact form cannot carry exactly). [`WireFormat::Binary`]
    /// writes its records as `~` text, pings included.
    pub fn encode(&self, format: WireFormat) -> Result<String, PeerMessageError> {
        self.written(format).map(Written::into_text)
    }

    /// The message as a data-channel message in `format`: as
    /// [`HostMessage::encode`], and binary where that writes a compact
    /// record in [`WireFormat::Binary`].
    pub fn encode_payload(&self, format: WireFormat) -> Result<Payload, PeerMessageError> {
        self.written(format).map(|w| w.into_payload(format))
    }

    /// Reads a data-channel message in any form.
    pub fn decode_payload(payload: &Payload) -> Result<Self, PeerMessageError> {
        match payload {
            Payload::Text(text) => Self::decode(text),
            Payload::Binary(bytes) => Self::of_record(read::<W::CompactInput>(bytes)?),
        }
    }

    fn written(&self, format: WireFormat) -> Result<Written, PeerMessageError> {
        if format != WireFormat::Json {
            match self {
                HostMessage::TickInputBundle(b) => {
                    if let Some(record) = bundle_record(b) {
                        return write(&record);
                    }
                }
                HostMessage::ReconciliationSnapshot(s) => return write(&snapshot_record(s)?),
                HostMessage::Ping { id, round_trip } if format == WireFormat::Binary => {
                    return write(&Record::<W::CompactInput>::Ping(*id, *round_trip));
                }
                HostMessage::PlacedBundle(p) => {
                    return write(&Record::Placed(
                        p.tick,
                        p.level_epoch,
                        p.inputs.iter().map(W::compact_input).collect(),
                        p.held.clone(),
                    ));
                }
                HostMessage::SnapshotDelta(d) => {
                    return write(&Record::<W::CompactInput>::Delta {
                        level_epoch: d.level_epoch,
                        tick: d.tick,
                        base_tick: d.base_tick,
                        delta: d.delta.clone(),
                    });
                }
                _ => {}
            }
        }
        self.to_json().map(Written::Json)
    }

    /// Reads a text message in either form.
    pub fn decode(text: &str) -> Result<Self, PeerMessageError> {
        match read_text::<W::CompactInput>(text) {
            None => Self::from_json(text),
            Some(record) => Self::of_record(record?),
        }
    }

    fn of_record(record: Record<W::CompactInput>) -> Result<Self, PeerMessageError> {
        match record {
            Record::Bundle(b) => Ok(HostMessage::TickInputBundle(bundle_of(b)?)),
            Record::Snapshot {
                level_epoch,
                deflated,
            } => Ok(HostMessage::ReconciliationSnapshot(snapshot_of(
                level_epoch,
                &deflated,
            )?)),
            Record::Delta {
                level_epoch,
                tick,
                base_tick,
                delta,
            } => Ok(HostMessage::SnapshotDelta(SnapshotDelta {
                level_epoch,
                tick,
                base_tick,
                delta,
            })),
            Record::Placed(tick, level_epoch, inputs, held) => {
                Ok(HostMessage::PlacedBundle(PlacedBundle {
                    tick,
                    level_epoch,
                    inputs: inputs_of::<W>(inputs)?,
                    held,
                }))
            }
            Record::Ping(id, round_trip) => Ok(HostMessage::Ping { id, round_trip }),
            Record::Input(..) | Record::Inputs(..) | Record::Folded(..) | Record::Pong(_) => {
                Err(compact_error("a guest's message sent by the host"))
            }
        }
    }
}

impl<W: GameWire> GuestMessage<W> {
    /// The message as text in `format` (the compact form only for inputs;
    /// [`WireFormat::Binary`] writes its records as `~` text, pongs
    /// included).
    pub fn encode(&self, format: WireFormat) -> Result<String, PeerMessageError> {
        self.written(format).map(Written::into_text)
    }

    /// The message as a data-channel message in `format`: as
    /// [`GuestMessage::encode`], and binary where that writes a compact
    /// record in [`WireFormat::Binary`].
    pub fn encode_payload(&self, format: WireFormat) -> Result<Payload, PeerMessageError> {
        self.written(format).map(|w| w.into_payload(format))
    }

    /// Reads a data-channel message in any form.
    pub fn decode_payload(payload: &Payload) -> Result<Self, PeerMessageError> {
        match payload {
            Payload::Text(text) => Self::decode(text),
            Payload::Binary(bytes) => Self::of_record(read::<W::CompactInput>(bytes)?),
        }
    }

    fn written(&self, format: WireFormat) -> Result<Written, PeerMessageError> {
        if format == WireFormat::Json {
            return self.to_json().map(Written::Json);
        }
        match self {
            GuestMessage::Pong { id } if format == WireFormat::Binary => {
                write(&Record::<W::CompactInput>::Pong(*id))
            }
            GuestMessage::TickInput(t) => write(&Record::Input(
                t.tick,
                t.player_id.0.clone(),
                W::compact_input(&t.input),
            )),
            GuestMessage::TickInputs(t) if t.hash_report.is_none() && t.snapshot_ack.is_none() => {
                write(&Record::Inputs(
                    t.player_id.0.clone(),
                    t.level_epoch,
                    t.first_tick,
                    t.inputs.iter().map(W::compact_input).collect(),
                ))
            }
            GuestMessage::TickInputs(t) => {
                // A hash that does not read back as the same text goes as
                // JSON, so the compact form never changes a message.
                let hash = match &t.hash_report {
                    None => None,
                    Some(r) => match canonical_hash(&r.hash) {
                        Some(h) => Some((r.tick, h)),
                        None => return self.to_json().map(Written::Json),
                    },
                };
                write(&Record::Folded(
                    t.player_id.0.clone(),
                    t.level_epoch,
                    t.first_tick,
                    t.inputs.iter().map(W::compact_input).collect(),
                    hash,
                    t.snapshot_ack,
                ))
            }
            _ => self.to_json().map(Written::Json),
        }
    }

    /// Reads a text message in either form.
    pub fn decode(text: &str) -> Result<Self, PeerMessageError> {
        match read_text::<W::CompactInput>(text) {
            None => Self::from_json(text),
            Some(record) => Self::of_record(record?),
        }
    }

    fn of_record(record: Record<W::CompactInput>) -> Result<Self, PeerMessageError> {
        match record {
            Record::Input(tick, player, input) => Ok(GuestMessage::TickInput(TickInput {
                tick,
                player_id: PlayerId::new(player),
                input: input_of::<W>(input)?,
            })),
            Record::Inputs(player, level_epoch, first_tick, inputs) => {
                Ok(GuestMessage::TickInputs(TickInputs {
                    player_id: PlayerId::new(player),
                    level_epoch,
                    first_tick,
                    inputs: inputs_of::<W>(inputs)?,
                    hash_report: None,
                    snapshot_ack: None,
                }))
            }
            Record::Folded(player, level_epoch, first_tick, inputs, hash, snapshot_ack) => {
                Ok(GuestMessage::TickInputs(TickInputs {
                    player_id: PlayerId::new(player),
                    level_epoch,
                    first_tick,
                    inputs: inputs_of::<W>(inputs)?,
                    hash_report: hash.map(|(tick, h)| FoldedHash {
                        tick,
                        hash: WorldHash(h).to_string(),
                    }),
                    snapshot_ack,
                }))
            }
            Record::Pong(id) => Ok(GuestMessage::Pong { id }),
            Record::Bundle(_)
            | Record::Snapshot { .. }
            | Record::Delta { .. }
            | Record::Placed(..)
            | Record::Ping(..) => Err(compact_error("a host's message sent by a guest")),
        }
    }
}

#[cfg(test)]
mod tests {
    // The toy game: the compact form's rules are the envelope's, whatever
    // the game (the raycaster's input codec is tested in `engine::wire`).
    type HostMessage = crate::peer::HostMessage<Toy>;
    type GuestMessage = crate::peer::GuestMessage<Toy>;
    type TickInputBundle = crate::peer::TickInputBundle<Toy>;

    use std::collections::BTreeMap;

    use game_api::toy::{NOT_A_MOVE, Toy};
    use proptest::prelude::*;

    use super::*;

    fn bundle(players: usize, tick: u64) -> TickInputBundle {
        let inputs: BTreeMap<PlayerId, u8> = (0..players)
            .map(|i| {
                (
                    PlayerId::new(format!("guest-{i}")),
                    (tick + i as u64) as u8 % 9,
                )
            })
            .collect();
        TickInputBundle {
            tick,
            dt: FIXED_DT,
            level_epoch: 1,
            held_input_fallback: inputs.keys().skip(1).take(1).cloned().collect(),
            inputs,
            roster_remove: None,
            roster_add: None,
        }
    }

    /// A record as its `~` text.
    fn write<C: Serialize>(record: &Record<C>) -> Result<String, PeerMessageError> {
        super::write(record).map(Written::into_text)
    }

    proptest! {
        #[test]
        fn garbage_after_the_mark_is_an_error_not_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = format!("{MARK}{}", URL_SAFE_NO_PAD.encode(&bytes));
            let _ = HostMessage::decode(&text);
            let _ = GuestMessage::decode(&text);
            let binary = Payload::Binary(bytes);
            let _ = HostMessage::decode_payload(&binary);
            let _ = GuestMessage::decode_payload(&binary);
        }
    }

    #[test]
    fn a_binary_message_is_the_compact_records_bytes() {
        let bundle = HostMessage::TickInputBundle(bundle(5, 300));
        let inputs = GuestMessage::TickInputs(crate::peer::TickInputs {
            player_id: PlayerId::new("guest-1"),
            level_epoch: 2,
            first_tick: 40,
            inputs: vec![1, 2, 3, 4, 5, 6, 7, 8],
            hash_report: None,
            snapshot_ack: Some(30),
        });
        let host = [(
            bundle.encode(WireFormat::Compact),
            bundle.encode_payload(WireFormat::Binary),
        )];
        let guest = [(
            inputs.encode(WireFormat::Compact),
            inputs.encode_payload(WireFormat::Binary),
        )];
        for (text, payload) in host.into_iter().chain(guest) {
            let (text, payload) = (text.unwrap(), payload.unwrap());
            let Payload::Binary(bytes) = &payload else {
                panic!("{payload:?} is not binary");
            };
            assert_eq!(URL_SAFE_NO_PAD.decode(&text[1..]).unwrap(), *bytes);
            assert!(payload.len() * 4 <= (text.len() - 1) * 3 + 3);
        }
        assert_eq!(
            HostMessage::decode_payload(&bundle.encode_payload(WireFormat::Binary).unwrap())
                .unwrap(),
            bundle
        );
        assert_eq!(
            GuestMessage::decode_payload(&inputs.encode_payload(WireFormat::Binary).unwrap())
                .unwrap(),
            inputs
        );
        // Text forms read as before, through a payload too.
        for format in [WireFormat::Json, WireFormat::Compact] {
            let payload = bundle.encode_payload(format).unwrap();
            assert!(matches!(payload, Payload::Text(_)));
            assert_eq!(HostMessage::decode_payload(&payload).unwrap(), bundle);
        }
        // As text, the binary format writes its records as the compact one
        // (and pings and pongs too, which the compact form keeps JSON).
        assert_eq!(
            bundle.encode(WireFormat::Binary).unwrap(),
            bundle.encode(WireFormat::Compact).unwrap()
        );
    }

    #[test]
    fn what_has_no_record_goes_as_json_text_in_the_binary_format() {
        let end = HostMessage::SessionEnd {
            reason: crate::peer::EndReason::Completed,
            scores: vec![],
            level_epoch: 2,
            final_tick: 900,
        };
        assert_eq!(
            end.encode_payload(WireFormat::Binary).unwrap(),
            Payload::Text(end.to_json().unwrap())
        );
        let ack = GuestMessage::SetupAck;
        assert_eq!(
            ack.encode_payload(WireFormat::Binary).unwrap(),
            Payload::Text(ack.to_json().unwrap())
        );
    }

    #[test]
    fn pings_and_pongs_are_records_in_the_binary_format_only() {
        let round_trip = Some(RoundTripReport {
            rtt_us: 160_000,
            jitter_us: 9_000,
        });
        let ping = HostMessage::Ping { id: 7, round_trip };
        let pong = GuestMessage::Pong { id: 7 };
        // Peers on the compact text form read pings as JSON, as before.
        assert_eq!(
            ping.encode(WireFormat::Compact).unwrap(),
            ping.to_json().unwrap()
        );
        assert_eq!(
            pong.encode(WireFormat::Compact).unwrap(),
            pong.to_json().unwrap()
        );
        let binary_ping = ping.encode_payload(WireFormat::Binary).unwrap();
        let binary_pong = pong.encode_payload(WireFormat::Binary).unwrap();
        assert!(matches!(binary_ping, Payload::Binary(ref b) if b.len() < 12));
        assert!(matches!(binary_pong, Payload::Binary(ref b) if b.len() < 4));
        assert_eq!(HostMessage::decode_payload(&binary_ping).unwrap(), ping);
        assert_eq!(GuestMessage::decode_payload(&binary_pong).unwrap(), pong);
        assert!(GuestMessage::decode_payload(&binary_ping).is_err());
        assert!(HostMessage::decode_payload(&binary_pong).is_err());
    }

    #[test]
    fn a_binary_message_in_the_wrong_direction_is_refused() {
        let bundle = HostMessage::TickInputBundle(bundle(3, 9))
            .encode_payload(WireFormat::Binary)
            .unwrap();
        assert!(GuestMessage::decode_payload(&bundle).is_err());
        let input = GuestMessage::TickInput(crate::peer::TickInput {
            tick: 3,
            player_id: PlayerId::new("g"),
            input: 1,
        })
        .encode_payload(WireFormat::Binary)
        .unwrap();
        assert!(HostMessage::decode_payload(&input).is_err());
        // JSON sent as a binary message is not read as JSON.
        let json = Payload::Binary(br#"{"type":"pong","id":1}"#.to_vec());
        assert!(GuestMessage::decode_payload(&json).is_err());
    }

    #[test]
    fn a_roster_add_goes_as_json_and_a_removal_compact() {
        let mut b = bundle(3, 40);
        b.roster_remove = Some(vec![PlayerId::new("guest-7")]);
        let m = HostMessage::TickInputBundle(b.clone());
        let compact = m.encode(WireFormat::Compact).unwrap();
        assert!(compact.starts_with(MARK));
        assert_eq!(HostMessage::decode(&compact).unwrap(), m);
        let add = crate::peer::RosterAdd {
            input_delay: 5,
            name: "Late".into(),
        };
        b.roster_add = Some(BTreeMap::from([(PlayerId::new("guest-2"), add)]));
        let m = HostMessage::TickInputBundle(b);
        let text = m.encode(WireFormat::Compact).unwrap();
        assert!(text.starts_with('{'), "{text}");
        assert_eq!(HostMessage::decode(&text).unwrap(), m);
    }

    #[test]
    fn folded_reports_ride_the_inputs_in_either_form() {
        type TickInputs = crate::peer::TickInputs<Toy>;
        let plain = TickInputs {
            player_id: PlayerId::new("guest-1"),
            level_epoch: 2,
            first_tick: 40,
            inputs: vec![1, 2, 3],
            hash_report: None,
            snapshot_ack: None,
        };
        let folded = TickInputs {
            hash_report: Some(FoldedHash {
                tick: 40,
                hash: "00ff00ff00ff00ff".into(),
            }),
            snapshot_ack: Some(30),
            ..plain.clone()
        };
        for (m, format) in [
            (plain.clone(), WireFormat::Compact),
            (folded.clone(), WireFormat::Compact),
            (folded.clone(), WireFormat::Json),
        ] {
            let m = GuestMessage::TickInputs(m);
            let text = m.encode(format).unwrap();
            assert_eq!(text.starts_with(MARK), format == WireFormat::Compact);
            assert_eq!(GuestMessage::decode(&text).unwrap(), m);
        }
        // The plain record is unchanged (older hosts read it); the folded
        // one is a few bytes more.
        let plain_len = GuestMessage::TickInputs(plain)
            .encode(WireFormat::Compact)
            .unwrap()
            .len();
        let folded_len = GuestMessage::TickInputs(folded.clone())
            .encode(WireFormat::Compact)
            .unwrap()
            .len();
        assert!(folded_len > plain_len && folded_len <= plain_len + 20);
        // A hash that is not 16 lowercase hex digits goes as JSON, unchanged.
        let odd = GuestMessage::TickInputs(TickInputs {
            hash_report: Some(FoldedHash {
                tick: 40,
                hash: "FF".into(),
            }),
            ..folded
        });
        let text = odd.encode(WireFormat::Compact).unwrap();
        assert!(text.starts_with('{'));
        assert_eq!(GuestMessage::decode(&text).unwrap(), odd);
    }

    #[test]
    fn what_the_compact_form_cannot_carry_goes_as_json() {
        let mut odd = bundle(2, 1);
        odd.dt = 0.5;
        let m = HostMessage::TickInputBundle(odd);
        assert!(m.encode(WireFormat::Compact).unwrap().starts_with('{'));
        let mut stranger = bundle(2, 1);
        stranger.held_input_fallback = vec![PlayerId::new("nobody")];
        let m = HostMessage::TickInputBundle(stranger);
        assert!(m.encode(WireFormat::Compact).unwrap().starts_with('{'));
        let ping = HostMessage::Ping {
            id: 1,
            round_trip: None,
        };
        assert_eq!(
            ping.encode(WireFormat::Compact).unwrap(),
            ping.to_json().unwrap()
        );
    }

    #[test]
    fn a_compact_message_in_the_wrong_direction_or_shape_is_refused() {
        let bundle_text = HostMessage::TickInputBundle(bundle(3, 9))
            .encode(WireFormat::Compact)
            .unwrap();
        assert!(GuestMessage::decode(&bundle_text).is_err());
        // Players out of order, a held place past the end, trailing bytes.
        let unordered = write(&Record::Bundle(Bundle {
            tick: 1,
            level_epoch: 1,
            inputs: vec![("b".into(), 0u8), ("a".into(), 0u8)],
            held: vec![],
            removed: None,
        }))
        .unwrap();
        assert!(HostMessage::decode(&unordered).is_err());
        let past = write(&Record::Bundle(Bundle {
            tick: 1,
            level_epoch: 1,
            inputs: vec![("a".into(), 0u8)],
            held: vec![1],
            removed: None,
        }))
        .unwrap();
        assert!(HostMessage::decode(&past).is_err());
        let mut bytes = postcard::to_allocvec(&Record::Input(1, "g".into(), 0u8)).unwrap();
        bytes.push(0);
        let trailing = format!("{MARK}{}", URL_SAFE_NO_PAD.encode(&bytes));
        assert!(GuestMessage::decode(&trailing).is_err());
        // An input the game's compact form refuses, in a bundle too.
        let refused = write(&Record::Input(1, "g".into(), NOT_A_MOVE)).unwrap();
        assert!(GuestMessage::decode(&refused).is_err());
        let refused = write(&Record::Bundle(Bundle {
            tick: 1,
            level_epoch: 1,
            inputs: vec![("a".into(), NOT_A_MOVE)],
            held: vec![],
            removed: None,
        }))
        .unwrap();
        assert!(HostMessage::decode(&refused).is_err());
        // A snapshot that inflates past the payload limit.
        let bomb = write(&Record::<u8>::Snapshot {
            level_epoch: 1,
            deflated: miniz_oxide::deflate::compress_to_vec(&vec![b' '; MAX_PAYLOAD_BYTES + 1], 9),
        })
        .unwrap();
        assert!(HostMessage::decode(&bomb).is_err());
    }
}
