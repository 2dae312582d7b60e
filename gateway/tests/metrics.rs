//! Prometheus metrics: the gateway on a real port in front of the real benchmark
//! subgraphs (one of them down), scraped over HTTP and read with a text-format parser.

mod support;

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Mode, Options, spawn};
use graphfleet_gateway::config::{Config, SubgraphConfig};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::reload::{Check, Reloader};
use graphfleet_gateway::supergraph::Supergraph;
use prometheus_parse::{Scrape, Value};
use serde_json::json;
use std::sync::Arc;

/// A loopback URL nothing listens on (bound, then released).
async fn closed_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    drop(listener);
    format!("http://{addr}/inventory")
}

async fn serve(gateway: Arc<Gateway>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(graphfleet_gateway::http::serve(listener, gateway));
    format!("http://{addr}")
}

async fn scrape(client: &support::HttpClient, base: &str) -> Scrape {
    scrape_at(client, &format!("{base}/metrics")).await
}

async fn scrape_at(client: &support::HttpClient, url: &str) -> Scrape {
    let reply = support::request(client, "GET", url, &[], vec![]).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.content_type.starts_with("text/plain; version=0.0.4"),
        "{}",
        reply.content_type
    );
    let text = String::from_utf8(reply.body.to_vec()).expect("metrics are UTF-8");
    Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text format")
}

/// Samples of `metric` whose labels are exactly `labels`.
fn find<'a>(
    scrape: &'a Scrape,
    metric: &str,
    labels: &[(&str, &str)],
) -> Vec<&'a prometheus_parse::Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| {
            s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .collect()
}

/// The one value of a counter, gauge or untyped sample (None if absent).
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found = find(scrape, metric, labels);
    assert!(found.len() <= 1, "{metric} {labels:?} appears twice");
    found.first().map(|s| match &s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{metric} is not a scalar: {other:?}"),
    })
}

/// A histogram's observation count, checked against its `+Inf` bucket.
fn histogram_count(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let count = value(scrape, &format!("{metric}_count"), labels)?;
    let found = find(scrape, metric, labels);
    let Some(Value::Histogram(buckets)) = found.first().map(|s| &s.value) else {
        panic!("{metric} {labels:?} has no buckets");
    };
    let inf = buckets
        .iter()
        .find(|b| b.less_than == f64::INFINITY)
        .expect("a +Inf bucket");
    assert_eq!(
        inf.count, count,
        "{metric} {labels:?}: +Inf bucket vs count"
    );
    Some(count)
}

