//! GraphQL over WebSocket, the `graphql-transport-ws` subprotocol (graphql-ws's
//! PROTOCOL.md), strict as its reference server: the upgrade is refused without the
//! subprotocol; `connection_init` must come within the init timeout (4408), only once
//! (4429) and before any `subscribe` (4401); a `subscribe` id still in use closes with
//! 4409 and any malformed message with 4400. Every operation type runs over the socket
//! (queries: one `next`, then `complete`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{
    ClientMessage, Close, RawJson, SUBPROTOCOL, ServerMessage, SubscribePayload, offers_subprotocol,
};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    CONNECTION, HeaderValue, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_PROTOCOL,
    SEC_WEBSOCKET_VERSION, UPGRADE,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::streaming::{Started, start, stopped};
use super::{App, Body, error};

/// Client messages above this are refused (close 1009 by tungstenite).
const MAX_MESSAGE: usize = 16 << 20;
/// Initial read buffer per socket (it grows for bigger messages).
const READ_BUFFER: usize = 4 << 10;
/// Results queued per socket; a slow reader holds its subscriptions back (they skip
/// clock ticks) instead of growing memory.
const OUT_QUEUE: usize = 64;

/// A WebSocket upgrade request (of any subprotocol; [`upgrade`] checks it).
pub(super) fn is_upgrade(req: &Request<Incoming>) -> bool {
    let has_token = |name, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has_token(UPGRADE, "websocket") && has_token(CONNECTION, "upgrade")
}

/// Answers the handshake (101 with `graphql-transport-ws`, or a refusal) and serves the
/// socket in a task.
pub(super) fn upgrade(app: Arc<App>, index: usize, mut req: Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "A WebSocket upgrade must be a GET.",
        );
    }
    if req
        .headers()
        .get(SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        let mut response = error(
            StatusCode::UPGRADE_REQUIRED,
            "Only WebSocket version 13 is supported.",
        );
        response
            .headers_mut()
            .insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return response;
    }
    let Some(key) = req.headers().get(SEC_WEBSOCKET_KEY) else {
        return error(StatusCode::BAD_REQUEST, "Missing Sec-WebSocket-Key.");
    };
    let accept = derive_accept_key(key.as_bytes());
    let offered = req
        .headers()
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .any(|v| v.to_str().is_ok_and(offers_subprotocol));
    if !offered {
        return error(
            StatusCode::BAD_REQUEST,
            "WebSocket subprotocol not acceptable: this endpoint speaks graphql-transport-ws \
             (send Sec-WebSocket-Protocol: graphql-transport-ws).",
        );
    }
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        // The client may vanish between the 101 and the upgrade: nothing to serve then.
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(MAX_MESSAGE);
        config.max_frame_size = Some(MAX_MESSAGE);
        // tungstenite's 128 KiB read buffer per socket would dominate the memory of a
        // fan-out run (thousands of idle sockets); client messages are small.
        config.read_buffer_size = READ_BUFFER;
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        serve_socket(app, index, socket).await;
    });
    let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::new())));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    headers.insert(
        SEC_WEBSOCKET_PROTOCOL,
        HeaderValue::from_static(SUBPROTOCOL),
    );
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    response
}

/// A result for the client, tagged with the subscription's serial so results of a
/// completed operation whose id was reused are dropped.
struct Out {
    id: String,
    serial: u64,
    message: OutMessage,
}

enum OutMessage {
    Next(Vec<u8>),
    /// The errors as a JSON array.
    Error(String),
    Complete,
}

type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

struct Connection {
    app: Arc<App>,
    route: usize,
    init_received: bool,
    acknowledged: bool,
    /// Operation id → its serial and task.
    active: HashMap<String, (u64, tokio::task::AbortHandle)>,
    tasks: JoinSet<()>,
    serial: u64,
    out: mpsc::Sender<Out>,
}

async fn serve_socket(app: Arc<App>, route: usize, socket: Socket) {
    let (mut sink, mut stream) = socket.split();
    let (out, mut results) = mpsc::channel::<Out>(OUT_QUEUE);
    let init_timeout = tokio::time::sleep(app.stream.connection_init_timeout);
    tokio::pin!(init_timeout);
    let mut stopping = app.stopping.subscribe();
    let mut conn = Connection {
        app,
        route,
        init_received: false,
        acknowledged: false,
        active: HashMap::new(),
        tasks: JoinSet::new(),
        serial: 0,
        out,
    };
    let closing: Option<Close> = loop {
        tokio::select! {
            () = &mut init_timeout, if !conn.init_received => {
                break Some(Close::initialisation_timeout());
            }
            () = stopped(&mut stopping) => break Some(Close::going_away("Server is stopping")),
            message = stream.next() => {
                let text = match message {
                    // A closed, reset or broken socket (tungstenite answers a client close).
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break None,
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        break Some(Close::bad_request("binary messages are not part of graphql-transport-ws"));
                    }
                    // Control frames are answered by tungstenite.
                    Some(Ok(_)) => continue,
                };
                match conn.receive(&text) {
                    Ok(replies) => {
                        let mut failed = false;
                        for reply in replies {
                            failed |= sink.send(reply).await.is_err();
                        }
                        if failed {
                            break None;
                        }
                    }
                    Err(close) => break Some(close),
                }
            }
            Some(result) = results.recv() => {
                let Some(message) = conn.deliver(result) else { continue };
                if sink.send(message).await.is_err() {
                    break None;
                }
            }
        }
        while conn.tasks.try_join_next().is_some() {}
    };
    conn.tasks.abort_all();
    if let Some(close) = closing {
        let frame = CloseFrame {
            code: CloseCode::from(u16::from(close.code)),
            reason: Utf8Bytes::from(close.reason.into_owned()),
        };
        let _ = sink.send(Message::Close(Some(frame))).await;
        // Wait briefly for the client's close reply so the close code is not lost in a reset.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await;
    }
    let _ = sink.close().await;
}

