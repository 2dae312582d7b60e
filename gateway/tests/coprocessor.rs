//! External coprocessors over real HTTP: the gateway in front of the auth fixture's
//! JSON subgraphs (`Money` guarded by `@policy` "read_cost", `Secret` by "admin"), and a
//! real coprocessor process written to Apollo Router's documented protocol
//! (tools/coprocessor/coprocessor.mjs, Node with no packages) whose behaviour is its
//! mode. The coprocessor checks every payload strictly; each test asserts it found no
//! problem.

mod support;

use graphfleet_gateway::config::Config;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;
use support::json_subgraph::JsonSubgraphs;

/// The coprocessor process, killed when dropped.
struct Coprocessor {
    child: std::process::Child,
    url: String,
}

impl Coprocessor {
    fn start(mode: &str) -> Self {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/coprocessor/coprocessor.mjs");
        let mut child = std::process::Command::new("node")
            .arg(&script)
            .arg(mode)
            .stdout(std::process::Stdio::piped())
            .stdin(std::process::Stdio::null())
            .spawn()
            .expect("node runs (scripts/host-packages.sh nodejs installs it)");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the coprocessor prints its port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn get(&self, path: &str) -> Value {
        let reply = support::request(
            &support::client(),
            "GET",
            &format!("{}{path}", self.url),
            &[],
            Vec::new(),
        )
        .await;
        serde_json::from_slice(&reply.body).expect("JSON from the coprocessor")
    }

    /// The payloads it received; fails the test on any protocol problem it found.
    async fn checked_log(&self) -> Vec<Value> {
        let problems = self.get("/problems").await;
        assert_eq!(
            problems,
            json!([]),
            "the coprocessor found protocol problems"
        );
        match self.get("/log").await {
            Value::Array(log) => log,
            other => panic!("log {other}"),
        }
    }
}

impl Drop for Coprocessor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    subgraphs: JsonSubgraphs,
    url: String,
    coprocessor: Coprocessor,
}

/// The gateway with `config` (YAML; `$COPROCESSOR` is the coprocessor's URL) before a
/// coprocessor in `mode`.
async fn start(mode: &str, config: &str) -> Setup {
    let coprocessor = Coprocessor::start(mode);
    let config: Config = serde_yaml_ng::from_str(&config.replace("$COPROCESSOR", &coprocessor.url))
        .expect("a gateway config");
    let problems = graphfleet_gateway::config::validate(&config);
    assert!(problems.is_empty(), "{problems:?}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/auth");
    let subgraphs = support::json_subgraph::start_suite(&dir).await;
    let text = std::fs::read_to_string(dir.join("supergraph.graphql"))
        .expect("tests/auth/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraphs.base_url)
        // A second policy, so one can be granted and the other denied.
        .replace(
            "scalar Money\n  @join__type(graph: PRODUCTS)\n  @policy(policies: [[\"admin\"]])",
            "scalar Money\n  @join__type(graph: PRODUCTS)\n  @policy(policies: [[\"read_cost\"]])",
        );
    assert!(
        text.contains("read_cost"),
        "the fixture's Money policy changed"
    );
    let supergraph = Supergraph::parse(&text).expect("the auth supergraph loads");
    let url = support::start_gateway_with_config(config, supergraph).await;
    Setup {
        subgraphs,
        url,
        coprocessor,
    }
}

impl Setup {
    async fn post(&self, query: &str) -> support::Reply {
        let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
        let headers = [("content-type", "application/json"), ("x-client", "test")];
        let client = support::client();
        let asked = support::request(&client, "POST", &self.url, &headers, body);
        tokio::time::timeout(Duration::from_secs(20), asked)
            .await
            .expect("an answer within 20 s")
    }

    fn subgraph_header(&self, name: &str) -> Vec<String> {
        let seen = self.subgraphs.headers.lock().expect("headers lock");
        let values = seen.iter().filter_map(|(_, h)| h.get(name));
        values
            .map(|v| v.to_str().expect("ASCII").to_owned())
            .collect()
    }
}

fn json_of(reply: &support::Reply) -> Value {
    serde_json::from_slice(&reply.body)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&reply.body)))
}

fn stages(log: &[Value]) -> Vec<&str> {
    log.iter()
        .map(|p| p["stage"].as_str().expect("stage"))
        .collect()
}

const NAMES: &str = "{ products { id name } }";

#[tokio::test]
async fn headers_added_at_router_request_and_rewritten_per_fetch_reach_the_subgraph() {
    let setup = start(
        "headers",
        "headers: {propagate: [x-from-coprocessor, x-client]}
coprocessor:
  url: $COPROCESSOR
  router: {request: {headers: true, body: true, path: true}}
  subgraph: {all: {request: {headers: true, body: true, uri: true, service_name: true}}}",
    )
    .await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 200);
    assert_eq!(json_of(&reply)["data"]["products"][0]["name"], "Table");
    assert_eq!(setup.subgraph_header("x-from-coprocessor"), ["router"]);
    assert_eq!(setup.subgraph_header("x-sub"), ["rewritten"]);
    let log = setup.coprocessor.checked_log().await;
    assert_eq!(stages(&log), ["RouterRequest", "SubgraphRequest"]);
    let router = &log[0];
    assert_eq!(router["path"], "/graphql");
    assert_eq!(router["method"], "POST");
    assert_eq!(router["headers"]["x-client"], json!(["test"]));
    let sent: Value = serde_json::from_str(router["body"].as_str().expect("a string body"))
        .expect("the raw body");
    assert_eq!(sent["query"], NAMES);
    let fetch = &log[1];
    assert_eq!(fetch["serviceName"], "products");
    assert!(fetch["uri"].as_str().expect("uri").ends_with("/products"));
    assert!(
        fetch["body"]["query"]
            .as_str()
            .expect("query")
            .contains("products")
    );
    assert_eq!(
        fetch["id"], router["id"],
        "one id for every stage of a request"
    );
}

