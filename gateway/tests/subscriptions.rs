//! Federated subscriptions end to end: the gateway in front of the real `fed` subgraph
//! servers, whose reviews subgraph owns `Subscription.reviewAdded` (served over
//! graphql-transport-ws and SSE, one event per interval). Each event is completed
//! across the other three subgraphs, and the events must equal the ones the `fed`
//! monolith (the oracle) sends for the same subscription, over every client transport
//! and both subgraph protocols.

mod support;

use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Handle, Mode, Options, StreamOptions};
use graphfleet_gateway::config::{
    Config, SubgraphConfig, SubgraphProtocol, SubgraphSubscriptionConfig, SubscriptionsConfig,
};
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::ws::{Socket, receive, send};

/// Every subgraph, across the root field's entity: accounts, products, inventory
/// (`shippingEstimate` needs products' `price` and `weight`).
const SUBSCRIPTION: &str = "subscription { reviewAdded(limit: 4) { id body \
    author { id username name } \
    product { upc name price inStock shippingEstimate reviews { id } } } }";

async fn serve(mode: Mode, interval: Duration) -> Handle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let stream = StreamOptions {
        event_interval: interval,
        ..StreamOptions::default()
    };
    graphfleet_bench_subgraphs::spawn_with(Set::Fed, mode, listener, Options::default(), stream)
        .expect("the fed servers start")
}

struct Running {
    subgraphs: Handle,
    gateway: Arc<Gateway>,
    http: String,
    ws: String,
}

async fn gateway_with(config: Config, interval: Duration) -> Running {
    let subgraphs = serve(Mode::Subgraphs, interval).await;
    let sdl = Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    let gateway = Arc::new(Gateway::with_config(Arc::new(config), supergraph));
    tokio::spawn(graphfleet_gateway::http::serve(listener, gateway.clone()));
    Running {
        subgraphs,
        gateway,
        http: format!("http://{addr}/graphql"),
        ws: format!("ws://{addr}/graphql"),
    }
}

async fn gateway() -> Running {
    gateway_with(Config::default(), Duration::from_millis(20)).await
}

async fn connect(url: &str) -> Socket {
    support::ws::initialised(url).await
}

/// Subscribe over WebSocket as `id`; the payloads of its `next` messages until its
/// `complete` (or a close), and how it ended.
async fn ws_events(socket: &mut Socket, id: &str, query: &str) -> (Vec<Value>, Value) {
    let payload = json!({ "query": query });
    send(
        socket,
        json!({ "id": id, "type": "subscribe", "payload": payload }),
    )
    .await;
    let mut events = Vec::new();
    loop {
        let message = receive(socket).await;
        match message["type"].as_str() {
            Some("next") => {
                assert_eq!(message["id"], id);
                events.push(message["payload"].clone());
            }
            _ => return (events, message),
        }
    }
}

/// The oracle's events: the same subscription straight to the monolith.
async fn oracle(query: &str) -> Vec<Value> {
    let monolith = serve(Mode::Monolith, Duration::from_millis(20)).await;
    let url = format!("ws://{}/graphql", monolith.addr());
    let mut socket = connect(&url).await;
    let (events, end) = ws_events(&mut socket, "o", query).await;
    assert_eq!(end, json!({ "id": "o", "type": "complete" }));
    events
}

#[tokio::test]
async fn events_are_completed_across_subgraphs_like_the_monolith() {
    let expected = oracle(SUBSCRIPTION).await;
    assert_eq!(expected.len(), 4);
    assert!(
        expected[0]["data"]["reviewAdded"]["product"]["name"].is_string(),
        "{expected:?}"
    );
    assert!(
        expected[0]["data"]["reviewAdded"]["author"]["name"].is_string(),
        "{expected:?}"
    );
    let running = gateway().await;
    let mut socket = connect(&running.ws).await;
    let (events, end) = ws_events(&mut socket, "s1", SUBSCRIPTION).await;
    assert_eq!(end, json!({ "id": "s1", "type": "complete" }));
    assert_eq!(events, expected);
    // The socket serves the next subscription after one completed.
    let (again, _) = ws_events(&mut socket, "s2", SUBSCRIPTION).await;
    assert_eq!(again, expected);
}