fn frame(message: &ServerMessage<'_>) -> Message {
    Message::Text(Utf8Bytes::from(message.encode()))
}

impl Connection {
    /// Handles one client message: replies to send now, or why to close.
    fn receive(&mut self, message: &str) -> Result<Vec<Message>, Close> {
        match ClientMessage::decode(message).map_err(Close::bad_request)? {
            ClientMessage::ConnectionInit { .. } => {
                if self.init_received {
                    return Err(Close::too_many_initialisation_requests());
                }
                self.init_received = true;
                self.acknowledged = true;
                Ok(vec![frame(&ServerMessage::ConnectionAck { payload: None })])
            }
            ClientMessage::Ping { .. } => Ok(vec![frame(&ServerMessage::Pong { payload: None })]),
            ClientMessage::Pong { .. } => Ok(Vec::new()),
            ClientMessage::Subscribe { id, payload } => {
                // Checked before the operation starts (the engine parses it again).
                SubscribePayload::parse(payload).map_err(Close::bad_request)?;
                if !self.acknowledged {
                    return Err(Close::unauthorized());
                }
                if self.active.contains_key(&*id) {
                    return Err(Close::subscriber_already_exists(&id));
                }
                let limit = self.app.stream.max_operations_per_socket;
                if self.active.len() >= limit {
                    // Bounds one socket's memory; the socket and its other operations go on.
                    let errors = serde_json::json!([{
                        "message": format!("Too many operations on this socket (at most {limit} at once).")
                    }])
                    .to_string();
                    let payload = RawJson::trusted(&errors);
                    return Ok(vec![frame(&ServerMessage::Error { id, payload })]);
                }
                self.subscribe(id.into_owned(), payload.get().as_bytes().to_vec());
                Ok(Vec::new())
            }
            ClientMessage::Complete { id } => {
                // Unknown (already completed) ids are fine: results may cross on the wire.
                if let Some((_, task)) = self.active.remove(&*id) {
                    task.abort();
                }
                Ok(Vec::new())
            }
        }
    }

    fn subscribe(&mut self, id: String, request: Vec<u8>) {
        self.serial += 1;
        let serial = self.serial;
        let app = self.app.clone();
        let route = self.route;
        let out = self.out.clone();
        let op_id = id.clone();
        let task = self.tasks.spawn(async move {
            let send = |message| {
                out.send(Out {
                    id: op_id.clone(),
                    serial,
                    message,
                })
            };
            match start(&app, route, &request).await {
                Started::Refused(errors) => {
                    let _ = send(OutMessage::Error(errors)).await;
                }
                Started::Single(result) => {
                    if send(OutMessage::Next(result)).await.is_ok() {
                        let _ = send(OutMessage::Complete).await;
                    }
                }
                Started::Stream(mut feed) => {
                    while let Some(event) = feed.next().await {
                        if send(OutMessage::Next(event)).await.is_err() {
                            return;
                        }
                    }
                    let _ = send(OutMessage::Complete).await;
                }
            }
        });
        self.active.insert(id, (serial, task));
    }

    /// The frame for a result, unless its operation was completed by the client meanwhile.
    fn deliver(&mut self, result: Out) -> Option<Message> {
        let (serial, _) = self.active.get(&result.id)?;
        if *serial != result.serial {
            return None;
        }
        let id = result.id.as_str().into();
        let message = match &result.message {
            OutMessage::Next(payload) => {
                let payload = String::from_utf8_lossy(payload);
                let payload = RawJson::trusted(&payload);
                return Some(frame(&ServerMessage::Next { id, payload }));
            }
            OutMessage::Error(errors) => ServerMessage::Error {
                id,
                payload: RawJson::trusted(errors),
            },
            OutMessage::Complete => ServerMessage::Complete { id },
        };
        let message = frame(&message);
        self.active.remove(&result.id);
        Some(message)
    }
}
