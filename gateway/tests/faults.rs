//! Subgraph faults against the gateway on a real port: a JSON subgraph (`main`) plus a
//! fault-injecting server (`faulty`) picked per gateway through `subgraphs.<name>.url`
//! (the supergraph's own URLs point nowhere). Every fault gives partial data with
//! errors at the right paths, and the gateway keeps serving.

mod support;

use graphfleet_gateway::config::{Config, SubgraphConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::time::Duration;
use support::fault_subgraph::{self, FaultSubgraph};

struct Env {
    url: String,
    client: support::HttpClient,
    _main: support::json_subgraph::JsonSubgraphs,
}

async fn env(fault: &FaultSubgraph, mode: &str, tune: impl FnOnce(&mut Config)) -> Env {
    let main = fault_subgraph::start_main().await;
    let mut config = Config::default();
    let url = |u: String| SubgraphConfig {
        url: Some(u),
        ..SubgraphConfig::default()
    };
    config
        .subgraphs
        .insert("main".into(), url(format!("{}/main", main.base_url)));
    // Only `faulty` gets a short timeout, so a busy machine cannot time out `main`.
    let faulty = SubgraphConfig {
        timeout: Some(Duration::from_millis(300)),
        ..url(fault.url(mode))
    };
    config.subgraphs.insert("faulty".into(), faulty);
    tune(&mut config);
    let supergraph = Supergraph::parse(fault_subgraph::SUPERGRAPH).expect("supergraph loads");
    Env {
        url: support::start_gateway_with_config(config, supergraph).await,
        client: support::client(),
        _main: main,
    }
}

async fn post(env: &Env, query: &str) -> (u16, Value) {
    let reply = support::post_graphql(&env.client, &env.url, query, json!({})).await;
    let body = serde_json::from_slice(&reply.body).expect("a JSON body");
    (reply.status, body)
}

const ENTITY_QUERY: &str = "{ products { id name price tags } }";
const ROOT_QUERY: &str = "{ top { id price } }";

/// Products from `main` with the `faulty` fields nulled.
fn products_without_faulty_fields() -> Value {
    json!({"products": [
        {"id": "1", "name": "Kettle", "price": null, "tags": null},
        {"id": "2", "name": "Teapot", "price": null, "tags": null}]})
}

/// An error about `faulty` (without a `path`).
fn faulty_error(code: &str, message: &str) -> Value {
    json!({"message": message, "extensions": {"code": code, "service": "faulty"}})
}

/// The gateway's error for a failed HTTP fetch from `faulty`.
fn fetch_error(code: &str, message: &str) -> Value {
    faulty_error(code, &format!("HTTP fetch failed from 'faulty': {message}"))
}

const HTTP_500: &str = "subgraph responded with status 500 Internal Server Error";
const BODY_CUT: &str = "reading response body: error reading a body from connection: end of file before message length reached";
const MALFORMED: &str =
    "subgraph 'faulty' returned an invalid GraphQL response: unexpected end of input at byte 25";

/// After a fault the gateway still answers: `main` alone, and a repeat of the fault.
async fn assert_still_serving(env: &Env, query: &str, expected: &Value) {
    let (status, body) = post(env, "{ products { id name } }").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"data": {"products": [{"id": "1", "name": "Kettle"}, {"id": "2", "name": "Teapot"}]}})
    );
    assert_eq!(&post(env, query).await.1, expected, "the fault repeats");
}

/// For `mode`: the entity fetch and the root fetch both give `data` plus `errors`.
async fn assert_fault(mode: &str, entity_errors: Value, root_errors: Value) {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, mode, |_| {}).await;
    let (status, body) = post(&env, ENTITY_QUERY).await;
    assert_eq!(status, 200, "{mode}: {body}");
    let expected = json!({"data": products_without_faulty_fields(), "errors": entity_errors});
    assert_eq!(body, expected, "{mode}: entity fetch");
    assert_still_serving(&env, ENTITY_QUERY, &expected).await;

    let (status, body) = post(&env, ROOT_QUERY).await;
    assert_eq!(status, 200, "{mode}: {body}");
    let expected = json!({"data": {"top": null}, "errors": root_errors});
    assert_eq!(body, expected, "{mode}: root fetch");
    assert_still_serving(&env, ROOT_QUERY, &expected).await;
}

