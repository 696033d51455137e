//! Peer messages as either side decodes them, in every wire form (JSON,
//! compact text, binary): never a panic, and whatever decodes encodes, in
//! every form, to a message that decodes to the same one (the fast paths
//! for bundles and inputs agree with the general one). The input is read
//! both as a binary message and, when it is UTF-8, as a text one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::wire::{Payload, WireFormat};

/// The raycaster's messages, the wire that ships.
type HostMessage = engine::wire::HostMessage;
type GuestMessage = engine::wire::GuestMessage;

fuzz_target!(|data: &[u8]| {
    let mut payloads = vec![Payload::Binary(data.to_vec())];
    if let Ok(text) = std::str::from_utf8(data) {
        payloads.push(Payload::Text(text.to_owned()));
    }
    for payload in &payloads {
        if let Ok(msg) = HostMessage::decode_payload(payload) {
            for format in WireFormat::ALL {
                let again = msg
                    .encode_payload(format)
                    .expect("a decoded host message encodes");
                assert_eq!(
                    HostMessage::decode_payload(&again).ok().as_ref(),
                    Some(&msg)
                );
            }
        }
        if let Ok(msg) = GuestMessage::decode_payload(payload) {
            for format in WireFormat::ALL {
                let again = msg
                    .encode_payload(format)
                    .expect("a decoded guest message encodes");
                assert_eq!(
                    GuestMessage::decode_payload(&again).ok().as_ref(),
                    Some(&msg)
                );
            }
        }
    }
});
