//! What the gateway benches share: recording the subgraph traffic of one real
//! execution, and a gateway answering from those recorded bytes.

#![allow(dead_code)] // each bench uses its part

use bytes::Bytes;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::executor::transport::{
    FetchError, Fetched, HttpTransport, SubgraphRequest, Transport,
};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::pipeline::request::RequestMeta;
use graphfleet_gateway::supergraph::Supergraph;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Forwards to real subgraphs and keeps every (request, response) pair.
#[derive(Clone)]
pub struct Recorder {
    pub http: HttpTransport,
    pub seen: Arc<Mutex<Vec<(Bytes, Bytes)>>>,
}

impl Transport for Recorder {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        let body = request.body.clone();
        let response = self.http.fetch(request).await?;
        self.seen.lock().push((body, response.body.clone()));
        Ok(response)
    }
}

/// Answers from recorded bytes; no I/O.
pub struct Replay(pub FxHashMap<Bytes, Bytes>);

impl Transport for Replay {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        self.0
            .get(&request.body)
            .cloned()
            .map(Fetched::from)
            .ok_or_else(|| FetchError::http("request not recorded"))
    }
}

/// A POST request's metadata (mutations allowed).
pub fn post() -> RequestMeta {
    RequestMeta {
        allow_mutation: true,
        ..RequestMeta::default()
    }
}

/// A gateway with `config` on `supergraph` answering from the `recorded` exchanges.
pub fn replaying(config: Config, supergraph: &str, recorded: &[(Bytes, Bytes)]) -> Gateway<Replay> {
    Gateway::with_transport(
        Arc::new(config),
        Supergraph::parse(supergraph).expect("supergraph"),
        Replay(recorded.iter().cloned().collect()),
    )
}
