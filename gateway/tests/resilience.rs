//! Subgraph resilience (`traffic.resilience`) over real HTTP: a subgraph on loopback
//! that fails (503 without a GraphQL body), hangs or recovers on command, and the
//! gateway in front of it retrying queries (never mutations), opening its circuit
//! breaker and probing it closed again, and holding fetches to a concurrency limit.

mod support;

use bytes::Bytes;
use graphfleet_gateway::config::{Config, ResilienceConfig};
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

const SUPERGRAPH: &str = r#"
schema
  @link(url: "https://specs.apollo.dev/link/v1.0")
  @link(url: "https://specs.apollo.dev/join/v0.3", for: EXECUTION)
{
  query: Query
  mutation: Mutation
}

directive @join__field(graph: join__Graph, requires: join__FieldSet, provides: join__FieldSet, type: String, external: Boolean, override: String, usedOverridden: Boolean) repeatable on FIELD_DEFINITION | INPUT_FIELD_DEFINITION
directive @join__graph(name: String!, url: String!) on ENUM_VALUE
directive @join__type(graph: join__Graph!, key: join__FieldSet, extension: Boolean! = false, resolvable: Boolean! = true, isInterfaceObject: Boolean! = false) repeatable on OBJECT | INTERFACE | UNION | ENUM | INPUT_OBJECT | SCALAR
directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA

scalar join__FieldSet
scalar link__Import

enum join__Graph {
  S @join__graph(name: "s", url: "SUBGRAPH_URL")
}

enum link__Purpose {
  SECURITY
  EXECUTION
}

type Query @join__type(graph: S) {
  hello: String
}

type Mutation @join__type(graph: S) {
  touch: String
}
"#;

/// What the subgraph does with the next requests.
const OK: u32 = 0;
const FAIL: u32 = 1;
const SLOW: u32 = 2;
const HANG: u32 = 3;

/// The subgraph: `mode` picks the answer; `failures_left` (with `mode` OK) fails that
/// many requests first; `requests` counts every request, `most_at_once` the most in
/// flight together.
#[derive(Default)]
struct Subgraph {
    mode: AtomicU32,
    failures_left: AtomicU32,
    requests: AtomicU64,
    in_flight: AtomicU32,
    most_at_once: AtomicU32,
}

