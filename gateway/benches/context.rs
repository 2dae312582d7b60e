//! What `@fromContext` costs per request, on the `context` fixture's subgraphs (JSON
//! subgraphs recorded once, then replayed): 40 stores with 3 products each.
//! - `stock`: a plain entity field (one `_entities` request for all products);
//! - `price_one_currency`: the contextual `price` where every store has one currency
//!   (one set of values: the planned request as it is, plus reading the ancestors);
//! - `price_40_currencies`: every store its own currency (40 sets, batched into two
//!   requests of 32 and 8 aliased `_entities` fields).

mod common;
#[allow(dead_code, unused_imports)] // the tests' server, used here only to record
#[path = "../tests/support/json_subgraph.rs"]
mod json_subgraph;

use common::{Recorder, post, replaying};
use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::pipeline::request::GraphQLRequest;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STORES: usize = 40;

/// The subgraphs' data: `currencies` distinct currencies over the stores.
fn data(currencies: usize) -> Value {
    let stores: Vec<Value> = (0..STORES)
        .map(|i| {
            let products: Vec<Value> = (0..3)
                .map(|p| json!({"__typename": "Product", "id": format!("p{p}"), "name": "x"}))
                .collect();
            json!({
                "__typename": "Store",
                "id": format!("s{i}"),
                "currency": format!("C{}", i % currencies),
                "products": products,
                "kiosks": [],
            })
        })
        .collect();
    let price = json!({"__compute": {"concat": [{"rep": "id"}, ":", {"arg": "currency"}]}});
    let catalog: Vec<Value> = (0..3)
        .map(|p| json!({"__typename": "Product", "id": format!("p{p}"), "name": "x", "price": price}))
        .collect();
    let reviews: Vec<Value> = (0..3)
        .map(|p| json!({"__typename": "Product", "id": format!("p{p}"), "stock": p}))
        .collect();
    json!({
        "catalog": {"Query": {"stores": stores, "places": []}, "entities": {"Product": catalog}},
        "reviews": {"entities": {"Product": reviews}},
    })
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/context")
}

/// A gateway replaying the subgraph traffic `query` caused on `data`, and the request.
fn recorded(
    rt: &tokio::runtime::Runtime,
    data: Value,
    query: &str,
) -> (Gateway<common::Replay>, GraphQLRequest) {
    let text = std::fs::read_to_string(fixture().join("supergraph.graphql")).expect("supergraph");
    let (_, sdls) = json_subgraph::read_suite(&fixture());
    let request = GraphQLRequest {
        query: Some(query.to_owned()),
        ..Default::default()
    };
    let (seen, expected) = rt.block_on(async {
        let subgraphs = json_subgraph::start(data, sdls).await;
        let recorder = Recorder {
            http: graphfleet_gateway::config::transport(&Config::default()),
            seen: Arc::default(),
        };
        let live = text.replace("http://127.0.0.1:4200", &subgraphs.base_url);
        let gateway = Gateway::with_transport(
            Default::default(),
            Supergraph::parse(&live).expect("supergraph"),
            recorder.clone(),
        );
        let body = gateway.execute(&request, &post()).await.body().to_vec();
        let seen = recorder.seen.lock().clone();
        (seen, body)
    });
    assert!(
        !String::from_utf8_lossy(&expected).contains("\"errors\""),
        "{}",
        String::from_utf8_lossy(&expected)
    );
    // The replay matches request bodies only: the URLs need not be the live ones.
    let gateway = replaying(Config::default(), &text, &seen);
    let check = rt.block_on(gateway.execute(&request, &post()));
    assert_eq!(
        check.body(),
        expected.as_slice(),
        "replay reproduces the response"
    );
    (gateway, request)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let cases = [
        ("stock", 1, "{ stores { products { id stock } } }"),
        (
            "price_one_currency",
            1,
            "{ stores { products { id price } } }",
        ),
        (
            "price_40_currencies",
            STORES,
            "{ stores { products { id price } } }",
        ),
    ];
    let mut group = c.benchmark_group("context");
    for (name, currencies, query) in cases {
        let (gateway, request) = recorded(&rt, data(currencies), query);
        let post = post();
        group.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(gateway.execute(black_box(&request), &post))))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
