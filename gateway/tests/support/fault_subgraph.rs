//! A fault-injecting subgraph on loopback for the `faults` and `dedup` tests. The first
//! URL path segment picks the behaviour (`/ok`, `/sleep`, `/status-500-body`, ...);
//! `/reset` answers on a raw TCP listener that closes the socket mid-response.
//!
//! It serves the `faulty` subgraph of [`SUPERGRAPH`]: `Query.top`, `Mutation.bump` and
//! `Product` entities (`price: Int`, `tags: [String]`, `sku: String!`).

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

/// Data for the JSON subgraph serving `main`.
pub fn main_data() -> Value {
    json!({ "main": { "Query": { "products": [
        { "__typename": "Product", "id": "1", "name": "Kettle" },
        { "__typename": "Product", "id": "2", "name": "Teapot" } ] } } })
}

pub struct FaultSubgraph {
    /// `http://127.0.0.1:PORT`; append `/<mode>`.
    pub base_url: String,
    /// The URL of the connection-resetting listener.
    pub reset_url: String,
    requests: Arc<AtomicU64>,
    /// The `authorization` header of every request, in arrival order.
    pub authorizations: Arc<Mutex<Vec<Option<String>>>>,
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
    let (r, a) = (requests.clone(), authorizations.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (r, a) = (r.clone(), a.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let (r, a) = (r.clone(), a.clone());
                    async move { Ok::<_, std::convert::Infallible>(answer(req, &r, &a).await) }
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
        _ => {}
    }
    reply(StatusCode::OK, data(&mode, &request).to_string())
}

/// The (possibly corrupted) answer to a well-formed request.
fn data(mode: &str, request: &Value) -> Value {
    let product = |id: &Value| {
        let mut p = json!({"__typename": "Product", "id": id, "price": 10, "tags": ["a", "b"], "sku": "sku-1"});
        match mode {
            "wrong-int" => p["price"] = json!("ten"),
            "wrong-list" => p["tags"] = json!({"a": 1}),
            "null-non-null" => p["sku"] = Value::Null,
            _ => {}
        }
        p
    };
    let query = request["query"].as_str().unwrap_or("");
    if query.contains("bump") {
        return json!({"data": {"bump": 1}});
    }
    if let Some(reps) = request["variables"]["representations"].as_array() {
        let entities: Vec<Value> = reps.iter().map(|r| product(&r["id"])).collect();
        return json!({"data": {"_entities": entities}});
    }
    json!({"data": {"top": product(&json!("9"))}})
}
