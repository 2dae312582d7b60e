//! Demand control over real HTTP: the `keys` fixture's supergraph with a cost link and
//! `@cost(weight: 7)` on `Query.orders`, JSON-backed subgraphs counting their requests.
//! With the default list size of 10, `{ orders { id } }` is estimated 10 x 7 = 70 and
//! `query Users { users { id } }` 10 x 1 (User is an object) = 10. `Query.users` also
//! gets an optional `first` slicing argument, and `Query.pick` (unknown to the subgraph)
//! `first`/`last` with `requireOneSlicingArgument`: only requests rejected before they
//! reach a subgraph use them.

mod support;

use graphfleet_gateway::config::{Config, DemandControlConfig, DemandControlMode};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};

const ORDERS: &str = "query Orders { orders { id } }";
const USERS: &str = "query Users { users { id } }";
const PICK_NONE: &str = "{ pick { id } }";
const USERS_BY_VARIABLE: &str = "query Users($n: Int) { users(first: $n) { id } }";

struct Env {
    url: String,
    client: support::HttpClient,
    subgraphs: support::json_subgraph::JsonSubgraphs,
}

/// The fixture's supergraph, linking the cost spec and weighing `Query.orders`.
fn with_cost(text: &str) -> String {
    let linked = text.replacen(
        "  @link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n",
        "  @link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n  \
         @link(url: \"https://specs.apollo.dev/cost/v0.1\", import: [\"@listSize\"])\n",
        1,
    );
    let defined = linked.replacen(
        "directive @join__enumValue",
        "directive @cost(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | \
         INPUT_FIELD_DEFINITION | OBJECT | SCALAR\n\ndirective @listSize(assumedSize: Int, \
         slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: \
         Boolean = true) on FIELD_DEFINITION\n\ndirective @join__enumValue",
        1,
    );
    let weighed = defined.replacen(
        "orders: [Order!]! @join__field(graph: ORDERS)",
        "orders: [Order!]! @join__field(graph: ORDERS) @cost(weight: 7)",
        1,
    );
    let sliced = weighed.replacen(
        "users: [User!]! @join__field(graph: ACCOUNTS)",
        "users(first: Int): [User!]! @join__field(graph: ACCOUNTS) \
         @listSize(slicingArguments: [\"first\"], requireOneSlicingArgument: false)\n  \
         pick(first: Int, last: Int): [User!]! @join__field(graph: ACCOUNTS) \
         @listSize(slicingArguments: [\"first\", \"last\"])",
        1,
    );
    assert_ne!(weighed, defined, "the fixture still has Query.orders");
    assert_ne!(sliced, weighed, "the fixture still has Query.users");
    sliced
}

async fn env(demand_control: DemandControlConfig) -> Env {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&with_cost(&text)).expect("supergraph loads");
    assert_eq!(
        supergraph
            .cost
            .field_weight(supergraph.meta.field_id("Query", "orders").expect("field")),
        Some(7.0)
    );
    let config = Config {
        demand_control,
        ..Config::default()
    };
    Env {
        url: support::start_gateway_with_config(config, supergraph).await,
        client: support::client(),
        subgraphs,
    }
}

fn enforce(max_cost: u64) -> DemandControlConfig {
    DemandControlConfig {
        enabled: true,
        mode: DemandControlMode::Enforce,
        max_cost: Some(max_cost),
        ..DemandControlConfig::default()
    }
}

async fn post(env: &Env, query: &str, accept: &str) -> (u16, Value) {
    send(env, json!({ "query": query }), accept).await
}

async fn post_vars(env: &Env, query: &str, variables: Value) -> (u16, Value) {
    let body = json!({ "query": query, "variables": variables });
    send(env, body, "application/graphql-response+json").await
}

async fn send(env: &Env, body: Value, accept: &str) -> (u16, Value) {
    let body = serde_json::to_vec(&body).expect("JSON");
    let reply = support::request(
        &env.client,
        "POST",
        &env.url,
        &[("content-type", "application/json"), ("accept", accept)],
        body,
    )
    .await;
    let json = serde_json::from_slice(&reply.body).expect("a JSON body");
    (reply.status, json)
}

fn subgraph_requests(env: &Env) -> u64 {
    env.subgraphs.counts().values().sum()
}

async fn metrics(env: &Env) -> String {
    let url = env.url.replace("/graphql", "/metrics");
    let reply = support::request(&env.client, "GET", &url, &[], Vec::new()).await;
    assert_eq!(reply.status, 200);
    String::from_utf8(reply.body.to_vec()).expect("UTF-8 metrics")
}

