//! The lobby's plausibility check of offers and answers: never a panic,
//! and what it accepts is within the size limit and starts with `v=0`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lobby_api::sdp::check_plausible_sdp;

const MAX: usize = 32 * 1024;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if check_plausible_sdp(text, MAX).is_ok() {
        assert!(text.len() <= MAX);
        assert!(text.starts_with("v=0"));
    }
});