/// Every series of `metric` as (labels, value), sorted, for whole-set comparisons.
fn series(scrape: &Scrape, metric: &str) -> Vec<(Vec<(String, String)>, f64)> {
    let mut out: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .map(|s| {
            let mut labels: Vec<_> = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            labels.sort();
            let v = match &s.value {
                Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
                other => panic!("{metric} is not a scalar: {other:?}"),
            };
            (labels, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<_> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_fetches_cache_and_supergraph_are_counted() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let subgraphs = spawn(Set::Fed, Mode::Subgraphs, listener, Options::default())
        .expect("benchmark subgraphs");
    let text = Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&text).expect("supergraph");
    let first_hash = graphfleet_gateway::supergraph::hex(&supergraph.hash);
    let mut config = Config::default();
    // inventory is down: fetches to it fail to connect.
    config.subgraphs.insert(
        "inventory".to_owned(),
        SubgraphConfig {
            url: Some(closed_url().await),
            ..SubgraphConfig::default()
        },
    );
    let gateway = Arc::new(Gateway::with_config(Arc::new(config), supergraph));
    let base = serve(gateway.clone()).await;
    let url = format!("{base}/graphql");
    let client = support::client();

    for _ in 0..2 {
        let reply =
            support::post_graphql(&client, &url, "query Me { me { id name } }", json!({})).await;
        assert_eq!(reply.status, 200);
        assert!(!String::from_utf8_lossy(&reply.body).contains("errors"));
    }
    // Fails validation: its (client-chosen) name is not used as a label.
    let reply = support::post_graphql(&client, &url, "query Evil { me { nope } }", json!({})).await;
    assert!(String::from_utf8_lossy(&reply.body).contains("nope"));
    // products answers, inventory is down: a response with field errors.
    let reply = support::post_graphql(
        &client,
        &url,
        "query Stock { topProducts(first: 2) { upc inStock } }",
        json!({}),
    )
    .await;
    let body = String::from_utf8_lossy(&reply.body).to_string();
    assert!(body.contains("SUBREQUEST_HTTP_ERROR"), "{body}");
    assert!(body.contains("\"upc\""), "{body}");

    let m = scrape(&client, &base).await;
    let requests = "graphfleet_graphql_requests_total";
    assert_eq!(
        series(&m, requests),
        vec![
            (
                labels(&[("operation", "(invalid)"), ("outcome", "request_error")]),
                1.0
            ),
            (labels(&[("operation", "Me"), ("outcome", "ok")]), 2.0),
            (
                labels(&[("operation", "Stock"), ("outcome", "field_errors")]),
                1.0
            ),
        ]
    );
    let duration = "graphfleet_graphql_request_duration_seconds";
    let me_ok = [("operation", "Me"), ("outcome", "ok")];
    assert_eq!(histogram_count(&m, duration, &me_ok), Some(2.0));
    let stock = [("operation", "Stock"), ("outcome", "field_errors")];
    assert_eq!(histogram_count(&m, duration, &stock), Some(1.0));

    // One series per subgraph of the supergraph, requested or not.
    assert_eq!(
        series(&m, "graphfleet_subgraph_fetches_total"),
        vec![
            (labels(&[("subgraph", "accounts")]), 2.0),
            (labels(&[("subgraph", "inventory")]), 1.0),
            (labels(&[("subgraph", "products")]), 1.0),
            (labels(&[("subgraph", "reviews")]), 0.0),
        ]
    );
    assert_eq!(
        series(&m, "graphfleet_subgraph_fetch_errors_total"),
        vec![
            (labels(&[("subgraph", "accounts")]), 0.0),
            (labels(&[("subgraph", "inventory")]), 1.0),
            (labels(&[("subgraph", "products")]), 0.0),
            (labels(&[("subgraph", "reviews")]), 0.0),
        ]
    );
    let fetch_duration = "graphfleet_subgraph_fetch_duration_seconds";
    assert_eq!(
        histogram_count(&m, fetch_duration, &[("subgraph", "accounts")]),
        Some(2.0)
    );
    assert_eq!(
        histogram_count(&m, fetch_duration, &[("subgraph", "inventory")]),
        Some(1.0)
    );
    // Me twice (one miss, one hit), Evil and Stock once each.
    assert_eq!(
        value(&m, "graphfleet_plan_cache_hits_total", &[]),
        Some(1.0)
    );
    assert_eq!(
        value(&m, "graphfleet_plan_cache_misses_total", &[]),
        Some(3.0)
    );
    assert_eq!(
        value(&m, "graphfleet_graphql_requests_in_flight", &[]),
        Some(0.0)
    );
    assert_eq!(
        series(&m, "graphfleet_supergraph_info"),
        vec![(labels(&[("hash", &first_hash)]), 1.0)]
    );

    // A hot reload (through the file reloader) and a failed one.
    let dir = support::process::test_dir("metrics-reload");
    let path = dir.join("supergraph.graphql");
    let second = format!("{text}\n# reloaded\n");
    std::fs::write(&path, &second).expect("write supergraph");
    let mut reloader = Reloader::new(gateway.clone(), path.clone());
    assert_eq!(reloader.check(), Check::Loaded);
    std::fs::write(&path, "type Query {").expect("write broken supergraph");
    assert_eq!(reloader.check(), Check::Failed);
    let second_hash = graphfleet_gateway::supergraph::hex(
        &Supergraph::parse(&second).expect("second supergraph").hash,
    );
    assert_ne!(first_hash, second_hash);
    let m = scrape(&client, &base).await;
    assert_eq!(
        series(&m, "graphfleet_supergraph_info"),
        vec![(labels(&[("hash", &second_hash)]), 1.0)]
    );
    assert_eq!(
        series(&m, "graphfleet_supergraph_reloads_total"),
        vec![
            (labels(&[("result", "failure")]), 1.0),
            (labels(&[("result", "success")]), 1.0),
        ]
    );
    // The new state counts into the same series; the plan cache starts empty.
    let reply =
        support::post_graphql(&client, &url, "query Me { me { id name } }", json!({})).await;
    assert_eq!(reply.status, 200);
    let m = scrape(&client, &base).await;
    assert_eq!(value(&m, requests, &me_ok), Some(3.0));
    assert_eq!(
        value(
            &m,
            "graphfleet_subgraph_fetches_total",
            &[("subgraph", "accounts")]
        ),
        Some(3.0)
    );
    assert_eq!(
        value(&m, "graphfleet_plan_cache_misses_total", &[]),
        Some(4.0)
    );
    subgraphs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_keep_their_own_metrics_and_the_endpoint_can_be_off() {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let on = Arc::new(Gateway::new(Supergraph::parse(&text).expect("supergraph")));
    let mut config = Config::default();
    config.telemetry.metrics = false;
    let off = Arc::new(Gateway::with_config(
        Arc::new(config),
        Supergraph::parse(&text).expect("supergraph"),
    ));
    let (on_base, off_base) = (serve(on).await, serve(off).await);
    let client = support::client();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for base in [&on_base, &off_base, &off_base] {
        let reply = support::request(
            &client,
            "POST",
            &format!("{base}/graphql"),
            &[
                ("content-type", "application/json"),
                ("traceparent", traceparent),
            ],
            br#"{"query":"query Users { users { name } }"}"#.to_vec(),
        )
        .await;
        assert_eq!(reply.status, 200);
    }
    // Trace export is off in this process: no trace context is invented or passed on.
    let received = subgraphs.headers.lock().expect("headers lock").clone();
    assert_eq!(received.len(), 3);
    assert!(received.iter().all(|(_, h)| !h.contains_key("traceparent")));
    let m = scrape(&client, &on_base).await;
    assert_eq!(
        series(&m, "graphfleet_graphql_requests_total"),
        vec![(labels(&[("operation", "Users"), ("outcome", "ok")]), 1.0)]
    );
    let reply = support::request(&client, "GET", &format!("{off_base}/metrics"), &[], vec![]).await;
    assert_eq!(reply.status, 404);
}

/// The binary: `telemetry` from its config file (metrics path, JSON log lines).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_metrics_at_the_configured_path_and_logs_json() {
    let (_subgraphs, dir, supergraph) =
        support::fixture_supergraph_file("keys", "metrics-binary").await;
    let config = dir.join("gateway.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\nsupergraph:\n  path: {}\n  watch: false\ntelemetry:\n  metrics_path: /internal/metrics\n  log_format: json\n",
            supergraph.display()
        ),
    )
    .expect("write the config");
    let gateway = support::process::GatewayProcess::start(
        &dir,
        &["--config", config.to_str().expect("UTF-8 path")],
        &[],
    )
    .await;
    let client = support::client();
    let url = gateway.url("/graphql");
    let reply =
        support::post_graphql(&client, &url, "query Users { users { name } }", json!({})).await;
    assert_eq!(reply.status, 200);
    let m = scrape_at(&client, &gateway.url("/internal/metrics")).await;
    assert_eq!(
        value(
            &m,
            "graphfleet_graphql_requests_total",
            &[("operation", "Users"), ("outcome", "ok")]
        ),
        Some(1.0)
    );
    let default_path =
        support::request(&client, "GET", &gateway.url("/metrics"), &[], vec![]).await;
    assert_eq!(default_path.status, 404);
    // Every tracing line is one JSON object (the plain "listening on" line is for tools).
    let log = gateway.log();
    let events: Vec<serde_json::Value> = log
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["level"] == "INFO" && e["message"] == "graphfleet-gateway listening"),
        "{log}"
    );
    assert!(
        log.lines()
            .all(|l| l.starts_with('{') || l.contains("listening on")),
        "{log}"
    );
}

