//! Fuzzes the request handler: arbitrary bytes as a request body, and arbitrary
//! text as a query (with `_entities` representations), against fed subgraphs and
//! the fed monolith. Any panic is a bug: bad input must become GraphQL errors.
#![no_main]

use std::sync::LazyLock;

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::engine::Endpoint;
use graphfleet_bench_subgraphs::sets::{monolith_endpoint, subgraph_endpoints};
use libfuzzer_sys::fuzz_target;

static ENDPOINTS: LazyLock<Vec<Endpoint>> = LazyLock::new(|| {
    let mut endpoints = subgraph_endpoints(Set::Fed).expect("fed subgraphs");
    endpoints.push(monolith_endpoint(Set::Fed).expect("fed monolith"));
    endpoints.extend(subgraph_endpoints(Set::Apollo).expect("apollo subgraphs"));
    endpoints
});

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let endpoint = &ENDPOINTS[usize::from(selector >> 1) % ENDPOINTS.len()];
    let reply = if selector & 1 == 0 {
        endpoint.handle(rest)
    } else {
        // Arbitrary query text, wrapped in a well-formed request with representations.
        let query = String::from_utf8_lossy(rest);
        let body = serde_json::json!({
            "query": query,
            "variables": { "representations": [
                { "__typename": "User", "id": "1" },
                { "__typename": "Product", "upc": "2" },
                { "__typename": "Review", "id": 3 },
                { "__typename": "Step", "id": "1", "s1": "1" },
            ] },
        });
        endpoint.handle(body.to_string().as_bytes())
    };
    assert!(reply.status == 200 || reply.status == 400);
    serde_json::from_slice::<serde_json::Value>(&reply.body).expect("every reply is JSON");
});
