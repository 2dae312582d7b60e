//! Test support: the gateway on a real loopback port and a small HTTP client.
#![allow(dead_code)]

use bytes::Bytes;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub mod fault_subgraph;
pub mod fed;
pub mod front;
pub mod invariants;
pub mod json_subgraph;
pub mod jwt;
pub mod opgen;
pub mod process;
pub mod ws;
pub mod ws_subgraph;

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A header only a preflighted (non-form) request can carry: it gets a GraphQL GET past
/// CSRF prevention, as browser GraphQL clients send it.
pub const PREFLIGHTED: &[(&str, &str)] = &[("apollo-require-preflight", "true")];

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Serve `supergraph` on an ephemeral loopback port; returns the `/graphql` URL.
pub async fn start_gateway(supergraph: Supergraph) -> String {
    start_gateway_with_config(graphfleet_gateway::config::Config::default(), supergraph).await
}

/// Like [`start_gateway`], with `config` (its `listen` is ignored).
pub async fn start_gateway_with_config(
    config: graphfleet_gateway::config::Config,
    supergraph: Supergraph,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(graphfleet_gateway::http::serve(
        listener,
        Arc::new(Gateway::with_config(Arc::new(config), supergraph)),
    ));
    format!("http://{addr}/graphql")
}

/// JSON subgraphs serving `tests/fixtures/<fixture>/data.json`, and that fixture's
/// supergraph with its subgraph URLs pointed at them.
pub async fn fixture_subgraphs(fixture: &str) -> (json_subgraph::JsonSubgraphs, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .unwrap_or_else(|e| panic!("read fixture {fixture}/{file}: {e}"))
    };
    let subgraphs = json_subgraph::start_suite(&dir).await;
    let text = read("supergraph.graphql").replace("http://127.0.0.1:4200", &subgraphs.base_url);
    (subgraphs, text)
}

/// Like [`fixture_subgraphs`], with the supergraph written to `supergraph.graphql` in a
/// fresh [`process::test_dir`] named `test`; returns the subgraphs, that directory and the file.
pub async fn fixture_supergraph_file(
    fixture: &str,
    test: &str,
) -> (json_subgraph::JsonSubgraphs, PathBuf, PathBuf) {
    let (subgraphs, text) = fixture_subgraphs(fixture).await;
    let dir = process::test_dir(test);
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, text).expect("write the supergraph");
    (subgraphs, dir, file)
}

pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

pub async fn request(
    client: &HttpClient,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Reply {
    try_request(client, method, url, headers, body)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`request`], with a failed exchange (connection dropped, no answer in 30 s) as an error.
pub async fn try_request(
    client: &HttpClient,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Reply, String> {
    let mut builder = hyper::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let req = builder
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(req))
        .await
        .map_err(|_| "no response within 30 s".to_owned())?
        .map_err(|e| format!("HTTP exchange: {e:?}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("response body: {e:?}"))?
        .to_bytes();
    Ok(Reply {
        status,
        content_type,
        headers,
        body,
    })
}

/// POST a GraphQL request as application/json.
pub async fn post_graphql(
    client: &HttpClient,
    url: &str,
    query: &str,
    variables: serde_json::Value,
) -> Reply {
    try_post_graphql(client, url, query, variables)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`post_graphql`], with a failed exchange as an error.
pub async fn try_post_graphql(
    client: &HttpClient,
    url: &str,
    query: &str,
    variables: serde_json::Value,
) -> Result<Reply, String> {
    let body = serde_json::to_vec(&serde_json::json!({ "query": query, "variables": variables }))
        .expect("serializable request");
    try_request(
        client,
        "POST",
        url,
        &[("content-type", "application/json")],
        body,
    )
    .await
}

/// Runs `scripts/node-tool.sh` with `args` (a real npm client or oracle, pinned by its
/// package-lock.json) off the async threads. npm is required: `scripts/test.sh`
/// installs it (`scripts/host-packages.sh nodejs npm`).
pub async fn node_tool(args: Vec<String>) -> std::process::Output {
    let npm = std::process::Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok(),
        "npm is not installed, so the real client cannot run: run scripts/test.sh, or scripts/host-packages.sh nodejs npm"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/node-tool.sh");
    tokio::task::spawn_blocking(move || {
        std::process::Command::new(script)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run scripts/node-tool.sh")
    })
    .await
    .expect("the client's thread")
}
