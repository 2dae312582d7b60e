//! Executor semantics the oracles rely on, checked on exact response bytes:
//! field order = query order, merging, aliases, directives, variables, null propagation.

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::engine::Endpoint;
use graphfleet_bench_subgraphs::sets::{monolith_endpoint, subgraph_endpoints};
use serde_json::{Value, json};

fn run(endpoint: &Endpoint, query: &str, variables: Value) -> (u16, String) {
    let body = json!({ "query": query, "variables": variables }).to_string();
    let reply = endpoint.handle(body.as_bytes());
    (
        reply.status,
        String::from_utf8(reply.body).expect("UTF-8 JSON"),
    )
}

fn fed() -> Endpoint {
    monolith_endpoint(Set::Fed).expect("fed monolith")
}

#[test]
fn fields_come_out_in_query_order_with_aliases_merged() {
    let cases = [
        (
            "{ me { name id } first: topProducts(first: 1) { __typename upc } }",
            r#"{"data":{"me":{"name":"Uri Goldshtein","id":"1"},"first":[{"__typename":"Product","upc":"1"}]}}"#,
        ),
        (
            "{ me { id } me { name ... on User { id username } } }",
            r#"{"data":{"me":{"id":"1","name":"Uri Goldshtein","username":"urigo"}}}"#,
        ),
        (
            "fragment F on Product { upc inStock } { topProducts(first: 2) { ...F name ...F } }",
            r#"{"data":{"topProducts":[{"upc":"1","inStock":true,"name":"Table"},{"upc":"2","inStock":false,"name":"Couch"}]}}"#,
        ),
    ];
    let endpoint = fed();
    for (query, expected) in cases {
        assert_eq!(
            run(&endpoint, query, Value::Null),
            (200, expected.to_owned()),
            "{query}"
        );
    }
}

#[test]
fn skip_include_and_variable_defaults() {
    let endpoint = fed();
    let query = "query($skip: Boolean!, $n: Int = 2) { topProducts(first: $n) { upc name @skip(if: $skip) price @include(if: false) } }";
    assert_eq!(
        run(&endpoint, query, json!({ "skip": true })).1,
        r#"{"data":{"topProducts":[{"upc":"1"},{"upc":"2"}]}}"#
    );
    assert_eq!(
        run(&endpoint, query, json!({ "skip": false, "n": 1 })).1,
        r#"{"data":{"topProducts":[{"upc":"1","name":"Table"}]}}"#
    );
}

#[test]
fn operation_name_selects_among_several() {
    let endpoint = fed();
    let query = "query A { me { id } } query B { me { name } }";
    let body = json!({ "query": query, "operationName": "B" }).to_string();
    let reply = endpoint.handle(body.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&reply.body),
        r#"{"data":{"me":{"name":"Uri Goldshtein"}}}"#
    );
    let (status, body) = run(&endpoint, query, Value::Null);
    assert_eq!(status, 400);
    assert!(body.contains("operation name"), "{body}");
}

#[test]
fn field_errors_null_the_nearest_nullable_parent() {
    let endpoint = monolith_endpoint(Set::BigResponse).expect("big-response monolith");
    // nodes(n:) is [Node!]!: an out-of-range n errors and nulls all of data.
    let (status, body) = run(&endpoint, "{ nodes(n: -1) { id } }", Value::Null);
    assert_eq!(status, 200);
    assert_eq!(
        body,
        r#"{"data":null,"errors":[{"message":"\"n\" must be between 0 and 10000, got -1.","path":["nodes"]}]}"#
    );
    // A nested error in a non-null list bubbles through the non-null Node to the list, and up.
    let (_, body) = run(
        &endpoint,
        "{ nodes(n: 1) { id nodes(n: 100000) { id } } }",
        Value::Null,
    );
    let response: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(response["data"], Value::Null);
    assert_eq!(response["errors"][0]["path"], json!(["nodes", 0, "nodes"]));

    // Multiplied list sizes are cut off with an error instead of exhausting memory.
    let limited = monolith_endpoint(Set::BigResponse)
        .expect("big-response monolith")
        .with_max_response(1 << 20);
    let (status, body) = run(
        &limited,
        "{ nodes(n: 10000) { strings nodes(n: 10000) { strings nodes(n: 10000) { id } } } }",
        Value::Null,
    );
    assert_eq!(status, 200);
    assert!(
        body.starts_with(r#"{"data":null,"errors":[{"message":"The response exceeds"#),
        "{}",
        &body[..200.min(body.len())]
    );

    // In fed, topProducts is nullable: only it becomes null.
    let (_, body) = run(
        &fed(),
        "{ me { id } topProducts(first: -1) { upc } }",
        Value::Null,
    );
    assert_eq!(
        body,
        r#"{"data":{"me":{"id":"1"},"topProducts":null},"errors":[{"message":"\"first\" must not be negative.","path":["topProducts"]}]}"#
    );
}

#[test]
fn deep_and_unknown_input_is_rejected_cleanly() {
    let endpoint = fed();
    let deep = format!(
        "{{ me {} }}",
        "{ reviews { author ".repeat(80) + "{ id }" + &" } }".repeat(80)
    );
    let (status, body) = run(&endpoint, &deep, Value::Null);
    assert_eq!(status, 400, "{body}");
    // Fragments spreading the next one twice: 2^30 selections if expanded naively.
    let mut bomb = String::from("{ me { ...F0 } } ");
    for i in 0..30 {
        bomb.push_str(&format!(
            "fragment F{i} on User {{ ...F{} ...F{} }} ",
            i + 1,
            i + 1
        ));
    }
    bomb.push_str("fragment F30 on User { id }");
    let (status, body) = run(&endpoint, &bomb, Value::Null);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("more than"), "{body}");
    let (status, body) = run(&endpoint, "mutation { me { id } }", Value::Null);
    assert_eq!(status, 400, "{body}");
    let (status, _) = run(
        &endpoint,
        "{ _entities(representations: []) { __typename } }",
        Value::Null,
    );
    assert_eq!(status, 400, "the monolith has no federation fields");
}

