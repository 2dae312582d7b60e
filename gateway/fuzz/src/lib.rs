//! Shared by the fuzz targets: the fed supergraph, answered by the loadtest's
//! in-process fed subgraphs (no network), and a gateway with strict limits.

use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_gateway::config::{Config, LimitsConfig};
use graphfleet_gateway::executor::transport::{FetchError, Fetched, SubgraphRequest, Transport};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_bench_subgraphs::engine::Endpoint;
use graphfleet_bench_subgraphs::sets::subgraph_endpoints;
use std::time::Duration;

/// Subgraph requests answered by the loadtest's subgraph engines, by subgraph name.
pub struct InProcess(Vec<Endpoint>);

impl Transport for InProcess {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        let endpoint = self
            .0
            .iter()
            .find(|e| e.name() == request.name)
            .ok_or_else(|| FetchError::http(format!("no subgraph {}", request.name)))?;
        let reply = endpoint.handle(&request.body);
        Ok(Bytes::from(reply.body).into())
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
            ..LimitsConfig::default()
        },
        ..Config::default()
    };
    config.traffic.request_timeout = Duration::from_secs(2);
    config
}

pub fn supergraph() -> Supergraph {
    Supergraph::parse(Set::Fed.supergraph()).expect("the fed supergraph loads")
}

/// The fed subgraphs, answering in-process.
pub fn fed_subgraphs() -> InProcess {
    InProcess(subgraph_endpoints(Set::Fed).expect("fed subgraphs"))
}

pub fn gateway() -> Gateway<InProcess> {
    Gateway::with_transport(
        std::sync::Arc::new(strict_config()),
        supergraph(),
        fed_subgraphs(),
    )
}

/// The oracle-composed supergraph of every federation audit suite, in folder order.
pub fn audit_supergraphs() -> Vec<String> {
    supergraphs_in("../tests/audit")
}

/// The supergraph of every gateway fixture (`../tests/fixtures/*/`), in name order:
/// features the audit has no suite for (`@context`, progressive override, ...).
pub fn fixture_supergraphs() -> Vec<String> {
    supergraphs_in("../tests/fixtures")
}

fn supergraphs_in(dir: &str) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("dir entry").path().join("supergraph.graphql"))
        .filter(|p| p.exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|p| std::fs::read_to_string(p).expect("readable supergraph"))
        .collect()
}

/// An operation on the fed supergraph from fuzz bytes, shaped like the hostile families:
/// up to 32 fragments on `Review`, each made of items that spread earlier fragments
/// (directly, in an inline fragment, under `author`/`product` with `reviews`, or under
/// an alias) or select a scalar. Most inputs are valid operations, so the planner, not
/// the parser, gets the work.
pub fn fragment_program(data: &[u8]) -> String {
    let mut bytes = data.iter().copied();
    let count = usize::from(bytes.next().unwrap_or(0) % 32) + 1;
    let mut fragments = vec!["fragment F0 on Review { body }".to_owned()];
    for i in 1..count {
        let items = usize::from(bytes.next().unwrap_or(0) % 4) + 1;
        let mut body = Vec::with_capacity(items);
        for item in 0..items {
            let kind = bytes.next().unwrap_or(0);
            // The first item spreads the previous fragment, so every fragment is used
            // (an unused one fails validation before planning).
            let target = if item == 0 {
                i - 1
            } else {
                usize::from(bytes.next().unwrap_or(0)) % i
            };
            let alias = ["a", "b", "c", "d"][usize::from(kind >> 4) % 4];
            let kind = if item == 0 { kind % 6 } else { kind % 7 };
            body.push(match kind {
                0 => format!("...F{target}"),
                1 => format!("... on Review {{ ...F{target} }}"),
                2 => format!("author {{ reviews {{ ...F{target} }} }}"),
                3 => format!("product {{ reviews {{ ...F{target} }} }}"),
                4 => format!("{alias}: author {{ reviews {{ ...F{target} }} }}"),
                5 => format!("{alias}: product {{ name reviews {{ ...F{target} }} }}"),
                _ => "id".to_owned(),
            });
        }
        fragments.push(format!("fragment F{i} on Review {{ {} }}", body.join(" ")));
    }
    let top = count - 1;
    format!(
        "query {{ topProducts {{ reviews {{ ...F{top} }} }} }}\n{}",
        fragments.join("\n")
    )
}
