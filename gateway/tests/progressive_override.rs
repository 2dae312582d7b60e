//! Progressive override over real HTTP: the `override` fixture moves `Product.discount`
//! from subgraph `old` (answers 10) to `new` (answers 20) under `percent(50)`.

mod support;

use graphfleet_gateway::config::{Config, ProgressiveOverrideConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};

const QUERY: &str = "{ products { id discount } }";

/// Start a gateway on the override fixture (its `percent(50)` replaced by `label`) and
/// send `n` requests; returns how many answered from `new` and the plan-cache misses.
async fn discounts_from_new(
    label: &str,
    labels: ProgressiveOverrideConfig,
    n: usize,
) -> (usize, u64) {
    let (_subgraphs, text) = support::fixture_subgraphs("override").await;
    let text = text.replace("percent(50)", label);
    let supergraph = Supergraph::parse(&text).expect("the override supergraph loads");
    let config = Config {
        progressive_override: labels,
        ..Config::default()
    };
    let url = support::start_gateway_with_config(config, supergraph).await;
    let client = support::client();
    let mut from_new = 0;
    for _ in 0..n {
        let reply = support::post_graphql(&client, &url, QUERY, json!({})).await;
        let body: Value = serde_json::from_slice(&reply.body).expect("a JSON answer");
        let discount = &body["data"]["products"][0]["discount"];
        match discount.as_i64() {
            Some(20) => from_new += 1,
            Some(10) => {}
            _ => panic!("unexpected answer {body}"),
        }
    }
    (from_new, plan_cache_misses(&client, &url).await)
}

async fn plan_cache_misses(client: &support::HttpClient, graphql_url: &str) -> u64 {
    let metrics = graphql_url.replace("/graphql", "/metrics");
    let reply = support::request(client, "GET", &metrics, &[], vec![]).await;
    let text = String::from_utf8(reply.body.to_vec()).expect("metrics are UTF-8");
    text.lines()
        .find_map(|l| l.strip_prefix("graphfleet_plan_cache_misses_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no plan cache misses in:\n{text}"))
}

#[tokio::test]
async fn a_percent_label_sends_that_share_of_requests_to_the_new_subgraph() {
    let (from_new, misses) =
        discounts_from_new("percent(50)", ProgressiveOverrideConfig::default(), 400).await;
    // 200 expected; 120..=280 is eight standard deviations either side.
    assert!(
        (120..=280).contains(&from_new),
        "{from_new} of 400 from new"
    );
    // One plan per label set: the draw is part of the cache key, so the rest are hits.
    assert_eq!(misses, 2, "plans made for 400 requests over two label sets");
}

#[tokio::test]
async fn percent_labels_at_the_bounds_and_fixed_by_config() {
    let none = ProgressiveOverrideConfig::default();
    assert_eq!(
        discounts_from_new("percent(0)", none.clone(), 50).await.0,
        0
    );
    assert_eq!(discounts_from_new("percent(100)", none, 50).await.0, 50);

    let on = ProgressiveOverrideConfig {
        enabled_labels: vec!["percent(50)".to_owned()],
        ..Default::default()
    };
    assert_eq!(discounts_from_new("percent(50)", on, 50).await.0, 50);
    let off = ProgressiveOverrideConfig {
        disabled_labels: vec!["percent(50)".to_owned()],
        ..Default::default()
    };
    assert_eq!(discounts_from_new("percent(50)", off, 50).await.0, 0);
}

#[tokio::test]
async fn a_named_label_is_off_until_enabled() {
    let named = ProgressiveOverrideConfig::default();
    assert_eq!(discounts_from_new("billing-v2", named, 20).await.0, 0);
    let enabled = ProgressiveOverrideConfig {
        enabled_labels: vec!["billing-v2".to_owned()],
        ..Default::default()
    };
    let (from_new, misses) = discounts_from_new("billing-v2", enabled, 20).await;
    assert_eq!(from_new, 20);
    assert_eq!(misses, 1, "a fixed label set plans once");
}
