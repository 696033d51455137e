//! The lobby API's request bodies as the server decodes them (the
//! `lobby_api::api` types behind `PUT /session` and `POST .../answer`, and
//! the session code in paths): never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lobby_api::api::{PostAnswerRequest, PutSessionRequest};
use lobby_api::code::SessionCode;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<PutSessionRequest>(data);
    let _ = serde_json::from_slice::<PostAnswerRequest>(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(code) = SessionCode::parse(text) {
            assert_eq!(SessionCode::parse(code.as_str()).ok(), Some(code));
        }
    }
});