/// A subgraph that accepts connections and never answers: the request timeout fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_cut_by_the_timeout_counts_as_timeout() {
    let black_hole = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let hole_url = format!("http://{}/accounts", black_hole.local_addr().expect("addr"));
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        // Bounded: the test sends one request.
        for _ in 0..8 {
            let Ok((stream, _)) = black_hole.accept().await else {
                break;
            };
            open.push(stream);
        }
    });
    let (_subgraphs, text) = support::fixture_subgraphs("keys").await;
    let mut config = Config::default();
    config.traffic.request_timeout = std::time::Duration::from_millis(300);
    config.subgraphs.insert(
        "accounts".to_owned(),
        SubgraphConfig {
            url: Some(hole_url),
            ..SubgraphConfig::default()
        },
    );
    let gateway = Arc::new(Gateway::with_config(
        Arc::new(config),
        Supergraph::parse(&text).expect("supergraph"),
    ));
    let base = serve(gateway).await;
    let client = support::client();
    let url = format!("{base}/graphql");
    let reply =
        support::post_graphql(&client, &url, "query Users { users { name } }", json!({})).await;
    assert_eq!(reply.status, 504);
    let m = scrape(&client, &base).await;
    assert_eq!(
        series(&m, "graphfleet_graphql_requests_total"),
        vec![(
            labels(&[("operation", "Users"), ("outcome", "timeout")]),
            1.0
        )]
    );
    let timeout = [("operation", "Users"), ("outcome", "timeout")];
    assert_eq!(
        histogram_count(&m, "graphfleet_graphql_request_duration_seconds", &timeout),
        Some(1.0)
    );
    assert_eq!(
        value(&m, "graphfleet_graphql_requests_in_flight", &[]),
        Some(0.0)
    );
    // The fetch the timeout cut short still counts, as an error.
    let accounts = [("subgraph", "accounts")];
    assert_eq!(
        value(&m, "graphfleet_subgraph_fetches_total", &accounts),
        Some(1.0)
    );
    assert_eq!(
        value(&m, "graphfleet_subgraph_fetch_errors_total", &accounts),
        Some(1.0)
    );
    held.abort();
}