/// For `mode`: `error` alone, at the entity fetch's path (down to its first list) and
/// without one for the root fetch.
async fn assert_fault_error(mode: &str, error: Value) {
    let mut at_entity = error.clone();
    at_entity["path"] = json!(["products"]);
    assert_fault(mode, json!([at_entity]), json!([error])).await;
}

/// [`assert_fault_error`] with a `SUBREQUEST_HTTP_ERROR` fetch error.
async fn assert_http_error(mode: &str, message: &str) {
    assert_fault_error(mode, fetch_error("SUBREQUEST_HTTP_ERROR", message)).await;
}

#[tokio::test]
async fn healthy_subgraphs_answer_in_full() {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, "ok", |_| {}).await;
    let (status, body) = post(&env, "{ products { id name price tags sku } top { id } }").await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"data": {
            "products": [
                {"id": "1", "name": "Kettle", "price": 10, "tags": ["a", "b"], "sku": "sku-1"},
                {"id": "2", "name": "Teapot", "price": 10, "tags": ["a", "b"], "sku": "sku-1"}],
            "top": {"id": "9"}}})
    );
}

#[tokio::test]
async fn subgraph_timeout_names_the_subgraph() {
    let error = fetch_error("SUBREQUEST_TIMEOUT", "timed out after 300ms");
    assert_fault_error("sleep", error).await;
}

/// `default` as the subgraph timeout, and `own` as `faulty`'s own timeout.
fn set_timeouts(config: &mut Config, default: Duration, own: Option<Duration>) {
    config.traffic.subgraph_timeout = default;
    let faulty = config.subgraphs.get_mut("faulty").expect("set up by env");
    faulty.timeout = own;
}

/// With [`set_timeouts`], the root fetch from `mode` times out after `after`.
async fn assert_root_timeout(mode: &str, default: Duration, own: Option<Duration>, after: &str) {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, mode, |c| set_timeouts(c, default, own)).await;
    let (status, body) = post(&env, ROOT_QUERY).await;
    assert_eq!(status, 200, "{body}");
    let error = fetch_error("SUBREQUEST_TIMEOUT", &format!("timed out after {after}"));
    assert_eq!(body, json!({"data": {"top": null}, "errors": [error]}));
}

#[tokio::test]
async fn per_subgraph_timeout_overrides_the_default() {
    let own = Some(Duration::from_millis(100));
    assert_root_timeout("slow", Duration::from_secs(5), own, "100ms").await;
}

#[tokio::test]
async fn default_subgraph_timeout_applies_without_an_override() {
    assert_root_timeout("sleep", Duration::from_millis(150), None, "150ms").await;
}

#[tokio::test]
async fn status_500_with_graphql_errors_passes_them_on() {
    // The subgraph's error names no path: on the entity fetch it gets the fetch's path.
    assert_fault_error(
        "status-500-body",
        faulty_error("INTERNAL", "internal failure"),
    )
    .await;
}

#[tokio::test]
async fn status_500_without_a_body() {
    assert_http_error("status-500-empty", HTTP_500).await;
}

#[tokio::test]
async fn status_500_with_a_non_json_body() {
    assert_http_error("status-500-text", HTTP_500).await;
}

#[tokio::test]
async fn connection_closed_mid_response() {
    assert_http_error("reset", BODY_CUT).await;
}

#[tokio::test]
async fn malformed_json() {
    assert_fault_error(
        "malformed",
        faulty_error("SUBREQUEST_MALFORMED_RESPONSE", MALFORMED),
    )
    .await;
}

#[tokio::test]
async fn a_body_that_is_not_utf8_is_malformed() {
    assert_fault_error(
        "not-utf8",
        faulty_error(
            "SUBREQUEST_MALFORMED_RESPONSE",
            "subgraph 'faulty' returned an invalid GraphQL response: the body is not UTF-8: \
             invalid utf-8 sequence of 1 bytes from index 37",
        ),
    )
    .await;
}