#[tokio::test]
async fn sse_and_multipart_clients_get_the_same_events() {
    let expected = oracle(SUBSCRIPTION).await;
    let running = gateway().await;
    let sse = http_stream(&running.http, "text/event-stream").await;
    assert_eq!(sse.0, "text/event-stream");
    let events: Vec<Value> = sse_events(&sse.1);
    assert_eq!(events, expected, "{}", sse.1);
    assert!(sse.1.ends_with("event: complete\ndata:\n\n"), "{}", sse.1);

    let accept = "multipart/mixed;boundary=\"graphql\";subscriptionSpec=1.0,application/json";
    let (content_type, body) = http_stream(&running.http, accept).await;
    assert!(
        content_type.starts_with("multipart/mixed"),
        "{content_type}"
    );
    let payloads: Vec<Value> = multipart_parts(&body)
        .into_iter()
        .filter(|p| p != &json!({}))
        .map(|p| p["payload"].clone())
        .collect();
    assert_eq!(payloads, expected, "{body}");
    assert!(body.ends_with("\r\n--graphql--\r\n"), "{body}");
}

/// POSTs the subscription accepting `accept`; the content type and the whole body.
async fn http_stream(url: &str, accept: &str) -> (String, String) {
    let body = serde_json::to_vec(&json!({ "query": SUBSCRIPTION })).expect("JSON");
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let response = tokio::time::timeout(Duration::from_secs(15), support::client().request(req))
        .await
        .expect("an answer within 15 s")
        .expect("HTTP exchange");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    let body = tokio::time::timeout(Duration::from_secs(15), response.into_body().collect())
        .await
        .expect("the stream ends within 15 s")
        .expect("the body streams")
        .to_bytes();
    (
        content_type,
        String::from_utf8(body.to_vec()).expect("UTF-8"),
    )
}

fn sse_events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|block| block.strip_prefix("event: next\ndata: "))
        .map(|data| serde_json::from_str(data).expect("each event is JSON"))
        .collect()
}

fn multipart_parts(body: &str) -> Vec<Value> {
    body.split("\r\n--graphql")
        .filter_map(|part| part.split_once("\r\n\r\n").map(|(_, json)| json))
        .map(|json| serde_json::from_str(json).expect("each part is JSON"))
        .collect()
}

#[tokio::test]
async fn the_subgraph_can_be_subscribed_to_over_sse() {
    let expected = oracle(SUBSCRIPTION).await;
    let mut config = Config::default();
    config.subgraphs.insert(
        "reviews".to_owned(),
        SubgraphConfig {
            subscription: SubgraphSubscriptionConfig {
                protocol: SubgraphProtocol::Sse,
                url: None,
            },
            ..SubgraphConfig::default()
        },
    );
    let running = gateway_with(config, Duration::from_millis(20)).await;
    let mut socket = connect(&running.ws).await;
    let (events, end) = ws_events(&mut socket, "sse", SUBSCRIPTION).await;
    assert_eq!(end, json!({ "id": "sse", "type": "complete" }));
    assert_eq!(events, expected);
}

#[tokio::test]
async fn a_subscription_over_plain_json_is_refused_with_a_clear_error() {
    let running = gateway().await;
    let client = support::client();
    let (status, body) = support::fed::try_post(&client, &running.http, SUBSCRIPTION)
        .await
        .expect("an answer");
    assert_eq!(status, 200);
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(body.get("data").is_none(), "{body}");
    let message = body["errors"][0]["message"].as_str().expect("a message");
    assert!(message.contains("WebSocket"), "{message}");
    // And nothing was subscribed upstream.
    let stats = stats(&running.subgraphs).await;
    assert_eq!(stats["subscriptions"]["reviews"], json!(0), "{stats}");
}

