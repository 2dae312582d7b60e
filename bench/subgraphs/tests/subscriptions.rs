//! Subscriptions of the fed set (`reviewAdded` on the reviews subgraph and the monolith)
//! over graphql-transport-ws and GraphQL over SSE with the real npm clients
//! (tools/subscription-client: graphql-ws, graphql-sse, meros for Apollo multipart), plus the protocol's strictness
//! with a plain WebSocket client (tokio-tungstenite) and the HTTP refusals.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Handle, Mode, Options, StreamOptions, spawn_with};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

const INTERVAL: Duration = Duration::from_millis(5);

async fn start(mode: Mode, stream: StreamOptions) -> Handle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    spawn_with(Set::Fed, mode, listener, Options::default(), stream).expect("start the fed set")
}

fn fast() -> StreamOptions {
    StreamOptions {
        event_interval: INTERVAL,
        connection_init_timeout: Duration::from_millis(300),
        ..StreamOptions::default()
    }
}

fn ws_url(server: &Handle, path: &str) -> String {
    format!("ws://{}{path}", server.addr())
}

fn http_url(server: &Handle, path: &str) -> String {
    format!("{}{path}", server.base_url())
}

/// data.json, read independently of the crate's resolvers: the expected events.
fn data() -> Value {
    let text = std::fs::read_to_string(common::sets_dir().join("fed/data.json"))
        .expect("read sets/fed/data.json");
    serde_json::from_str(&text).expect("data.json is JSON")
}

/// Event `i` of `reviewAdded { id body product { upc name price inStock } author { username name } }`
/// as the monolith must send it: review `i mod N`, its product, and the fixed author (user 1).
fn expected_full_event(data: &Value, i: usize) -> Value {
    let reviews = data["reviews"]["reviews"].as_array().expect("reviews");
    let review = &reviews[i % reviews.len()];
    let upc = review["product"]["upc"].as_str().expect("upc");
    let product = data["products"]["products"]
        .as_array()
        .expect("products")
        .iter()
        .find(|p| p["upc"] == upc)
        .expect("the review's product exists");
    let user = &data["accounts"]["users"][0];
    json!({"data": {"reviewAdded": {
        "id": review["id"],
        "body": review["body"],
        "product": {
            "upc": upc,
            "name": product["name"],
            "price": product["price"],
            "inStock": data["inventory"]["inStock"][upc],
        },
        "author": { "username": user["username"], "name": user["name"] },
    }}})
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs tools/subscription-client through scripts/node-tool.sh: (exit code, JSON lines).
async fn node_client(args: &[&str]) -> (i32, Vec<Value>) {
    let npm = std::process::Command::new("npm").arg("--version").output();
    assert!(
        npm.is_ok(),
        "npm is not installed, so the real clients cannot run: run scripts/test.sh, or scripts/host-packages.sh nodejs npm"
    );
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(repo_root().join("scripts/node-tool.sh"))
            .arg("subscription-client/client.mjs")
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the client finishes within 120 s")
    .expect("run scripts/node-tool.sh");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {l:?}: {e}")))
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("npm ci failed"),
        "installing the client failed: {stderr}"
    );
    (output.status.code().unwrap_or(-1), lines)
}

async fn real_client(protocol: &str, url: &str, query: &str, extra: &[&str]) -> (i32, Vec<Value>) {
    let mut args = vec![
        "--protocol",
        protocol,
        "--url",
        url,
        "--query",
        query,
        "--timeout-ms",
        "30000",
    ];
    args.extend_from_slice(extra);
    node_client(&args).await
}

const SUBGRAPH_QUERY: &str =
    "subscription { reviewAdded(limit: 13) { id body product { upc } author { id username } } }";
