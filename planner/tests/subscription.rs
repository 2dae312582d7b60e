//! Subscriptions in plans: the root field's subgraph gets one `subscription` operation,
//! and each event is completed by entity fetches (queries) to the other subgraphs, in
//! the same order and shape as a query's. Plans of the benchmark `fed` supergraph,
//! whose reviews subgraph owns `Subscription.reviewAdded`.

use apollo_compiler::response::JsonMap;
use graphfleet_federation::Supergraph;
use graphfleet_planner::operation::{self, ConditionValues};
use graphfleet_planner::query_planner::build_plan;

const FED: &str = include_str!("../../bench/sets/fed/supergraph.graphql");

#[test]
fn an_event_is_completed_across_every_subgraph() {
    let supergraph = Supergraph::parse(FED).expect("the fed supergraph loads");
    let query = "subscription { reviewAdded(limit: 3) { id body author { username name } \
                 product { upc name price inStock shippingEstimate } } }";
    let prepared = operation::prepare(&supergraph.api_schema, query, None).expect("valid");
    let values = ConditionValues::of(&prepared.ir, &JsonMap::new());
    let plan = build_plan(&supergraph.meta, &prepared.ir, Some(values)).expect("planned");
    let primary = plan.subscription_fetch().expect("a subscription fetch");
    assert_eq!(plan.fetches[primary].subgraph_name, "reviews");
    // Every other fetch is a query completing the event, and depends on it (directly or
    // through another).
    for (i, fetch) in plan.fetches.iter().enumerate() {
        if i != primary {
            assert!(fetch.operation.starts_with("query"), "{}", fetch.operation);
            assert!(!fetch.depends_on.is_empty(), "{}", fetch.operation);
        }
    }
    insta::assert_snapshot!(plan.to_string());
}

#[test]
fn queries_have_no_subscription_fetch() {
    let supergraph = Supergraph::parse(FED).expect("the fed supergraph loads");
    let prepared = operation::prepare(&supergraph.api_schema, "{ topProducts { name } }", None)
        .expect("valid");
    let plan = build_plan(&supergraph.meta, &prepared.ir, None).expect("planned");
    assert_eq!(plan.subscription_fetch(), None);
}

#[test]
fn a_subscription_selects_exactly_one_root_field() {
    let supergraph = Supergraph::parse(FED).expect("the fed supergraph loads");
    let two = "subscription { a: reviewAdded { id } b: reviewAdded { body } }";
    let errors = operation::prepare(&supergraph.api_schema, two, None).expect_err("invalid");
    let text = format!("{:?}", errors.0);
    assert!(
        text.contains("root field") || text.contains("one"),
        "{text}"
    );
    let introspection = "subscription { __typename }";
    assert!(operation::prepare(&supergraph.api_schema, introspection, None).is_err());
}