/// For `mode`, `Product.<field>` comes back not of `expected_type`: it is nulled with an
/// error at each of its three places, and the other `faulty` field is served.
async fn assert_wrong_shape(mode: &str, field: &str, expected_type: &str) {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, mode, |_| {}).await;
    let message = format!(
        "subgraph returned a value of the wrong shape for Product.{field} (expected {expected_type})"
    );
    let wrong = |path: Value| json!({"message": message, "path": path});
    let query = format!("{{ products {{ id price tags }} top {{ {field} }} }}");
    let (_, body) = post(&env, &query).await;
    let product = |id: &str| {
        let mut p = json!({"id": id, "price": 10, "tags": ["a", "b"]});
        p[field] = Value::Null;
        p
    };
    let mut top = json!({});
    top[field] = Value::Null;
    assert_eq!(
        body,
        json!({"data": {"products": [product("1"), product("2")], "top": top},
        "errors": [wrong(json!(["products", 0, field])), wrong(json!(["products", 1, field])),
                   wrong(json!(["top", field]))]}),
        "{mode}"
    );
}

#[tokio::test]
async fn string_where_int_expected() {
    assert_wrong_shape("wrong-int", "price", "Int").await;
}

#[tokio::test]
async fn object_where_list_expected() {
    assert_wrong_shape("wrong-list", "tags", "[String]").await;
}

/// A subgraph that leaves out a field it was asked for gives no null to pass on: no
/// silent null reaches the client. Debug builds (every test) stop at the invariant, so a
/// planner bug that loses a field cannot pass a test; release builds answer null with an
/// error saying no subgraph answered the field.
#[tokio::test]
async fn a_field_the_subgraph_left_out_is_never_a_silent_null() {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, "missing-price", |_| {}).await;
    let body = serde_json::to_vec(&json!({ "query": "{ products { id price } }" }))
        .expect("a JSON request");
    let answer = support::try_request(
        &env.client,
        "POST",
        &env.url,
        &[("content-type", "application/json")],
        body,
    )
    .await;
    if cfg!(debug_assertions) {
        let e = answer.err().expect("the debug invariant ends the exchange");
        assert!(e.contains("IncompleteMessage"), "{e}");
        return;
    }
    let reply = answer.expect("release builds answer");
    let body: Value = serde_json::from_slice(&reply.body).expect("JSON");
    let missing = |i: usize| json!({"message": "no subgraph answered Product.price", "path": ["products", i, "price"]});
    assert_eq!(
        body,
        json!({"data": {"products": [{"id": "1", "price": null}, {"id": "2", "price": null}]},
               "errors": [missing(0), missing(1)]})
    );
}

#[tokio::test]
async fn null_for_a_non_null_field_bubbles_to_the_nearest_nullable_parent() {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, "null-non-null", |_| {}).await;
    let (_, body) = post(&env, "{ top { id sku } }").await;
    assert_eq!(
        body,
        json!({"data": {"top": null}, "errors": [
            {"message": "Cannot return null for non-nullable field Product.sku", "path": ["top", "sku"]}]})
    );
    // `products: [Product!]!`: the null reaches the root.
    let (_, body) = post(&env, "{ products { id sku } }").await;
    assert_eq!(
        body,
        json!({"data": null, "errors": [
            {"message": "Cannot return null for non-nullable field Product.sku", "path": ["products", 0, "sku"]}]})
    );
}

#[tokio::test]
async fn overall_request_timeout_is_504() {
    let fault = fault_subgraph::start().await;
    let env = env(&fault, "sleep", |c| {
        set_timeouts(c, Duration::from_secs(10), None);
        c.traffic.request_timeout = Duration::from_millis(200);
    })
    .await;
    let (status, body) = post(&env, ROOT_QUERY).await;
    assert_eq!(status, 504);
    assert_eq!(
        body,
        json!({"errors": [{"message": "the request did not complete within 200ms",
                           "extensions": {"code": "GATEWAY_TIMEOUT"}}]})
    );
    let (status, _) = post(&env, "{ products { id } }").await;
    assert_eq!(status, 200, "still serving");
}

