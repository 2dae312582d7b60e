//! `graphql-transport-ws` frames for the session, in graphfleet-ws-protocol's types (the
//! one module every end of this protocol uses).

use super::incoming::Incoming;
use graphfleet_ws_protocol::{ClientMessage, Close, RawJson, ServerMessage};
use tokio_tungstenite::tungstenite::Message;

pub(super) fn decode(text: &str) -> Result<Incoming<'_>, Close> {
    Ok(
        match ClientMessage::decode(text).map_err(Close::bad_request)? {
            ClientMessage::ConnectionInit { payload } => Incoming::Init(payload.map(RawJson::get)),
            ClientMessage::Ping { .. } => Incoming::Ping,
            ClientMessage::Pong { .. } => Incoming::Ignored,
            ClientMessage::Subscribe { id, payload } => Incoming::Subscribe {
                id,
                payload: payload.get(),
            },
            ClientMessage::Complete { id } => Incoming::Stop(id),
        },
    )
}

fn frame(message: &ServerMessage<'_>) -> Message {
    Message::text(message.encode())
}

pub(super) fn ack() -> Message {
    frame(&ServerMessage::ConnectionAck { payload: None })
}

pub(super) fn pong() -> Message {
    frame(&ServerMessage::Pong { payload: None })
}

/// A result, copied once into its frame (never re-serialized).
pub(super) fn next(id: &str, payload: &str) -> Message {
    frame(&ServerMessage::Next {
        id: id.into(),
        payload: RawJson::trusted(payload),
    })
}

pub(super) fn error(id: &str, errors: &str) -> Message {
    frame(&ServerMessage::Error {
        id: id.into(),
        payload: RawJson::trusted(errors),
    })
}

pub(super) fn complete(id: &str) -> Message {
    frame(&ServerMessage::Complete { id: id.into() })
}
