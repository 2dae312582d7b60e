//! Generated operations (`../tests/support/opgen.rs`) with a fuzzer-chosen seed over one
//! federation audit suite: the first input byte picks the suite, the next eight are the
//! generator's seed. The gateway answers with that suite's JSON subgraphs called
//! in-process (`../tests/support/json_subgraph.rs`, no network) and every answer must keep
//! the response invariants (`../tests/support/invariants.rs`). Suites listed whole in
//! `../tests/generated/KNOWN_FAILURES` for broken invariants are skipped until they pass.
#![no_main]

#[allow(dead_code)]
#[path = "../../tests/support/invariants.rs"]
mod invariants;
#[allow(dead_code)]
#[path = "../../tests/support/json_subgraph.rs"]
mod json_subgraph;
#[allow(dead_code)]
#[path = "../../tests/support/opgen.rs"]
mod opgen;

use apollo_compiler::Schema;
use apollo_compiler::response::JsonMap;
use apollo_compiler::validation::Valid;
use bytes::Bytes;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::executor::transport::{FetchError, Fetched, SubgraphRequest, Transport};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::pipeline::request::{GraphQLRequest, RequestMeta};
use graphfleet_gateway::supergraph::Supergraph;
use json_subgraph::{Counters, Subgraph};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};

/// A suite's subgraphs, answered in-process by name.
struct JsonInProcess {
    subgraphs: BTreeMap<String, Subgraph>,
    counters: Counters,
}

impl Transport for JsonInProcess {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        let subgraph = self
            .subgraphs
            .get(request.name)
            .ok_or_else(|| FetchError::http(format!("no subgraph {}", request.name)))?;
        let body: serde_json::Value = serde_json::from_slice(&request.body)
            .map_err(|e| FetchError::http(format!("request body is not JSON: {e}")))?;
        let reply = subgraph.execute(&body, &self.counters);
        Ok(Bytes::from(serde_json::to_vec(&reply).expect("JSON serializes")).into())
    }
}

struct Suite {
    name: String,
    schema: Valid<Schema>,
    hints: opgen::Hints,
    gateway: Gateway<JsonInProcess>,
}

static SUITES: LazyLock<Vec<Suite>> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let known = std::fs::read_to_string(root.join("generated/KNOWN_FAILURES"))
        .expect("tests/generated/KNOWN_FAILURES");
    // Whole suites listed for broken invariants; differential-only entries keep them.
    let skipped: Vec<&str> = known
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.split_once(char::is_whitespace))
        .filter(|(entry, reason)| {
            !entry.contains('/') && !reason.trim().starts_with("differential")
        })
        .map(|(entry, _)| entry)
        .collect();
    let mut dirs: Vec<_> = std::fs::read_dir(root.join("audit"))
        .expect("tests/audit")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.join("supergraph.graphql").exists())
        .collect();
    dirs.sort();
    dirs.iter()
        .filter_map(|dir| {
            let name = dir.file_name()?.to_string_lossy().to_string();
            if skipped.contains(&name.as_str()) {
                return None;
            }
            let (data, sdls) = json_subgraph::read_suite(dir);
            let text = std::fs::read_to_string(dir.join("supergraph.graphql"))
                .expect("readable supergraph");
            let schema = Supergraph::parse(&text)
                .expect("audit supergraphs load")
                .api_schema;
            let subgraphs = sdls
                .iter()
                .map(|(sg, sdl)| {
                    let d = data.get(sg).cloned().unwrap_or(serde_json::json!({}));
                    (sg.clone(), Subgraph::new(sg, sdl, d))
                })
                .collect();
            let transport = JsonInProcess {
                subgraphs,
                counters: Counters::default(),
            };
            let supergraph = Supergraph::parse(&text).expect("audit supergraphs load");
            let gateway =
                Gateway::with_transport(Arc::new(Config::default()), supergraph, transport);
            Some(Suite {
                name,
                hints: opgen::Hints::from_data(&data),
                schema,
                gateway,
            })
        })
        .collect()
});

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    let (Some(pick), Some(seed)) = (data.first(), data.get(1..9)) else {
        return;
    };
    if SUITES.is_empty() {
        return;
    }
    let suite = &SUITES[usize::from(*pick) % SUITES.len()];
    let seed = u64::from_le_bytes(seed.try_into().expect("eight bytes"));
    let op = opgen::Generator::new(&suite.schema, &suite.hints, seed).operation();
    let variables: JsonMap =
        serde_json::from_value(op.variables.clone()).expect("generated variables are an object");
    let request = GraphQLRequest {
        query: Some(op.query.clone()),
        operation_name: None,
        variables: Some(variables),
        ..GraphQLRequest::default()
    };
    let outcome = RUNTIME.block_on(suite.gateway.execute(&request, &RequestMeta::default()));
    let broken = invariants::check(&suite.schema, &op.query, &op.variables, outcome.body());
    assert!(
        broken.is_empty(),
        "{}: the answer breaks invariants:\n{}\n{}\nvariables: {}\nanswer: {}",
        suite.name,
        broken
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
        op.query,
        op.variables,
        String::from_utf8_lossy(outcome.body())
    );
});
