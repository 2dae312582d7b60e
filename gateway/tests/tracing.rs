//! OTLP traces: a real OTLP/gRPC receiver on loopback, the gateway (in this process,
//! with the process-wide telemetry installed) in front of JSON fixture subgraphs, and
//! one request carrying a W3C `traceparent`.

mod support;

use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_testkit::otlp::{OtlpCollector, Span};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|a| a.key == key)?
        .value
        .as_ref()?;
    match value.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(found.len(), 1, "one {name} span expected in {names:?}");
    found[0]
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_traced_under_the_client_trace_and_propagated_to_subgraphs() {
    let collector = OtlpCollector::start().await;
    let mut config = Config::default();
    config.telemetry.tracing.otlp_endpoint = Some(collector.endpoint.clone());
    // The client's sampled flag is honoured even when the gateway samples nothing itself.
    config.telemetry.tracing.sample_ratio = 0.0;
    let guard = graphfleet_gateway::telemetry::init(&config.telemetry).expect("telemetry");

    let keys = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys");
    let subgraphs = support::json_subgraph::start_suite(&keys).await;
    let text = include_str!("fixtures/keys/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = Supergraph::parse(&text).expect("supergraph");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/graphql", listener.local_addr().expect("addr"));
    let gateway = Arc::new(Gateway::with_config(Arc::new(config), supergraph));
    tokio::spawn(graphfleet_gateway::http::serve(listener, gateway));

    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let body =
        serde_json::to_vec(&json!({"query": "query Orders { orders { status } }"})).expect("JSON");
    let reply = support::request(
        &support::client(),
        "POST",
        &url,
        &[
            ("content-type", "application/json"),
            ("traceparent", &traceparent),
        ],
        body,
    )
    .await;
    assert_eq!(reply.status, 200);
    let answer = String::from_utf8_lossy(&reply.body).to_string();
    assert!(!answer.contains("errors"), "{answer}");

    // Dropping the guard flushes the batch exporter (it blocks, so off the async workers).
    tokio::task::spawn_blocking(move || drop(guard))
        .await
        .expect("flush");
    let deadline = Instant::now() + Duration::from_secs(10);
    let spans = loop {
        let spans = collector.spans();
        if spans.iter().any(|s| s.name == "request") || Instant::now() > deadline {
            break spans;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    for span in &spans {
        assert_eq!(
            graphfleet_gateway::supergraph::hex(&span.trace_id),
            TRACE_ID,
            "span {} left the trace",
            span.name
        );
    }
    let request = one(&spans, "request");
    assert_eq!(
        graphfleet_gateway::supergraph::hex(&request.parent_span_id),
        CLIENT_SPAN
    );
    assert_eq!(
        attribute(request, "graphql.operation.name").as_deref(),
        Some("Orders")
    );
    let request_id = request.span_id.clone();
    for name in ["parse", "validate", "plan", "execute"] {
        assert_eq!(
            one(&spans, name).parent_span_id,
            request_id,
            "{name} is not a child of request"
        );
    }
    let execute_id = one(&spans, "execute").span_id.clone();
    let fetches = named(&spans, "subgraph_fetch");
    let mut fetched: Vec<String> = fetches
        .iter()
        .map(|f| {
            assert_eq!(f.parent_span_id, execute_id, "fetch outside execute");
            assert_eq!(
                attribute(f, "http.response.status_code").as_deref(),
                Some("200")
            );
            attribute(f, "subgraph.name").expect("subgraph.name attribute")
        })
        .collect();
    fetched.sort();
    assert_eq!(fetched, ["orders", "shipping"]);

    // Each subgraph request carried the trace, with its fetch span as the parent.
    let received = subgraphs.headers.lock().expect("headers lock").clone();
    assert_eq!(received.len(), 2, "two subgraph requests");
    for (subgraph, headers) in received {
        let value = headers
            .get("traceparent")
            .unwrap_or_else(|| panic!("{subgraph} got no traceparent"))
            .to_str()
            .expect("ASCII header");
        let parts: Vec<&str> = value.split('-').collect();
        assert_eq!(parts.len(), 4, "{value}");
        assert_eq!(parts[1], TRACE_ID, "{subgraph}: {value}");
        let fetch = fetches
            .iter()
            .find(|f| attribute(f, "subgraph.name").as_deref() == Some(subgraph.as_str()))
            .expect("a fetch span for this subgraph");
        assert_eq!(
            parts[2],
            graphfleet_gateway::supergraph::hex(&fetch.span_id),
            "{subgraph}: parent is its fetch span"
        );
        assert_eq!(parts[3], "01", "sampled");
    }
}
