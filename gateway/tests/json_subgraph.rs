//! The test subgraph server is as strict as a real subgraph: these are the requests a
//! lenient one let through (invalid selections, mistyped variables, representations that
//! are not a key) and the computed `@requires` values.

mod support;

use serde_json::{Value, json};
use support::json_subgraph::{Counters, Subgraph};

const SDL: &str = r#"
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key", "@external", "@requires"])

type Query {
  posts(limit: Int!): [Post]
}

type Post @key(fields: "id") @key(fields: "slug org { id }") {
  id: ID!
  slug: String!
  org: Org!
  price: Int @external
  weight: Int @external
  estimate: Int @requires(fields: "price weight")
  tag: String @requires(fields: "price weight")
  scores: [Int]
  related: [Post]
}

type Org {
  id: ID!
}
"#;

fn subgraph() -> Subgraph {
    let mul = json!({"mul": [{"rep": "price"}, {"rep": "weight"}, 10]});
    let post = json!({"__typename": "Post", "id": "p1", "slug": "first", "org": {"id": "o1"},
        "estimate": {"__compute": mul},
        "tag": {"__compute": {"concat": ["#", {"rep": "id"}, "#", mul, "#"]}},
        "scores": [1, {"__error": "no score"}, 3],
        "related": [{"__error": "gone"}, {"__typename": "Post", "id": "p2"}]});
    let data = json!({
        "Query": { "posts": [post] },
        "entities": { "Post": [post] }
    });
    Subgraph::new("posts", SDL, data)
}

fn ask(query: &str, variables: Value) -> Value {
    subgraph().execute(
        &json!({ "query": query, "variables": variables }),
        &Counters::default(),
    )
}

/// A request error: errors and no `data` at all, as graphql-js answers an invalid request.
fn rejected(answer: &Value) -> bool {
    answer.get("data").is_none() && answer["errors"].as_array().is_some_and(|e| !e.is_empty())
}

const ENTITIES: &str =
    "query($r: [_Any!]!) { _entities(representations: $r) { ... on Post { id estimate tag } } }";

#[test]
fn an_empty_selection_set_is_rejected() {
    let answer = ask("{ posts(limit: 1) { ... on Post { } } }", json!({}));
    assert!(rejected(&answer), "{answer}");
}

#[test]
fn a_nullable_variable_in_a_non_null_argument_is_rejected() {
    let answer = ask(
        "query($limit: Int) { posts(limit: $limit) { id } }",
        json!({}),
    );
    assert!(rejected(&answer), "{answer}");
    let answer = ask(
        "query($limit: Int!) { posts(limit: $limit) { id } }",
        json!({"limit": "1"}),
    );
    assert!(rejected(&answer), "a string for Int!: {answer}");
    let answer = ask(
        "query($limit: Int!) { posts(limit: $limit) { id } }",
        json!({"limit": 1}),
    );
    assert_eq!(answer, json!({"data": {"posts": [{"id": "p1"}]}}));
}

#[test]
fn unknown_fields_and_directives_are_rejected() {
    assert!(rejected(&ask("{ posts(limit: 1) { title } }", json!({}))));
    assert!(rejected(&ask(
        "{ posts(limit: 1) { id @custom } }",
        json!({})
    )));
}

#[test]
fn a_representation_must_be_a_key_plus_requested_requires() {
    let reps = json!([
        {"__typename": "Post", "id": "p1", "price": 2, "weight": 3},
        {"__typename": "Post", "slug": "first", "org": {"id": "o1"}},
        {"__typename": "Post", "price": 2, "weight": 3},
        {"__typename": "Post", "id": "p1", "slug": "first"},
        {"__typename": "Post", "slug": "first", "org": {}},
        {"__typename": "Post", "id": "p9"},
    ]);
    let answer = ask(ENTITIES, json!({ "r": reps }));
    let entities = &answer["data"]["_entities"];
    assert_eq!(
        entities[0],
        json!({"id": "p1", "estimate": 60, "tag": "#p1#60#"})
    );
    // The second key, nested; `@requires` fields missing give what the resolver gives.
    assert_eq!(entities[1]["id"], json!("p1"));
    assert_eq!(entities[1]["tag"], json!("#undefined#NaN#"));
    for i in 2..5 {
        assert_eq!(entities[i], Value::Null, "representation {i}: {answer}");
    }
    assert_eq!(entities[5], Value::Null, "no such entity: null, no error");
    let paths: Vec<&Value> = answer["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| &e["path"])
        .collect();
    for i in [2, 3, 4] {
        assert!(paths.contains(&&json!(["_entities", i])), "{answer}");
    }
    assert!(
        paths.contains(&&json!(["_entities", 1, "estimate"])),
        "NaN is no Int: {answer}"
    );
}

#[test]
fn requires_fields_not_selected_are_not_accepted() {
    let query = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Post { id } } }";
    let rep = json!([{"__typename": "Post", "id": "p1", "price": 2, "weight": 3}]);
    let answer = ask(query, json!({ "r": rep }));
    assert_eq!(answer["data"]["_entities"], json!([null]), "{answer}");
}

#[test]
fn a_failing_list_item_is_null_with_its_own_error() {
    let answer = ask("{ posts(limit: 1) { scores related { id } } }", json!({}));
    assert_eq!(
        answer["data"],
        json!({"posts": [{"scores": [1, null, 3], "related": [null, {"id": "p2"}]}]})
    );
    let errors: Vec<(&Value, &Value)> = answer["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| (&e["message"], &e["path"]))
        .collect();
    assert_eq!(
        errors,
        [
            (&json!("no score"), &json!(["posts", 0, "scores", 1])),
            (&json!("gone"), &json!(["posts", 0, "related", 0]))
        ]
    );
}

#[test]
fn an_unknown_typename_fails_the_whole_field() {
    let answer = ask(ENTITIES, json!({"r": [{"__typename": "Nope", "id": "1"}]}));
    assert_eq!(answer["data"], Value::Null, "{answer}");
}