async fn stats(subgraphs: &Handle) -> Value {
    let client = support::client();
    let reply = support::request(
        &client,
        "GET",
        &format!("{}/stats", subgraphs.base_url()),
        &[],
        Vec::new(),
    )
    .await;
    serde_json::from_slice(&reply.body).expect("stats are JSON")
}

/// The value of an unlabelled metric in the gateway's Prometheus text.
fn metric(gateway: &Gateway, name: &str) -> f64 {
    let text = gateway.render_metrics();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().expect("a number"))
}

#[tokio::test]
async fn identical_subscriptions_share_one_subgraph_subscription() {
    let running = gateway().await;
    let endless = "subscription { reviewAdded { id product { name } } }";
    let mut a = connect(&running.ws).await;
    let mut b = connect(&running.ws).await;
    for (socket, id) in [(&mut a, "a"), (&mut b, "b")] {
        let payload = json!({ "query": endless });
        send(
            socket,
            json!({ "id": id, "type": "subscribe", "payload": payload }),
        )
        .await;
    }
    for socket in [&mut a, &mut b] {
        for _ in 0..3 {
            let message = receive(socket).await;
            assert_eq!(message["type"], "next", "{message}");
        }
    }
    assert_eq!(
        metric(&running.gateway, "graphfleet_subscriptions_open"),
        2.0
    );
    assert_eq!(
        metric(&running.gateway, "graphfleet_subscription_upstreams_open"),
        1.0
    );
    let stats = stats(&running.subgraphs).await;
    assert_eq!(stats["subscriptions"]["reviews"], json!(1), "{stats}");
    // The client completing one leaves the other running; the last one ends the
    // subgraph subscription too.
    send(&mut a, json!({ "id": "a", "type": "complete" })).await;
    assert_eq!(receive(&mut b).await["type"], "next");
    send(&mut b, json!({ "id": "b", "type": "complete" })).await;
    wait_for(|| metric(&running.gateway, "graphfleet_subscription_upstreams_open") == 0.0).await;
    assert_eq!(
        metric(&running.gateway, "graphfleet_subscriptions_open"),
        0.0
    );
}

async fn wait_for(mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("condition not reached within 4 s");
}

