//! A graphql-transport-ws client for the tests: frames over tokio-tungstenite, the
//! handshake in the protocol's types and the rest raw, so the tests see exactly what
//! the gateway sends (close codes included).

use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{ClientMessage, SUBPROTOCOL, ServerMessage};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The upgrade request to `url` offering `protocol`.
pub fn request(
    url: &str,
    protocol: &str,
) -> tokio_tungstenite::tungstenite::handshake::client::Request {
    let mut request = url.into_client_request().expect("a WebSocket URL");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        protocol.parse().expect("a header value"),
    );
    request
}

/// Open a socket offering `protocol`; the handshake's error as text if refused.
pub async fn connect(url: &str, protocol: &str) -> Result<Socket, String> {
    tokio_tungstenite::connect_async(request(url, protocol))
        .await
        .map(|(socket, _)| socket)
        .map_err(|e| e.to_string())
}

/// A socket past `connection_init` / `connection_ack`.
pub async fn initialised(url: &str) -> Socket {
    let mut socket = connect(url, SUBPROTOCOL)
        .await
        .expect("the upgrade succeeds");
    send_message(
        &mut socket,
        &ClientMessage::ConnectionInit { payload: None },
    )
    .await;
    let ack = receive(&mut socket).await.to_string();
    assert_eq!(
        ServerMessage::decode(&ack).expect("a graphql-transport-ws message"),
        ServerMessage::ConnectionAck { payload: None },
        "{ack}"
    );
    socket
}

/// Send one protocol message.
pub async fn send_message<S>(
    socket: &mut tokio_tungstenite::WebSocketStream<S>,
    message: &ClientMessage<'_>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    socket
        .send(Message::text(message.encode()))
        .await
        .expect("send a message");
}

pub async fn send<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>, message: Value)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    socket
        .send(Message::text(message.to_string()))
        .await
        .expect("send a message");
}

/// The next text message as JSON, or the close frame's code as `{"close": code}`
/// (`"dropped"` when the connection ended without one).
pub async fn receive<S>(socket: &mut tokio_tungstenite::WebSocketStream<S>) -> Value
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let message = tokio::time::timeout(Duration::from_secs(15), socket.next())
            .await
            .expect("a message within 15 s");
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
