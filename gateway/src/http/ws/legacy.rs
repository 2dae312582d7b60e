//! The legacy `graphql-ws` subprotocol (Apollo's subscriptions-transport-ws), still
//! spoken by many deployed clients. Client messages: `connection_init` (an optional
//! object payload), `start` (an id and the GraphQL request), `stop`,
//! `connection_terminate`. Server messages: `connection_ack`, `connection_error`, `ka`
//! (keep-alive), `data` (a result), `error` (an operation failed), `complete`.
//! Frames are `{"type":…,"id":…,"payload":…}`; unknown fields are ignored.

use super::incoming::Incoming;
use graphfleet_ws_protocol::Close;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use tokio_tungstenite::tungstenite::Message;

/// The `Sec-WebSocket-Protocol` token (not to be confused with the graphql-ws library,
/// whose protocol is `graphql-transport-ws`).
pub(super) const SUBPROTOCOL: &str = "graphql-ws";

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    payload: Option<&'a RawValue>,
}

pub(super) fn decode(text: &str) -> Result<Incoming<'_>, Close> {
    let frame: Frame<'_> = serde_json::from_str(text).map_err(Close::bad_request)?;
    let payload = frame.payload.map(RawValue::get);
    let object = |kind: &str| match payload {
        Some(p) if p.starts_with('{') => Ok(p),
        _ => Err(Close::bad_request(format_args!(
            "the {kind} payload must be an object"
        ))),
    };
    let id = |kind: &str| match frame.id.clone() {
        Some(id) if !id.is_empty() => Ok(id),
        _ => Err(Close::bad_request(format_args!(
            "{kind} needs a non-empty id"
        ))),
    };
    Ok(match &*frame.kind {
        "connection_init" => match payload {
            None | Some("null") => Incoming::Init(None),
            Some(_) => Incoming::Init(Some(object("connection_init")?)),
        },
        "start" => Incoming::Subscribe {
            id: id("start")?,
            payload: object("start")?,
        },
        "stop" => Incoming::Stop(id("stop")?),
        "connection_terminate" => Incoming::Terminate,
        other => {
            return Err(Close::bad_request(format_args!(
                "{other:?} is not a message a graphql-ws server receives"
            )));
        }
    })
}

/// `{"type":…}` with an optional id (a JSON string) and payload (JSON text as written).
fn frame(kind: &str, id: Option<&str>, payload: Option<&str>) -> Message {
    let mut text = String::with_capacity(32 + payload.map_or(0, str::len));
    text.push_str(r#"{"type":""#);
    text.push_str(kind);
    text.push('"');
    if let Some(id) = id {
        text.push_str(r#","id":"#);
        text.push_str(&serde_json::to_string(id).expect("a string serializes"));
    }
    if let Some(payload) = payload {
        text.push_str(r#","payload":"#);
        text.push_str(payload);
    }
    text.push('}');
    Message::text(text)
}

pub(super) fn ack() -> Message {
    frame("connection_ack", None, None)
}

pub(super) fn keep_alive() -> Message {
    frame("ka", None, None)
}

/// Why `connection_init` was refused: `{"message": why}`.
pub(super) fn connection_error(why: &str) -> Message {
    let payload = serde_json::json!({ "message": why }).to_string();
    frame("connection_error", None, Some(&payload))
}

pub(super) fn data(id: &str, payload: &str) -> Message {
    frame("data", Some(id), Some(payload))
}

pub(super) fn error(id: &str, errors: &str) -> Message {
    frame("error", Some(id), Some(errors))
}

pub(super) fn complete(id: &str) -> Message {
    frame("complete", Some(id), None)
}

#[cfg(test)]
mod tests {
    use super::{data, decode};
    use crate::http::ws::incoming::Incoming;

    fn text(m: tokio_tungstenite::tungstenite::Message) -> String {
        m.into_text().expect("a text frame").as_str().to_owned()
    }

    #[test]
    fn client_messages_decode_and_bad_ones_close_with_4400() {
        let start = r#"{"id":"1","type":"start","payload":{"query":"{ a }"}}"#;
        let Ok(Incoming::Subscribe { id, payload }) = decode(start) else {
            panic!("a start")
        };
        assert_eq!((&*id, payload), ("1", r#"{"query":"{ a }"}"#));
        assert!(matches!(
            decode(r#"{"type":"connection_init","payload":{"authToken":"t"}}"#),
            Ok(Incoming::Init(Some(r#"{"authToken":"t"}"#)))
        ));
        assert!(matches!(
            decode(r#"{"type":"connection_init"}"#),
            Ok(Incoming::Init(None))
        ));
        assert!(
            matches!(decode(r#"{"type":"stop","id":"1"}"#), Ok(Incoming::Stop(id)) if id == "1")
        );
        assert!(matches!(
            decode(r#"{"type":"connection_terminate"}"#),
            Ok(Incoming::Terminate)
        ));
        for bad in [
            "not json",
            r#"{"type":"subscribe","id":"1","payload":{}}"#,
            r#"{"type":"start","payload":{"query":"{ a }"}}"#,
            r#"{"type":"start","id":"","payload":{"query":"{ a }"}}"#,
            r#"{"type":"start","id":"1","payload":"{ a }"}"#,
            r#"{"type":"connection_init","payload":[1]}"#,
            r#"{"type":"stop","id":7}"#,
        ] {
            let close = decode(bad).expect_err(bad);
            assert_eq!(close.code.get(), 4400, "{bad}");
        }
    }

    #[test]
    fn server_messages_carry_payloads_as_written_and_ids_escaped() {
        assert_eq!(
            text(data("a\"b", r#"{"data":{"x": 1.50}}"#)),
            r#"{"type":"data","id":"a\"b","payload":{"data":{"x": 1.50}}}"#
        );
        assert_eq!(text(super::keep_alive()), r#"{"type":"ka"}"#);
        assert_eq!(
            text(super::connection_error("Forbidden: no")),
            r#"{"type":"connection_error","payload":{"message":"Forbidden: no"}}"#
        );
    }
}
