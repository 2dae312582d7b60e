//! Query batching (`batching`) over real HTTP: a JSON array of operations in one POST is
//! answered with the array of their responses in order, each operation on its own (one
//! refused, the others run); off, too big or empty batches are refused before anything
//! runs; and Apollo Client's own BatchHttpLink (@apollo/client 3.14.1, pinned by
//! tools/apq-client/package-lock.json) sends its queries as one batch and reads the answers.

mod support;

use graphfleet_gateway::config::Config;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};

struct Env {
    url: String,
    client: support::HttpClient,
    subgraphs: support::json_subgraph::JsonSubgraphs,
}

async fn env(enabled: bool, max_size: usize) -> Env {
    let mut config = Config::default();
    config.batching.enabled = enabled;
    config.batching.max_size = max_size;
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph loads");
    Env {
        url: support::start_gateway_with_config(config, supergraph).await,
        client: support::client(),
        subgraphs,
    }
}

impl Env {
    async fn post(&self, body: &Value) -> (u16, Value) {
        let body = serde_json::to_vec(body).expect("JSON");
        let headers = [("content-type", "application/json")];
        let reply = support::request(&self.client, "POST", &self.url, &headers, body).await;
        let value = serde_json::from_slice(&reply.body).expect("a JSON answer");
        (reply.status, value)
    }

    fn subgraph_requests(&self) -> u64 {
        self.subgraphs.counts().values().sum()
    }
}

fn code(answer: &Value) -> &str {
    answer["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test]
async fn a_batch_is_answered_in_order_each_operation_on_its_own() {
    let env = env(true, 4).await;
    let batch = json!([
        { "query": "query Ids { users { id } }" },
        { "query": "{ users { nope } }" },
        { "query": "query Names { users { name } }", "operationName": "Names" },
    ]);
    let (status, answer) = env.post(&batch).await;
    assert_eq!(status, 200);
    let answers = answer.as_array().expect("an array");
    assert_eq!(answers.len(), 3, "{answer}");
    assert_eq!(
        answers[0],
        json!({ "data": { "users": [{ "id": "u1" }, { "id": "u2" }] } })
    );
    // Refused on its own: its validation errors, no data; its neighbours still ran.
    assert!(answers[1].get("data").is_none(), "{answer}");
    let refused = answers[1]["errors"].to_string();
    assert!(refused.contains("does not have a field `nope`"), "{answer}");
    assert_eq!(
        answers[2],
        json!({ "data": { "users": [{ "name": "Ada" }, { "name": "Bob" }] } })
    );
    // A single request is still a single answer.
    let (status, one) = env.post(&json!({ "query": "{ users { id } }" })).await;
    assert_eq!(
        (status, one["data"]["users"][0]["id"].clone()),
        (200, json!("u1"))
    );
}

#[tokio::test]
async fn batches_off_too_big_or_empty_are_refused_before_anything_runs() {
    let off = env(false, 4).await;
    let two = json!([{ "query": "{ users { id } }" }, { "query": "{ users { name } }" }]);
    let (status, answer) = off.post(&two).await;
    assert_eq!(
        (status, code(&answer)),
        (400, "BATCHING_NOT_ENABLED"),
        "{answer}"
    );
    assert_eq!(off.subgraph_requests(), 0);

    let small = env(true, 1).await;
    let (status, answer) = small.post(&two).await;
    assert_eq!(
        (status, code(&answer)),
        (400, "BATCH_LIMIT_EXCEEDED"),
        "{answer}"
    );
    let message = answer["errors"][0]["message"].as_str().expect("a message");
    assert!(
        message.contains("2 operations") && message.contains("batching.max_size"),
        "{message}"
    );
    let (status, answer) = small.post(&json!([])).await;
    assert_eq!((status, code(&answer)), (400, "BAD_REQUEST"), "{answer}");
    assert_eq!(small.subgraph_requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apollo_clients_batch_link() {
    let env = env(true, 10).await;
    let output = support::node_tool(vec!["apq-client/batch.mjs".to_owned(), env.url.clone()]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "Apollo Client failed:\n{stderr}");
    let out: Value = serde_json::from_slice(&output.stdout).expect("the client prints JSON");
    assert_eq!(
        out["exchanges"],
        json!([{ "operations": 3, "status": 200 }]),
        "{out}"
    );
    let results = &out["results"];
    assert_eq!(
        results[0]["data"],
        json!({ "users": [{ "id": "u1" }, { "id": "u2" }] }),
        "{out}"
    );
    assert_eq!(
        results[1]["data"],
        json!({ "users": [{ "name": "Ada" }, { "name": "Bob" }] }),
        "{out}"
    );
    assert_eq!(results[2]["data"], Value::Null, "{out}");
    let errors = results[2]["errors"].to_string();
    assert!(errors.contains("does not have a field `nope`"), "{out}");
    assert!(
        results[0]["errors"].as_array().is_some_and(Vec::is_empty),
        "{out}"
    );
}
