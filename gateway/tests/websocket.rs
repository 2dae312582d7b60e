//! GraphQL over WebSocket (`graphql-transport-ws`) from clients: queries run over the
//! socket like over HTTP, and every protocol violation closes it with the protocol's
//! close code, as the graphql-ws library's own server does. The gateway is in front of
//! the real `fed` subgraph servers.

mod support;

use futures::SinkExt;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::time::Duration;
use support::ws::{connect, initialised, receive, send};
use tokio_tungstenite::tungstenite::Message;

/// The gateway in front of the fed subgraphs; its `ws://` and `http://` GraphQL URLs.
async fn gateway(config: Config) -> (graphfleet_bench_subgraphs::Handle, String, String) {
    gateway_delayed(config, &[]).await
}

async fn gateway_delayed(
    config: Config,
    delays: &[(&str, Duration)],
) -> (graphfleet_bench_subgraphs::Handle, String, String) {
    let subgraphs = support::fed::subgraphs(delays).await;
    let sdl = graphfleet_bench_model::Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    let http = support::start_gateway_with_config(config, supergraph).await;
    let ws = http.replacen("http://", "ws://", 1);
    (subgraphs, ws, http)
}

#[tokio::test]
async fn a_query_over_the_socket_answers_like_http() {
    let (_subgraphs, ws, http) = gateway(Config::default()).await;
    let query = "{ topProducts { upc name price inStock reviews { body author { username } } } }";
    let mut socket = initialised(&ws).await;
    send(
        &mut socket,
        json!({ "id": "q1", "type": "subscribe", "payload": { "query": query } }),
    )
    .await;
    let next = receive(&mut socket).await;
    assert_eq!(next["type"], "next", "{next}");
    assert_eq!(next["id"], "q1");
    assert_eq!(
        receive(&mut socket).await,
        json!({ "id": "q1", "type": "complete" })
    );
    let client = support::client();
    let (_, body) = support::fed::try_post(&client, &http, query)
        .await
        .expect("the same query over HTTP");
    let over_http: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(next["payload"], over_http);
    assert!(
        over_http["data"]["topProducts"][0]["reviews"].is_array(),
        "{over_http}"
    );
    // Ping is answered with pong, and the socket stays usable.
    send(&mut socket, json!({ "type": "ping" })).await;
    assert_eq!(receive(&mut socket).await, json!({ "type": "pong" }));
}

#[tokio::test]
async fn a_request_error_is_an_error_message_for_that_operation() {
    let (_subgraphs, ws, _) = gateway(Config::default()).await;
    let mut socket = initialised(&ws).await;
    send(
        &mut socket,
        json!({ "id": "bad", "type": "subscribe", "payload": { "query": "{ nope }" } }),
    )
    .await;
    let error = receive(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["id"], "bad");
    let message = error["payload"][0]["message"].as_str().expect("a message");
    assert!(message.contains("nope"), "{message}");
    // The connection stays open for the next operation.
    send(
        &mut socket,
        json!({ "id": "ok", "type": "subscribe", "payload": { "query": "{ __typename }" } }),
    )
    .await;
    let next = receive(&mut socket).await;
    assert_eq!(
        next["payload"],
        json!({ "data": { "__typename": "Query" } })
    );
}

