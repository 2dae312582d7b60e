//! GraphQL over WebSocket, the `graphql-transport-ws` protocol (the graphql-ws
//! library's): `connection_init` within `subscriptions.init_timeout`, then any number of
//! operations (`subscribe` … `next`* `complete`), each in a task of its own. Protocol
//! violations close the socket with the protocol's codes (4400 invalid message, 4401
//! subscribe before ack, 4408 init timeout, 4409 duplicate id, 4429 second init).

use super::multipart::HandlerBody;
use super::stream::errors_payload;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::request::{GraphQLRequest, RequestMeta};
use crate::pipeline::respond::Outcome;
use crate::subscription::{Next, Undelivered};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{
    ClientMessage, Close, RawJson, SUBPROTOCOL, ServerMessage, offers_subprotocol,
};
use hyper::header::{
    CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};

/// Messages queued for the socket's writer; a full queue makes operations wait.
const OUTBOX: usize = 64;

/// Whether `req` asks to become a WebSocket.
pub(super) fn is_upgrade<B>(req: &Request<B>) -> bool {
    let has = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    req.method() == hyper::Method::GET && has(UPGRADE, "websocket") && has(CONNECTION, "upgrade")
}

fn refuse(status: StatusCode, message: &str) -> Response<HandlerBody> {
    let body = serde_json::to_vec(&serde_json::json!({ "errors": [{ "message": message }] }))
        .expect("static JSON serializes");
    let mut r = Response::new(HandlerBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// Answer the upgrade (101) and serve the socket in a task once hyper hands it over;
/// `meta` (headers for subgraphs, claims, client address) is taken from the upgrade
/// request and holds for every operation on the socket.
pub(super) fn upgrade<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    mut req: Request<hyper::body::Incoming>,
    meta: RequestMeta,
) -> Response<HandlerBody> {
    let headers = req.headers();
    if headers.get(SEC_WEBSOCKET_VERSION).is_none_or(|v| v != "13") {
        return refuse(StatusCode::BAD_REQUEST, "Sec-WebSocket-Version must be 13");
    }
    let Some(key) = headers.get(SEC_WEBSOCKET_KEY) else {
        return refuse(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key is missing");
    };
    let speaks = headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .any(|v| v.to_str().is_ok_and(offers_subprotocol));
    if !speaks {
        return refuse(
            StatusCode::BAD_REQUEST,
            "the WebSocket subprotocol must be graphql-transport-ws",
        );
    }
    let slot = match gateway.admit_socket(meta.client) {
        Ok(slot) => slot,
        Err(message) => return refuse(StatusCode::TOO_MANY_REQUESTS, &message),
    };
    let accept = derive_accept_key(key.as_bytes());
    // Client messages are small: a 4 KiB read buffer instead of tungstenite's eager
    // 128 KiB keeps an open subscription cheap; a message is a request, so it is held
    // to the request body limit.
    let max = gateway.config.limits.max_body_bytes;
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let upgraded = hyper::upgrade::on(&mut req);
    let gateway = gateway.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let Ok(upgraded) = upgraded.await else { return };
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        serve_socket(gateway, socket, meta).await;
    });
    let mut r = Response::new(HandlerBody::default());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = r.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).expect("base64 is a header value"),
    );
    headers.insert(
        SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(SUBPROTOCOL),
    );
    r
}

/// Serve an accepted WebSocket (`graphql-transport-ws`) until it closes: what
/// [`upgrade`] runs once hyper hands the connection over; public for the fuzz target,
/// which drives it over an in-memory stream.
pub async fn serve_socket<T, S>(
    gateway: Arc<Gateway<T>>,
    socket: WebSocketStream<S>,
    meta: RequestMeta,
) where
    T: Transport,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    Connection::new(gateway, meta).run(socket).await;
}

struct Connection<T: Transport> {
    gateway: Arc<Gateway<T>>,
    meta: Arc<RequestMeta>,
    acked: bool,
    /// Operations running, by id.
    ops: Arc<Mutex<FxHashMap<String, tokio::task::AbortHandle>>>,
}

impl<T: Transport> Connection<T> {
    fn new(gateway: Arc<Gateway<T>>, meta: RequestMeta) -> Self {
        Self {
            gateway,
            meta: Arc::new(meta),
            acked: false,
            ops: Arc::default(),
        }
    }