/// Subscriptions in-process: the event stream's payloads, its end at `limit`, and the
/// refusals (plain HTTP, invalid documents, bad limits).
#[test]
fn subscription_events_execute_the_selection_per_event() {
    use graphfleet_bench_subgraphs::engine::Execution;
    let reviews = subgraph_endpoints(Set::Fed)
        .expect("fed subgraphs")
        .into_iter()
        .find(|e| e.name() == "reviews")
        .expect("reviews subgraph");
    let monolith = fed();
    assert!(reviews.has_subscriptions() && monolith.has_subscriptions());
    let request = |query: &str, variables: Value| {
        json!({ "query": query, "variables": variables }).to_string()
    };
    let query =
        "subscription S($n: Int) { reviewAdded(limit: $n) { __typename id product { upc } } }";
    for endpoint in [&reviews, &monolith] {
        let Execution::Stream(mut stream) =
            endpoint.start(request(query, json!({ "n": 12 })).as_bytes())
        else {
            panic!("{}: not a stream", endpoint.name());
        };
        let ids: Vec<Value> = std::iter::from_fn(|| stream.next_event(endpoint))
            .map(|event| {
                let event: Value = serde_json::from_slice(&event).expect("JSON event");
                assert_eq!(event["data"]["reviewAdded"]["__typename"], "Review");
                event["data"]["reviewAdded"]["id"].clone()
            })
            .collect();
        // Review i mod 11 of data.json, whose ids are "1".."11".
        let expected: Vec<Value> = (0..12).map(|i| json!(((i % 11) + 1).to_string())).collect();
        assert_eq!(ids, expected, "{}", endpoint.name());
        assert!(stream.is_done() && stream.sent() == 12);

        // Plain HTTP refuses subscriptions.
        let reply = endpoint.handle(request(query, Value::Null).as_bytes());
        assert_eq!(reply.status, 400);
        assert!(String::from_utf8_lossy(&reply.body).contains("need a streaming transport"));

        // A negative limit is an execution error of the root field.
        let Execution::Response(body) =
            endpoint.start(request(query, json!({ "n": -3 })).as_bytes())
        else {
            panic!("negative limit: not a single response");
        };
        assert_eq!(
            serde_json::from_slice::<Value>(&body).expect("JSON"),
            json!({"data": null, "errors": [{"message": "\"limit\" must not be negative, got -3.", "path": ["reviewAdded"]}]})
        );

        // Two root fields, an unknown field, a non-Int limit: refused before execution.
        for bad in [
            "subscription { a: reviewAdded { id } b: reviewAdded { id } }",
            "subscription { reviewRemoved { id } }",
            "subscription { reviewAdded(limit: \"3\") { id } }",
        ] {
            assert!(
                matches!(
                    endpoint.start(request(bad, Value::Null).as_bytes()),
                    Execution::Refused(_)
                ),
                "{bad}"
            );
        }
        // Queries through start answer once.
        assert!(matches!(
            endpoint.start(request("{ __typename }", Value::Null).as_bytes()),
            Execution::Response(_)
        ));
    }
    // Endpoints without a Subscription type refuse subscription documents.
    let products = subgraph_endpoints(Set::Fed)
        .expect("fed subgraphs")
        .into_iter()
        .find(|e| e.name() == "products")
        .expect("products subgraph");
    assert!(!products.has_subscriptions());
    assert!(matches!(
        products.start(request("subscription { x }", Value::Null).as_bytes()),
        Execution::Refused(_)
    ));
}