#[tokio::test]
async fn protocol_violations_close_with_the_protocols_codes() {
    let config = Config {
        subscriptions: graphfleet_gateway::config::SubscriptionsConfig {
            init_timeout: Duration::from_millis(300),
            ..Default::default()
        },
        ..Config::default()
    };
    let (_subgraphs, ws, _) = gateway(config).await;

    // Another subprotocol: the upgrade is refused.
    let refused = connect(&ws, "mqtt").await.expect_err("refused");
    assert!(refused.contains("400"), "{refused}");

    // subscribe before connection_ack: 4401.
    let mut socket = connect(&ws, "graphql-transport-ws").await.expect("upgrade");
    let subscribe =
        json!({ "id": "1", "type": "subscribe", "payload": { "query": "{ __typename }" } });
    send(&mut socket, subscribe.clone()).await;
    assert_eq!(receive(&mut socket).await, json!({ "close": 4401 }));

    // A second connection_init: 4429.
    let mut socket = initialised(&ws).await;
    send(&mut socket, json!({ "type": "connection_init" })).await;
    assert_eq!(receive(&mut socket).await, json!({ "close": 4429 }));

    // Not JSON, an unknown type, a subscribe without id: 4400.
    for bad in [
        Message::text("{not json"),
        Message::text(r#"{"type":"hello"}"#),
        Message::text(r#"{"type":"subscribe","payload":{"query":"{ __typename }"}}"#),
    ] {
        let mut socket = initialised(&ws).await;
        socket.send(bad).await.expect("send");
        assert_eq!(receive(&mut socket).await, json!({ "close": 4400 }));
    }

    // No connection_init within subscriptions.init_timeout: 4408.
    let mut socket = connect(&ws, "graphql-transport-ws").await.expect("upgrade");
    assert_eq!(receive(&mut socket).await, json!({ "close": 4408 }));
}

#[tokio::test]
async fn a_client_holds_at_most_its_share_of_websocket_connections() {
    let config = Config {
        subscriptions: graphfleet_gateway::config::SubscriptionsConfig {
            max_connections_per_client: 2,
            ..Default::default()
        },
        ..Config::default()
    };
    let (_subgraphs, ws, _) = gateway(config).await;
    let first = initialised(&ws).await;
    let _second = initialised(&ws).await;
    let refused = connect(&ws, "graphql-transport-ws")
        .await
        .expect_err("a third is refused");
    assert!(refused.contains("429"), "{refused}");
    // Closing one frees its place.
    drop(first);
    let mut again = None;
    for _ in 0..100 {
        if let Ok(socket) = connect(&ws, "graphql-transport-ws").await {
            again = Some(socket);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        again.is_some(),
        "the place of a closed connection was not freed"
    );
}

#[tokio::test]
async fn with_cors_configured_only_its_origins_open_websockets() {
    let mut config = Config::default();
    config.cors.allow_origins = vec!["https://app.example.com".to_owned()];
    let (_subgraphs, ws, _) = gateway(config).await;
    let with_origin = |origin: &str| {
        let mut request = support::ws::request(&ws, "graphql-transport-ws");
        let headers = request.headers_mut();
        headers.insert("origin", origin.parse().expect("header value"));
        request
    };
    let refused = tokio_tungstenite::connect_async(with_origin("https://evil.example"))
        .await
        .expect_err("another origin is refused");
    assert!(refused.to_string().contains("403"), "{refused}");
    tokio_tungstenite::connect_async(with_origin("https://app.example.com"))
        .await
        .expect("an allowed origin connects");
    // Non-browser clients send no Origin.
    initialised(&ws).await;
}

#[tokio::test]
async fn an_operation_over_the_socket_is_held_to_the_request_timeout() {
    let mut config = Config::default();
    config.traffic.request_timeout = Duration::from_millis(300);
    let slow = [("products", Duration::from_secs(3))];
    let (_subgraphs, ws, _) = gateway_delayed(config, &slow).await;
    let mut socket = initialised(&ws).await;
    let query = "{ topProducts { name } }";
    send(
        &mut socket,
        json!({ "id": "slow", "type": "subscribe", "payload": { "query": query } }),
    )
    .await;
    let error = receive(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(
        error["payload"][0]["extensions"]["code"], "GATEWAY_TIMEOUT",
        "{error}"
    );
}

#[tokio::test]
async fn a_client_flooding_subscribes_without_reading_is_disconnected() {
    // One operation per connection: every further subscribe is refused with an error
    // message the client never reads. The refusals fill its outbox; then the gateway
    // stops reading it and, the client still not reading, cuts it off.
    let config = Config {
        subscriptions: graphfleet_gateway::config::SubscriptionsConfig {
            max_per_connection: 1,
            send_timeout: Duration::from_secs(1),
            ..Default::default()
        },
        ..Config::default()
    };
    let (_subgraphs, ws, http) = gateway(config).await;
    let mut socket = initialised(&ws).await;
    let subscribe = |id: usize| {
        Message::text(
            json!({"id": id.to_string(), "type": "subscribe",
                   "payload": {"query": "subscription { reviewAdded { id body } }"}})
            .to_string(),
        )
    };
    let flood = tokio::time::timeout(Duration::from_secs(30), async {
        for id in 0..1_000_000usize {
            if socket.send(subscribe(id)).await.is_err() {
                return id;
            }
        }
        1_000_000
    })
    .await
    .expect("the gateway cut the flood off within 30 s");
    assert!(flood < 1_000_000, "all {flood} subscribes were taken");
    // The gateway serves other clients.
    let client = support::client();
    let (status, body) = support::fed::try_post(&client, &http, "{ topProducts { upc } }")
        .await
        .expect("an HTTP answer");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let mut fresh = initialised(&ws).await;
    send(
        &mut fresh,
        json!({"id": "1", "type": "subscribe", "payload": {"query": "{ topProducts { upc } }"}}),
    )
    .await;
    let next: Value = receive(&mut fresh).await;
    assert_eq!(next["type"], "next", "{next}");
}

/// Opens a socket whose upgrade says it was forwarded for `client`.
async fn connect_for(ws: &str, client: &str) -> Result<support::ws::Socket, String> {
    let mut request = support::ws::request(ws, "graphql-transport-ws");
    let headers = request.headers_mut();
    headers.insert("x-forwarded-for", client.parse().expect("header value"));
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
        .map_err(|e| e.to_string())
}

/// Behind a trusted proxy (the test's own 127.0.0.1) each client named in
/// `X-Forwarded-For` has its own WebSocket quota; from an untrusted peer the header is
/// the client's word and ignored: every socket counts against the peer.
#[tokio::test]
async fn clients_behind_a_trusted_proxy_get_their_own_quota() {
    let config = |trusted: &str| {
        let mut config = Config::default();
        config.subscriptions.max_connections_per_client = 1;
        config.traffic.trusted_proxies = vec![trusted.to_owned()];
        config
    };
    let (_subgraphs, ws, _) = gateway(config("127.0.0.1")).await;
    let _a = connect_for(&ws, "203.0.113.1").await.expect("client A");
    let refused = connect_for(&ws, "198.51.100.7, 203.0.113.1")
        .await
        .expect_err("A's second socket is refused, whatever A wrote before it");
    assert!(refused.contains("429"), "{refused}");
    let _b = connect_for(&ws, "203.0.113.2")
        .await
        .expect("client B has its own quota");

    let (_subgraphs, ws, _) = gateway(config("10.0.0.0/8")).await;
    let _a = connect_for(&ws, "203.0.113.1")
        .await
        .expect("the peer's first");
    let refused = connect_for(&ws, "203.0.113.2")
        .await
        .expect_err("an untrusted peer's X-Forwarded-For is ignored");
    assert!(refused.contains("429"), "{refused}");
}

/// The next message over the legacy protocol that is not a `ka` keep-alive.
async fn receive_legacy<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let message = receive(socket).await;
        if message != json!({ "type": "ka" }) {
            return message;
        }
    }
}

#[tokio::test]
async fn the_legacy_graphql_ws_protocol_starts_stops_and_keeps_alive() {
    let config = Config {
        subscriptions: graphfleet_gateway::config::SubscriptionsConfig {
            ping_interval: Some(Duration::from_millis(200)),
            ..Default::default()
        },
        ..Config::default()
    };
    let (_subgraphs, ws, _) = gateway(config).await;
    let mut socket = connect(&ws, "graphql-ws")
        .await
        .expect("the legacy protocol is agreed");
    send(
        &mut socket,
        json!({ "type": "connection_init", "payload": {} }),
    )
    .await;
    assert_eq!(
        receive(&mut socket).await,
        json!({ "type": "connection_ack" })
    );
    // A keep-alive right after the ack, then one per ping interval.
    assert_eq!(receive(&mut socket).await, json!({ "type": "ka" }));
    assert_eq!(receive(&mut socket).await, json!({ "type": "ka" }));

    // A query: data, then complete.
    let query = json!({ "id": "q", "type": "start", "payload": { "query": "{ __typename }" } });
    send(&mut socket, query).await;
    assert_eq!(
        receive_legacy(&mut socket).await,
        json!({ "type": "data", "id": "q", "payload": { "data": { "__typename": "Query" } } })
    );
    assert_eq!(
        receive_legacy(&mut socket).await,
        json!({ "type": "complete", "id": "q" })
    );

    // A request error: an error message for that operation; the socket stays open.
    let bad = json!({ "id": "bad", "type": "start", "payload": { "query": "{ nope }" } });
    send(&mut socket, bad).await;
    let error = receive_legacy(&mut socket).await;
    assert_eq!(
        (&error["type"], &error["id"]),
        (&json!("error"), &json!("bad")),
        "{error}"
    );
    let message = error["payload"][0]["message"].as_str().expect("a message");
    assert!(message.contains("nope"), "{message}");

    // A subscription: data until the client stops it, then complete.
    let endless = "subscription { reviewAdded { id } }";
    let start = json!({ "id": "s", "type": "start", "payload": { "query": endless } });
    send(&mut socket, start).await;
    let data = receive_legacy(&mut socket).await;
    assert_eq!(
        (&data["type"], &data["id"]),
        (&json!("data"), &json!("s")),
        "{data}"
    );
    assert!(
        data["payload"]["data"]["reviewAdded"]["id"].is_string(),
        "{data}"
    );
    send(&mut socket, json!({ "id": "s", "type": "stop" })).await;
    loop {
        let message = receive_legacy(&mut socket).await;
        if message["type"] == "data" {
            continue; // sent before the stop was read
        }
        assert_eq!(message, json!({ "type": "complete", "id": "s" }));
        break;
    }

    // graphql-transport-ws's messages are not this protocol's: 4400.
    let subscribe = json!({ "id": "x", "type": "subscribe", "payload": { "query": "{ a }" } });
    send(&mut socket, subscribe).await;
    assert_eq!(receive_legacy(&mut socket).await, json!({ "close": 4400 }));

    // start before connection_init: 4401; connection_terminate: a normal close.
    let mut socket = connect(&ws, "graphql-ws").await.expect("upgrade");
    let early = json!({ "id": "1", "type": "start", "payload": { "query": "{ __typename }" } });
    send(&mut socket, early).await;
    assert_eq!(receive(&mut socket).await, json!({ "close": 4401 }));
    let mut socket = connect(&ws, "graphql-ws").await.expect("upgrade");
    send(&mut socket, json!({ "type": "connection_init" })).await;
    assert_eq!(
        receive(&mut socket).await,
        json!({ "type": "connection_ack" })
    );
    send(&mut socket, json!({ "type": "connection_terminate" })).await;
    assert_eq!(receive_legacy(&mut socket).await, json!({ "close": 1000 }));
}
