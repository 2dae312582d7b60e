//! The messages and their text frames: `{"id":…,"type":…,"payload":…}`.

use crate::json::{RawJson, push_string};
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use std::borrow::Cow;
use std::fmt;

/// What a client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// The first message; `payload` (an object) is the server's to read (auth tokens…).
    ConnectionInit {
        payload: Option<RawJson<'a>>,
    },
    Ping {
        payload: Option<RawJson<'a>>,
    },
    Pong {
        payload: Option<RawJson<'a>>,
    },
    /// Start operation `id`; `payload` is the GraphQL request object
    /// (see [`SubscribePayload`]).
    Subscribe {
        id: Cow<'a, str>,
        payload: RawJson<'a>,
    },
    /// Stop operation `id`.
    Complete {
        id: Cow<'a, str>,
    },
}

/// What a server sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    ConnectionAck {
        payload: Option<RawJson<'a>>,
    },
    Ping {
        payload: Option<RawJson<'a>>,
    },
    Pong {
        payload: Option<RawJson<'a>>,
    },
    /// A result of operation `id`: `{"data":…,"errors":…}`, as written.
    Next {
        id: Cow<'a, str>,
        payload: RawJson<'a>,
    },
    /// Operation `id` failed before any result: a JSON array of GraphQL errors. Ends it.
    Error {
        id: Cow<'a, str>,
        payload: RawJson<'a>,
    },
    /// Operation `id` is over.
    Complete {
        id: Cow<'a, str>,
    },
}

/// Why a frame is not a message this side receives.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not a JSON object with a known `type` and well-typed `id`/`payload`.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("a message is a JSON object")]
    NotAnObject,
    #[error("{kind} is not a message a {receiver} receives")]
    Unexpected {
        kind: &'static str,
        receiver: &'static str,
    },
    #[error("{kind} needs a non-empty id")]
    MissingId { kind: &'static str },
    #[error("{kind} needs a payload")]
    MissingPayload { kind: &'static str },
    #[error("the {kind} payload must be {expected}")]
    Payload {
        kind: &'static str,
        expected: &'static str,
    },
}

/// The `type` of every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    ConnectionInit,
    ConnectionAck,
    Ping,
    Pong,
    Subscribe,
    Next,
    Error,
    Complete,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::ConnectionInit => "connection_init",
            Kind::ConnectionAck => "connection_ack",
            Kind::Ping => "ping",
            Kind::Pong => "pong",
            Kind::Subscribe => "subscribe",
            Kind::Next => "next",
            Kind::Error => "error",
            Kind::Complete => "complete",
        }
    }
}

/// A frame as read; which fields a type needs is checked per side. Unknown fields are
/// ignored, as graphql-ws does.
#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default, borrow)]
    id: Option<Id<'a>>,
    #[serde(default, borrow)]
    payload: Option<RawJson<'a>>,
}

/// An id borrowed from the frame unless it has escapes (serde's `Cow` impl always copies).
struct Id<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string id")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Id(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Id(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Id(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(IdVisitor)
    }
}

impl<'a> Frame<'a> {
    fn read(text: &'a str) -> Result<Self, DecodeError> {
        // serde would take a struct written as an array too; a message is an object.
        if !text.trim_start().starts_with('{') {
            return Err(DecodeError::NotAnObject);
        }
        Ok(serde_json::from_str(text)?)
    }

    fn id(&mut self) -> Result<Cow<'a, str>, DecodeError> {
        match self.id.take() {
            Some(Id(id)) if !id.is_empty() => Ok(id),
            _ => Err(DecodeError::MissingId {
                kind: self.kind.name(),
            }),
        }
    }

    /// A payload that must be there and be an object (or an array).
    fn payload(&self, array: bool) -> Result<RawJson<'a>, DecodeError> {
        let kind = self.kind.name();
        let payload = self.payload.ok_or(DecodeError::MissingPayload { kind })?;
        match array {
            false if !payload.is_object() => Err(DecodeError::Payload {
                kind,
                expected: "an object",
            }),
            true if !payload.is_array() => Err(DecodeError::Payload {
                kind,
                expected: "an array of errors",
            }),
            _ => Ok(payload),
        }
    }

    /// The optional payload of init, ack, ping and pong: an object when present.
    fn optional_payload(&self) -> Result<Option<RawJson<'a>>, DecodeError> {
        match self.payload {
            Some(p) if !p.is_object() => Err(DecodeError::Payload {
                kind: self.kind.name(),
                expected: "an object or null",
            }),
            p => Ok(p),
        }
    }
}

/// Append `{"id":…,"type":…,"payload":…}` (absent parts left out) to `out`.
fn write_frame(out: &mut String, id: Option<&str>, kind: Kind, payload: Option<RawJson<'_>>) {
    out.push('{');
    if let Some(id) = id {
        out.push_str("\"id\":");
        push_string(out, id);
        out.push(',');
    }
    out.push_str("\"type\":\"");
    out.push_str(kind.name());
    out.push('"');
    if let Some(payload) = payload {
        out.push_str(",\"payload\":");
        out.push_str(payload.get());
    }
    out.push('}');
}

/// Room for a frame's fixed parts besides its id and payload.
const FRAME_OVERHEAD: usize = 48;

fn encoded(id: Option<&str>, kind: Kind, payload: Option<RawJson<'_>>) -> String {
    let size = FRAME_OVERHEAD + id.map_or(0, str::len) + payload.map_or(0, |p| p.get().len());
    let mut out = String::with_capacity(size);
    write_frame(&mut out, id, kind, payload);
    out
}

