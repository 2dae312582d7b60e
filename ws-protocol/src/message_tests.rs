use super::{ClientMessage, DecodeError, ServerMessage, SubscribePayload};
use crate::RawJson;
use std::borrow::Cow;

fn raw(text: &str) -> RawJson<'_> {
    RawJson::trusted(text)
}

#[test]
fn client_messages_decode_from_what_graphql_ws_sends() {
    let cases = [
        (
            r#"{"type":"connection_init"}"#,
            ClientMessage::ConnectionInit { payload: None },
        ),
        (
            r#"{"type":"connection_init","payload":{"token":"t"}}"#,
            ClientMessage::ConnectionInit {
                payload: Some(raw(r#"{"token":"t"}"#)),
            },
        ),
        (
            r#"{"type":"connection_init","payload":null}"#,
            ClientMessage::ConnectionInit { payload: None },
        ),
        (r#"{"type":"ping"}"#, ClientMessage::Ping { payload: None }),
        (
            r#"{"type":"pong","payload":{}}"#,
            ClientMessage::Pong {
                payload: Some(raw("{}")),
            },
        ),
        (
            r#"{"id":"1","type":"subscribe","payload":{"query":"{ a }"}}"#,
            ClientMessage::Subscribe {
                id: "1".into(),
                payload: raw(r#"{"query":"{ a }"}"#),
            },
        ),
        (
            // Field order and unknown fields do not matter.
            r#" { "payload" : {"query":"{ a }"} , "extra": [1], "type":"subscribe","id":"x" } "#,
            ClientMessage::Subscribe {
                id: "x".into(),
                payload: raw(r#"{"query":"{ a }"}"#),
            },
        ),
        (
            r#"{"type":"complete","id":"1"}"#,
            ClientMessage::Complete { id: "1".into() },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(ClientMessage::decode(text).expect(text), expected, "{text}");
    }
}

#[test]
fn ids_are_borrowed_unless_escaped() {
    let plain = ClientMessage::decode(r#"{"type":"complete","id":"abc"}"#).expect("valid");
    assert!(matches!(
        plain,
        ClientMessage::Complete {
            id: Cow::Borrowed("abc")
        }
    ));
    let escaped = ClientMessage::decode(r#"{"type":"complete","id":"a\"b"}"#).expect("valid");
    assert_eq!(escaped, ClientMessage::Complete { id: "a\"b".into() });
}

#[test]
fn server_messages_decode_with_payloads_as_written() {
    let next = ServerMessage::decode(r#"{"id":"1","type":"next","payload":{"data":{"a": 1.50}}}"#)
        .expect("a next");
    let ServerMessage::Next { id, payload } = next else {
        panic!("a next: {next:?}")
    };
    assert_eq!((&*id, payload.get()), ("1", r#"{"data":{"a": 1.50}}"#));
    assert_eq!(
        ServerMessage::decode(r#"{"id":"1","type":"error","payload":[{"message":"no"}]}"#)
            .expect("an error"),
        ServerMessage::Error {
            id: "1".into(),
            payload: raw(r#"[{"message":"no"}]"#)
        }
    );
    assert_eq!(
        ServerMessage::decode(r#"{"type":"connection_ack"}"#).expect("an ack"),
        ServerMessage::ConnectionAck { payload: None }
    );
    assert_eq!(
        ServerMessage::decode(r#"{"type":"complete","id":"9"}"#).expect("a complete"),
        ServerMessage::Complete { id: "9".into() }
    );
}

#[test]
fn encoding_writes_the_frames_the_peers_expect() {
    let cases = [
        (
            ServerMessage::ConnectionAck { payload: None }.encode(),
            r#"{"type":"connection_ack"}"#,
        ),
        (
            ServerMessage::Pong { payload: None }.encode(),
            r#"{"type":"pong"}"#,
        ),
        (
            ServerMessage::Next {
                id: "1".into(),
                payload: raw(r#"{"data":{"a":1}}"#),
            }
            .encode(),
            r#"{"id":"1","type":"next","payload":{"data":{"a":1}}}"#,
        ),
        (
            ServerMessage::Error {
                id: "q".into(),
                payload: raw(r#"[{"message":"x"}]"#),
            }
            .encode(),
            r#"{"id":"q","type":"error","payload":[{"message":"x"}]}"#,
        ),
        (
            ServerMessage::Complete { id: "1".into() }.encode(),
            r#"{"id":"1","type":"complete"}"#,
        ),
        (
            ClientMessage::ConnectionInit { payload: None }.encode(),
            r#"{"type":"connection_init"}"#,
        ),
        (
            ClientMessage::Subscribe {
                id: "1".into(),
                payload: raw(r#"{"query":"{ a }"}"#),
            }
            .encode(),
            r#"{"id":"1","type":"subscribe","payload":{"query":"{ a }"}}"#,
        ),
        (
            ClientMessage::Complete { id: "1".into() }.encode(),
            r#"{"id":"1","type":"complete"}"#,
        ),
        (
            ClientMessage::Complete {
                id: "quote\"d\n".into(),
            }
            .encode(),
            r#"{"id":"quote\"d\n","type":"complete"}"#,
        ),
    ];
    for (encoded, expected) in cases {
        assert_eq!(encoded, expected);
    }
    let mut out = String::from("x");
    ClientMessage::Ping { payload: None }.encode_into(&mut out);
    assert_eq!(out, r#"x{"type":"ping"}"#);
}

#[test]
fn every_message_round_trips() {
    let client = [
        ClientMessage::ConnectionInit {
            payload: Some(raw(r#"{"a":[1,{"b":null}]}"#)),
        },
        ClientMessage::Ping { payload: None },
        ClientMessage::Pong {
            payload: Some(raw("{}")),
        },
        ClientMessage::Subscribe {
            id: "ü\\\u{7}".into(),
            payload: raw(r#"{"query":"subscription { s }"}"#),
        },
        ClientMessage::Complete { id: "2".into() },
    ];
    for message in client {
        let text = message.encode();
        assert_eq!(ClientMessage::decode(&text).expect(&text), message);
        assert_eq!(
            message.kind(),
            serde_json::from_str::<serde_json::Value>(&text).expect("JSON")["type"]
        );
    }
    let server = [
        ServerMessage::ConnectionAck {
            payload: Some(raw(r#"{"v":1}"#)),
        },
        ServerMessage::Ping { payload: None },
        ServerMessage::Pong { payload: None },
        ServerMessage::Next {
            id: "a b".into(),
            payload: raw(r#"{"data":null,"errors":[{"message":"e"}]}"#),
        },
        ServerMessage::Error {
            id: "e".into(),
            payload: raw(r#"[{"message":"e"}]"#),
        },
        ServerMessage::Complete { id: "c".into() },
    ];
    for message in server {
        let text = message.encode();
        assert_eq!(ServerMessage::decode(&text).expect(&text), message);
    }
}

#[test]
fn malformed_frames_are_errors_that_say_why() {
    let client = [
        ("", "a JSON object"),
        ("not json", "a JSON object"),
        ("[]", "a JSON object"),
        (r#"["ping", null, null]"#, "a JSON object"),
        ("{", "EOF"),
        ("{\"type\":\"ping\",}", "trailing comma"),
        (r#"{"id":"1"}"#, "missing field `type`"),
        (r#"{"type":"nope"}"#, "unknown variant `nope`"),
        (r#"{"type":5}"#, "line 1 column 9"),
        (
            r#"{"type":"next","id":"1","payload":{}}"#,
            "next is not a message a server receives",
        ),
        (
            r#"{"type":"connection_ack"}"#,
            "connection_ack is not a message a server receives",
        ),
        (
            r#"{"type":"subscribe","payload":{"query":"{ a }"}}"#,
            "subscribe needs a non-empty id",
        ),
        (
            r#"{"type":"subscribe","id":"","payload":{"query":"{ a }"}}"#,
            "subscribe needs a non-empty id",
        ),
        (
            r#"{"type":"subscribe","id":null,"payload":{"query":"{ a }"}}"#,
            "non-empty id",
        ),
        (r#"{"type":"subscribe","id":1,"payload":{}}"#, "a string id"),
        (
            r#"{"type":"subscribe","id":"1"}"#,
            "subscribe needs a payload",
        ),
        (
            r#"{"type":"subscribe","id":"1","payload":null}"#,
            "subscribe needs a payload",
        ),
        (
            r#"{"type":"subscribe","id":"1","payload":"{}"}"#,
            "must be an object",
        ),
        (r#"{"type":"complete"}"#, "complete needs a non-empty id"),
        (
            r#"{"type":"connection_init","payload":"token"}"#,
            "an object or null",
        ),
        (r#"{"type":"ping","payload":[1]}"#, "an object or null"),
        (r#"{"type":"ping","payload":{"unclosed":1}"#, "EOF"),
        (r#"{"type":"ping","type":"pong"}"#, "duplicate field"),
        (r#"{"type":"ping"} trailing"#, "trailing"),
    ];
    for (text, why) in client {
        let error = ClientMessage::decode(text).expect_err(text);
        assert!(error.to_string().contains(why), "{text}: {error}");
    }
    let server = [
        (
            r#"{"type":"subscribe","id":"1","payload":{}}"#,
            "subscribe is not a message a client receives",
        ),
        (r#"{"type":"next","id":"1"}"#, "next needs a payload"),
        (
            r#"{"type":"next","id":"1","payload":[]}"#,
            "must be an object",
        ),
        (
            r#"{"type":"error","id":"1","payload":{"message":"no"}}"#,
            "an array of errors",
        ),
        (r#"{"type":"complete","id":""}"#, "non-empty id"),
    ];
    for (text, why) in server {
        let error = ServerMessage::decode(text).expect_err(text);
        assert!(error.to_string().contains(why), "{text}: {error}");
    }
    assert!(matches!(
        ClientMessage::decode("{"),
        Err(DecodeError::Json(_))
    ));
}

#[test]
fn subscribe_payloads_are_checked() {
    let payload = SubscribePayload::parse(raw(
        r#"{"query":"subscription($n: Int) { s(n: $n) }","operationName":null,"variables":{"n":2}}"#,
    ))
    .expect("a payload");
    assert_eq!(payload.query, "subscription($n: Int) { s(n: $n) }");
    assert_eq!(payload.operation_name, None);
    assert_eq!(payload.variables, Some(raw(r#"{"n":2}"#)));
    for bad in [
        r#"{"query":5}"#,
        "{}",
        r#"{"query":"{ a }","variables":[1]}"#,
        r#"{"query":"{ a }","extensions":"x"}"#,
        r#"["{ a }"]"#,
    ] {
        assert!(SubscribePayload::parse(raw(bad)).is_err(), "{bad}");
    }
}
