//! A mock API server for running a reconciler without a cluster. A case is a YAML file under
//! `tests/fixtures/mock-api/`: the object reconciled, every call the reconcile must make
//! (method, path, query, body fields), in order, each with the answer it gets, and the
//! reconcile's outcome. A `kube::Client` over a `tower_test` mock service carries the calls;
//! a call missing, extra or different fails the case, and timeouts keep it from hanging.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::{Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use kube::runtime::controller::Action;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Context, Error, Settings};
use crate::metrics::Metrics;

mod cases;
mod includes;

use includes::mismatch;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// How long the reconcile, and then the mock server's last check, may take: a reconcile stuck
/// outside the mock, or a client kept alive past it, fails the case instead of hanging.
const CASE_TIMEOUT: Duration = Duration::from_secs(5);

/// One reconcile against the mock API server.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case<K> {
    /// The object handed to the reconciler.
    object: K,
    /// The calls the reconcile must make, in order.
    calls: Vec<Call>,
    outcome: Outcome,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    request: Expected,
    response: Answer,
}

/// What a call must be.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Expected {
    method: String,
    path: String,
    /// The whole query, decoded (none when left out).
    #[serde(default)]
    query: BTreeMap<String, String>,
    /// e.g. `application/apply-patch+yaml` for server-side apply (not checked when left out).
    content_type: Option<String>,
    /// Fields the JSON body must have, as `includes` reads them (not checked when left out).
    body: Option<Value>,
}

/// How the mock API server answers a call.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    #[serde(default = "status_ok")]
    status: u16,
    /// Answer with the request's own body, as apply and create do.
    #[serde(default)]
    echo: bool,
    /// The object answered; an error status without one gets a `Status` object.
    body: Option<Value>,
}

fn status_ok() -> u16 {
    200
}

/// What the reconcile must return.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
enum Outcome {
    /// `Ok(Action::requeue(..))` after this many seconds.
    RequeueSeconds(u64),
    /// `Ok(Action::await_change())`.
    AwaitChange,
    /// `Err(e)` whose message contains this text.
    Error(String),
}

