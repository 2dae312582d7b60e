//! Subscriptions to subgraphs: the subscription fetch of a plan is sent once, over
//! WebSocket (`graphql-transport-ws`) or GraphQL over SSE (distinct connections mode),
//! and each event the subgraph sends is handed on as its `{"data":…,"errors":…}` bytes.
//! One task per subscription owns the connection; dropping [`Events`] ends it (a
//! `complete` message and a close frame over WebSocket, the stream dropped over SSE).

use crate::error::FetchError;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{ClientMessage, RawJson, SUBPROTOCOL, ServerMessage};
use http::HeaderMap;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

/// How a subgraph is subscribed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `graphql-transport-ws` (the graphql-ws library's protocol).
    #[default]
    WebSocket,
    /// GraphQL over Server-Sent Events, distinct connections mode.
    Sse,
}

/// Where and how to subscribe to one subgraph.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub protocol: Protocol,
    /// `ws://`/`wss://` for WebSocket, `http://`/`https://` for SSE.
    pub url: String,
    /// Forwarded with the upgrade (WebSocket) or the request (SSE).
    pub headers: HeaderMap,
    /// The `connection_init` payload over WebSocket (a JSON object's text: the keys of
    /// the client's own `connection_init` the gateway forwards); `None`: no payload.
    pub init_payload: Option<std::sync::Arc<str>>,
    /// Longest wait for the connection and, over WebSocket, its `connection_ack`.
    pub connect_timeout: Duration,
    /// Events read ahead of the consumer; a full buffer makes the subgraph wait.
    pub buffer: usize,
}

/// `extensions.code` of an error on the subscription's own connection.
pub const UPSTREAM_ERROR: &str = "SUBSCRIPTION_UPSTREAM_ERROR";

fn upstream_error(message: impl Into<String>) -> FetchError {
    FetchError {
        code: UPSTREAM_ERROR,
        message: message.into(),
    }
}

/// The events of one subscription to a subgraph, until it completes (`None`) or fails.
#[derive(Debug)]
pub struct Events {
    rx: mpsc::Receiver<Result<Bytes, FetchError>>,
}

impl Events {
    /// The next event's `{"data":…,"errors":…}`; `None` once the subgraph completed.
    /// An error ends the stream.
    pub async fn next(&mut self) -> Option<Result<Bytes, FetchError>> {
        self.rx.recv().await
    }
}

