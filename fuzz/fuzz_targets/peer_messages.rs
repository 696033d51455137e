//! Peer messages as either side decodes them: never a panic, and whatever
//! decodes encodes to text that decodes to the same message (the host's
//! fast path for bundles and inputs agrees with the general one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::peer::{GuestMessage, HostMessage};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(msg) = HostMessage::from_json(text) {
        let again = msg.to_json().expect("a decoded host message encodes");
        assert_eq!(HostMessage::from_json(&again).ok(), Some(msg));
    }
    if let Ok(msg) = GuestMessage::from_json(text) {
        let again = msg.to_json().expect("a decoded guest message encodes");
        assert_eq!(GuestMessage::from_json(&again).ok(), Some(msg));
    }
});