    async fn run<S>(mut self, socket: WebSocketStream<S>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sink, mut stream) = socket.split();
        let (outbox, mut pending) = mpsc::channel::<Message>(OUTBOX);
        let send_timeout = self.gateway.config.subscriptions.send_timeout;
        let writer = tokio::spawn(async move {
            while let Some(message) = pending.recv().await {
                let closing = matches!(message, Message::Close(_));
                // A client that does not take a message in time is cut off: dropping
                // `pending` fails every send to it, and the reader stops too.
                let sent = tokio::time::timeout(send_timeout, sink.send(message)).await;
                if !matches!(sent, Ok(Ok(()))) || closing {
                    break;
                }
            }
            drop(pending);
            let _ = tokio::time::timeout(send_timeout, sink.close()).await;
        });
        let config = &self.gateway.config.subscriptions;
        let init_deadline = tokio::time::Instant::now() + config.init_timeout;
        let mut shutdown = self.gateway.subscriptions_shutdown();
        let close = loop {
            let message = tokio::select! {
                m = stream.next() => m,
                () = tokio::time::sleep_until(init_deadline), if !self.acked => {
                    break Some(Close::initialisation_timeout());
                }
                // The writer gave up on the client.
                () = outbox.closed() => break None,
                () = shutdown.wait() => {
                    // Operations send their last message first (they end on the same signal).
                    self.drain_ops().await;
                    break Some(Close::going_away("the gateway is shutting down"));
                }
            };
            let text = match message {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break None,
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Binary(_))) => {
                    break Some(Close::bad_request(
                        "binary messages are not part of the protocol",
                    ));
                }
                Some(Ok(_)) => continue,
            };
            if let Err(close) = self.on_message(text.as_str(), &outbox).await {
                break Some(close);
            }
        };
        for (_, op) in self.ops.lock().drain() {
            op.abort();
        }
        if let Some(close) = close {
            let frame = CloseFrame {
                code: CloseCode::from(u16::from(close.code)),
                reason: close.reason.into_owned().into(),
            };
            let _ = outbox.send(Message::Close(Some(frame))).await;
        }
        drop(outbox);
        let _ = writer.await;
    }

    /// Give running operations a moment to send their last messages.
    async fn drain_ops(&self) {
        let until = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
        while !self.ops.lock().is_empty() && tokio::time::Instant::now() < until {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    async fn on_message(
        &mut self,
        text: &str,
        outbox: &mpsc::Sender<Message>,
    ) -> Result<(), Close> {
        match ClientMessage::decode(text).map_err(Close::bad_request)? {
            ClientMessage::ConnectionInit { .. } => {
                if std::mem::replace(&mut self.acked, true) {
                    return Err(Close::too_many_initialisation_requests());
                }
                let ack = ServerMessage::ConnectionAck { payload: None };
                let _ = outbox.send(frame(&ack)).await;
            }
            ClientMessage::Ping { .. } => {
                let _ = outbox
                    .send(frame(&ServerMessage::Pong { payload: None }))
                    .await;
            }
            ClientMessage::Pong { .. } => {}
            ClientMessage::Subscribe { id, payload } => {
                if !self.acked {
                    return Err(Close::unauthorized());
                }
                let request: GraphQLRequest = serde_json::from_str(payload.get())
                    .map_err(|e| Close::bad_request(format_args!("subscribe payload: {e}")))?;
                self.start(id.into_owned(), request, outbox)?;
            }
            ClientMessage::Complete { id } => {
                if let Some(op) = self.ops.lock().remove(&*id) {
                    op.abort();
                }
            }
        }
        Ok(())
    }

    /// Run operation `id` in a task of its own.
    fn start(
        &self,
        id: String,
        request: GraphQLRequest,
        outbox: &mpsc::Sender<Message>,
    ) -> Result<(), Close> {
        let mut ops = self.ops.lock();
        if ops.contains_key(&id) {
            return Err(Close::subscriber_already_exists(&id));
        }
        let max = self.gateway.config.subscriptions.max_per_connection;
        let outbox = outbox.clone();
        if ops.len() >= max {
            let errors = crate::subscription::errors(
                crate::subscription::LIMIT,
                &format!(
                    "this connection has {max} operations running, its limit \
                     (subscriptions.max_per_connection)"
                ),
            );
            // Queued without waiting and without a task: a client flooding refused
            // subscribes while not reading fills its outbox and is disconnected.
            return match outbox.try_send(error_message(&id, &errors)) {
                Err(mpsc::error::TrySendError::Full(_)) => Err(Close::not_reading()),
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            };
        }
        let (gateway, meta, registry) = (self.gateway.clone(), self.meta.clone(), self.ops.clone());
        let op_id = id.clone();
        let task = tokio::spawn(async move {
            operation(&gateway, &meta, &op_id, request, &outbox).await;
            registry.lock().remove(&op_id);
        });
        ops.insert(id, task.abort_handle());
        Ok(())
    }
}

/// Execute one operation and send its results on `outbox`.
async fn operation<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    meta: &RequestMeta,
    id: &str,
    request: GraphQLRequest,
    outbox: &mpsc::Sender<Message>,
) {
    // Held to `traffic.max_concurrent_requests` like HTTP requests (a subscription only
    // while it starts).
    let Ok(slot) = gateway.request_slots.try_acquire() else {
        let max = gateway.config.traffic.max_concurrent_requests;
        let errors = crate::subscription::errors(
            "TOO_MANY_CONCURRENT_REQUESTS",
            &format!("the gateway is working on {max} requests, its limit; retry shortly"),
        );
        let _ = outbox.send(error_message(id, &errors)).await;
        return;
    };
    if let Err((code, message)) = gateway.admit_memory() {
        let errors = crate::subscription::errors(code, &message);
        let _ = outbox.send(error_message(id, &errors)).await;
        return;
    }
    let timeout = gateway.config.traffic.request_timeout;
    let executed = tokio::time::timeout(timeout, gateway.execute_shared(&request, meta)).await;
    drop(slot);
    let Ok(outcome) = executed else {
        let errors = crate::subscription::errors(
            "GATEWAY_TIMEOUT",
            &format!("the request did not complete within {timeout:?}"),
        );
        let _ = outbox.send(error_message(id, &errors)).await;
        return;
    };
    let mut subscription = match outcome {
        Outcome::Subscribed(s) => s,
        Outcome::Refused(error) => {
            let _ = outbox
                .send(error_message(id, &errors_of(error.body())))
                .await;
            return;
        }
        other => {
            let body = other.into_body();
            let _ = outbox.send(next_message(id, &body)).await;
            let _ = outbox.send(complete_message(id)).await;
            return;
        }
    };
    loop {
        let next = subscription.next().await;
        let next = match next {
            Some(Next::Event(body)) => {
                match subscription.deliver(outbox, next_message(id, &body)).await {
                    Ok(()) => continue,
                    Err(Undelivered::Gone) => return,
                    Err(Undelivered::Cut(errors)) => Some(Next::Failed(errors)),
                }
            }
            other => other,
        };
        // Ended: its place in the limits is freed before the last messages wait for a
        // slow client.
        drop(subscription);
        if let Some(Next::Failed(errors)) = next {
            let _ = outbox
                .send(next_message(id, &errors_payload(&errors)))
                .await;
        }
        let _ = outbox.send(complete_message(id)).await;
        return;
    }
}

