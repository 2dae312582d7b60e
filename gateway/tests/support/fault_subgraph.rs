//! A fault-injecting subgraph on loopback for the `faults` and `dedup` tests. The first
//! URL path segment picks the behaviour (`/ok`, `/sleep`, `/status-500-body`, ...);
//! `/reset` answers on a raw TCP listener that closes the socket mid-response.
//!
//! It serves the `faulty` subgraph of [`SUPERGRAPH`] ([`FAULTY_SDL`]: `Query.top`,
//! `Mutation.bump` and `Product` entities with `price: Int`, `tags: [String]`,
//! `sku: String!`): the strict JSON subgraph executor answers, and the mode then breaks
//! the transport or corrupts the answer.

use super::json_subgraph::{self, Counters, JsonSubgraphs, Subgraph};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `main` (served by the JSON subgraph) owns `Query.products`; `faulty` is this server.
pub const SUPERGRAPH: &str = r#"
schema
  @link(url: "https://specs.apollo.dev/link/v1.0")
  @link(url: "https://specs.apollo.dev/join/v0.3", for: EXECUTION)
{
  query: Query
  mutation: Mutation
}

directive @join__enumValue(graph: join__Graph!) repeatable on ENUM_VALUE
directive @join__field(graph: join__Graph, requires: join__FieldSet, provides: join__FieldSet, type: String, external: Boolean, override: String, usedOverridden: Boolean) repeatable on FIELD_DEFINITION | INPUT_FIELD_DEFINITION
directive @join__graph(name: String!, url: String!) on ENUM_VALUE
directive @join__implements(graph: join__Graph!, interface: String!) repeatable on OBJECT | INTERFACE
directive @join__type(graph: join__Graph!, key: join__FieldSet, extension: Boolean! = false, resolvable: Boolean! = true, isInterfaceObject: Boolean! = false) repeatable on OBJECT | INTERFACE | UNION | ENUM | INPUT_OBJECT | SCALAR
directive @join__unionMember(graph: join__Graph!, member: String!) repeatable on UNION
directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA

scalar join__FieldSet
scalar link__Import

enum join__Graph {
  FAULTY @join__graph(name: "faulty", url: "http://127.0.0.1:9/unset")
  MAIN @join__graph(name: "main", url: "http://127.0.0.1:9/unset")
}

enum link__Purpose {
  SECURITY
  EXECUTION
}

type Product
  @join__type(graph: FAULTY, key: "id")
  @join__type(graph: MAIN, key: "id")
{
  id: ID!
  name: String @join__field(graph: MAIN)
  price: Int @join__field(graph: FAULTY)
  tags: [String] @join__field(graph: FAULTY)
  sku: String! @join__field(graph: FAULTY)
}

type Query
  @join__type(graph: FAULTY)
  @join__type(graph: MAIN)
{
  products: [Product!]! @join__field(graph: MAIN)
  top: Product @join__field(graph: FAULTY)
}

type Mutation
  @join__type(graph: FAULTY)
{
  bump: Int @join__field(graph: FAULTY)
}
"#;

/// The federation SDL of `main` in [`SUPERGRAPH`].
pub const MAIN_SDL: &str = r#"
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

type Query {
  products: [Product!]!
}

type Product @key(fields: "id") {
  id: ID!
  name: String
}
"#;

/// The federation SDL of `faulty` in [`SUPERGRAPH`].
pub const FAULTY_SDL: &str = r#"
extend schema @link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])

type Query {
  top: Product
}

type Mutation {
  bump: Int
}

type Product @key(fields: "id") {
  id: ID!
  price: Int
  tags: [String]
  sku: String!
}
"#;

/// The JSON subgraph serving `main` (`/main`): products 1 and 2.
pub async fn start_main() -> JsonSubgraphs {
    let data = json!({ "main": { "Query": { "products": [
        { "__typename": "Product", "id": "1", "name": "Kettle" },
        { "__typename": "Product", "id": "2", "name": "Teapot" } ] } } });
    json_subgraph::start(data, [("main".to_owned(), MAIN_SDL.to_owned())].into()).await
}

/// What `faulty` answers when nothing goes wrong: `top` is product 9, and `main`'s
/// products 1 and 2 are its entities too.
fn faulty() -> Subgraph {
    let product = |id: &str| json!({"__typename": "Product", "id": id, "price": 10, "tags": ["a", "b"], "sku": "sku-1"});
    let data = json!({
        "Query": { "top": product("9") },
        "Mutation": { "bump": 1 },
        "entities": { "Product": [product("1"), product("2"), product("9")] }
    });
    Subgraph::new("faulty", FAULTY_SDL, data)
}

