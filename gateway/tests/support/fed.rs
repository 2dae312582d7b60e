//! The loadtest `fed` subgraphs as real servers, and the gateway binary in front of them.

use super::HttpClient;
use super::process::GatewayProcess;
use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Handle, Mode, Options};
use http_body_util::{BodyExt, Full};
use std::path::Path;
use std::time::Duration;

/// The `fed` subgraphs on an ephemeral loopback port, with extra latency per subgraph.
pub async fn subgraphs(delays: &[(&str, Duration)]) -> Handle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let delays = delays.iter().map(|(n, d)| ((*n).to_owned(), *d)).collect();
    graphfleet_bench_subgraphs::spawn(Set::Fed, Mode::Subgraphs, listener, Options { delays })
        .expect("fed subgraphs start")
}

/// Requests the subgraphs have received (they count on arrival, before any delay).
pub async fn subgraph_requests(client: &HttpClient, subgraphs: &Handle) -> u64 {
    let reply = super::request(
        client,
        "GET",
        &format!("{}/stats", subgraphs.base_url()),
        &[],
        Vec::new(),
    )
    .await;
    let stats: serde_json::Value = serde_json::from_slice(&reply.body).expect("stats are JSON");
    stats["total"].as_u64().expect("stats have a total")
}

/// One GraphQL POST; an error string for anything but a complete HTTP exchange.
pub async fn try_post(client: &HttpClient, url: &str, query: &str) -> Result<(u16, Bytes), String> {
    let body = serde_json::to_vec(&serde_json::json!({ "query": query })).expect("JSON");
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(req))
        .await
        .map_err(|_| "no response within 30 s".to_owned())?
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body failed: {e}"))?
        .to_bytes();
    Ok((status, body))
}

/// The gateway binary in `dir` on an ephemeral port, serving `supergraph` (which may not
/// exist yet), with each of `settings` passed as `--set`.
pub async fn start_gateway(dir: &Path, supergraph: &Path, settings: &[&str]) -> GatewayProcess {
    let mut args = vec![
        "--listen",
        "127.0.0.1:0",
        "--supergraph",
        supergraph.to_str().expect("UTF-8 path"),
    ];
    for s in settings {
        args.extend(["--set", s]);
    }
    GatewayProcess::start(dir, &args, &[]).await
}
