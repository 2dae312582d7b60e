//! `@fromContext` with many distinct context values: the `context` fixture's subgraphs
//! with 40 stores in 40 currencies selling 3 products. Each currency is one set of
//! context values: the gateway asks for at most 32 sets (aliased `_entities` fields)
//! per request, so the prices take two requests, and every product is priced in its
//! own store's currency.

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};

const STORES: usize = 40;

fn data() -> Value {
    let product =
        |i: usize| json!({"__typename": "Product", "id": format!("p{}", i % 3), "name": "x"});
    let stores: Vec<Value> = (0..STORES)
        .map(|i| {
            json!({
                "__typename": "Store",
                "id": format!("s{i}"),
                "currency": format!("C{i}"),
                "products": [product(i)],
                "kiosks": [],
            })
        })
        .collect();
    let price = json!({"__compute": {"concat": [{"rep": "id"}, ":", {"arg": "currency"}]}});
    let entities: Vec<Value> = (0..3)
        .map(|i| json!({"__typename": "Product", "id": format!("p{i}"), "name": "x", "price": price}))
        .collect();
    json!({
        "catalog": {"Query": {"stores": stores, "places": []}, "entities": {"Product": entities}},
        "reviews": {"entities": {}},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_context_values_are_batched_into_bounded_requests() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/context");
    let dir = support::process::test_dir("context-batches");
    for file in ["catalog.graphql", "reviews.graphql"] {
        std::fs::copy(fixture.join(file), dir.join(file)).expect("copy the subgraph SDL");
    }
    std::fs::write(dir.join("data.json"), data().to_string()).expect("write data.json");
    let subgraphs = support::json_subgraph::start_suite(&dir).await;
    let text = std::fs::read_to_string(fixture.join("supergraph.graphql"))
        .expect("the fixture's supergraph")
        .replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let gateway = support::start_gateway(Supergraph::parse(&text).expect("supergraph loads")).await;

    let query = "{ stores { id products { id price } } }";
    let reply = support::post_graphql(&support::client(), &gateway, query, json!({})).await;
    let body: Value = serde_json::from_slice(&reply.body).expect("a JSON response");
    assert!(body.get("errors").is_none(), "{body}");
    let stores = body["data"]["stores"].as_array().expect("stores");
    assert_eq!(stores.len(), STORES);
    for (i, store) in stores.iter().enumerate() {
        assert_eq!(
            store["products"][0]["price"],
            json!(format!("p{}:C{i}", i % 3)),
            "{store}"
        );
    }

    // The root fetch, then 40 sets in two requests: 32 aliased fields, then 8.
    assert_eq!(
        subgraphs.counts().get("catalog"),
        Some(&3),
        "{:?}",
        subgraphs.counts()
    );
    let log = subgraphs.log.lock().expect("log lock");
    let aliases: Vec<usize> = log
        .iter()
        .filter(|(_, request)| {
            request["query"]
                .as_str()
                .is_some_and(|q| q.contains("_entities"))
        })
        .map(|(_, request)| {
            let variables = request["variables"].as_object().expect("variables");
            // Each set: its representations (one product) and its currency.
            let sets = variables
                .keys()
                .filter(|k| k.starts_with("representations_"))
                .count();
            assert_eq!(variables.len(), 2 * sets, "{request}");
            sets
        })
        .collect();
    let mut sorted = aliases.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![8, 32], "{aliases:?}");
}