pub struct FaultSubgraph {
    /// `http://127.0.0.1:PORT`; append `/<mode>`.
    pub base_url: String,
    /// The URL of the connection-resetting listener.
    pub reset_url: String,
    requests: Arc<AtomicU64>,
    /// The `authorization` header of every request, in arrival order.
    pub authorizations: Arc<Mutex<Vec<Option<String>>>>,
    /// Every request's headers, in arrival order.
    pub headers: Arc<Mutex<Vec<hyper::HeaderMap>>>,
}

impl FaultSubgraph {
    pub fn url(&self, mode: &str) -> String {
        if mode == "reset" {
            return self.reset_url.clone();
        }
        format!("{}/{mode}", self.base_url)
    }

    /// Requests received so far (all modes but `reset`).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

pub async fn start() -> FaultSubgraph {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let base_url = format!("http://{}", listener.local_addr().expect("bound address"));
    let requests = Arc::new(AtomicU64::new(0));
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let headers = Arc::new(Mutex::new(Vec::new()));
    let (r, a, h) = (requests.clone(), authorizations.clone(), headers.clone());
    let subgraph = Arc::new(faulty());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (r, a, h, sg) = (r.clone(), a.clone(), h.clone(), subgraph.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (r, a, sg) = (r.clone(), a.clone(), sg.clone());
                    h.lock().expect("not poisoned").push(req.headers().clone());
                    async move { Ok::<_, std::convert::Infallible>(answer(req, &r, &a, &sg).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    FaultSubgraph {
        base_url,
        reset_url: start_resetter().await,
        requests,
        authorizations,
        headers,
    }
}

/// Reads a request, sends the start of a response promising more, then closes.
async fn start_resetter() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let url = format!(
        "http://{}/reset",
        listener.local_addr().expect("bound address")
    );
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 16 * 1024];
                let _ = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
                let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"data\":{\"_ent";
                let _ = stream.write_all(head).await;
                let _ = stream.flush().await;
                drop(stream);
            });
        }
    });
    url
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    requests: &AtomicU64,
    authorizations: &Mutex<Vec<Option<String>>>,
    subgraph: &Subgraph,
) -> Response<Full<Bytes>> {
    requests.fetch_add(1, Ordering::SeqCst);
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    authorizations.lock().expect("not poisoned").push(auth);
    let mode = req.uri().path().trim_start_matches('/').to_owned();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    match mode.as_str() {
        "sleep" => tokio::time::sleep(Duration::from_secs(3)).await,
        "slow" => tokio::time::sleep(Duration::from_millis(400)).await,
        "status-500-body" => {
            let body = json!({"errors": [{"message": "internal failure", "extensions": {"code": "INTERNAL"}}]});
            return reply(StatusCode::INTERNAL_SERVER_ERROR, body.to_string());
        }
        "status-500-empty" => return reply(StatusCode::INTERNAL_SERVER_ERROR, Bytes::new()),
        "status-500-text" => return reply(StatusCode::INTERNAL_SERVER_ERROR, "oops"),
        "malformed" => return reply(StatusCode::OK, r#"{"data": {"_entities": [{"#),
        // Latin-1 "é" (0xE9) inside a string: not UTF-8.
        "not-utf8" => {
            let body: &[u8] = b"{\"data\": {\"_entities\": [{\"name\": \"caf\xe9\"}]}}";
            return reply(StatusCode::OK, Bytes::from_static(body));
        }
        _ => {}
    }
    let answer = corrupt(&mode, subgraph.execute(&request, &Counters::default()));
    reply(StatusCode::OK, answer.to_string())
}

/// The answer with the mode's corruption: every `price` a string (`wrong-int`), every
/// `tags` an object (`wrong-list`), every non-null `sku` null (`null-non-null`), every
/// `price` left out though asked for (`missing-price`).
fn corrupt(mode: &str, answer: Value) -> Value {
    if mode == "missing-price" {
        return without("price", answer);
    }
    let (field, bad) = match mode {
        "wrong-int" => ("price", json!("ten")),
        "wrong-list" => ("tags", json!({"a": 1})),
        "null-non-null" => ("sku", Value::Null),
        _ => return answer,
    };
    fn walk(v: Value, field: &str, bad: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .map(|(k, v)| {
                        let v = if k == field {
                            bad.clone()
                        } else {
                            walk(v, field, bad)
                        };
                        (k, v)
                    })
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|i| walk(i, field, bad)).collect())
            }
            other => other,
        }
    }
    walk(answer, field, &bad)
}

/// `v` without any `field` key.
fn without(field: &str, v: Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .filter(|(k, _)| k != field)
                .map(|(k, v)| (k, without(field, v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|i| without(field, i)).collect()),
        other => other,
    }
}
