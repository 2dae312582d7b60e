//! In-flight deduplication against the gateway on a real port and a slow subgraph that
//! counts requests: identical concurrent query fetches share one HTTP call; different
//! `Authorization`, dedup off, and mutations are never merged.

mod support;

use graphfleet_gateway::config::{Config, SubgraphConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use support::fault_subgraph::{self, FaultSubgraph};

const CONCURRENT: usize = 8;

async fn gateway(fault: &FaultSubgraph, tune: impl FnOnce(&mut Config)) -> String {
    let mut config = Config::default();
    config.subgraphs.insert(
        "faulty".into(),
        SubgraphConfig {
            url: Some(fault.url("slow")),
            ..SubgraphConfig::default()
        },
    );
    tune(&mut config);
    let supergraph = Supergraph::parse(fault_subgraph::SUPERGRAPH).expect("supergraph loads");
    support::start_gateway_with_config(config, supergraph).await
}

/// Send `CONCURRENT` requests at once; `auth(i)` is request i's Authorization header.
async fn burst(url: &str, query: &str, auth: impl Fn(usize) -> Option<String>) -> Vec<Value> {
    let client = support::client();
    let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
    let requests = (0..CONCURRENT).map(|i| {
        let (client, body, auth) = (client.clone(), body.clone(), auth(i));
        async move {
            let mut headers = vec![("content-type", "application/json")];
            if let Some(a) = &auth {
                headers.push(("authorization", a.as_str()));
            }
            let reply = support::request(&client, "POST", url, &headers, body).await;
            assert_eq!(reply.status, 200);
            serde_json::from_slice::<Value>(&reply.body).expect("JSON body")
        }
    });
    futures::future::join_all(requests).await
}

const QUERY: &str = "{ top { id price } }";

fn top() -> Value {
    json!({"data": {"top": {"id": "9", "price": 10}}})
}

#[tokio::test]
async fn identical_concurrent_queries_share_one_fetch() {
    let fault = fault_subgraph::start().await;
    // On by default.
    let url = gateway(&fault, |_| {}).await;
    let replies = burst(&url, QUERY, |_| Some("Bearer same".into())).await;
    assert!(replies.iter().all(|r| *r == top()), "{replies:?}");
    let seen = fault.requests();
    assert!(
        seen < CONCURRENT as u64,
        "{seen} subgraph requests for {CONCURRENT} queries"
    );
    assert!(
        fault
            .authorizations
            .lock()
            .expect("not poisoned")
            .iter()
            .all(|a| a.as_deref() == Some("Bearer same")),
        "the shared fetch still carries the client's Authorization"
    );
    // Nothing is cached once the fetch completed: the next query fetches again.
    burst(&url, QUERY, |_| Some("Bearer same".into())).await;
    assert!(fault.requests() > seen);
}

#[tokio::test]
async fn per_subgraph_setting_overrides_the_default() {
    let fault = fault_subgraph::start().await;
    let url = gateway(&fault, |c| {
        c.traffic.deduplicate = false;
        c.subgraphs
            .get_mut("faulty")
            .expect("configured above")
            .deduplicate = Some(true);
    })
    .await;
    burst(&url, QUERY, |_| None).await;
    assert!(fault.requests() < CONCURRENT as u64);
}

#[tokio::test]
async fn different_authorization_is_never_merged() {
    let fault = fault_subgraph::start().await;
    let url = gateway(&fault, |c| c.traffic.deduplicate = true).await;
    let replies = burst(&url, QUERY, |i| Some(format!("Bearer user-{i}"))).await;
    assert!(replies.iter().all(|r| *r == top()));
    assert_eq!(fault.requests(), CONCURRENT as u64);
    let mut seen: Vec<_> = fault
        .authorizations
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|a| a.clone().expect("forwarded"))
        .collect();
    seen.sort();
    let mut expected: Vec<_> = (0..CONCURRENT)
        .map(|i| format!("Bearer user-{i}"))
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn dedup_off_sends_every_request() {
    let fault = fault_subgraph::start().await;
    let url = gateway(&fault, |c| c.traffic.deduplicate = false).await;
    let replies = burst(&url, QUERY, |_| None).await;
    assert!(replies.iter().all(|r| *r == top()));
    assert_eq!(fault.requests(), CONCURRENT as u64);
}

#[tokio::test]
async fn mutations_are_never_merged() {
    let fault = fault_subgraph::start().await;
    let url = gateway(&fault, |c| c.traffic.deduplicate = true).await;
    let replies = burst(&url, "mutation { bump }", |_| None).await;
    assert!(
        replies.iter().all(|r| *r == json!({"data": {"bump": 1}})),
        "{replies:?}"
    );
    assert_eq!(fault.requests(), CONCURRENT as u64);
}

#[tokio::test]
async fn authorization_is_not_forwarded_when_disabled() {
    let fault = fault_subgraph::start().await;
    let url = gateway(&fault, |c| {
        c.headers.forward_authorization = false;
        // Unmerged, so every request's headers reach the subgraph to be looked at.
        c.traffic.deduplicate = false;
    })
    .await;
    burst(&url, QUERY, |i| Some(format!("Bearer user-{i}"))).await;
    let seen = fault.authorizations.lock().expect("not poisoned").clone();
    assert_eq!(seen, vec![None; CONCURRENT]);
}
