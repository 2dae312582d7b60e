//! Arbitrary query text, operation name and variables JSON (separated by NUL bytes)
//! through `State::prepare` under strict limits, variable coercion, and then the whole
//! execution against in-process fed subgraphs. Any panic is a bug.
#![no_main]

use apollo_compiler::response::JsonMap;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::operation;
use graphfleet_gateway::pipeline::plan_cache::State;
use graphfleet_gateway::pipeline::request::{GraphQLRequest, RequestMeta};
use graphfleet_gateway_fuzz::{InProcess, gateway, strict_config, supergraph};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static STATE: LazyLock<State> =
    LazyLock::new(|| State::with_limits(supergraph(), strict_config().limits));
static GATEWAY: LazyLock<Gateway<InProcess>> = LazyLock::new(gateway);
static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
});

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\0');
    let query = parts.next().unwrap_or_default();
    let operation_name = parts.next().filter(|n| !n.is_empty());
    let variables: Option<JsonMap> = parts.next().and_then(|v| serde_json::from_str(v).ok());

    if let Ok(cached) = STATE.prepare(query, operation_name) {
        let empty = JsonMap::new();
        let vars = variables.as_ref().unwrap_or(&empty);
        let _ = operation::coerce_variables(&STATE.supergraph.api_schema, &cached.prepared, vars);
    }

    let request = GraphQLRequest {
        query: Some(query.to_owned()),
        operation_name: operation_name.map(str::to_owned),
        variables,
        ..GraphQLRequest::default()
    };
    let meta = RequestMeta {
        allow_mutation: true,
        ..RequestMeta::default()
    };
    let outcome = RUNTIME.block_on(GATEWAY.execute(&request, &meta));
    let body: serde_json::Value =
        serde_json::from_slice(outcome.body()).expect("the gateway always answers JSON");
    assert!(body.is_object());
});
