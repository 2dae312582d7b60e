//! A strict fake subgraph speaking graphql-transport-ws: it refuses an upgrade without
//! the subprotocol, a first message other than `connection_init`, and (when told what
//! to expect) a `connection_init` payload other than the expected one (4403); it records
//! every upgrade's headers and `connection_init` payload, and answers each `subscribe`
//! with `events` results of the root field it names, `interval` apart, then `complete`.

use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{ClientMessage, RawJson, SUBPROTOCOL, ServerMessage};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// The root fields it serves (longest first: `ticks` is in every other name).
const FIELDS: [&str; 4] = ["privateTicks", "scopedTicks", "adminTicks", "ticks"];

#[derive(Default)]
pub struct Seen {
    /// Each upgrade's headers, in order.
    pub headers: Vec<http::HeaderMap>,
    /// Each `connection_init` payload (`null` without one).
    pub inits: Vec<Value>,
    /// Each `subscribe` payload's query.
    pub queries: Vec<String>,
}

pub struct WsSubgraph {
    /// `http://127.0.0.1:PORT` (the gateway subscribes at `ws://…/ticks`).
    pub base_url: String,
    pub seen: Arc<Mutex<Seen>>,
}

#[derive(Clone)]
pub struct Behaviour {
    /// The only `connection_init` payload accepted (`null`: none); `None`: any.
    pub expect_init: Option<Value>,
    pub events: usize,
    pub interval: Duration,
}

impl WsSubgraph {
    pub async fn start(behaviour: Behaviour) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake subgraph");
        let addr = listener.local_addr().expect("its address");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = seen.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(serve(tcp, behaviour.clone(), shared.clone()));
            }
        });
        Self {
            base_url: format!("http://{addr}"),
            seen,
        }
    }

    pub fn inits(&self) -> Vec<Value> {
        self.seen.lock().expect("the log").inits.clone()
    }

    /// The values of header `name` on each upgrade.
    pub fn header(&self, name: &str) -> Vec<Option<String>> {
        let seen = self.seen.lock().expect("the log");
        seen.headers
            .iter()
            .map(|h| h.get(name).map(|v| v.to_str().expect("text").to_owned()))
            .collect()
    }
}

// tungstenite's handshake callback returns its own (large) error response type.
#[allow(clippy::result_large_err)]
async fn serve(tcp: tokio::net::TcpStream, behaviour: Behaviour, seen: Arc<Mutex<Seen>>) {
    let log = seen.clone();
    let check = move |req: &Request, mut res: Response| -> Result<Response, ErrorResponse> {
        log.lock()
            .expect("the log")
            .headers
            .push(req.headers().clone());
        let offered = req
            .headers()
            .get("sec-websocket-protocol")
            .is_some_and(|p| p == SUBPROTOCOL);
        if !offered {
            let mut refused = ErrorResponse::new(Some("graphql-transport-ws only".into()));
            *refused.status_mut() = http::StatusCode::BAD_REQUEST;
            return Err(refused);
        }
        let protocol = http::HeaderValue::from_static(SUBPROTOCOL);
        res.headers_mut().insert("sec-websocket-protocol", protocol);
        Ok(res)
    };
    let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(tcp, check).await else {
        return;
    };
    let Some(Ok(Message::Text(first))) = socket.next().await else {
        return;
    };
    let payload = match ClientMessage::decode(first.as_str()) {
        Ok(ClientMessage::ConnectionInit { payload }) => payload
            .map(|p| serde_json::from_str(p.get()).expect("a JSON payload"))
            .unwrap_or(Value::Null),
        _ => return close(&mut socket, 4400, "connection_init first").await,
    };
    seen.lock().expect("the log").inits.push(payload.clone());
    if behaviour
        .expect_init
        .as_ref()
        .is_some_and(|e| *e != payload)
    {
        return close(&mut socket, 4403, "unexpected connection_init payload").await;
    }
    send(&mut socket, &ServerMessage::ConnectionAck { payload: None }).await;
    run(socket, &behaviour, &seen).await;
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn send(socket: &mut Socket, message: &ServerMessage<'_>) {
    let _ = socket.send(Message::text(message.encode())).await;
}

async fn close(socket: &mut Socket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code: code.into(),
        reason: reason.into(),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
}

/// Serve `subscribe`s until the gateway completes or closes.
async fn run(mut socket: Socket, behaviour: &Behaviour, seen: &Mutex<Seen>) {
    let mut emitting: Option<(String, String, usize)> = None;
    let mut tick = tokio::time::interval(behaviour.interval);
    loop {
        tokio::select! {
            message = socket.next() => {
                let Some(Ok(message)) = message else { return };
                let Message::Text(text) = message else { continue };
                match ClientMessage::decode(text.as_str()) {
                    Ok(ClientMessage::Subscribe { id, payload }) => {
                        let request: Value = serde_json::from_str(payload.get()).expect("JSON");
                        let query = request["query"].as_str().unwrap_or_default().to_owned();
                        let field = FIELDS.iter().find(|f| query.contains(*f)).copied();
                        seen.lock().expect("the log").queries.push(query);
                        let Some(field) = field else {
                            return close(&mut socket, 4400, "an unknown field").await;
                        };
                        emitting = Some((id.into_owned(), field.to_owned(), 0));
                        tick.reset();
                    }
                    Ok(ClientMessage::Complete { .. }) => emitting = None,
                    Ok(ClientMessage::Ping { .. }) => send(&mut socket, &ServerMessage::Pong { payload: None }).await,
                    Ok(_) => {}
                    Err(_) => return close(&mut socket, 4400, "invalid message").await,
                }
            }
            _ = tick.tick(), if emitting.is_some() => {
                let (id, field, sent) = emitting.as_mut().expect("emitting");
                if *sent == behaviour.events {
                    send(&mut socket, &ServerMessage::Complete { id: id.clone().into() }).await;
                    emitting = None;
                    continue;
                }
                *sent += 1;
                let payload = json!({ "data": { field.as_str(): *sent } }).to_string();
                let next = ServerMessage::Next { id: id.clone().into(), payload: RawJson::trusted(&payload) };
                send(&mut socket, &next).await;
            }
        }
    }
}
