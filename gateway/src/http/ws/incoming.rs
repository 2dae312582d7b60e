//! A client message as the session reads it, whichever protocol carried it (each
//! protocol's module decodes its frames into this).

use std::borrow::Cow;

/// A client message, in either protocol.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// `connection_init`, with its payload's JSON text (an object) if any.
    Init(Option<&'a str>),
    /// A protocol-level ping (graphql-transport-ws), answered with a pong.
    Ping,
    /// A protocol-level pong, or anything else that needs no answer.
    Ignored,
    /// Start operation `id` with `payload`, the GraphQL request object's text.
    Subscribe { id: Cow<'a, str>, payload: &'a str },
    /// The client stops operation `id`.
    Stop(Cow<'a, str>),
    /// The client ends the connection (`connection_terminate`, legacy).
    Terminate,
}