#[tokio::test]
async fn reload_and_shutdown_end_subscriptions_with_a_last_error() {
    let running = gateway().await;
    let endless = "subscription { reviewAdded { id } }";
    let mut socket = connect(&running.ws).await;
    let payload = json!({ "query": endless });
    send(
        &mut socket,
        json!({ "id": "r", "type": "subscribe", "payload": payload }),
    )
    .await;
    assert_eq!(receive(&mut socket).await["type"], "next");
    let sdl = Set::Fed.supergraph_at(&running.subgraphs.base_url());
    running
        .gateway
        .swap_supergraph(Supergraph::parse(&sdl).expect("loads"));
    let last = loop {
        let message = receive(&mut socket).await;
        if message["payload"].get("errors").is_some() || message["type"] != "next" {
            break message;
        }
    };
    assert_eq!(
        last["payload"]["errors"][0]["extensions"]["code"], "SUBSCRIPTION_SCHEMA_RELOAD",
        "{last}"
    );
    assert_eq!(
        receive(&mut socket).await,
        json!({ "id": "r", "type": "complete" })
    );

    // Subscribed again, to the new supergraph; then the gateway shuts down.
    send(
        &mut socket,
        json!({ "id": "s", "type": "subscribe", "payload": payload }),
    )
    .await;
    assert_eq!(receive(&mut socket).await["type"], "next");
    running.gateway.end_subscriptions();
    let last = loop {
        let message = receive(&mut socket).await;
        if message["payload"].get("errors").is_some() || message["type"] != "next" {
            break message;
        }
    };
    assert_eq!(
        last["payload"]["errors"][0]["extensions"]["code"], "SUBSCRIPTION_SHUTDOWN",
        "{last}"
    );
    assert_eq!(
        receive(&mut socket).await,
        json!({ "id": "s", "type": "complete" })
    );
    assert_eq!(receive(&mut socket).await, json!({ "close": 1001 }));
    // New sockets are closed at once from then on (1001: going away).
    let request = support::ws::request(&running.ws, "graphql-transport-ws");
    let (mut late, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("the upgrade itself succeeds");
    assert_eq!(receive(&mut late).await, json!({ "close": 1001 }));
}

#[tokio::test]
async fn limits_refuse_subscriptions_past_them() {
    let config = Config {
        subscriptions: SubscriptionsConfig {
            max_per_client: 1,
            ..SubscriptionsConfig::default()
        },
        ..Config::default()
    };
    let running = gateway_with(config, Duration::from_millis(20)).await;
    let endless = "subscription { reviewAdded { id } }";
    let mut first = connect(&running.ws).await;
    let payload = json!({ "query": endless });
    send(
        &mut first,
        json!({ "id": "1", "type": "subscribe", "payload": payload }),
    )
    .await;
    assert_eq!(receive(&mut first).await["type"], "next");
    let mut second = connect(&running.ws).await;
    let (events, end) = ws_events(&mut second, "2", endless).await;
    assert!(events.is_empty());
    assert_eq!(end["type"], "error", "{end}");
    assert_eq!(
        end["payload"][0]["extensions"]["code"], "SUBSCRIPTION_LIMIT",
        "{end}"
    );
}

#[tokio::test]
async fn a_subgraph_that_cannot_be_reached_ends_the_subscription_with_an_error() {
    let running = gateway().await;
    let mut socket = connect(&running.ws).await;
    running.subgraphs.shutdown().await;
    let (events, end) = ws_events(&mut socket, "x", SUBSCRIPTION).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0]["errors"][0]["extensions"]["code"], "SUBSCRIPTION_UPSTREAM_ERROR",
        "{events:?}"
    );
    assert_eq!(end, json!({ "id": "x", "type": "complete" }));
}

/// The JSON lines a node client printed.
fn lines(output: &std::process::Output) -> Vec<Value> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("the client prints JSON lines"))
        .collect()
}

#[tokio::test]
async fn real_clients_graphql_ws_subscriptions_transport_ws_graphql_sse_and_apollo_client_get_the_oracles_events()
 {
    let expected = oracle(SUBSCRIPTION).await;
    let running = gateway().await;
    // ws: graphql-ws; legacy: subscriptions-transport-ws (the `graphql-ws` subprotocol).
    for protocol in ["ws", "legacy", "sse"] {
        let url = if protocol == "sse" {
            &running.http
        } else {
            &running.ws
        };
        let args = [
            "subscription-client/client.mjs",
            "--protocol",
            protocol,
            "--url",
            url,
            "--query",
            SUBSCRIPTION,
            "--timeout-ms",
            "15000",
        ];
        let output = support::node_tool(args.map(str::to_owned).to_vec()).await;
        let mut got = lines(&output);
        assert_eq!(
            got.pop(),
            Some(json!({ "done": "complete", "by": "server" })),
            "{protocol}"
        );
        assert_eq!(got, expected, "{protocol}");
    }
    // Apollo Client over multipart HTTP (its results have `errors` null when none).
    let args = ["defer-client/subscription.mjs", &running.http, SUBSCRIPTION];
    let output = support::node_tool(args.map(str::to_owned).to_vec()).await;
    let mut got = lines(&output);
    assert_eq!(got.pop(), Some(json!({ "done": "complete" })));
    let data: Vec<Value> = got
        .iter()
        .map(|r| {
            assert_eq!(r["errors"], Value::Null, "{r}");
            json!({ "data": r["data"] })
        })
        .collect();
    assert_eq!(data, expected);
}