#[tokio::test]
async fn a_break_at_router_request_answers_with_its_status_and_message() {
    let setup = start(
        "break",
        "coprocessor: {url: $COPROCESSOR, router: {request: {headers: true}}}",
    )
    .await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.headers["x-denied"], "yes");
    assert_eq!(
        json_of(&reply),
        json!({"errors": [{"message": "not allowed", "extensions": {"code": "ERROR"}}]})
    );
    assert!(
        setup.subgraphs.counts().values().all(|n| *n == 0),
        "no subgraph was called"
    );
    setup.coprocessor.checked_log().await;
}

#[tokio::test]
async fn context_set_at_router_request_is_read_back_at_the_response_stages() {
    let setup = start(
        "context",
        "coprocessor:
  url: $COPROCESSOR
  router: {request: {context: true}, response: {headers: true, context: all}}
  supergraph: {response: {body: true, context: all}}",
    )
    .await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 200);
    let body = json_of(&reply);
    // No SupergraphRequest stage: the operation kind was never put in the context.
    assert_eq!(body["extensions"], json!({"greeting": "hello"}));
    assert_eq!(body["data"]["products"][1]["name"], "Chair");
    // SupergraphResponse left the key out: deleted before RouterResponse.
    assert_eq!(reply.headers["x-greeting-left"], "false");
    let log = setup.coprocessor.checked_log().await;
    assert_eq!(
        stages(&log),
        ["RouterRequest", "SupergraphResponse", "RouterResponse"]
    );
}

#[tokio::test]
async fn policy_decisions_come_from_the_supergraph_request_stage() {
    let setup = start(
        "policy",
        "coprocessor: {url: $COPROCESSOR, supergraph: {request: {context: all, body: true}}}",
    )
    .await;
    let reply = setup
        .post("{ products { name cost secret { note } } }")
        .await;
    assert_eq!(reply.status, 200);
    let body = json_of(&reply);
    let first = &body["data"]["products"][0];
    assert_eq!(first["secret"]["note"], "cost 40", "admin granted: {body}");
    assert_eq!(first["cost"], Value::Null, "read_cost denied: {body}");
    let errors = body["errors"].as_array().expect("errors");
    assert!(
        errors
            .iter()
            .all(|e| e["extensions"]["code"] == "UNAUTHORIZED_FIELD_OR_TYPE"),
        "{body}"
    );
    let log = setup.coprocessor.checked_log().await;
    let entries = &log[0]["context"]["entries"];
    assert_eq!(
        entries["apollo::authorization::required_policies"],
        json!({"admin": null, "read_cost": null})
    );
    assert_eq!(entries["apollo::supergraph::operation_kind"], "query");
    assert_eq!(
        log[0]["body"]["query"],
        "{ products { name cost secret { note } } }"
    );
}

#[tokio::test]
async fn a_slow_coprocessor_fails_the_request_or_is_skipped_with_on_error_continue() {
    let config = |on_error: &str| {
        format!(
            "coprocessor: {{url: $COPROCESSOR, timeout: 200ms, on_error: {on_error}, router: {{request: {{body: true}}}}}}"
        )
    };
    let setup = start("slow", &config("fail")).await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 500);
    assert_eq!(
        json_of(&reply),
        json!({"errors": [{"message": "internal server error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}]})
    );
    let open = start("slow", &config("continue")).await;
    let reply = open.post(NAMES).await;
    assert_eq!(reply.status, 200);
    assert_eq!(json_of(&reply)["data"]["products"][0]["name"], "Table");
    let metrics = support::request(
        &support::client(),
        "GET",
        &open.url.replace("/graphql", "/metrics"),
        &[],
        Vec::new(),
    )
    .await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains(
            r#"graphfleet_coprocessor_calls_total{outcome="failed_open",stage="RouterRequest"} 1"#
        ),
        "{text}"
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_payload_fails_the_request() {
    let setup = start(
        "invalid",
        "coprocessor: {url: $COPROCESSOR, router: {request: {headers: true}}}",
    )
    .await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 500);
    assert!(setup.subgraphs.counts().values().all(|n| *n == 0));
    setup.coprocessor.checked_log().await;
}

#[tokio::test]
async fn a_break_at_subgraph_request_answers_that_fetch() {
    let setup = start(
        "subgraph-break",
        "coprocessor: {url: $COPROCESSOR, subgraph: {all: {request: {service_name: true}}}}",
    )
    .await;
    let reply = setup.post(NAMES).await;
    assert_eq!(reply.status, 200);
    let body = json_of(&reply);
    assert_eq!(body["data"], Value::Null, "{body}");
    assert_eq!(body["errors"][0]["message"], "blocked by policy", "{body}");
    assert!(
        setup.subgraphs.counts().values().all(|n| *n == 0),
        "the fetch was answered"
    );
    setup.coprocessor.checked_log().await;
}

#[test]
fn without_the_section_there_is_no_coprocessor() {
    assert!(Config::default().coprocessor.is_none());
}
