//! GraphQL over HTTP behaviour and request-level GraphQL semantics, against the gateway
//! on a real port with JSON-backed subgraphs (the `keys` fixture).

mod support;

use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use support::PREFLIGHTED;

struct Env {
    url: String,
    client: support::HttpClient,
    _subgraphs: support::json_subgraph::JsonSubgraphs,
}

async fn env() -> Env {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let url = support::start_gateway(Supergraph::parse(&text).expect("supergraph loads")).await;
    Env {
        url,
        client: support::client(),
        _subgraphs: subgraphs,
    }
}

async fn post(env: &Env, accept: Option<&str>, body: Value) -> support::Reply {
    let mut headers = vec![("content-type", "application/json")];
    if let Some(a) = accept {
        headers.push(("accept", a));
    }
    support::request(
        &env.client,
        "POST",
        &env.url,
        &headers,
        serde_json::to_vec(&body).expect("JSON"),
    )
    .await
}

fn text(reply: &support::Reply) -> String {
    String::from_utf8_lossy(&reply.body).to_string()
}

#[tokio::test]
async fn post_with_graphql_response_json() {
    let env = env().await;
    let reply = post(
        &env,
        Some("application/graphql-response+json"),
        json!({"query": "{ users { name } }"}),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/graphql-response+json");
    assert_eq!(
        text(&reply),
        r#"{"data":{"users":[{"name":"Ada"},{"name":"Bob"}]}}"#
    );
}

#[tokio::test]
async fn validation_errors_are_400_with_graphql_response_json_and_200_with_json() {
    let env = env().await;
    let body = json!({"query": "{ users { nope } }"});
    let strict = post(
        &env,
        Some("application/graphql-response+json"),
        body.clone(),
    )
    .await;
    assert_eq!(strict.status, 400);
    let legacy = post(&env, Some("application/json"), body).await;
    assert_eq!(legacy.status, 200);
    assert_eq!(legacy.content_type, "application/json");
    let parsed: Value = serde_json::from_slice(&legacy.body).expect("JSON body");
    assert!(parsed.get("data").is_none(), "request errors carry no data");
    let errors = parsed["errors"].as_array().expect("errors list");
    let error = errors
        .iter()
        .find(|e| e["message"].as_str().is_some_and(|m| m.contains("nope")))
        .unwrap_or_else(|| panic!("no error names the unknown field: {parsed}"));
    assert_eq!(error["locations"][0], json!({"line": 1, "column": 11}));
}

#[tokio::test]
async fn parse_errors_are_request_errors() {
    let env = env().await;
    let reply = post(
        &env,
        Some("application/graphql-response+json"),
        json!({"query": "{ users { name "}),
    )
    .await;
    assert_eq!(reply.status, 400);
    let body: Value = serde_json::from_slice(&reply.body).expect("JSON body");
    let errors = body["errors"].as_array().expect("errors list");
    assert_eq!(errors.len(), 1, "one syntax error, reported once: {body}");
    assert!(text(&reply).contains("syntax error"), "{}", text(&reply));
}

#[tokio::test]
async fn get_requests_and_mutations_over_get() {
    let env = env().await;
    let url = format!("{}?query=%7B%20users%20%7B%20id%20%7D%20%7D", env.url);
    let reply = support::request(&env.client, "GET", &url, PREFLIGHTED, Vec::new()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        text(&reply),
        r#"{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}"#
    );

    let url = format!("{}?query=mutation%20%7B%20x%20%7D", env.url);
    let reply = support::request(&env.client, "GET", &url, PREFLIGHTED, Vec::new()).await;
    // The schema has no Mutation type: validation fails before the method check.
    assert_eq!(reply.status, 200);
    assert!(text(&reply).contains("errors"));
}

/// Query strings are form-decoded: keys too, `+` as a space; a `%` without two hex
/// digits stays as written; bytes that are not UTF-8 are a clear 400.
#[tokio::test]
async fn get_query_strings_are_decoded_strictly() {
    let env = env().await;
    let url = format!("{}?%71uery=%7B+users+%7B+id+%7D+%7D", env.url);
    let reply = support::request(&env.client, "GET", &url, PREFLIGHTED, Vec::new()).await;
    assert_eq!(reply.status, 200, "{}", text(&reply));
    assert_eq!(
        text(&reply),
        r#"{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}"#
    );

    // `%+f` is no escape: the query text keeps it, and fails to parse as GraphQL.
    let url = format!("{}?query=%7B%20users%20%7B%20id%20%7D%20%7D%+f", env.url);
    let reply = support::request(&env.client, "GET", &url, PREFLIGHTED, Vec::new()).await;
    assert!(text(&reply).contains("errors"), "{}", text(&reply));
    assert!(!text(&reply).contains("\"data\":{"), "{}", text(&reply));

    let url = format!("{}?query=%FF%FE", env.url);
    let reply = support::request(&env.client, "GET", &url, PREFLIGHTED, Vec::new()).await;
    assert_eq!(reply.status, 400, "{}", text(&reply));
    assert!(text(&reply).contains("UTF-8"), "{}", text(&reply));
}

#[tokio::test]
async fn http_status_codes() {
    let env = env().await;
    let reply = support::request(&env.client, "PUT", &env.url, &[], Vec::new()).await;
    assert_eq!(reply.status, 405);
    // Past CSRF prevention (its own tests are in tests/browser.rs), a body that is not JSON.
    let reply = support::request(
        &env.client,
        "POST",
        &env.url,
        &[
            ("content-type", "text/plain"),
            ("apollo-require-preflight", "true"),
        ],
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(reply.status, 415);
    let reply = post(
        &env,
        Some("text/html"),
        json!({"query": "{ users { id } }"}),
    )
    .await;
    assert_eq!(reply.status, 406);
    let reply = support::request(
        &env.client,
        "POST",
        &env.url,
        &[("content-type", "application/json")],
        b"not json".to_vec(),
    )
    .await;
    assert_eq!(reply.status, 400);
    for path in ["/health", "/health/live", "/health/ready"] {
        let url = env.url.replace("/graphql", path);
        let reply = support::request(&env.client, "GET", &url, &[], Vec::new()).await;
        assert_eq!(reply.status, 200, "{path}");
    }
}

#[tokio::test]
async fn operation_name_variables_skip_include_and_typename() {
    let env = env().await;
    let query = r#"
        query A { users { id } }
        query B($withName: Boolean!, $skipEmail: Boolean = true) {
            __typename
            people: users {
                __typename
                name @include(if: $withName)
                email @skip(if: $skipEmail)
                ... on User @include(if: false) { id }
            }
        }"#;
    let reply = post(
        &env,
        None,
        json!({"query": query, "operationName": "B", "variables": {"withName": true}}),
    )
    .await;
    assert_eq!(
        text(&reply),
        r#"{"data":{"__typename":"Query","people":[{"__typename":"User","name":"Ada"},{"__typename":"User","name":"Bob"}]}}"#
    );
    let reply = post(
        &env,
        Some("application/graphql-response+json"),
        json!({"query": query}),
    )
    .await;
    assert_eq!(
        reply.status, 400,
        "several operations need an operationName"
    );
    let reply = post(
        &env,
        Some("application/graphql-response+json"),
        json!({"query": query, "operationName": "B", "variables": {"withName": "yes"}}),
    )
    .await;
    assert_eq!(reply.status, 400, "variables are coerced: {}", text(&reply));
}

#[tokio::test]
async fn introspection_of_the_api_schema() {
    let env = env().await;
    let reply = post(
        &env,
        None,
        json!({"query": "{ __type(name: \"User\") { name fields { name } } users { id } }"}),
    )
    .await;
    assert_eq!(
        text(&reply),
        r#"{"data":{"__type":{"name":"User","fields":[{"name":"id"},{"name":"email"},{"name":"name"},{"name":"plan"}]},"users":[{"id":"u1"},{"id":"u2"}]}}"#
    );
    let reply = post(
        &env,
        None,
        json!({"query": "{ __schema { types { name } } }"}),
    )
    .await;
    let body = text(&reply);
    assert!(
        !body.contains("join__"),
        "introspection hides join machinery"
    );
    assert!(body.contains("\"Order\""));
}

#[tokio::test]
async fn mutations_over_get_are_405() {
    let (subgraphs, text) = support::fixture_subgraphs("mutations").await;
    let url = support::start_gateway(Supergraph::parse(&text).expect("supergraph loads")).await;
    let get = format!("{url}?query=mutation%20%7B%20clear%20%7B%20items%20%7D%20%7D");
    let reply = support::request(&support::client(), "GET", &get, PREFLIGHTED, Vec::new()).await;
    assert_eq!(reply.status, 405);
    assert_eq!(
        subgraphs.counts().values().sum::<u64>(),
        0,
        "nothing was executed"
    );
}

#[tokio::test]
async fn a_down_subgraph_gives_partial_data_and_an_error_naming_it() {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    // A port that was bound and released: connections are refused.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let text = text.replace(
        &format!("{}/billing", subgraphs.base_url),
        &format!("http://{closed}/billing"),
    );
    let url = support::start_gateway(Supergraph::parse(&text).expect("supergraph loads")).await;
    let reply = support::post_graphql(
        &support::client(),
        &url,
        "{ users { name plan } }",
        json!({}),
    )
    .await;
    assert_eq!(reply.status, 200);
    let body: Value = serde_json::from_slice(&reply.body).expect("JSON body");
    assert_eq!(
        body["data"],
        json!({"users": [{"name": "Ada", "plan": null}, {"name": "Bob", "plan": null}]})
    );
    let message = body["errors"][0]["message"]
        .as_str()
        .expect("an error message");
    assert!(message.contains("billing"), "{message}");
}

#[tokio::test]
async fn the_binary_serves_a_supergraph_file() {
    let (_subgraphs, dir, supergraph) =
        support::fixture_supergraph_file("keys", "binary-serves").await;
    let path = supergraph.to_str().expect("UTF-8 path");
    let gateway = support::process::GatewayProcess::start(
        &dir,
        &["--supergraph", path, "--listen", "127.0.0.1:0"],
        &[],
    )
    .await;
    let client = support::client();
    let live = support::request(&client, "GET", &gateway.url("/health/live"), &[], vec![]).await;
    assert_eq!(live.status, 200);
    let reply = support::request(
        &client,
        "POST",
        &gateway.url("/graphql"),
        &[("content-type", "application/json")],
        br#"{"query":"{ __typename }"}"#.to_vec(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(&reply.body[..], br#"{"data":{"__typename":"Query"}}"#);
}

#[tokio::test]
async fn graphql_is_served_at_the_configured_path_only() {
    let (_subgraphs, text) = support::fixture_subgraphs("keys").await;
    let config = graphfleet_gateway::config::Config {
        graphql_path: "/api/gql".to_owned(),
        ..Default::default()
    };
    let default_url = support::start_gateway_with_config(
        config,
        Supergraph::parse(&text).expect("supergraph loads"),
    )
    .await;
    let client = support::client();
    let post = |url: String| {
        let client = client.clone();
        async move {
            support::request(
                &client,
                "POST",
                &url,
                &[("content-type", "application/json")],
                br#"{"query":"{ __typename }"}"#.to_vec(),
            )
            .await
        }
    };
    let configured = post(default_url.replace("/graphql", "/api/gql")).await;
    assert_eq!(configured.status, 200);
    assert_eq!(&configured.body[..], br#"{"data":{"__typename":"Query"}}"#);
    assert_eq!(post(default_url).await.status, 404);
}