/// A client sending 10,000 distinct operation names (each once, a plan-cache miss
/// each) fills the label slots and no more; a frequent operation arriving after it
/// still gets a label of its own, and the series stay bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distinct_operation_names_cannot_use_up_the_labels() {
    let (_subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph");
    let gateway = Arc::new(Gateway::with_config(
        Arc::new(Config::default()),
        supergraph,
    ));
    let base = serve(gateway).await;
    let url = format!("{base}/graphql");
    let client = support::client();
    let mut senders = tokio::task::JoinSet::new();
    for first in 0..8 {
        let (client, url) = (client.clone(), url.clone());
        senders.spawn(async move {
            for i in (first..10_000).step_by(8) {
                let query = format!("query Spam{i} {{ __typename }}");
                let reply = support::post_graphql(&client, &url, &query, json!({})).await;
                assert_eq!(reply.status, 200);
            }
        });
    }
    while let Some(done) = senders.join_next().await {
        done.expect("a sender");
    }
    for _ in 0..20 {
        let reply =
            support::post_graphql(&client, &url, "query Legit { __typename }", json!({})).await;
        assert_eq!(reply.status, 200);
    }
    // Legit's 8th request took the label of a name sent once, whose series left the
    // registry, its one request moved to (other); Legit counts from then on. The last request is
    // counted as its answer goes out: wait for it.
    let legit = [("operation", "Legit"), ("outcome", "ok")];
    let mut m = scrape(&client, &base).await;
    for _ in 0..100 {
        if value(&m, "graphfleet_graphql_requests_total", &legit) == Some(13.0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        m = scrape(&client, &base).await;
    }
    assert_eq!(
        value(&m, "graphfleet_graphql_requests_total", &legit),
        Some(13.0)
    );
    let requests = series(&m, "graphfleet_graphql_requests_total");
    let total: f64 = requests.iter().map(|(_, v)| v).sum();
    assert_eq!(total, 10_020.0);
    let operations: std::collections::BTreeSet<&str> = requests
        .iter()
        .flat_map(|(labels, _)| labels.iter())
        .filter(|(k, _)| k == "operation")
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(operations.contains("Legit"), "{operations:?}");
    assert!(operations.contains("(other)"), "{operations:?}");
    // 100 names and (other), one outcome each.
    assert_eq!(operations.len(), 101, "{operations:?}");
    assert_eq!(requests.len(), 101);
}