/// Runs the case `name` (a path under `tests/fixtures/mock-api/`, without `.yaml`) through
/// `reconcile` with default [`Settings`], and panics on any departure from it.
async fn run_case<K, F, Fut>(name: &str, reconcile: F)
where
    K: DeserializeOwned,
    F: FnOnce(Arc<K>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, Error>>,
{
    let case: Case<K> = load(name);
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let ctx = Context::new(client, Arc::new(Metrics::new()), Settings::default());
    let server = tokio::spawn(serve(handle, case.calls));
    let result = tokio::time::timeout(
        CASE_TIMEOUT,
        reconcile(Arc::new(case.object), Arc::new(ctx)),
    )
    .await
    .unwrap_or_else(|_| panic!("{name}: the reconcile did not finish within {CASE_TIMEOUT:?}"));
    // The reconcile dropped the Context, so its client: the server sees the calls end. Its
    // verdict comes first, as a departure from the case also shows in the reconcile's result.
    match tokio::time::timeout(CASE_TIMEOUT, server).await {
        Err(_) => panic!("{name}: the mock API server was still waiting after {CASE_TIMEOUT:?}"),
        Ok(verdict) => {
            if let Err(why) = verdict.expect("the mock API server does not panic") {
                panic!("{name}: {why}");
            }
        }
    }
    case.outcome.check(name, result);
}

fn load<K: DeserializeOwned>(name: &str) -> Case<K> {
    let path = format!(
        "{}/tests/fixtures/mock-api/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    // Merge keys (`<<: *object`) let an answer reuse the case's object.
    let mut value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"));
    value
        .apply_merge()
        .unwrap_or_else(|e| panic!("{path}: merge keys: {e}"));
    // Through JSON: serde_yaml_ng reads an enum out of a `Value` only from a YAML tag.
    let value = serde_json::to_value(value).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_value(value).unwrap_or_else(|e| panic!("{path} is not a case: {e}"))
}

/// Answers the expected calls in order, then checks that no other call comes. A departure
/// ends it, which fails the reconcile's pending and later calls.
async fn serve(mut handle: Handle, calls: Vec<Call>) -> Result<(), String> {
    for (i, call) in calls.into_iter().enumerate() {
        let step = format!(
            "call {} ({} {})",
            i + 1,
            call.request.method,
            call.request.path
        );
        let Some((request, respond)) = handle.next_request().await else {
            return Err(format!("{step}: the reconcile made no more calls"));
        };
        let body = call
            .request
            .check(request)
            .await
            .map_err(|e| format!("{step}: {e}"))?;
        let response = call
            .response
            .respond(body)
            .map_err(|e| format!("{step}: {e}"))?;
        respond.send_response(response);
    }
    match handle.next_request().await {
        Some((request, _)) => Err(format!(
            "an unexpected call: {} {}",
            request.method(),
            request.uri()
        )),
        None => Ok(()),
    }
}

impl Expected {
    /// Checks `request` against what is expected and returns its body.
    async fn check(&self, request: Request<Body>) -> Result<Bytes, String> {
        let (parts, body) = request.into_parts();
        if parts.method.as_str() != self.method || parts.uri.path() != self.path {
            return Err(format!("got {} {}", parts.method, parts.uri));
        }
        let query: BTreeMap<String, String> =
            form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
                .into_owned()
                .collect();
        if query != self.query {
            return Err(format!("query {query:?}, expected {:?}", self.query));
        }
        if let Some(expected) = &self.content_type {
            let actual = parts.headers.get(hyper::header::CONTENT_TYPE);
            if actual.and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                return Err(format!("content type {actual:?}, expected {expected}"));
            }
        }
        let bytes = body
            .collect_bytes()
            .await
            .map_err(|e| format!("reading the body: {e}"))?;
        if let Some(expected) = &self.body {
            let actual: Value =
                serde_json::from_slice(&bytes).map_err(|e| format!("the body is not JSON: {e}"))?;
            if let Some(why) = mismatch(&actual, expected) {
                return Err(format!("body {why}\nbody: {actual:#}"));
            }
        }
        Ok(bytes)
    }
}

impl Answer {
    fn respond(&self, request_body: Bytes) -> Result<Response<Body>, String> {
        let status = StatusCode::from_u16(self.status).map_err(|e| format!("the answer: {e}"))?;
        let body = match (&self.body, self.echo) {
            (Some(_), true) => return Err("an answer either echoes or has a body".to_owned()),
            (Some(body), false) => Bytes::from(body.to_string()),
            (None, true) => request_body,
            (None, false) if !status.is_success() => Bytes::from(failure(status).to_string()),
            (None, false) => return Err(format!("a {status} answer needs a body or `echo: true`")),
        };
        Ok(Response::builder()
            .status(status)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_vec()))
            .expect("a status and a JSON body make a response"))
    }
}

/// The `Status` object the API server answers an error with.
fn failure(status: StatusCode) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Status",
        "status": "Failure",
        "message": format!("mock API server: {status}"),
        "reason": reason(status),
        "code": status.as_u16(),
    })
}

/// Kubernetes' `StatusReason` of an error status (kube's `get_opt` looks for `NotFound`).
fn reason(status: StatusCode) -> String {
    match status.as_u16() {
        422 => "Invalid".to_owned(),
        500 => "InternalError".to_owned(),
        504 => "Timeout".to_owned(),
        // The others are the HTTP reason phrase in one word: NotFound, Conflict, ...
        _ => status
            .canonical_reason()
            .unwrap_or("Unknown")
            .replace(' ', ""),
    }
}

impl Outcome {
    fn check(&self, name: &str, result: Result<Action, Error>) {
        match (self, &result) {
            (Self::RequeueSeconds(s), Ok(a)) if *a == Action::requeue(Duration::from_secs(*s)) => {}
            (Self::AwaitChange, Ok(a)) if *a == Action::await_change() => {}
            (Self::Error(text), Err(e)) if e.to_string().contains(text.as_str()) => {}
            _ => panic!("{name}: the reconcile returned {result:?}, expected {self:?}"),
        }
    }
}