/// Subscribe to `upstream` with `body` (`{"query":"subscription …","variables":…}`);
/// answers once the subgraph accepted the connection (and, over WebSocket, acknowledged
/// it), so a refused subscription is an error here rather than an empty stream.
pub async fn subscribe(upstream: &Upstream, body: Bytes) -> Result<Events, FetchError> {
    let (tx, rx) = mpsc::channel(upstream.buffer.max(1));
    let connecting = async {
        match upstream.protocol {
            Protocol::WebSocket => {
                let socket = ws_connect(upstream).await?;
                let task = ws_run(socket, body, tx);
                tokio::spawn(task);
            }
            Protocol::Sse => {
                let response = sse_connect(upstream, body).await?;
                tokio::spawn(sse_run(response, tx));
            }
        }
        Ok::<_, FetchError>(())
    };
    match tokio::time::timeout(upstream.connect_timeout, connecting).await {
        Ok(Ok(())) => Ok(Events { rx }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(FetchError {
            code: FetchError::TIMEOUT,
            message: format!(
                "the subgraph did not accept the subscription within {:?}",
                upstream.connect_timeout
            ),
        }),
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The id of the one operation each connection carries.
const ID: &str = "1";

fn client_frame(message: &ClientMessage<'_>) -> Message {
    Message::text(message.encode())
}

fn pong() -> Message {
    client_frame(&ClientMessage::Pong { payload: None })
}

/// Open the socket and complete the `connection_init`/`connection_ack` exchange.
async fn ws_connect(upstream: &Upstream) -> Result<Socket, FetchError> {
    let mut request = upstream
        .url
        .as_str()
        .into_client_request()
        .map_err(|e| upstream_error(format!("bad WebSocket URL {}: {e}", upstream.url)))?;
    for (name, value) in &upstream.headers {
        request.headers_mut().append(name, value.clone());
    }
    request.headers_mut().insert(
        http::header::SEC_WEBSOCKET_PROTOCOL,
        http::HeaderValue::from_static(SUBPROTOCOL),
    );
    let connector = tokio_tungstenite::Connector::Rustls(tls_config());
    // A small first read buffer (it grows for big events) instead of an eager 128 KiB
    // per open subscription.
    let config =
        tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default().read_buffer_size(4096);
    let (mut socket, response) = tokio_tungstenite::connect_async_tls_with_config(
        request,
        Some(config),
        true,
        Some(connector),
    )
    .await
    .map_err(|e| upstream_error(format!("WebSocket connection failed: {e}")))?;
    let agreed = response
        .headers()
        .get(http::header::SEC_WEBSOCKET_PROTOCOL)
        .is_some_and(|p| p == SUBPROTOCOL);
    if !agreed {
        return Err(upstream_error(format!(
            "the subgraph did not agree to the {SUBPROTOCOL} subprotocol"
        )));
    }
    socket
        .send(client_frame(&ClientMessage::ConnectionInit {
            // Built by the gateway from a parsed object: JSON as written.
            payload: upstream.init_payload.as_deref().map(RawJson::trusted),
        }))
        .await
        .map_err(|e| upstream_error(format!("sending connection_init: {e}")))?;
    loop {
        let message = socket
            .next()
            .await
            .ok_or_else(|| upstream_error("the subgraph closed the socket before connection_ack"))?
            .map_err(|e| upstream_error(format!("waiting for connection_ack: {e}")))?;
        let text = match message {
            Message::Text(text) => text,
            Message::Close(frame) => {
                return Err(upstream_error(format!(
                    "the subgraph closed the socket before connection_ack: {}",
                    close_reason(frame.as_ref())
                )));
            }
            _ => continue,
        };
        let parsed = ServerMessage::decode(&text)
            .map_err(|e| upstream_error(format!("invalid message from the subgraph: {e}")))?;
        match parsed {
            ServerMessage::ConnectionAck { .. } => return Ok(socket),
            ServerMessage::Ping { .. } => {
                let _ = socket.send(pong()).await;
            }
            ServerMessage::Pong { .. } => {}
            other => {
                return Err(upstream_error(format!(
                    "expected connection_ack from the subgraph, got {:?}",
                    other.kind()
                )));
            }
        }
    }
}

fn close_reason(frame: Option<&CloseFrame>) -> String {
    frame.map_or_else(
        || "no close frame".to_owned(),
        |f| format!("{} {}", u16::from(f.code), f.reason),
    )
}

/// Subscribe over `socket` and forward its events until the subgraph completes, the
/// connection fails, or the receiver is dropped (then `complete` and a close frame).
async fn ws_run(mut socket: Socket, body: Bytes, tx: mpsc::Sender<Result<Bytes, FetchError>>) {
    // The planner's request body, already JSON: sent as written.
    let subscribe = std::str::from_utf8(&body)
        .map(|body| {
            client_frame(&ClientMessage::Subscribe {
                id: ID.into(),
                payload: RawJson::trusted(body),
            })
        })
        .map_err(|e| format!("the subscription request is not UTF-8: {e}"));
    let sent = match subscribe {
        Ok(subscribe) => socket.send(subscribe).await.map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        let _ = tx
            .send(Err(upstream_error(format!("sending subscribe: {e}"))))
            .await;
        return;
    }
    loop {
        let message = tokio::select! {
            message = socket.next() => message,
            () = tx.closed() => {
                let _ = socket.send(client_frame(&ClientMessage::Complete { id: ID.into() })).await;
                let _ = socket.close(Some(CloseFrame { code: CloseCode::Normal, reason: "".into() })).await;
                return;
            }
        };
        let outcome = match message {
            None => Some(Err(upstream_error("the subgraph closed the connection"))),
            Some(Err(e)) => Some(Err(upstream_error(format!("WebSocket error: {e}")))),
            Some(Ok(Message::Close(frame))) => Some(Err(upstream_error(format!(
                "the subgraph closed the socket: {}",
                close_reason(frame.as_ref())
            )))),
            Some(Ok(Message::Text(text))) => match ws_message(&text) {
                WsStep::Event(bytes) => {
                    if tx.send(Ok(bytes)).await.is_err() {
                        continue;
                    }
                    None
                }
                WsStep::Ping => {
                    let _ = socket.send(pong()).await;
                    None
                }
                WsStep::Ignore => None,
                WsStep::End(last) => Some(last),
            },
            Some(Ok(_)) => None,
        };
        if let Some(last) = outcome {
            if let Some(last) = last.transpose() {
                let _ = tx.send(last).await;
            }
            let _ = socket.close(None).await;
            return;
        }
    }
}

enum WsStep {
    Event(Bytes),
    Ping,
    Ignore,
    /// The operation is over: completed (`Ok(None)`), with a last event carrying the
    /// subgraph's errors, or broken.
    End(Result<Option<Bytes>, FetchError>),
}

/// What one text message from the subgraph means for the operation.
fn ws_message(text: &str) -> WsStep {
    let parsed = match ServerMessage::decode(text) {
        Ok(p) => p,
        Err(e) => {
            return WsStep::End(Err(upstream_error(format!(
                "invalid message from the subgraph: {e}"
            ))));
        }
    };
    match parsed {
        ServerMessage::Next { id, payload } if id == ID => {
            WsStep::Event(Bytes::copy_from_slice(payload.get().as_bytes()))
        }
        // The operation failed before any result: its errors as a last event.
        ServerMessage::Error { id, payload } if id == ID => {
            let body = format!(r#"{{"data":null,"errors":{}}}"#, payload.get());
            WsStep::End(Ok(Some(Bytes::from(body))))
        }
        ServerMessage::Complete { id } if id == ID => WsStep::End(Ok(None)),
        ServerMessage::Ping { .. } => WsStep::Ping,
        ServerMessage::Pong { .. } => WsStep::Ignore,
        other => WsStep::End(Err(upstream_error(format!(
            "unexpected {:?} message from the subgraph",
            other.kind()
        )))),
    }
}

type SseBody = hyper::body::Incoming;

/// TLS for `wss://` and `https://` subscriptions: the system and webpki roots (client
/// certificates towards subgraphs apply to queries' HTTP pool only, for now).
fn tls_config() -> std::sync::Arc<rustls::ClientConfig> {
    static CONFIG: std::sync::OnceLock<std::sync::Arc<rustls::ClientConfig>> =
        std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(crate::transport::default_roots())
            .with_no_client_auth();
            std::sync::Arc::new(config)
        })
        .clone()
}

/// POST the subscription with `Accept: text/event-stream`; an answer other than a 200
/// event stream is an error.
async fn sse_connect(
    upstream: &Upstream,
    body: Bytes,
) -> Result<http::Response<SseBody>, FetchError> {
    let uri: http::Uri = upstream
        .url
        .parse()
        .map_err(|e| upstream_error(format!("bad subgraph URL {}: {e}", upstream.url)))?;
    let mut request = http::Request::post(uri)
        .body(http_body_util::Full::new(body))
        .map_err(|e| upstream_error(format!("building the SSE request: {e}")))?;
    let headers = request.headers_mut();
    for (name, value) in &upstream.headers {
        headers.append(name, value.clone());
    }
    headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*tls_config()).clone())
        .https_or_http()
        .enable_http1()
        .build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, http_body_util::Full<Bytes>>(connector);
    let response = client
        .request(request)
        .await
        .map_err(|e| upstream_error(format!("SSE request failed: {e}")))?;
    let status = response.status();
    let is_stream = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    if !status.is_success() || !is_stream {
        return Err(upstream_error(format!(
            "the subgraph answered the SSE subscription with HTTP {status} and no event stream"
        )));
    }
    Ok(response)
}

