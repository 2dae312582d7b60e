//! `@defer` in plans: each fetch names the payloads waiting for it, and fields only a
//! deferred fragment selects are fetched apart, so the initial payload never waits
//! for them. Plans of the benchmark `fed` supergraph.

use apollo_compiler::response::JsonMap;
use graphfleet_federation::Supergraph;
use graphfleet_planner::operation::{self, ConditionValues};
use graphfleet_planner::query_planner::build_plan;

const FED: &str = include_str!("../../bench/sets/fed/supergraph.graphql");

/// The plan of `query` for a client taking incremental delivery (or not).
fn plan(query: &str, incremental: bool) -> String {
    let supergraph = Supergraph::parse(FED).expect("the fed supergraph loads");
    let prepared = operation::prepare(&supergraph.api_schema, query, None).expect("valid");
    let mut values = ConditionValues::of(&prepared.ir, &JsonMap::new());
    if incremental {
        values = values.with_incremental();
    }
    build_plan(&supergraph.meta, &prepared.ir, Some(values))
        .expect("planned")
        .to_string()
}

#[test]
fn a_deferred_entity_fetch_serves_only_its_payload() {
    let query = r#"{ topProducts { upc name ... @defer { reviews { body } } } }"#;
    let deferred = plan(query, true);
    assert!(
        deferred.contains("Fetch(service: \"products\") {\n      payloads: [initial, defer 0]"),
        "{deferred}"
    );
    assert!(
        deferred.contains("Fetch(service: \"reviews\") {\n        payloads: [defer 0]"),
        "{deferred}"
    );
    // Without incremental delivery the plan is the plain one.
    let plain = plan(query, false);
    assert!(!plain.contains("payloads"), "{plain}");
}

#[test]
fn a_deferred_root_field_of_the_same_subgraph_gets_its_own_fetch() {
    let query = r#"{ me { name } ... @defer { topProducts { name } } }"#;
    let deferred = plan(query, true);
    let products = deferred.matches("Fetch(service: \"products\")").count();
    assert_eq!(products, 1, "{deferred}");
    assert!(deferred.contains("payloads: [defer 0]"), "{deferred}");
    let query = r#"{ topProducts { upc } ... @defer { again: topProducts { name } } }"#;
    let deferred = plan(query, true);
    assert_eq!(
        deferred.matches("Fetch(service: \"products\")").count(),
        2,
        "{deferred}"
    );
}

#[test]
fn a_deferred_field_of_the_parents_subgraph_is_fetched_apart_through_the_key() {
    let query = r#"{ topProducts { upc ... @defer { name price } } }"#;
    let deferred = plan(query, true);
    // The root fetch has upc (and the key); the deferred fields come from products
    // again, through _entities, for the deferred payload alone.
    assert!(
        deferred.contains("query { topProducts { upc __typename } }"),
        "{deferred}"
    );
    assert!(
        deferred.contains("Fetch(service: \"products\") {\n        payloads: [defer 0]"),
        "{deferred}"
    );
    assert!(
        deferred.contains("... on Product { name price }"),
        "{deferred}"
    );
    let plain = plan(query, false);
    assert!(
        plain.contains("query { topProducts { upc name price } }"),
        "{plain}"
    );
}