impl<'a> ClientMessage<'a> {
    /// Read one text frame from a client.
    pub fn decode(text: &'a str) -> Result<Self, DecodeError> {
        let mut frame = Frame::read(text)?;
        Ok(match frame.kind {
            Kind::ConnectionInit => Self::ConnectionInit {
                payload: frame.optional_payload()?,
            },
            Kind::Ping => Self::Ping {
                payload: frame.optional_payload()?,
            },
            Kind::Pong => Self::Pong {
                payload: frame.optional_payload()?,
            },
            Kind::Subscribe => Self::Subscribe {
                id: frame.id()?,
                payload: frame.payload(false)?,
            },
            Kind::Complete => Self::Complete { id: frame.id()? },
            kind @ (Kind::ConnectionAck | Kind::Next | Kind::Error) => {
                return Err(DecodeError::Unexpected {
                    kind: kind.name(),
                    receiver: "server",
                });
            }
        })
    }

    fn parts(&self) -> (Option<&str>, Kind, Option<RawJson<'_>>) {
        match self {
            Self::ConnectionInit { payload } => (None, Kind::ConnectionInit, *payload),
            Self::Ping { payload } => (None, Kind::Ping, *payload),
            Self::Pong { payload } => (None, Kind::Pong, *payload),
            Self::Subscribe { id, payload } => (Some(id), Kind::Subscribe, Some(*payload)),
            Self::Complete { id } => (Some(id), Kind::Complete, None),
        }
    }

    /// The message's `type`.
    pub fn kind(&self) -> &'static str {
        self.parts().1.name()
    }

    /// The text frame.
    pub fn encode(&self) -> String {
        let (id, kind, payload) = self.parts();
        encoded(id, kind, payload)
    }

    /// Append the text frame to `out`.
    pub fn encode_into(&self, out: &mut String) {
        let (id, kind, payload) = self.parts();
        write_frame(out, id, kind, payload);
    }
}

impl<'a> ServerMessage<'a> {
    /// Read one text frame from a server.
    pub fn decode(text: &'a str) -> Result<Self, DecodeError> {
        let mut frame = Frame::read(text)?;
        Ok(match frame.kind {
            Kind::ConnectionAck => Self::ConnectionAck {
                payload: frame.optional_payload()?,
            },
            Kind::Ping => Self::Ping {
                payload: frame.optional_payload()?,
            },
            Kind::Pong => Self::Pong {
                payload: frame.optional_payload()?,
            },
            Kind::Next => Self::Next {
                id: frame.id()?,
                payload: frame.payload(false)?,
            },
            Kind::Error => Self::Error {
                id: frame.id()?,
                payload: frame.payload(true)?,
            },
            Kind::Complete => Self::Complete { id: frame.id()? },
            kind @ (Kind::ConnectionInit | Kind::Subscribe) => {
                return Err(DecodeError::Unexpected {
                    kind: kind.name(),
                    receiver: "client",
                });
            }
        })
    }

    fn parts(&self) -> (Option<&str>, Kind, Option<RawJson<'_>>) {
        match self {
            Self::ConnectionAck { payload } => (None, Kind::ConnectionAck, *payload),
            Self::Ping { payload } => (None, Kind::Ping, *payload),
            Self::Pong { payload } => (None, Kind::Pong, *payload),
            Self::Next { id, payload } => (Some(id), Kind::Next, Some(*payload)),
            Self::Error { id, payload } => (Some(id), Kind::Error, Some(*payload)),
            Self::Complete { id } => (Some(id), Kind::Complete, None),
        }
    }

    /// The message's `type`.
    pub fn kind(&self) -> &'static str {
        self.parts().1.name()
    }

    /// The text frame; a `next` costs one copy of its payload.
    pub fn encode(&self) -> String {
        let (id, kind, payload) = self.parts();
        encoded(id, kind, payload)
    }

    /// Append the text frame to `out`.
    pub fn encode_into(&self, out: &mut String) {
        let (id, kind, payload) = self.parts();
        write_frame(out, id, kind, payload);
    }
}

/// A `subscribe` payload: the GraphQL request (PROTOCOL.md's shape; servers that take
/// more, such as persisted queries without `query`, read the payload themselves).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribePayload<'a> {
    #[serde(borrow)]
    pub query: Cow<'a, str>,
    #[serde(default, borrow)]
    pub operation_name: Option<Cow<'a, str>>,
    /// An object, when present.
    #[serde(default, borrow)]
    pub variables: Option<RawJson<'a>>,
    /// An object, when present.
    #[serde(default, borrow)]
    pub extensions: Option<RawJson<'a>>,
}

impl<'a> SubscribePayload<'a> {
    /// Read and check a `subscribe` message's payload.
    pub fn parse(payload: RawJson<'a>) -> Result<Self, DecodeError> {
        // serde would take the struct written as an array too.
        if !payload.is_object() {
            return Err(DecodeError::Payload {
                kind: "subscribe",
                expected: "an object",
            });
        }
        let parsed: Self = serde_json::from_str(payload.get())?;
        let not_object = |v: Option<RawJson<'_>>| v.is_some_and(|v| !v.is_object());
        if not_object(parsed.variables) || not_object(parsed.extensions) {
            return Err(DecodeError::Payload {
                kind: "subscribe",
                expected: "an object whose variables and extensions are objects",
            });
        }
        Ok(parsed)
    }
}

#[cfg(test)]
#[path = "message_tests.rs"]
mod tests;