/// Forward `next` events until `complete`, the end of the stream, or the receiver drops.
async fn sse_run(response: http::Response<SseBody>, tx: mpsc::Sender<Result<Bytes, FetchError>>) {
    let mut events = sse_stream::SseStream::new(response.into_body());
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = tx.closed() => return,
        };
        let last = match event {
            None => Err(upstream_error(
                "the subgraph ended the event stream without complete",
            )),
            Some(Err(e)) => Err(upstream_error(format!("reading the event stream: {e}"))),
            Some(Ok(sse)) => match (sse.event.as_deref(), sse.data) {
                (Some("next"), Some(data)) => {
                    if tx.send(Ok(Bytes::from(data))).await.is_err() {
                        return;
                    }
                    continue;
                }
                (Some("complete"), _) => return,
                // Comments and keep-alives carry no event.
                (None, None) => continue,
                (kind, _) => Err(upstream_error(format!(
                    "unexpected event {kind:?} from the subgraph"
                ))),
            },
        };
        let _ = tx.send(last).await;
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::{WsStep, ws_message};

    #[test]
    fn next_hands_on_the_payload_as_written() {
        let step = ws_message(r#"{"id":"1","type":"next","payload":{"data":{"a": 1.50}}}"#);
        let WsStep::Event(bytes) = step else {
            panic!("an event")
        };
        assert_eq!(&bytes[..], br#"{"data":{"a": 1.50}}"#);
    }

    #[test]
    fn error_and_complete_end_the_operation() {
        let step = ws_message(r#"{"id":"1","type":"error","payload":[{"message":"no"}]}"#);
        let WsStep::End(Ok(Some(last))) = step else {
            panic!("a last event")
        };
        assert_eq!(&last[..], br#"{"data":null,"errors":[{"message":"no"}]}"#);
        assert!(matches!(
            ws_message(r#"{"id":"1","type":"complete"}"#),
            WsStep::End(Ok(None))
        ));
        assert!(matches!(
            ws_message(r#"{"id":"2","type":"next","payload":{}}"#),
            WsStep::End(Err(_))
        ));
        assert!(matches!(ws_message("not json"), WsStep::End(Err(_))));
        assert!(matches!(ws_message(r#"{"type":"ping"}"#), WsStep::Ping));
    }
}
