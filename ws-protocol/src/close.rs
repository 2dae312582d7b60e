//! Close codes: the protocol's own (4xxx) and the two WebSocket ones its peers use.

use std::borrow::Cow;
use std::fmt;

/// A WebSocket close code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CloseCode(u16);

impl CloseCode {
    /// WebSocket (RFC 6455): a normal closure.
    pub const NORMAL: Self = Self(1000);
    /// WebSocket (RFC 6455): the endpoint is going away (a server shutting down).
    pub const GOING_AWAY: Self = Self(1001);
    /// WebSocket (RFC 6455): the peer broke a rule of the endpoint's (here: it does
    /// not read what it is sent).
    pub const POLICY_VIOLATION: Self = Self(1008);
    /// A message the receiver cannot read, or one it may not get now.
    pub const BAD_REQUEST: Self = Self(4400);
    /// `subscribe` before the connection was acknowledged.
    pub const UNAUTHORIZED: Self = Self(4401);
    /// The server refused `connection_init`.
    pub const FORBIDDEN: Self = Self(4403);
    /// The upgrade did not agree on [`SUBPROTOCOL`](crate::SUBPROTOCOL).
    pub const SUBPROTOCOL_NOT_ACCEPTABLE: Self = Self(4406);
    /// No `connection_init` within the server's wait.
    pub const CONNECTION_INITIALISATION_TIMEOUT: Self = Self(4408);
    /// `subscribe` with an id whose operation is still running.
    pub const SUBSCRIBER_ALREADY_EXISTS: Self = Self(4409);
    /// A second `connection_init`.
    pub const TOO_MANY_INITIALISATION_REQUESTS: Self = Self(4429);
    /// graphql-ws clients report a socket they ended themselves (never on the wire).
    pub const TERMINATED: Self = Self(4499);
    /// The server failed.
    pub const INTERNAL_SERVER_ERROR: Self = Self(4500);
    /// No `connection_ack` within the client's wait.
    pub const CONNECTION_ACKNOWLEDGEMENT_TIMEOUT: Self = Self(4504);
    /// A server message the client cannot read.
    pub const BAD_RESPONSE: Self = Self(4004);
    /// The client failed.
    pub const INTERNAL_CLIENT_ERROR: Self = Self(4005);

    pub const fn new(code: u16) -> Self {
        Self(code)
    }

    pub const fn get(self) -> u16 {
        self.0
    }

    /// The reason graphql-ws sends with this code when it is always the same; `None`
    /// where the reason says what went wrong (or for codes outside the protocol).
    pub const fn reason(self) -> Option<&'static str> {
        Some(match self.0 {
            4401 => "Unauthorized",
            4403 => "Forbidden",
            4406 => "Subprotocol not acceptable",
            4408 => "Connection initialisation timeout",
            4429 => "Too many initialisation requests",
            4499 => "Terminated",
            4504 => "Connection acknowledgement timeout",
            _ => return None,
        })
    }
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> Self {
        code.0
    }
}

impl From<u16> for CloseCode {
    fn from(code: u16) -> Self {
        Self(code)
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A close frame to send: its code and a reason that fits the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close {
    pub code: CloseCode,
    pub reason: Cow<'static, str>,
}

/// A close frame's payload is at most 125 bytes, two of them the code.
const MAX_REASON: usize = 123;

impl Close {
    /// `reason` is cut (at a character boundary) to what a close frame holds.
    pub fn new(code: CloseCode, reason: impl Into<Cow<'static, str>>) -> Self {
        let mut reason = reason.into();
        if reason.len() > MAX_REASON {
            let mut end = MAX_REASON;
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            reason.to_mut().truncate(end);
        }
        Self { code, reason }
    }

    /// The code's fixed reason.
    fn fixed(code: CloseCode) -> Self {
        Self::new(code, code.reason().unwrap_or_default())
    }

    /// 4400: a message that is not the protocol's (`why` says how).
    pub fn bad_request(why: impl fmt::Display) -> Self {
        Self::new(CloseCode::BAD_REQUEST, format!("Invalid message: {why}"))
    }

    /// 4401: `subscribe` before `connection_ack`.
    pub fn unauthorized() -> Self {
        Self::fixed(CloseCode::UNAUTHORIZED)
    }

    /// 4403: `connection_init` refused.
    pub fn forbidden() -> Self {
        Self::fixed(CloseCode::FORBIDDEN)
    }

    /// 4408: no `connection_init` in time.
    pub fn initialisation_timeout() -> Self {
        Self::fixed(CloseCode::CONNECTION_INITIALISATION_TIMEOUT)
    }

    /// 4409: `subscribe` with the id of a running operation.
    pub fn subscriber_already_exists(id: &str) -> Self {
        Self::new(
            CloseCode::SUBSCRIBER_ALREADY_EXISTS,
            format!("Subscriber for {id} already exists"),
        )
    }

    /// 4429: a second `connection_init`.
    pub fn too_many_initialisation_requests() -> Self {
        Self::fixed(CloseCode::TOO_MANY_INITIALISATION_REQUESTS)
    }

    /// 4500: the server failed.
    pub fn internal_server_error(why: impl fmt::Display) -> Self {
        Self::new(CloseCode::INTERNAL_SERVER_ERROR, why.to_string())
    }

    /// 1001: the server is going away.
    /// The client does not read its messages: they would pile up in the server.
    pub fn not_reading() -> Self {
        Self::new(
            CloseCode::POLICY_VIOLATION,
            "the client does not read its messages",
        )
    }

    pub fn going_away(why: impl Into<Cow<'static, str>>) -> Self {
        Self::new(CloseCode::GOING_AWAY, why)
    }
}

#[cfg(test)]
mod tests {
    use super::{Close, CloseCode};

    #[test]
    fn codes_carry_the_protocols_numbers_and_reasons() {
        let fixed = [
            (Close::unauthorized(), 4401, "Unauthorized"),
            (Close::forbidden(), 4403, "Forbidden"),
            (
                Close::initialisation_timeout(),
                4408,
                "Connection initialisation timeout",
            ),
            (
                Close::too_many_initialisation_requests(),
                4429,
                "Too many initialisation requests",
            ),
        ];
        for (close, code, reason) in fixed {
            assert_eq!(u16::from(close.code), code);
            assert_eq!(close.reason, reason);
        }
        let exists = Close::subscriber_already_exists("7");
        assert_eq!(
            (exists.code.get(), &*exists.reason),
            (4409, "Subscriber for 7 already exists")
        );
        assert_eq!(Close::bad_request("no id").code, CloseCode::BAD_REQUEST);
        assert_eq!(CloseCode::INTERNAL_SERVER_ERROR.get(), 4500);
        assert_eq!(CloseCode::TERMINATED.reason(), Some("Terminated"));
        assert_eq!(CloseCode::BAD_REQUEST.reason(), None);
        assert_eq!(CloseCode::from(1001), CloseCode::GOING_AWAY);
    }

    #[test]
    fn long_reasons_are_cut_to_fit_a_close_frame() {
        let close = Close::subscriber_already_exists(&"é".repeat(100));
        assert!(close.reason.len() <= 123, "{}", close.reason.len());
        assert!(close.reason.starts_with("Subscriber for é"));
        let short = Close::going_away("bye");
        assert_eq!(short.reason, "bye");
    }
}
