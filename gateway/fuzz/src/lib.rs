//! Shared by the fuzz targets: the fed supergraph, answered by the loadtest's
//! in-process fed subgraphs (no network), and a gateway with strict limits.

use bytes::Bytes;
use graphfleet_gateway::config::{Config, LimitsConfig};
use graphfleet_gateway::executor::transport::{FetchError, SubgraphRequest, Transport};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_loadtest::Set;
use graphfleet_loadtest::engine::Endpoint;
use std::time::Duration;

/// Subgraph requests answered by the loadtest's subgraph engines, by subgraph name.
pub struct InProcess(Vec<Endpoint>);

impl Transport for InProcess {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Bytes, FetchError> {
        let endpoint = self
            .0
            .iter()
            .find(|e| e.name() == request.name)
            .ok_or_else(|| FetchError::http(format!("no subgraph {}", request.name)))?;
        let reply = endpoint.handle(&request.body);
        Ok(Bytes::from(reply.body))
    }
}

/// Tight limits, as a production config would set them.
pub fn strict_config() -> Config {
    let mut config = Config {
        limits: LimitsConfig {
            max_body_bytes: 16 * 1024,
            max_depth: Some(12),
            max_aliases: Some(30),
            max_root_fields: Some(20),
            max_tokens: Some(2000),
            introspection: true,
        },
        ..Config::default()
    };
    config.traffic.request_timeout = Duration::from_secs(2);
    config
}

pub fn supergraph() -> Supergraph {
    Supergraph::parse(Set::Fed.supergraph()).expect("the fed supergraph loads")
}

pub fn gateway() -> Gateway<InProcess> {
    let endpoints = Set::Fed.subgraph_endpoints().expect("fed subgraphs");
    Gateway::with_transport(
        std::sync::Arc::new(strict_config()),
        supergraph(),
        InProcess(endpoints),
    )
}

/// The oracle-composed supergraph of every federation audit suite, in folder order.
pub fn audit_supergraphs() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/audit");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("gateway/tests/audit exists")
        .map(|e| e.expect("dir entry").path().join("supergraph.graphql"))
        .filter(|p| p.exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|p| std::fs::read_to_string(p).expect("readable supergraph"))
        .collect()
}