impl Subgraph {
    fn answer(&self) -> Option<Response<Full<Bytes>>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let fail = self.mode.load(Ordering::SeqCst) == FAIL
            || self
                .failures_left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        match self.mode.load(Ordering::SeqCst) {
            SLOW | HANG => None,
            _ if fail => {
                let mut r = Response::new(Full::new(Bytes::from_static(b"unavailable")));
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                Some(r)
            }
            _ => Some(Response::new(Full::new(Bytes::from_static(
                br#"{"data":{"hello":"world","touch":"done"}}"#,
            )))),
        }
    }

    /// The answer after 150 ms, counting how many wait at once.
    async fn slowly(&self) -> Response<Full<Bytes>> {
        if self.mode.load(Ordering::SeqCst) == HANG {
            return std::future::pending().await;
        }
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(150)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Response::new(Full::new(Bytes::from_static(
            br#"{"data":{"hello":"world"}}"#,
        )))
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// The subgraph on loopback and the gateway in front of it with `resilience`.
async fn env(
    resilience: ResilienceConfig,
    tweak: impl FnOnce(&mut Config),
) -> (Arc<Subgraph>, String) {
    let subgraph = Arc::new(Subgraph::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let url = format!("http://{}/", listener.local_addr().expect("bound address"));
    let serving = subgraph.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let subgraph = serving.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let subgraph = subgraph.clone();
                    async move {
                        let _ = req.into_body().collect().await;
                        match subgraph.answer() {
                            Some(r) => Ok::<_, std::convert::Infallible>(r),
                            None => Ok(subgraph.slowly().await),
                        }
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let supergraph =
        Supergraph::parse(&SUPERGRAPH.replace("SUBGRAPH_URL", &url)).expect("supergraph");
    let mut config = Config::default();
    config.traffic.resilience = resilience;
    tweak(&mut config);
    let gateway = support::start_gateway_with_config(config, supergraph).await;
    (subgraph, gateway)
}

async fn ask(url: &str, query: &str) -> Value {
    let reply = support::post_graphql(&support::client(), url, query, json!({})).await;
    serde_json::from_slice(&reply.body).expect("a JSON answer")
}

fn code(answer: &Value) -> &str {
    answer["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or("")
}

async fn metric(gateway: &str, name: &str) -> f64 {
    let url = gateway.replace("/graphql", "/metrics");
    let reply = support::request(&support::client(), "GET", &url, &[], Vec::new()).await;
    let text = String::from_utf8(reply.body.to_vec()).expect("UTF-8");
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{subgraph=\"s\"}}")))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

fn retries(attempts: u32) -> ResilienceConfig {
    let mut r = ResilienceConfig::default();
    r.retry.attempts = attempts;
    r.retry.backoff = Duration::from_millis(5);
    r.retry.max_backoff = Duration::from_millis(20);
    r
}

#[tokio::test]
async fn failed_queries_are_retried_mutations_are_not() {
    let (subgraph, gateway) = env(retries(2), |_| {}).await;
    subgraph.failures_left.store(2, Ordering::SeqCst);
    let answer = ask(&gateway, "{ hello }").await;
    assert_eq!(answer, json!({ "data": { "hello": "world" } }));
    assert_eq!(subgraph.requests(), 3, "two failures, then the answer");
    assert_eq!(
        metric(&gateway, "graphfleet_subgraph_retries_total").await,
        2.0
    );
    // More failures than attempts: the last error reaches the client.
    subgraph.failures_left.store(5, Ordering::SeqCst);
    let answer = ask(&gateway, "{ hello }").await;
    assert_eq!(code(&answer), "SUBREQUEST_HTTP_ERROR", "{answer}");
    assert_eq!(subgraph.requests(), 6);
    // A mutation is sent once, whatever happens to it.
    subgraph.failures_left.store(1, Ordering::SeqCst);
    let before = subgraph.requests();
    let answer = ask(&gateway, "mutation { touch }").await;
    assert_eq!(code(&answer), "SUBREQUEST_HTTP_ERROR", "{answer}");
    assert_eq!(subgraph.requests(), before + 1);
}

#[tokio::test]
async fn without_resilience_a_failure_is_not_retried() {
    let (subgraph, gateway) = env(ResilienceConfig::default(), |_| {}).await;
    subgraph.failures_left.store(1, Ordering::SeqCst);
    let answer = ask(&gateway, "{ hello }").await;
    assert_eq!(code(&answer), "SUBREQUEST_HTTP_ERROR", "{answer}");
    assert_eq!(subgraph.requests(), 1);
}

#[tokio::test]
async fn the_breaker_opens_on_failures_and_a_probe_closes_it_once_the_subgraph_recovers() {
    let mut r = ResilienceConfig::default();
    r.circuit_breaker.enabled = true;
    r.circuit_breaker.min_fetches = 4;
    r.circuit_breaker.open_for = Duration::from_millis(300);
    let (subgraph, gateway) = env(r, |_| {}).await;
    subgraph.mode.store(FAIL, Ordering::SeqCst);
    for _ in 0..4 {
        assert_eq!(
            code(&ask(&gateway, "{ hello }").await),
            "SUBREQUEST_HTTP_ERROR"
        );
    }
    // Open: failed at once, nothing sent.
    let answer = ask(&gateway, "{ hello }").await;
    assert_eq!(code(&answer), "SUBREQUEST_CIRCUIT_OPEN", "{answer}");
    assert_eq!(subgraph.requests(), 4);
    assert_eq!(
        metric(&gateway, "graphfleet_subgraph_circuit_open").await,
        1.0
    );
    assert_eq!(
        metric(&gateway, "graphfleet_subgraph_circuit_rejected_total").await,
        1.0
    );
    // Recovered: after open_for, the probe gets through and closes it.
    subgraph.mode.store(OK, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        ask(&gateway, "{ hello }").await,
        json!({ "data": { "hello": "world" } })
    );
    assert_eq!(
        ask(&gateway, "{ hello }").await,
        json!({ "data": { "hello": "world" } })
    );
    assert_eq!(subgraph.requests(), 6);
    assert_eq!(
        metric(&gateway, "graphfleet_subgraph_circuit_open").await,
        0.0
    );
}

#[tokio::test]
async fn fetches_past_the_concurrency_limit_wait_for_a_slot() {
    let r = ResilienceConfig {
        max_concurrent_fetches: Some(2),
        ..ResilienceConfig::default()
    };
    let (subgraph, gateway) = env(r, |c| c.traffic.deduplicate = false).await;
    subgraph.mode.store(SLOW, Ordering::SeqCst);
    let asks = (0..6).map(|_| {
        let gateway = gateway.clone();
        tokio::spawn(async move { ask(&gateway, "{ hello }").await })
    });
    for answer in futures::future::join_all(asks).await {
        let answer = answer.expect("a client task");
        assert_eq!(answer, json!({ "data": { "hello": "world" } }));
    }
    assert_eq!(subgraph.requests(), 6);
    assert_eq!(subgraph.most_at_once.load(Ordering::SeqCst), 2, "two slots");
}

#[tokio::test]
async fn a_hanging_subgraph_opens_the_breaker_through_its_timeouts() {
    let mut r = ResilienceConfig::default();
    r.circuit_breaker.enabled = true;
    r.circuit_breaker.min_fetches = 2;
    let (subgraph, gateway) = env(r, |c| {
        c.traffic.subgraph_timeout = Duration::from_millis(200)
    })
    .await;
    subgraph.mode.store(HANG, Ordering::SeqCst);
    for _ in 0..2 {
        assert_eq!(
            code(&ask(&gateway, "{ hello }").await),
            "SUBREQUEST_TIMEOUT"
        );
    }
    // Failed at once: nothing more reaches the subgraph.
    let answer = ask(&gateway, "{ hello }").await;
    assert_eq!(code(&answer), "SUBREQUEST_CIRCUIT_OPEN", "{answer}");
    assert_eq!(subgraph.requests(), 2);
}
