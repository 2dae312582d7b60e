//! Request limits against the gateway on a real port (JSON-backed `keys` subgraphs):
//! each limit at its threshold (served) and one over (HTTP 400 with `extensions.code`).

mod support;

use graphfleet_bench_model::hostile::{
    exponential_introspection, long_get_target, nested_introspection,
};
use graphfleet_gateway::config::{Config, LimitsConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};

struct Env {
    url: String,
    client: support::HttpClient,
    _subgraphs: support::json_subgraph::JsonSubgraphs,
}

async fn env(limits: LimitsConfig) -> Env {
    env_with(Config {
        limits,
        ..Config::default()
    })
    .await
}

async fn env_with(config: Config) -> Env {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph loads");
    Env {
        url: support::start_gateway_with_config(config, supergraph).await,
        client: support::client(),
        _subgraphs: subgraphs,
    }
}

async fn post_body(env: &Env, body: Vec<u8>) -> (u16, Value) {
    let reply = support::request(
        &env.client,
        "POST",
        &env.url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/graphql-response+json"),
        ],
        body,
    )
    .await;
    assert_eq!(reply.content_type, "application/graphql-response+json");
    let json = serde_json::from_slice(&reply.body).expect("a JSON body");
    (reply.status, json)
}

async fn post(env: &Env, query: &str) -> (u16, Value) {
    post_body(
        env,
        serde_json::to_vec(&json!({ "query": query })).expect("JSON"),
    )
    .await
}

/// Served: status 200, data and no errors.
async fn assert_served(env: &Env, query: &str) -> Value {
    let (status, body) = post(env, query).await;
    assert_eq!(status, 200, "{query}: {body}");
    assert!(body.get("errors").is_none(), "{query}: {body}");
    body["data"].clone()
}

/// Rejected: status 400, no data, one error with `code`.
async fn assert_rejected(env: &Env, query: &str, code: &str) -> String {
    let (status, body) = post(env, query).await;
    assert_eq!(status, 400, "{query}: {body}");
    assert!(body.get("data").is_none(), "{query}: {body}");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{query}: {body}");
    assert_eq!(errors[0]["extensions"]["code"], code, "{query}: {body}");
    errors[0]["message"].as_str().expect("a message").to_owned()
}

/// Rejected as by [`assert_rejected`], with exactly `message`.
async fn assert_rejected_with(env: &Env, query: &str, code: &str, message: &str) {
    assert_eq!(assert_rejected(env, query, code).await, message, "{query}");
}

#[tokio::test]
async fn body_size_at_and_over_the_limit() {
    let limit = 200;
    let env = env(LimitsConfig {
        max_body_bytes: limit,
        ..LimitsConfig::default()
    })
    .await;
    let padded = |len: usize| {
        let head = br#"{"query":"{ users { name } }""#.to_vec();
        let mut body = head.clone();
        body.resize(len - 1, b' ');
        body.push(b'}');
        body
    };
    let (status, body) = post_body(&env, padded(limit)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"data": {"users": [{"name": "Ada"}, {"name": "Bob"}]}})
    );
    let (status, body) = post_body(&env, padded(limit + 1)).await;
    assert_eq!(status, 413);
    assert_eq!(
        body,
        json!({"errors": [{
            "message": "the request body is larger than 200 bytes",
            "extensions": {"code": "PAYLOAD_TOO_LARGE"}
        }]})
    );
}

#[tokio::test]
async fn get_query_string_at_and_over_the_body_limit() {
    let limit = 100;
    let env = env(LimitsConfig {
        max_body_bytes: limit,
        ..LimitsConfig::default()
    })
    .await;
    let get = |len: usize| {
        let mut query = "query=%7B%20users%20%7B%20name%20%7D%20%7D&pad=".to_owned();
        query.extend(std::iter::repeat_n('x', len - query.len()));
        let url = format!("{}?{query}", env.url);
        let client = &env.client;
        async move {
            let headers = [
                ("accept", "application/graphql-response+json"),
                support::PREFLIGHTED[0],
            ];
            let reply = support::request(client, "GET", &url, &headers, Vec::new()).await;
            let body: Value = serde_json::from_slice(&reply.body).expect("a JSON body");
            (reply.status, body)
        }
    };
    let (status, body) = get(limit).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"data": {"users": [{"name": "Ada"}, {"name": "Bob"}]}})
    );
    let (status, body) = get(limit + 1).await;
    assert_eq!(status, 414);
    assert_eq!(
        body,
        json!({"errors": [{
            "message": "the query string is longer than 100 bytes",
            "extensions": {"code": "PAYLOAD_TOO_LARGE"}
        }]})
    );
}