/// The value of the sample `name{labels}` in a Prometheus text scrape.
fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a number"))
}

#[tokio::test]
async fn enforce_rejects_over_cost_operations_before_any_subgraph_request() {
    let env = env(enforce(50)).await;
    let message = "the operation's estimated cost 70 is over the maximum of 50";
    for (accept, status) in [
        ("application/graphql-response+json", 400),
        ("application/json", 200),
    ] {
        let (got, body) = post(&env, ORDERS, accept).await;
        assert_eq!(got, status, "{accept}: {body}");
        assert!(body.get("data").is_none(), "{body}");
        let errors = body["errors"].as_array().expect("errors");
        assert_eq!(errors.len(), 1, "{body}");
        assert_eq!(
            errors[0]["extensions"]["code"],
            "COST_ESTIMATED_TOO_EXPENSIVE"
        );
        assert_eq!(errors[0]["message"], message);
        assert_eq!(errors[0]["extensions"]["cost.estimated"], 70.0);
        assert_eq!(errors[0]["extensions"]["cost.max"], 50);
    }
    assert_eq!(subgraph_requests(&env), 0, "no subgraph saw a request");

    let (status, body) = post(&env, PICK_NONE, "application/graphql-response+json").await;
    assert_eq!(
        status, 400,
        "no slicing argument while one is required: {body}"
    );
    assert_eq!(
        body["errors"][0]["extensions"]["code"],
        "COST_QUERY_PARSE_FAILURE"
    );
    assert_eq!(
        body["errors"][0]["message"],
        "Query.pick needs exactly one of its slicing arguments (first, last); the request gives 0"
    );
    let (status, body) = post_vars(&env, USERS_BY_VARIABLE, json!({ "n": 100 })).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["errors"][0]["message"],
        "the operation's estimated cost 100 is over the maximum of 50"
    );
    assert_eq!(subgraph_requests(&env), 0, "no subgraph saw a request");

    let (status, body) = post(&env, USERS, "application/graphql-response+json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("errors").is_none(), "{body}");
    assert!(!body["data"]["users"].as_array().expect("users").is_empty());
    assert!(body.get("extensions").is_none(), "not exposed by default");
    assert!(subgraph_requests(&env) > 0);

    let scrape = metrics(&env).await;
    let cost = "graphfleet_operation_estimated_cost";
    assert_eq!(
        sample(&scrape, &format!("{cost}_count{{operation=\"Orders\"}}")),
        Some(2.0)
    );
    assert_eq!(
        sample(&scrape, &format!("{cost}_sum{{operation=\"Orders\"}}")),
        Some(140.0)
    );
    assert_eq!(
        sample(&scrape, &format!("{cost}_sum{{operation=\"Users\"}}")),
        Some(110.0),
        "100 rejected, 10 answered"
    );
    assert_eq!(
        sample(
            &scrape,
            &format!("{cost}_bucket{{operation=\"Users\",le=\"5\"}}")
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &scrape,
            &format!("{cost}_bucket{{operation=\"Users\",le=\"10\"}}")
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn measure_mode_only_records_and_can_expose_the_estimate() {
    let env = env(DemandControlConfig {
        enabled: true,
        mode: DemandControlMode::Measure,
        max_cost: Some(50),
        expose_in_extensions: true,
        ..DemandControlConfig::default()
    })
    .await;
    let (status, body) = post(&env, ORDERS, "application/graphql-response+json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("errors").is_none(), "{body}");
    assert!(
        !body["data"]["orders"]
            .as_array()
            .expect("orders")
            .is_empty()
    );
    assert_eq!(body["extensions"]["cost"]["estimated"], 70.0, "{body}");
    assert!(subgraph_requests(&env) > 0);
    let scrape = metrics(&env).await;
    assert_eq!(
        sample(
            &scrape,
            "graphfleet_operation_estimated_cost_sum{operation=\"Orders\"}"
        ),
        Some(70.0)
    );
}

#[tokio::test]
async fn off_by_default_records_nothing() {
    let env = env(DemandControlConfig::default()).await;
    let (status, body) = post(&env, ORDERS, "application/graphql-response+json").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("extensions").is_none(), "{body}");
    let scrape = metrics(&env).await;
    assert!(
        !scrape.contains("graphfleet_operation_estimated_cost_count{"),
        "no estimate series while off"
    );
}
