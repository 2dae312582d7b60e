//! Entity fetches to one subgraph at one level share a request (each as its own aliased
//! `_entities` field) only when one waits for nothing the other does not: batching never
//! makes a fetch wait for inputs it would not have waited for in a plan of equally quick
//! subgraphs.

use graphfleet_composition::{SubgraphInput, compose};
use graphfleet_federation::Supergraph;
use graphfleet_planner::operation;
use graphfleet_planner::query_planner::{QueryPlan, build_plan};

const LINK: &str =
    r#"extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])"#;

/// `a` and `b` each return a `T`; `c` resolves `T.x` and `T.y` by key.
fn supergraph() -> Supergraph {
    let subgraph = |name: &str, sdl: &str| SubgraphInput {
        name: name.to_owned(),
        url: format!("http://127.0.0.1:4200/{name}"),
        sdl: format!("{LINK}\n{sdl}"),
    };
    let composed = compose(&[
        subgraph(
            "a",
            r#"type Query { a: T } type T @key(fields: "id") { id: ID! }"#,
        ),
        subgraph(
            "b",
            r#"type Query { b: T } type T @key(fields: "id") { id: ID! }"#,
        ),
        subgraph(
            "c",
            r#"type T @key(fields: "id") { id: ID! x: Int y: Int }"#,
        ),
    ])
    .expect("the subgraphs compose");
    Supergraph::parse(&composed.supergraph_sdl).expect("the supergraph loads")
}

fn plan(query: &str) -> QueryPlan {
    let supergraph = supergraph();
    let prepared = operation::prepare(&supergraph.api_schema, query, None).expect("valid");
    build_plan(&supergraph.meta, &prepared.ir, None).expect("planned")
}

fn to_c(plan: &QueryPlan) -> Vec<&graphfleet_planner::query_planner::Fetch> {
    plan.fetches
        .iter()
        .filter(|f| f.subgraph_name == "c")
        .collect()
}

#[test]
fn fetches_waiting_for_the_same_share_one_request() {
    // Both `c` fetches wait only for `a`'s one request; asking different fields of `T`,
    // they are not merged into one selection but sent as two aliased fields.
    let plan = plan("{ a { x } other: a { y } }");
    let c = to_c(&plan);
    assert_eq!(c.len(), 1, "{plan}");
    let parts = &c[0].entity.as_ref().expect("an entity fetch").parts;
    assert_eq!(parts.len(), 2, "{plan}");
    insta::assert_snapshot!(plan.to_string());
}

#[test]
fn fetches_waiting_for_different_subgraphs_are_sent_apart() {
    // `a.x` waits for `a`, `b.y` for `b`: batched, one would wait for the other's input.
    let plan = plan("{ a { x } b { y } }");
    let c = to_c(&plan);
    assert_eq!(c.len(), 2, "{plan}");
    for fetch in c {
        let entity = fetch.entity.as_ref().expect("an entity fetch");
        assert!(entity.parts.is_empty(), "{plan}");
        assert_eq!(fetch.depends_on.len(), 1, "{plan}");
    }
}
