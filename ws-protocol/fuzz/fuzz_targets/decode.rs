//! Arbitrary text as one frame through both decoders. A panic, or a decoded message
//! that does not decode again to itself from its own encoding, is a finding; so is an
//! id (the input itself) that does not survive the encoder's escaping.
#![no_main]

use graphfleet_ws_protocol::{ClientMessage, ServerMessage, SubscribePayload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // WebSocket text frames are UTF-8 (tungstenite refuses others before we see them).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(message) = ClientMessage::decode(text) {
        let encoded = message.encode();
        let again = ClientMessage::decode(&encoded).expect("an encoded client message decodes");
        assert_eq!(again, message, "{encoded}");
        if let ClientMessage::Subscribe { payload, .. } = message {
            let _ = SubscribePayload::parse(payload);
        }
    }
    if let Ok(message) = ServerMessage::decode(text) {
        let encoded = message.encode();
        let again = ServerMessage::decode(&encoded).expect("an encoded server message decodes");
        assert_eq!(again, message, "{encoded}");
    }
    if !text.is_empty() {
        let complete = ServerMessage::Complete { id: text.into() };
        let encoded = complete.encode();
        assert_eq!(
            ServerMessage::decode(&encoded).expect("any id round-trips"),
            complete,
            "{encoded}"
        );
    }
});
