//! Shared helpers: a real HTTP client against servers on loopback.
#![allow(dead_code)]

use std::path::PathBuf;

use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Handle, Mode, Options, spawn};
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

pub async fn start(set: Set, mode: Mode, opts: Options) -> Handle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    spawn(set, mode, listener, opts).expect("start the set")
}

pub async fn send(client: &HttpClient, method: &str, url: &str, body: Vec<u8>) -> (u16, Bytes) {
    let request = Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let response =
        tokio::time::timeout(std::time::Duration::from_secs(30), client.request(request))
            .await
            .expect("response within 30 s")
            .expect("HTTP exchange");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("response body")
        .to_bytes();
    (status, body)
}

/// POSTs a GraphQL request and returns the status and the raw body.
pub async fn graphql(
    client: &HttpClient,
    url: &str,
    query: &str,
    variables: Value,
) -> (u16, Bytes) {
    let body = serde_json::to_vec(&serde_json::json!({ "query": query, "variables": variables }))
        .expect("serializable request");
    send(client, "POST", url, body).await
}

pub fn parse(body: &[u8]) -> Value {
    serde_json::from_slice(body).expect("a JSON response body")
}

pub fn sets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sets")
}

pub fn query_file(set: &str, scenario: &str) -> String {
    let path = sets_dir()
        .join(set)
        .join("queries")
        .join(format!("{scenario}.graphql"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}
