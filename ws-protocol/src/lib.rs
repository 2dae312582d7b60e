//! The `graphql-transport-ws` protocol (graphql-ws's PROTOCOL.md) as types: the messages
//! each side sends ([`ClientMessage`], [`ServerMessage`]), their text frames ([`decode`]
//! and [`encode`](ServerMessage::encode)), and the close codes ([`CloseCode`], [`Close`]).
//!
//! No I/O and no runtime: the gateway's server, its client towards subgraphs, the
//! benchmark subgraphs, graphfleet-bench and the test clients put these on their own
//! sockets. Payloads stay JSON text as written ([`RawJson`]): decoding borrows them from
//! the frame and encoding copies pre-serialized results in, so the `next` hot path never
//! parses or re-serializes an event.
//!
//! [`decode`]: ClientMessage::decode

mod close;
mod json;
mod message;

pub use close::{Close, CloseCode};
pub use json::RawJson;
pub use message::{ClientMessage, DecodeError, ServerMessage, SubscribePayload};

/// The WebSocket subprotocol (`Sec-WebSocket-Protocol`) both ends must agree on.
pub const SUBPROTOCOL: &str = "graphql-transport-ws";

/// Whether a `Sec-WebSocket-Protocol` header value (a comma-separated list) offers
/// [`SUBPROTOCOL`].
pub fn offers_subprotocol(header: &str) -> bool {
    header.split(',').any(|p| p.trim() == SUBPROTOCOL)
}

#[cfg(test)]
mod tests {
    use super::offers_subprotocol;

    #[test]
    fn the_subprotocol_is_found_in_a_list() {
        assert!(offers_subprotocol("graphql-transport-ws"));
        assert!(offers_subprotocol("graphql-ws, graphql-transport-ws"));
        assert!(!offers_subprotocol("graphql-ws"));
        assert!(!offers_subprotocol("graphql-transport-wss"));
        assert!(!offers_subprotocol(""));
    }
}