/// A client that sends headers and part of its body, then stalls, gets 408 once the
/// request timeout passes instead of holding the connection.
#[tokio::test]
async fn a_stalled_body_times_out_with_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = Config::default();
    config.traffic.request_timeout = std::time::Duration::from_millis(300);
    let env = env_with(config).await;
    let addr = env
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/graphql");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the gateway");
    let head = "POST /graphql HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n\
                content-length: 100\r\nconnection: close\r\n\r\n{\"query\":";
    stream
        .write_all(head.as_bytes())
        .await
        .expect("send the head and part of the body");
    let mut reply = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut reply),
    )
    .await
    .expect("the gateway answers within 10 s");
    read.expect("read the reply");
    let reply = String::from_utf8(reply).expect("UTF-8 reply");
    assert!(reply.starts_with("HTTP/1.1 408 Request Timeout"), "{reply}");
    assert!(
        reply.ends_with(
            r#"{"errors":[{"extensions":{"code":"REQUEST_TIMEOUT"},"message":"the request body was not received within 300ms"}]}"#
        ),
        "{reply}"
    );
}

#[tokio::test]
async fn tokens_at_and_over_the_limit() {
    // Lexical tokens include whitespace runs and the end of input: 12 here.
    let env = env(LimitsConfig {
        max_tokens: Some(12),
        ..LimitsConfig::default()
    })
    .await;
    assert_served(&env, "{ users { name } }").await;
    assert_rejected_with(
        &env,
        "{ users { name } } ",
        "MAX_TOKENS_EXCEEDED",
        "the query has more than 12 tokens",
    )
    .await;
}