const FULL_QUERY: &str = "subscription Reviews($limit: Int) { reviewAdded(limit: $limit) { id body product { upc name price inStock } author { username name } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_clients_receive_the_reviews_subgraph_events_over_ws_and_sse() {
    let server = start(Mode::Subgraphs, fast()).await;
    let data = data();
    let reviews = data["reviews"]["reviews"].as_array().expect("reviews");
    for (protocol, url) in [
        ("ws", ws_url(&server, "/reviews")),
        ("sse", http_url(&server, "/reviews")),
        ("multipart", http_url(&server, "/reviews")),
    ] {
        let (code, lines) = real_client(protocol, &url, SUBGRAPH_QUERY, &[]).await;
        assert_eq!(code, 0, "{protocol}: {lines:?}");
        // 13 > 11 reviews: the sequence wraps around to review 0.
        assert_eq!(
            lines.len(),
            14,
            "{protocol}: 13 events and the end: {lines:?}"
        );
        for (i, line) in lines[..13].iter().enumerate() {
            let review = &reviews[i % reviews.len()];
            let expected = json!({"data": {"reviewAdded": {
                "id": review["id"],
                "body": review["body"],
                "product": { "upc": review["product"]["upc"] },
                // The reviews subgraph provides username; every review's author is user 1.
                "author": { "id": "1", "username": "urigo" },
            }}});
            assert_eq!(line, &expected, "{protocol}: event {i}");
        }
        assert_eq!(
            lines[13],
            json!({"done": "complete", "by": "server"}),
            "{protocol}"
        );
    }
    let (_, stats) = common::send(
        &common::client(),
        "GET",
        &http_url(&server, "/stats"),
        Vec::new(),
    )
    .await;
    let stats = common::parse(&stats);
    assert_eq!(stats["subscriptions"]["reviews"], 3, "{stats}");
    assert_eq!(stats["events"]["reviews"], 39, "{stats}");
    assert_eq!(stats["requests"]["reviews"], 3, "{stats}");
    assert_eq!(stats["subscriptions"]["products"], 0, "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_clients_receive_the_monolith_events_across_all_subgraph_fields() {
    let server = start(Mode::Monolith, fast()).await;
    let data = data();
    for (protocol, url) in [
        ("ws", ws_url(&server, "/graphql")),
        ("sse", http_url(&server, "/graphql")),
        ("multipart", http_url(&server, "/graphql")),
    ] {
        let (code, lines) = real_client(
            protocol,
            &url,
            FULL_QUERY,
            &["--variables", r#"{"limit":12}"#],
        )
        .await;
        assert_eq!(code, 0, "{protocol}: {lines:?}");
        assert_eq!(lines.len(), 13, "{protocol}: {lines:?}");
        for (i, line) in lines[..12].iter().enumerate() {
            assert_eq!(
                line,
                &expected_full_event(&data, i),
                "{protocol}: event {i}"
            );
        }
        assert_eq!(lines[12]["done"], "complete", "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_subscribers_see_the_same_sequence_and_clients_can_stop_early() {
    let server = start(Mode::Monolith, fast()).await;
    let data = data();
    let url = ws_url(&server, "/graphql");
    let (code, lines) = real_client(
        "ws",
        &url,
        FULL_QUERY,
        &["--events", "3", "--subscribers", "4"],
    )
    .await;
    assert_eq!(code, 0, "{lines:?}");
    for sub in 0..4 {
        let mine: Vec<&Value> = lines.iter().filter(|l| l["sub"] == sub).collect();
        assert_eq!(mine.len(), 4, "subscriber {sub}: {mine:?}");
        for (i, line) in mine[..3].iter().enumerate() {
            assert_eq!(
                line["payload"],
                expected_full_event(&data, i),
                "subscriber {sub} event {i}"
            );
        }
        assert_eq!(mine[3]["done"], "complete");
        assert_eq!(
            mine[3]["by"], "client",
            "the endless stream was stopped by the client"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_complete_streams_and_bad_limits_are_graphql_errors() {
    let server = start(Mode::Subgraphs, fast()).await;
    for (protocol, url) in [
        ("ws", ws_url(&server, "/reviews")),
        ("sse", http_url(&server, "/reviews")),
    ] {
        let zero = "subscription { reviewAdded(limit: 0) { id } }";
        let (code, lines) = real_client(protocol, &url, zero, &[]).await;
        assert_eq!(
            (code, lines.clone()),
            (0, vec![json!({"done": "complete", "by": "server"})]),
            "{protocol}"
        );

        let negative = "subscription { reviewAdded(limit: -1) { id } }";
        let (code, lines) = real_client(protocol, &url, negative, &[]).await;
        assert_eq!(code, 0, "{protocol}: {lines:?}");
        assert_eq!(
            lines[0],
            json!({"data": null, "errors": [{"message": "\"limit\" must not be negative, got -1.", "path": ["reviewAdded"]}]}),
            "{protocol}"
        );
        assert_eq!(lines[1]["done"], "complete", "{protocol}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_subscriptions_are_refused_on_every_transport() {
    let server = start(Mode::Subgraphs, fast()).await;
    let two_fields = "subscription { a: reviewAdded { id } b: reviewAdded { id } }";
    // graphql-transport-ws: an `error` message, which graphql-ws reports as the error.
    let (code, lines) = real_client("ws", &ws_url(&server, "/reviews"), two_fields, &[]).await;
    assert_eq!(code, 1, "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["done"], "error");
    let message = lines[0]["error"][0]["message"]
        .as_str()
        .expect("a GraphQL error list");
    assert!(
        message.contains("can only have one root field"),
        "{message}"
    );
    // GraphQL over SSE: the errors as a `next` event, then `complete`.
    let (code, lines) = real_client("sse", &http_url(&server, "/reviews"), two_fields, &[]).await;
    assert_eq!(code, 0, "{lines:?}");
    let message = lines[0]["errors"][0]["message"].as_str().expect("errors");
    assert!(
        message.contains("can only have one root field"),
        "{message}"
    );
    assert_eq!(lines[1]["done"], "complete");

    // A plain POST (application/json) is refused, not answered with one event.
    let client = common::client();
    let (status, body) = common::graphql(
        &client,
        &http_url(&server, "/reviews"),
        "subscription { reviewAdded(limit: 1) { id } }",
        Value::Null,
    )
    .await;
    assert_eq!(status, 400);
    let message = common::parse(&body)["errors"][0]["message"].clone();
    assert!(
        message
            .as_str()
            .is_some_and(|m| m.contains("need a streaming transport")),
        "{message}"
    );
    // Queries still work over plain POST.
    let (status, _) = common::graphql(
        &client,
        &http_url(&server, "/products"),
        "{ topProducts(first: 1) { name } }",
        Value::Null,
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apollo_multipart_streams_payload_parts_and_heartbeats() {
    // Events every 400 ms, heartbeats every 150 ms: two heartbeats precede the first event.
    let slow = StreamOptions {
        event_interval: Duration::from_millis(400),
        multipart_heartbeat: Duration::from_millis(150),
        ..StreamOptions::default()
    };
    let server = start(Mode::Monolith, slow).await;
    let request = hyper::Request::builder()
        .method("POST")
        .uri(http_url(&server, "/graphql"))
        .header("content-type", "application/json")
        .header(
            "accept",
            "multipart/mixed;subscriptionSpec=\"1.0\", application/json",
        )
        .body(Full::new(Bytes::from(
            json!({"query": "subscription { reviewAdded(limit: 2) { id product { name } } }"})
                .to_string(),
        )))
        .expect("request");
    let response = common::client().request(request).await.expect("response");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "multipart/mixed;boundary=\"graphql\";subscriptionSpec=\"1.0\""
    );
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let body = String::from_utf8(body.to_vec()).expect("UTF-8");
    // "\r\n--graphql" (part)* "--\r\n", each part a JSON body with its content type.
    let inner = body
        .strip_prefix("\r\n--graphql")
        .and_then(|b| b.strip_suffix("--\r\n"))
        .unwrap_or_else(|| panic!("framing: {body:?}"));
    let parts: Vec<Value> = inner
        .split_terminator("\r\n--graphql")
        .map(|part| {
            let json = part
                .strip_prefix("\r\ncontent-type: application/json\r\n\r\n")
                .unwrap_or_else(|| panic!("part headers: {part:?}"));
            serde_json::from_str(json).unwrap_or_else(|e| panic!("part {json:?}: {e}"))
        })
        .collect();
    let heartbeats = parts.iter().filter(|p| **p == json!({})).count();
    let payloads: Vec<&Value> = parts.iter().filter(|p| **p != json!({})).collect();
    assert_eq!(
        payloads,
        vec![
            &json!({"payload": {"data": {"reviewAdded": {"id": "1", "product": {"name": "Table"}}}}}),
            &json!({"payload": {"data": {"reviewAdded": {"id": "2", "product": {"name": "Table"}}}}}),
        ]
    );
    // Two events 400 ms apart take over 400 ms: at least two 150 ms heartbeats.
    assert!(heartbeats >= 2, "{heartbeats} heartbeats in {parts:?}");
}

// ---------------------------------------------------------------- protocol strictness

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect_with(url: &str, protocol: Option<&str>) -> Result<Socket, WsError> {
    let mut request = url.into_client_request().expect("a WebSocket request");
    if let Some(protocol) = protocol {
        request.headers_mut().insert(
            "sec-websocket-protocol",
            HeaderValue::from_str(protocol).expect("header value"),
        );
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, response)| {
            if protocol.is_some() {
                assert_eq!(
                    response.headers()["sec-websocket-protocol"],
                    "graphql-transport-ws"
                );
            }
            socket
        })
}

async fn connect(server: &Handle) -> Socket {
    connect_with(&ws_url(server, "/reviews"), Some("graphql-transport-ws"))
        .await
        .expect("WebSocket handshake")
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .expect("send a message");
}

/// The next text message as JSON, or the close frame's (code, reason).
async fn receive(socket: &mut Socket) -> Result<Value, (u16, String)> {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a message within 10 s");
        match message {
            Some(Ok(Message::Text(text))) => {
                return Ok(serde_json::from_str(&text).expect("JSON message"));
            }
            Some(Ok(Message::Close(Some(frame)))) => {
                return Err((u16::from(frame.code), frame.reason.to_string()));
            }
            Some(Ok(Message::Close(None))) | None => return Err((0, String::new())),
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("socket error: {e}"),
        }
    }
}

async fn init(socket: &mut Socket) {
    send(socket, json!({"type": "connection_init"})).await;
    assert_eq!(receive(socket).await, Ok(json!({"type": "connection_ack"})));
}

async fn closed_with(socket: &mut Socket) -> u16 {
    loop {
        match receive(socket).await {
            Ok(_) => {}
            Err((code, _)) => return code,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upgrade_needs_the_graphql_transport_ws_subprotocol() {
    let server = start(Mode::Subgraphs, fast()).await;
    let url = ws_url(&server, "/reviews");
    for offered in [None, Some("graphql-ws"), Some("graphql-transportws")] {
        match connect_with(&url, offered).await {
            Err(WsError::Http(response)) => assert_eq!(response.status(), 400, "{offered:?}"),
            Err(other) => panic!("{offered:?}: expected an HTTP refusal, got {other}"),
            Ok(_) => panic!("{offered:?}: the upgrade was accepted"),
        }
    }
    // Offered among others, it is chosen.
    connect_with(&url, Some("graphql-ws, graphql-transport-ws"))
        .await
        .expect("accepted with the subprotocol in the list");
    // Paths that are not endpoints have no WebSocket either.
    assert!(
        connect_with(&ws_url(&server, "/nope"), Some("graphql-transport-ws"))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_closes_with_the_protocol_codes() {
    let server = start(Mode::Subgraphs, fast()).await;
    let subscribe = |id: &str| json!({"id": id, "type": "subscribe", "payload": {"query": "subscription { reviewAdded { id } }"}});

    // Subscribe before connection_init: 4401.
    let mut socket = connect(&server).await;
    send(&mut socket, subscribe("1")).await;
    assert_eq!(closed_with(&mut socket).await, 4401);

    // No connection_init within the timeout (300 ms here): 4408.
    let mut socket = connect(&server).await;
    let started = std::time::Instant::now();
    assert_eq!(closed_with(&mut socket).await, 4408);
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );

    // A second connection_init: 4429.
    let mut socket = connect(&server).await;
    init(&mut socket).await;
    send(&mut socket, json!({"type": "connection_init"})).await;
    assert_eq!(closed_with(&mut socket).await, 4429);

    // A subscribe id that is still running: 4409.
    let mut socket = connect(&server).await;
    init(&mut socket).await;
    send(&mut socket, subscribe("same")).await;
    assert_eq!(receive(&mut socket).await.expect("an event")["id"], "same");
    send(&mut socket, subscribe("same")).await;
    assert_eq!(closed_with(&mut socket).await, 4409);

    // Invalid messages: 4400.
    for invalid in [
        "not json".to_owned(),
        json!({"type": "nope"}).to_string(),
        json!({"type": "subscribe", "payload": {"query": "{ __typename }"}}).to_string(),
        json!({"type": "subscribe", "id": "x", "payload": {"query": 5}}).to_string(),
        json!({"type": "connection_init", "payload": "token"}).to_string(),
    ] {
        let mut socket = connect(&server).await;
        init(&mut socket).await;
        socket
            .send(Message::text(invalid.clone()))
            .await
            .expect("send");
        assert_eq!(closed_with(&mut socket).await, 4400, "{invalid}");
    }
    assert_eq!(u16::from(CloseCode::Library(4400)), 4400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_over_the_socket_follow_the_protocol() {
    let server = start(Mode::Subgraphs, fast()).await;
    let mut socket = connect(&server).await;
    // Ping is answered before and after the acknowledgement.
    send(&mut socket, json!({"type": "ping"})).await;
    assert_eq!(receive(&mut socket).await, Ok(json!({"type": "pong"})));
    init(&mut socket).await;
    send(&mut socket, json!({"type": "ping", "payload": {"t": 1}})).await;
    assert_eq!(receive(&mut socket).await, Ok(json!({"type": "pong"})));
    // An unsolicited pong needs no answer; the next message is the subscription's.
    send(&mut socket, json!({"type": "pong"})).await;

    // A subscription stopped by the client's complete sends nothing more for its id,
    // and the id can be reused afterwards.
    let endless = json!({"id": "s", "type": "subscribe", "payload": {"query": "subscription { reviewAdded { id } }"}});
    send(&mut socket, endless.clone()).await;
    let first = receive(&mut socket).await.expect("an event");
    assert_eq!(
        first,
        json!({"id": "s", "type": "next", "payload": {"data": {"reviewAdded": {"id": "1"}}}})
    );
    send(&mut socket, json!({"id": "s", "type": "complete"})).await;
    // A query on the same socket: one next, then complete (events of "s" in flight
    // before the complete was read are allowed, nothing after).
    send(
        &mut socket,
        json!({"id": "q", "type": "subscribe", "payload": {"query": "{ __typename }"}}),
    )
    .await;
    let mut after_query = Vec::new();
    loop {
        let message = receive(&mut socket).await.expect("a message");
        if message["id"] == "s" {
            assert!(
                after_query.is_empty(),
                "event of a completed subscription after later messages: {message}"
            );
            continue;
        }
        after_query.push(message.clone());
        if message["type"] == "complete" {
            break;
        }
    }
    assert_eq!(
        after_query,
        vec![
            json!({"id": "q", "type": "next", "payload": {"data": {"__typename": "Query"}}}),
            json!({"id": "q", "type": "complete"}),
        ]
    );
    // Nothing more arrives for "s" over several intervals.
    let quiet = tokio::time::timeout(INTERVAL * 20, socket.next()).await;
    assert!(
        quiet.is_err(),
        "unexpected message after complete: {quiet:?}"
    );
    // The id is free again; a limited subscription completes by itself.
    send(
        &mut socket,
        json!({"id": "s", "type": "subscribe", "payload": {"query": "subscription($n: Int) { reviewAdded(limit: $n) { id } }", "variables": {"n": 2}}}),
    )
    .await;
    let mut messages = Vec::new();
    for _ in 0..3 {
        messages.push(receive(&mut socket).await.expect("a message"));
    }
    assert_eq!(
        messages,
        vec![
            json!({"id": "s", "type": "next", "payload": {"data": {"reviewAdded": {"id": "1"}}}}),
            json!({"id": "s", "type": "next", "payload": {"data": {"reviewAdded": {"id": "2"}}}}),
            json!({"id": "s", "type": "complete"}),
        ]
    );
    // Validation errors are an `error` message (no complete follows).
    send(
        &mut socket,
        json!({"id": "v", "type": "subscribe", "payload": {"query": "subscription { a: reviewAdded { id } b: reviewAdded { id } }"}}),
    )
    .await;
    let error = receive(&mut socket).await.expect("an error message");
    assert_eq!(
        (error["id"].clone(), error["type"].clone()),
        (json!("v"), json!("error"))
    );
    assert!(
        error["payload"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("one root field")),
        "{error}"
    );
    // A normal close ends the socket.
    socket.close(None).await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_runs_a_bounded_number_of_operations() {
    let server = start(
        Mode::Subgraphs,
        StreamOptions {
            max_operations_per_socket: 2,
            ..fast()
        },
    )
    .await;
    let mut socket = connect(&server).await;
    init(&mut socket).await;
    let endless = |id: &str| json!({"id": id, "type": "subscribe", "payload": {"query": "subscription { reviewAdded { id } }"}});
    send(&mut socket, endless("a")).await;
    send(&mut socket, endless("b")).await;
    send(&mut socket, endless("c")).await;
    // "c" is refused with an error message; "a" and "b" keep streaming.
    let mut refused = None;
    let mut seen = std::collections::BTreeSet::new();
    while refused.is_none() || seen.len() < 2 {
        let message = receive(&mut socket).await.expect("a message");
        match message["type"].as_str() {
            Some("error") => refused = Some(message),
            Some("next") => {
                seen.insert(message["id"].as_str().expect("id").to_owned());
            }
            other => panic!("unexpected {other:?}: {message}"),
        }
    }
    let refused = refused.expect("an error for c");
    assert_eq!(refused["id"], "c");
    assert!(
        refused["payload"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("at most 2")),
        "{refused}"
    );
    assert!(!seen.contains("c"), "{seen:?}");
    // Completing one frees a place.
    send(&mut socket, json!({"id": "a", "type": "complete"})).await;
    send(&mut socket, endless("c")).await;
    loop {
        let message = receive(&mut socket).await.expect("a message");
        assert_ne!(message["type"], "error", "{message}");
        if message["id"] == "c" {
            assert_eq!(message["type"], "next");
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_also_takes_get_requests() {
    let server = start(Mode::Monolith, fast()).await;
    let query = "subscription%20R(%24n%3A%20Int)%20%7B%20reviewAdded(limit%3A%20%24n)%20%7B%20id%20%7D%20%7D";
    let url = format!(
        "{}?query={query}&variables=%7B%22n%22%3A2%7D",
        http_url(&server, "/graphql")
    );
    let request = hyper::Request::builder()
        .method("GET")
        .uri(url)
        .header("accept", "text/event-stream")
        .body(Full::new(Bytes::new()))
        .expect("request");
    let response = common::client().request(request).await.expect("response");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(
        String::from_utf8_lossy(&body),
        "event: next\ndata: {\"data\":{\"reviewAdded\":{\"id\":\"1\"}}}\n\n\
         event: next\ndata: {\"data\":{\"reviewAdded\":{\"id\":\"2\"}}}\n\n\
         event: complete\ndata: \n\n"
    );
    // GET without the event-stream Accept stays refused.
    let (status, _) = common::send(
        &common::client(),
        "GET",
        &http_url(&server, "/graphql"),
        Vec::new(),
    )
    .await;
    assert_eq!(status, 405);
}
