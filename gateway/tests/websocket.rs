//! GraphQL over WebSocket (`graphql-transport-ws`) from clients: queries run over the
//! socket like over HTTP, and every protocol violation closes it with the protocol's
//! close code, as the graphql-ws library's own server does. The gateway is in front of
//! the real `fed` subgraph servers.

mod support;

use futures::{SinkExt, StreamExt};
use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The gateway in front of the fed subgraphs; its `ws://` and `http://` GraphQL URLs.
async fn gateway(config: Config) -> (graphfleet_loadtest::Handle, String, String) {
    let subgraphs = support::fed::subgraphs(&[]).await;
    let sdl = graphfleet_loadtest::Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(graphfleet_gateway::http::serve(
        listener,
        Arc::new(Gateway::with_config(Arc::new(config), supergraph)),
    ));
    (
        subgraphs,
        format!("ws://{addr}/graphql"),
        format!("http://{addr}/graphql"),
    )
}

async fn connect(url: &str, protocol: &str) -> Result<Socket, String> {
    let mut request = url.into_client_request().expect("a WebSocket URL");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        protocol.parse().expect("a header value"),
    );
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
        .map_err(|e| e.to_string())
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::text(message.to_string()))
        .await
        .expect("send a message");
}

/// The next text message as JSON, or the close frame's code as `{"close": code}`.
async fn receive(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a message within 10 s");
        match message {
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str(text.as_str()).expect("messages are JSON");
            }
            Some(Ok(Message::Close(frame))) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                return json!({ "close": code });
            }
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => return json!({ "close": "dropped" }),
        }
    }
}

async fn initialised(url: &str) -> Socket {
    let mut socket = connect(url, "graphql-transport-ws")
        .await
        .expect("the upgrade succeeds");
    send(&mut socket, json!({ "type": "connection_init" })).await;
    assert_eq!(receive(&mut socket).await["type"], "connection_ack");
    socket
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
    let refused = connect(&ws, "graphql-ws").await.expect_err("refused");
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
