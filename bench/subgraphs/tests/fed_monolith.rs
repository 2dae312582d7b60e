//! The fed monolith reproduces the published TestQuery response.

mod common;

use std::collections::BTreeMap;

use apollo_compiler::ExecutableDocument;
use apollo_compiler::executable::{Selection, SelectionSet};
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::engine::api_schema;
use graphfleet_bench_subgraphs::{Mode, Options};
use serde_json::Value;

/// Counts response objects per GraphQL type by walking the response along the query.
fn count(
    doc: &ExecutableDocument,
    set: &SelectionSet,
    value: &Value,
    counts: &mut BTreeMap<String, usize>,
) {
    match value {
        Value::Array(items) => items.iter().for_each(|i| count(doc, set, i, counts)),
        Value::Object(obj) => {
            *counts.entry(set.ty.to_string()).or_default() += 1;
            walk(doc, set, obj, counts);
        }
        _ => {}
    }
}

fn walk(
    doc: &ExecutableDocument,
    set: &SelectionSet,
    obj: &serde_json::Map<String, Value>,
    counts: &mut BTreeMap<String, usize>,
) {
    for selection in &set.selections {
        match selection {
            Selection::Field(f) if !f.selection_set.selections.is_empty() => {
                if let Some(v) = obj.get(f.response_key().as_str()) {
                    count(doc, &f.selection_set, v, counts);
                }
            }
            Selection::Field(_) => {}
            Selection::FragmentSpread(s) => {
                let fragment = doc
                    .fragments
                    .get(&s.fragment_name)
                    .expect("a defined fragment");
                walk(doc, &fragment.selection_set, obj, counts);
            }
            Selection::InlineFragment(i) => walk(doc, &i.selection_set, obj, counts),
        }
    }
}

#[tokio::test]
async fn test_query_matches_the_published_response() {
    let server = common::start(Set::Fed, Mode::Monolith, Options::default()).await;
    let query = common::query_file("fed", "query");
    let client = common::client();
    let url = format!("{}/graphql", server.base_url());
    let (status, body) = common::graphql(&client, &url, &query, Value::Null).await;
    assert_eq!(status, 200);
    let expected = &common::parse(
        &std::fs::read(common::sets_dir().join("fed/data.json")).expect("read sets/fed/data.json"),
    )["expected"];
    assert_eq!(
        body.len() as u64,
        expected["TestQuery_compact_json_bytes"]
            .as_u64()
            .expect("a byte count")
    );

    let response = common::parse(&body);
    assert!(
        response.get("errors").is_none(),
        "unexpected errors: {}",
        response["errors"]
    );

    let schema = api_schema("fed", Set::Fed.supergraph()).expect("the fed API schema");
    let doc = ExecutableDocument::parse_and_validate(&schema, &query, "query.graphql")
        .expect("a valid TestQuery");
    let op = doc.operations.get(None).expect("one operation");
    let mut counts = BTreeMap::new();
    walk(
        &doc,
        &op.selection_set,
        response["data"].as_object().expect("data object"),
        &mut counts,
    );
    for (ty, key) in [
        ("Review", "Review_objects"),
        ("Product", "Product_objects"),
        ("User", "User_objects"),
    ] {
        assert_eq!(
            counts.get(ty).copied().unwrap_or(0) as u64,
            expected[key].as_u64().expect("a count"),
            "{ty}"
        );
    }
    // shippingEstimate is null throughout (the published inventory quirk).
    assert!(!String::from_utf8_lossy(&body).contains("\"shippingEstimate\":0"));
    server.shutdown().await;
}
