//! Executor semantics the oracles rely on, checked on exact response bytes:
//! field order = query order, merging, aliases, directives, variables, null propagation.

use graphfleet_loadtest::Set;
use graphfleet_loadtest::engine::Endpoint;
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
    Set::Fed.monolith_endpoint().expect("fed monolith")
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
    let endpoint = Set::BigResponse
        .monolith_endpoint()
        .expect("big-response monolith");
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
    let limited = Set::BigResponse
        .monolith_endpoint()
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
