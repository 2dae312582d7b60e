//! A hook around each subgraph fetch of one request: the gateway's subgraph coprocessor
//! stages. It sees the request before it is sent (and may rewrite it or answer it
//! itself) and the answer before it is merged. A hooked fetch is never deduplicated
//! with another request's: the hook may make it differ per client.

use crate::error::FetchError;
use crate::transport::Fetched;
use bytes::Bytes;
use futures::future::BoxFuture;

/// A subgraph request as a hook may change it.
#[derive(Debug, Clone)]
pub struct HookedRequest {
    /// The subgraph's name in the supergraph.
    pub name: String,
    pub url: String,
    /// The JSON body (`query`, `variables`).
    pub body: Bytes,
    pub headers: http::HeaderMap,
}

/// Sends a (possibly rewritten) request to the subgraph.
pub type Send<'a> = dyn Fn(HookedRequest) -> BoxFuture<'a, Result<Fetched, FetchError>>
    + std::marker::Send
    + Sync
    + 'a;

pub trait FetchHook: std::marker::Send + Sync {
    /// The fetch of `request`: the hook calls `send` (or not) and may change what
    /// goes in and what comes back.
    fn around<'a>(
        &'a self,
        request: HookedRequest,
        send: &'a Send<'a>,
    ) -> BoxFuture<'a, Result<Fetched, FetchError>>;

    /// The hook reads the subgraph's response headers.
    fn wants_response_headers(&self) -> bool;
}