#[tokio::test]
async fn parser_recursion_at_and_over_the_limit() {
    let env = env(LimitsConfig::default()).await;
    let nested =
        |levels: usize| format!("{}name{}", "{ users ".repeat(levels), " }".repeat(levels));
    // At the limit the parser finishes; validation then rejects the made-up nesting.
    let (status, body) = post(&env, &nested(128)).await;
    assert_eq!(status, 400);
    assert!(
        body["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .all(|e| e["extensions"]["code"] != "MAX_RECURSION_EXCEEDED"),
        "{body}"
    );
    assert_rejected(&env, &nested(129), "MAX_RECURSION_EXCEEDED").await;
}

#[tokio::test]
async fn depth_at_and_over_the_limit_with_fragments_expanded() {
    let env = env(LimitsConfig {
        max_depth: Some(3),
        ..LimitsConfig::default()
    })
    .await;
    assert_served(&env, "{ orders { item { sku } } }").await;
    assert_served(
        &env,
        "{ orders { ...O } } fragment O on Order { item { sku } }",
    )
    .await;
    assert_rejected_with(
        &env,
        "{ orders { ...O } } fragment O on Order { item { vendor { id } } }",
        "MAX_DEPTH_EXCEEDED",
        "the operation is 4 levels deep; the limit is 3",
    )
    .await;
}

#[tokio::test]
async fn aliases_at_and_over_the_limit() {
    let env = env(LimitsConfig {
        max_aliases: Some(2),
        ..LimitsConfig::default()
    })
    .await;
    let data = assert_served(&env, "{ a: users { n: name } }").await;
    assert_eq!(data, json!({"a": [{"n": "Ada"}, {"n": "Bob"}]}));
    // The fragment is spread twice, so its alias counts twice.
    assert_rejected_with(
        &env,
        "{ a: users { ...U } b: users { ...U } } fragment U on User { n: name }",
        "MAX_ALIASES_EXCEEDED",
        "the operation has 4 aliases; the limit is 2",
    )
    .await;
    assert_rejected(
        &env,
        "{ a: users { n: name } b: users { name } }",
        "MAX_ALIASES_EXCEEDED",
    )
    .await;
}

#[tokio::test]
async fn root_fields_at_and_over_the_limit() {
    let env = env(LimitsConfig {
        max_root_fields: Some(2),
        ..LimitsConfig::default()
    })
    .await;
    assert_served(&env, "{ users { name } orders { id } }").await;
    // Fields of the selected operation only: the other operation's fields do not count.
    let query = "query A { users { name } ...Q } query B { users { id } } fragment Q on Query { orders { id } }";
    let (status, body) = post_body(
        &env,
        serde_json::to_vec(&json!({"query": query, "operationName": "B"})).expect("JSON"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_body(
        &env,
        serde_json::to_vec(&json!({"query": query, "operationName": "A"})).expect("JSON"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_rejected_with(
        &env,
        "{ users { name } ...Q } fragment Q on Query { orders { id } u: users { id } }",
        "MAX_ROOT_FIELDS_EXCEEDED",
        "the operation has 3 root fields; the limit is 2",
    )
    .await;
}

#[tokio::test]
async fn introspection_off_rejects_schema_and_type_but_not_typename() {
    let env = env(LimitsConfig {
        introspection: false,
        ..LimitsConfig::default()
    })
    .await;
    let data = assert_served(&env, "{ __typename users { __typename name } }").await;
    assert_eq!(
        data,
        json!({"__typename": "Query", "users": [
            {"__typename": "User", "name": "Ada"},
            {"__typename": "User", "name": "Bob"}]})
    );
    assert_rejected_with(
        &env,
        "{ __schema { queryType { name } } }",
        "INTROSPECTION_DISABLED",
        "introspection (__schema, __type) is disabled",
    )
    .await;
    assert_rejected(
        &env,
        "query { ...I } fragment I on Query { __type(name: \"User\") { name } }",
        "INTROSPECTION_DISABLED",
    )
    .await;
}

#[tokio::test]
async fn introspection_on_by_default() {
    let env = env(LimitsConfig::default()).await;
    let data = assert_served(&env, "{ __type(name: \"Vendor\") { name } }").await;
    assert_eq!(data, json!({"__type": {"name": "Vendor"}}));
}

/// A subgraph answer over `traffic.max_subgraph_response_bytes` fails that fetch (not
/// read into memory): no users come back, with `SUBREQUEST_RESPONSE_TOO_LARGE`; one
/// at the limit is served.
#[tokio::test]
async fn subgraph_responses_over_the_limit_fail_their_fetch() {
    let query = json!({"query": "{ users { id } }"});
    let answer = r#"{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}"#;
    for (max, served) in [(answer.len(), true), (answer.len() - 1, false)] {
        let mut config = Config::default();
        config.traffic.max_subgraph_response_bytes = max;
        let env = env_with(config).await;
        let (status, body) = post_body(&env, serde_json::to_vec(&query).expect("JSON")).await;
        assert_eq!(status, 200, "{body}");
        if served {
            assert_eq!(
                body,
                json!({"data": {"users": [{"id": "u1"}, {"id": "u2"}]}})
            );
        } else {
            // `users` is non-null here: the null reaches `data`.
            assert_eq!(body["data"], Value::Null, "{body}");
            assert_eq!(
                body["errors"][0]["extensions"]["code"],
                json!("SUBREQUEST_RESPONSE_TOO_LARGE"),
                "{body}"
            );
        }
    }
}

#[tokio::test]
async fn introspection_is_answered_to_the_depth_limit() {
    let env = env(LimitsConfig::default()).await;
    // 95 deep: its answer nests past serde_json's 128-level reading limit, which once
    // nulled it ("Cannot return null for non-nullable field Query.__type"); so is it
    // read here as text.
    let reply = support::request(
        &env.client,
        "POST",
        &env.url,
        &[("content-type", "application/json")],
        serde_json::to_vec(&json!({ "query": nested_introspection(47) })).expect("JSON"),
    )
    .await;
    let text = String::from_utf8(reply.body.to_vec()).expect("UTF-8");
    assert_eq!(reply.status, 200, "{text}");
    assert!(
        text.starts_with(r#"{"data":{"__type":{"name":"__Type","fields":[{"name":"kind","type":{"name":null,"fields":null}}"#),
        "{text}"
    );
    assert!(!text.contains("errors"), "{text}");
    // Every level but the last goes on through `ofType`, a `__Type` again.
    let on = r#"{"name":"ofType","type":{"name":"__Type","fields":["#;
    assert_eq!(text.matches(on).count(), 46, "{text}");
    // The last level names the fields only.
    let last = r#"{"name":"ofType"},{"name":"specifiedByURL"}]"#;
    assert_eq!(text.matches(last).count(), 1, "{text}");
    assert!(
        text.ends_with(r#"{"name":"String","fields":null}}]}}}"#),
        "{text}"
    );
    let mut depth = 0usize;
    let mut deepest = 0;
    for b in text.bytes() {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth -= 1,
            _ => {}
        }
        deepest = deepest.max(depth);
    }
    assert!(deepest > 128, "{deepest} levels");

    assert_rejected_with(
        &env,
        &nested_introspection(51),
        "MAX_DEPTH_EXCEEDED",
        "the operation is 103 levels deep; the limit is 100",
    )
    .await;
}

/// Each level reaches every object type the last one's fields return (`__Type`,
/// `__Field`, `__InputValue`, `__EnumValue`, unwrapping up to three list and non-null
/// wrappers), so the answer grows about sixfold a level while the text grows by one
/// fragment: refused before it runs, by the count of values it would hold.
#[tokio::test]
async fn exponential_introspection_is_refused_before_it_runs() {
    let env = env(LimitsConfig::default()).await;
    let text = exponential_introspection(10);
    let started = std::time::Instant::now();
    assert_rejected_with(
        &env,
        &text,
        "MAX_INTROSPECTION_VALUES_EXCEEDED",
        "the introspection answer would hold more than 1000000 values (object entries and list items), over the limit",
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // A small cap refuses a plain one; the same query is served under a larger one.
    let capped = env_with(Config {
        limits: LimitsConfig {
            max_introspection_values: Some(3),
            ..LimitsConfig::default()
        },
        ..Config::default()
    })
    .await;
    let small = "{ __type(name: \"User\") { name fields { name } } }";
    assert_rejected(&capped, small, "MAX_INTROSPECTION_VALUES_EXCEEDED").await;
    assert_served(&env, small).await;
}

/// Under the default 2 MiB `limits.max_body_bytes`, a GET is held by the HTTP server's
/// own URI cap (65,534 bytes): a query string just under it is served over HTTP/1 and
/// HTTP/2, one over it gets 414 with a JSON error naming the cap instead of hyper's
/// empty answer, and the gateway serves on.
#[tokio::test]
async fn get_query_string_up_to_the_uri_cap() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let env = env(LimitsConfig::default()).await;
    let base = env.url.trim_end_matches("/graphql").to_owned();
    let headers = [
        ("accept", "application/graphql-response+json"),
        support::PREFLIGHTED[0],
    ];
    let long = format!("{base}{}", long_get_target(64 * 1024 - 100));
    let expected = json!({"data": {"users": [{"name": "Ada"}, {"name": "Bob"}]}});
    let reply = support::request(&env.client, "GET", &long, &headers, Vec::new()).await;
    assert_eq!(reply.status, 200);
    let body: Value = serde_json::from_slice(&reply.body).expect("a JSON body");
    assert_eq!(body, expected);
    // HTTP/2 (h2c with prior knowledge): its header list takes the same URI.
    let h2 = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let reply = support::request(&h2, "GET", &long, &headers, Vec::new()).await;
    assert_eq!(reply.status, 200);
    let body: Value = serde_json::from_slice(&reply.body).expect("a JSON body");
    assert_eq!(body, expected);

    // Over the cap no URI type holds it: sent as bytes.
    let addr = base.trim_start_matches("http://").to_owned();
    let raw = |target: String| {
        let addr = addr.clone();
        async move {
            let mut socket = tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect");
            let request = format!(
                "GET {target} HTTP/1.1\r\nhost: {addr}\r\napollo-require-preflight: true\r\n\r\n"
            );
            // The server may answer and close before taking it all.
            let _ = socket.write_all(request.as_bytes()).await;
            let mut answer = Vec::new();
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                socket.read_to_end(&mut answer),
            )
            .await
            .expect("answered and closed within 10 s")
            .expect("read");
            let answer = String::from_utf8(answer).expect("UTF-8");
            let (head, body) = answer.split_once("\r\n\r\n").expect("a response head");
            assert!(head.contains("content-type: application/json"), "{head}");
            let body: Value = serde_json::from_str(body).expect("a JSON body");
            (head.to_owned(), body)
        }
    };
    let (head, body) = raw(long_get_target(70 * 1024)).await;
    assert!(head.starts_with("HTTP/1.1 414 "), "{head}");
    assert_eq!(
        body,
        json!({"errors": [{
            "message": "the request URI is longer than 65534 bytes, the most the HTTP server reads whatever limits.max_body_bytes says; send the operation with POST",
            "extensions": {"code": "PAYLOAD_TOO_LARGE"}
        }]})
    );
    let reply = support::request(&env.client, "GET", &long, &headers, Vec::new()).await;
    assert_eq!(reply.status, 200);
}

/// `limits.http2_max_header_list_bytes` is what HTTP/2 clients are told and held to: a
/// header list past it gets 431 (the HTTP/2 library's, bodiless), one under it is served.
#[tokio::test]
async fn http2_header_lists_are_held_to_the_setting() {
    let env = env(LimitsConfig {
        http2_max_header_list_bytes: 8 * 1024,
        ..LimitsConfig::default()
    })
    .await;
    let h2 = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let body = serde_json::to_vec(&json!({ "query": "{ users { name } }" })).expect("JSON");
    let small = "x".repeat(4 * 1024);
    let headers = [
        ("content-type", "application/json"),
        ("x-pad", small.as_str()),
    ];
    let reply = support::request(&h2, "POST", &env.url, &headers, body.clone()).await;
    assert_eq!(reply.status, 200);
    let large = "x".repeat(12 * 1024);
    let headers = [
        ("content-type", "application/json"),
        ("x-pad", large.as_str()),
    ];
    let reply = support::request(&h2, "POST", &env.url, &headers, body).await;
    assert_eq!(reply.status, 431);
}