/// A labelled counter's value in the gateway's Prometheus text.
fn labelled(gateway: &Gateway, series: &str) -> f64 {
    let text = gateway.render_metrics();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |v| v.trim().parse().expect("a number"))
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_and_memory_stays_bounded() {
    let config = Config {
        subscriptions: SubscriptionsConfig {
            queue_size: 4,
            ..SubscriptionsConfig::default()
        },
        ..Config::default()
    };
    let running = gateway_with(config, Duration::from_millis(1)).await;
    // Big events (every review of the product, with their authors' reviews), a small
    // receive window, and a client that does not read.
    let heavy = "subscription { reviewAdded { id product { name reviews { body \
        author { username reviews { body product { name price } } } } } } }";
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("small window");
    let addr = running
        .ws
        .trim_start_matches("ws://")
        .trim_end_matches("/graphql")
        .parse()
        .expect("an address");
    let stream = socket.connect(addr).await.expect("connect");
    let request = support::ws::request(&running.ws, "graphql-transport-ws");
    let stream = tokio_tungstenite::MaybeTlsStream::Plain(stream);
    let (mut slow, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .expect("upgrade");
    send(&mut slow, json!({ "type": "connection_init" })).await;
    assert_eq!(receive(&mut slow).await["type"], "connection_ack");
    send(
        &mut slow,
        json!({ "id": "slow", "type": "subscribe", "payload": { "query": heavy } }),
    )
    .await;
    let cut = "graphfleet_subscriptions_ended_total{reason=\"slow_consumer\"}";
    wait_long_for(|| labelled(&running.gateway, cut) == 1.0).await;
    // Its place is freed at once, though its last messages wait for it to read.
    assert_eq!(
        metric(&running.gateway, "graphfleet_subscriptions_open"),
        0.0
    );
    wait_long_for(|| metric(&running.gateway, "graphfleet_subscription_upstreams_open") == 0.0)
        .await;
    // Reading again, it finds the events it had, then why it was cut, then complete.
    let mut events = 0;
    let last = loop {
        let message = receive(&mut slow).await;
        if message["payload"].get("errors").is_some() || message["type"] != "next" {
            break message;
        }
        events += 1;
    };
    assert!(events > 4, "{events}");
    assert_eq!(
        last["payload"]["errors"][0]["extensions"]["code"], "SUBSCRIPTION_QUEUE_FULL",
        "{last}"
    );
    assert_eq!(
        receive(&mut slow).await,
        json!({ "id": "slow", "type": "complete" })
    );
}

async fn wait_long_for(mut done: impl FnMut() -> bool) {
    for _ in 0..750 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("condition not reached within 15 s");
}

#[tokio::test]
async fn a_duplicate_id_closes_4409_and_a_connection_holds_at_most_its_limit() {
    let config = Config {
        subscriptions: SubscriptionsConfig {
            max_per_connection: 2,
            ..SubscriptionsConfig::default()
        },
        ..Config::default()
    };
    let running = gateway_with(config, Duration::from_millis(20)).await;
    let endless = json!({ "query": "subscription { reviewAdded { id } }" });
    let mut socket = connect(&running.ws).await;
    for id in ["1", "2"] {
        send(
            &mut socket,
            json!({ "id": id, "type": "subscribe", "payload": endless }),
        )
        .await;
    }
    send(
        &mut socket,
        json!({ "id": "3", "type": "subscribe", "payload": endless }),
    )
    .await;
    let refused = loop {
        let message = receive(&mut socket).await;
        if message["id"] == "3" {
            break message;
        }
        assert_eq!(message["type"], "next", "{message}");
    };
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(
        refused["payload"][0]["extensions"]["code"], "SUBSCRIPTION_LIMIT",
        "{refused}"
    );
    send(
        &mut socket,
        json!({ "id": "1", "type": "subscribe", "payload": endless }),
    )
    .await;
    loop {
        let message = receive(&mut socket).await;
        if message.get("close").is_some() {
            assert_eq!(message, json!({ "close": 4409 }));
            break;
        }
    }
    // Closing the socket ended both subscriptions.
    wait_for(|| metric(&running.gateway, "graphfleet_subscriptions_open") == 0.0).await;
}