/// The `errors` array of a request error body.
fn errors_of(body: &[u8]) -> Bytes {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        errors: &'a serde_json::value::RawValue,
    }
    match serde_json::from_slice::<Body<'_>>(body) {
        Ok(b) => Bytes::copy_from_slice(b.errors.get().as_bytes()),
        Err(_) => crate::subscription::errors("INTERNAL_SERVER_ERROR", "the request failed"),
    }
}

fn frame(message: &ServerMessage<'_>) -> Message {
    Message::text(message.encode())
}

/// A body as JSON text: the gateway's are UTF-8 JSON, so this borrows (a bad byte would
/// be replaced rather than lose the message).
fn json_text(body: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(body)
}

/// A result, copied once into its frame (never re-serialized).
fn next_message(id: &str, payload: &[u8]) -> Message {
    let payload = json_text(payload);
    frame(&ServerMessage::Next {
        id: id.into(),
        payload: RawJson::trusted(&payload),
    })
}

fn error_message(id: &str, errors: &[u8]) -> Message {
    let errors = json_text(errors);
    frame(&ServerMessage::Error {
        id: id.into(),
        payload: RawJson::trusted(&errors),
    })
}

fn complete_message(id: &str) -> Message {
    frame(&ServerMessage::Complete { id: id.into() })
}
