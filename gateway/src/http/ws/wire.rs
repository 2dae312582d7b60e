//! The two WebSocket subprotocols as the session sees them: what a client message asks
//! ([`Incoming`]) and the frames answering it, whichever protocol the upgrade agreed on.
//! Each protocol's own messages are in its module ([`transport_ws`], [`legacy`]).

use super::incoming::Incoming;
use super::{legacy, transport_ws};
use graphfleet_ws_protocol::Close;
use std::borrow::Cow;
use tokio_tungstenite::tungstenite::Message;

/// The subprotocol of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `graphql-transport-ws` (the graphql-ws library's).
    TransportWs,
    /// `graphql-ws` (Apollo's subscriptions-transport-ws, legacy).
    Legacy,
}

impl Protocol {
    /// The `Sec-WebSocket-Protocol` token.
    pub fn name(self) -> &'static str {
        match self {
            Self::TransportWs => graphfleet_ws_protocol::SUBPROTOCOL,
            Self::Legacy => legacy::SUBPROTOCOL,
        }
    }

    /// The protocol a `Sec-WebSocket-Protocol` list offers; graphql-transport-ws when
    /// both are (clients list the one they prefer, but the newer one is better defined).
    pub fn negotiate<'h>(offers: impl Iterator<Item = &'h str>) -> Option<Self> {
        let mut found = None;
        for token in offers.flat_map(|v| v.split(',')).map(str::trim) {
            if token == Self::TransportWs.name() {
                return Some(Self::TransportWs);
            }
            if token == Self::Legacy.name() {
                found = Some(Self::Legacy);
            }
        }
        found
    }

    /// Read a text frame; a malformed one is the close it gets (4400).
    pub fn decode(self, text: &str) -> Result<Incoming<'_>, Close> {
        match self {
            Self::TransportWs => transport_ws::decode(text),
            Self::Legacy => legacy::decode(text),
        }
    }

    pub fn ack(self) -> Message {
        match self {
            Self::TransportWs => transport_ws::ack(),
            Self::Legacy => legacy::ack(),
        }
    }

    /// The answer to a protocol-level ping.
    pub fn pong(self) -> Option<Message> {
        match self {
            Self::TransportWs => Some(transport_ws::pong()),
            Self::Legacy => None,
        }
    }

    /// A protocol keep-alive message sent with each WebSocket ping (legacy `ka`).
    pub fn keep_alive(self) -> Option<Message> {
        match self {
            Self::TransportWs => None,
            Self::Legacy => Some(legacy::keep_alive()),
        }
    }

    /// A message telling the client why its `connection_init` is refused, before the
    /// close frame does (legacy `connection_error`).
    pub fn init_refused(self, close: &Close) -> Option<Message> {
        match self {
            Self::TransportWs => None,
            Self::Legacy => Some(legacy::connection_error(&close.reason)),
        }
    }

    /// A result of operation `id` (`{"data":…,"errors":…}` JSON text).
    pub fn next(self, id: &str, payload: &[u8]) -> Message {
        let payload = json_text(payload);
        match self {
            Self::TransportWs => transport_ws::next(id, &payload),
            Self::Legacy => legacy::data(id, &payload),
        }
    }

    /// Operation `id` failed (a JSON array of errors); ends it.
    pub fn error(self, id: &str, errors: &[u8]) -> Message {
        let errors = json_text(errors);
        match self {
            Self::TransportWs => transport_ws::error(id, &errors),
            Self::Legacy => legacy::error(id, &errors),
        }
    }

    /// What answers the client stopping operation `id`: nothing over
    /// graphql-transport-ws (the client's `complete` ends it), `complete` over legacy.
    pub fn stopped(self, id: &str) -> Option<Message> {
        match self {
            Self::TransportWs => None,
            Self::Legacy => Some(legacy::complete(id)),
        }
    }

    pub fn complete(self, id: &str) -> Message {
        match self {
            Self::TransportWs => transport_ws::complete(id),
            Self::Legacy => legacy::complete(id),
        }
    }
}

/// A body as JSON text: the gateway's are UTF-8 JSON, so this borrows (a bad byte would
/// be replaced rather than lose the message).
fn json_text(body: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(body)
}

#[cfg(test)]
mod tests {
    use super::Protocol;

    #[test]
    fn the_offered_protocol_is_chosen_and_the_newer_one_wins() {
        let pick = |h: &[&str]| Protocol::negotiate(h.iter().copied());
        assert_eq!(pick(&["graphql-transport-ws"]), Some(Protocol::TransportWs));
        assert_eq!(pick(&["graphql-ws"]), Some(Protocol::Legacy));
        assert_eq!(
            pick(&["graphql-ws, graphql-transport-ws"]),
            Some(Protocol::TransportWs)
        );
        assert_eq!(
            pick(&["graphql-ws", "graphql-transport-ws"]),
            Some(Protocol::TransportWs)
        );
        assert_eq!(pick(&["graphql-wss", "mqtt"]), None);
        assert_eq!(pick(&[]), None);
    }
}
