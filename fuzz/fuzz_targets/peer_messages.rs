//! Peer messages as either side decodes them, in either wire form (JSON or
//! compact): never a panic, and whatever decodes encodes, in both forms, to
//! text that decodes to the same message (the fast paths for bundles and
//! inputs agree with the general one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::wire::WireFormat;

/// The raycaster's messages, the wire that ships.
type HostMessage = engine::wire::HostMessage;
type GuestMessage = engine::wire::GuestMessage;

const FORMATS: [WireFormat; 2] = [WireFormat::Json, WireFormat::Compact];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(msg) = HostMessage::decode(text) {
        for format in FORMATS {
            let again = msg.encode(format).expect("a decoded host message encodes");
            assert_eq!(HostMessage::decode(&again).ok().as_ref(), Some(&msg));
        }
    }
    if let Ok(msg) = GuestMessage::decode(text) {
        for format in FORMATS {
            let again = msg.encode(format).expect("a decoded guest message encodes");
            assert_eq!(GuestMessage::decode(&again).ok().as_ref(), Some(&msg));
        }
    }
});