#[tokio::test]
async fn url_overrides_survive_a_supergraph_swap() {
    use graphfleet_gateway::gateway::Gateway;
    use graphfleet_gateway::pipeline::request::{GraphQLRequest, RequestMeta};
    let fault = fault_subgraph::start().await;
    let mut config = Config::default();
    config.subgraphs.insert(
        "faulty".into(),
        SubgraphConfig {
            url: Some(fault.url("ok")),
            ..SubgraphConfig::default()
        },
    );
    let load = || Supergraph::parse(fault_subgraph::SUPERGRAPH).expect("supergraph loads");
    let gateway = Gateway::with_config(std::sync::Arc::new(config), load());
    // The reload path: a freshly parsed supergraph still routes to the override.
    gateway.swap_supergraph(load());
    let request = GraphQLRequest {
        query: Some(ROOT_QUERY.to_owned()),
        ..GraphQLRequest::default()
    };
    let outcome = gateway.execute(&request, &RequestMeta::default()).await;
    let body: Value = serde_json::from_slice(outcome.body()).expect("JSON body");
    assert_eq!(body, json!({"data": {"top": {"id": "9", "price": 10}}}));
    assert_eq!(fault.requests(), 1);
}

#[tokio::test]
async fn url_override_for_an_unknown_subgraph_is_a_warning_naming_it() {
    let fault = fault_subgraph::start().await;
    let dir = support::process::test_dir("unknown-subgraph-url");
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(&supergraph, fault_subgraph::SUPERGRAPH).expect("write the supergraph");
    let faulty = format!("faulty={}", fault.url("ok"));
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--supergraph",
        supergraph.to_str().expect("UTF-8 path"),
        "--subgraph-url",
        &faulty,
        "--subgraph-url",
        "nosuchgraph=http://127.0.0.1:9/x",
    ];
    let gateway = support::process::GatewayProcess::start(&dir, &args, &[]).await;
    let reply = support::post_graphql(
        &support::client(),
        &gateway.url("/graphql"),
        ROOT_QUERY,
        json!({}),
    )
    .await;
    let body: Value = serde_json::from_slice(&reply.body).expect("JSON body");
    assert_eq!(body, json!({"data": {"top": {"id": "9", "price": 10}}}));
    let log = gateway.log();
    let warning = log
        .lines()
        .find(|l| l.contains("WARN") && l.contains("nosuchgraph"))
        .unwrap_or_else(|| panic!("no warning naming the subgraph in:\n{log}"));
    assert!(!warning.contains("faulty"), "{warning}");
}

#[tokio::test]
async fn a_failed_batched_request_fails_each_part_at_its_own_path() {
    // Two paths asking `faulty` different fields of `Product` share one request (an
    // aliased `_entities` field each): its failure is reported once per path, as when
    // they were sent apart, and never touches `main`'s fields.
    let fault = fault_subgraph::start().await;
    let query = "{ products { id price } more: products { name tags } }";
    let healthy = env(&fault, "ok", |_| {}).await;
    let (status, body) = post(&healthy, query).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"]["more"][1],
        json!({"name": "Teapot", "tags": ["a", "b"]})
    );
    assert_eq!(fault.requests(), 1, "one request for both paths");

    let failing = env(&fault, "status-500-empty", |_| {}).await;
    let (status, body) = post(&failing, query).await;
    assert_eq!(status, 200, "{body}");
    let failed = |path: &str| {
        let mut e = fetch_error("SUBREQUEST_HTTP_ERROR", HTTP_500);
        e["path"] = json!([path]);
        e
    };
    assert_eq!(
        body,
        json!({
            "data": {
                "products": [{"id": "1", "price": null}, {"id": "2", "price": null}],
                "more": [{"name": "Kettle", "tags": null}, {"name": "Teapot", "tags": null}]
            },
            "errors": [failed("products"), failed("more")]
        })
    );
}
