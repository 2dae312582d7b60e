//! The fan-out's subscription clients: one graphql-transport-ws connection each, all on
//! one current-thread runtime, counting, checking and timing every event.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use futures::{SinkExt, StreamExt};
use graphfleet_bench_model::latency_histogram::Latencies;
use graphfleet_ws_protocol::{ClientMessage, RawJson, SUBPROTOCOL, ServerMessage};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::progress::progress;

/// The id of each client's one subscription.
const ID: &str = "1";
/// Longest a client may take to connect, be acknowledged and subscribe.
const OPEN_TIMEOUT: Duration = Duration::from_secs(20);
/// Handshakes in flight at once while opening (a burst of N connects would only measure
/// the listen backlog).
const OPENING_AT_ONCE: usize = 64;
/// Time the clients get to send `complete` and close after the window.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// Failure messages kept per run.
const SAMPLES: usize = 3;

/// The `subscribe` frame for `payload` (the GraphQL request).
pub(super) fn subscribe_frame(payload: &Value) -> String {
    let payload = payload.to_string();
    ClientMessage::Subscribe {
        id: ID.into(),
        payload: RawJson::trusted(&payload),
    }
    .encode()
}

fn frame(message: &ClientMessage<'_>) -> Message {
    Message::text(message.encode())
}

fn pong() -> Message {
    frame(&ClientMessage::Pong { payload: None })
}

/// An event's payload as JSON (checked by [`check_event`]).
fn event_payload(payload: RawJson<'_>) -> Result<Value, String> {
    serde_json::from_str(payload.get()).map_err(|e| format!("a next payload that is not JSON: {e}"))
}

/// Subscribes once and returns the first event's `data`, with `publishedAt` removed
/// (it differs per emission).
pub(super) async fn first_event(url: &str, payload: &Value) -> anyhow::Result<Value> {
    let subscribe = subscribe_frame(payload);
    let attempt = async {
        let mut ws = open(url, &subscribe).await?;
        // Bounded by the timeout around it.
        loop {
            let Some(msg) = ws.next().await else {
                bail!("the socket closed before the first event");
            };
            let Message::Text(text) = msg.context("reading the socket")? else {
                continue;
            };
            let msg = ServerMessage::decode(&text)
                .with_context(|| format!("not a graphql-transport-ws message: {text}"))?;
            match msg {
                ServerMessage::Next { payload, .. } => {
                    let mut payload = event_payload(payload).map_err(anyhow::Error::msg)?;
                    check_event(&payload).map_err(anyhow::Error::msg)?;
                    if let Some(review) = payload["data"]["reviewAdded"].as_object_mut() {
                        review.remove("publishedAt");
                    }
                    let _ = ws.close(None).await;
                    return Ok(payload["data"].clone());
                }
                ServerMessage::Ping { .. } => ws.send(pong()).await?,
                _ => bail!("expected the first event, got {text}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), attempt)
        .await
        .context("no event within 30 s")?
}

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects, initialises (`connection_init` → `connection_ack`) and sends `subscribe`.
async fn open(url: &str, subscribe: &str) -> anyhow::Result<Socket> {
    let mut ws = initialised(url).await?;
    ws.send(Message::text(subscribe.to_owned()))
        .await
        .context("sending subscribe")?;
    Ok(ws)
}

/// Connects and initialises (`connection_init` → `connection_ack`); the caller bounds it.
pub(crate) async fn initialised(url: &str) -> anyhow::Result<Socket> {
    let mut request = url
        .into_client_request()
        .with_context(|| format!("{url} is not a WebSocket URL"))?;
    request.headers_mut().insert(
        "sec-websocket-protocol",
        http::HeaderValue::from_static(SUBPROTOCOL),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    ws.send(frame(&ClientMessage::ConnectionInit { payload: None }))
        .await
        .context("sending connection_init")?;
    // Bounded by OPEN_TIMEOUT around the caller; a server sends few messages before ack.
    loop {
        let Some(msg) = ws.next().await else {
            bail!("the socket closed before connection_ack");
        };
        match msg.context("waiting for connection_ack")? {
            Message::Text(text) => {
                let msg = ServerMessage::decode(&text)
                    .with_context(|| format!("not a graphql-transport-ws message: {text}"))?;
                match msg {
                    ServerMessage::ConnectionAck { .. } => break,
                    ServerMessage::Ping { .. } => ws.send(pong()).await?,
                    _ => bail!("expected connection_ack, got {text}"),
                }
            }
            Message::Close(frame) => bail!("closed before connection_ack: {frame:?}"),
            _ => {}
        }
    }
    Ok(ws)
}

/// An event's payload is good when it has `data.reviewAdded` with the fields the
/// scenario selects and no `errors`.
fn check_event(payload: &Value) -> Result<(), String> {
    if let Some(errors) = payload.get("errors") {
        return Err(format!("errors: {errors}"));
    }
    let review = &payload["data"]["reviewAdded"];
    if !review.is_object() {
        return Err(format!("no data.reviewAdded: {payload}"));
    }
    let present = review["id"].is_string()
        && review["publishedAt"].is_number()
        && review["product"]["upc"].is_string()
        && review["product"]["name"].is_string()
        && review["author"]["username"].is_string();
    if present {
        Ok(())
    } else {
        Err(format!("missing fields: {review}"))
    }
}

/// The clients' part of one measurement.
pub(super) struct Plan {
    pub(super) url: String,
    pub(super) subscribe: String,
    pub(super) subscribers: u32,
    pub(super) settle: Duration,
    pub(super) window: Duration,
    pub(super) cpus: Option<String>,
}

pub(super) struct Outcome {
    pub(super) first_connect: Instant,
    /// The measured window.
    pub(super) window: (Instant, Instant),
    pub(super) opened: u32,
    pub(super) open_failures: u32,
    pub(super) open_seconds: f64,
    pub(super) events_in_window: u64,
    pub(super) bad_events: u64,
    pub(super) ended_early: u32,
    pub(super) failure_samples: Vec<String>,
    pub(super) latency: Latencies,
}

/// Counters every client task updates (one thread).
struct Stats {
    window: Option<(Instant, Instant)>,
    opened: u32,
    open_failures: u32,
    events_in_window: u64,
    bad_events: u64,
    ended_early: u32,
    failure_samples: Vec<String>,
    latency: Latencies,
}

impl Stats {
    fn new() -> Self {
        Stats {
            window: None,
            opened: 0,
            open_failures: 0,
            events_in_window: 0,
            bad_events: 0,
            ended_early: 0,
            failure_samples: Vec::new(),
            latency: Latencies::new(),
        }
    }

    fn sample(&mut self, why: impl FnOnce() -> String) {
        if self.failure_samples.len() < SAMPLES {
            self.failure_samples.push(why());
        }
    }
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl Plan {
    /// Runs the clients on a current-thread runtime on this (blocking) thread.
    pub(super) fn run(self) -> anyhow::Result<Outcome> {
        if let Some(cpus) = &self.cpus {
            crate::openload::pin_current_thread(cpus);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the clients' runtime")?;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, self.drive())
    }

    async fn drive(self) -> anyhow::Result<Outcome> {
        let stats = Rc::new(RefCell::new(Stats::new()));
        let (stop, _) = tokio::sync::watch::channel(false);
        let opening = Rc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
        let settled = Rc::new(tokio::sync::Notify::new());
        let first_connect = Instant::now();
        let mut tasks = Vec::with_capacity(self.subscribers as usize);
        for _ in 0..self.subscribers {
            let task = Subscriber {
                url: self.url.clone(),
                subscribe: self.subscribe.clone(),
                stats: Rc::clone(&stats),
                stop: stop.subscribe(),
                opening: Rc::clone(&opening),
                settled: Rc::clone(&settled),
                total: self.subscribers,
            };
            tasks.push(tokio::task::spawn_local(task.run()));
        }
        let open_deadline =
            Instant::now() + OPEN_TIMEOUT + Duration::from_millis(u64::from(self.subscribers) * 20);
        let all_open = tokio::time::timeout_at(open_deadline.into(), settled.notified()).await;
        let opened_at = Instant::now();
        if all_open.is_err() {
            progress(format!(
                "not every subscription opened in {:.0} s; measuring those that did",
                (opened_at - first_connect).as_secs_f64()
            ));
        }
        let window = (
            opened_at + self.settle,
            opened_at + self.settle + self.window,
        );
        stats.borrow_mut().window = Some(window);
        tokio::time::sleep_until(window.1.into()).await;
        let _ = stop.send(true);
        let aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
        let closing = futures::future::join_all(tasks);
        if tokio::time::timeout(CLOSE_GRACE, closing).await.is_err() {
            aborts.iter().for_each(tokio::task::AbortHandle::abort);
        }
        let s = std::mem::replace(&mut *stats.borrow_mut(), Stats::new());
        Ok(Outcome {
            first_connect,
            window,
            opened: s.opened,
            open_failures: s.open_failures,
            open_seconds: (opened_at - first_connect).as_secs_f64(),
            events_in_window: s.events_in_window,
            bad_events: s.bad_events,
            ended_early: s.ended_early,
            failure_samples: s.failure_samples,
            latency: s.latency,
        })
    }
}

/// One client: its own connection and subscription.
struct Subscriber {
    url: String,
    subscribe: String,
    stats: Rc<RefCell<Stats>>,
    stop: tokio::sync::watch::Receiver<bool>,
    opening: Rc<tokio::sync::Semaphore>,
    settled: Rc<tokio::sync::Notify>,
    total: u32,
}

impl Subscriber {
    /// Counts this client as opened or failed; the last one wakes the driver.
    fn settle(&self, ok: bool) {
        let mut s = self.stats.borrow_mut();
        if ok {
            s.opened += 1;
        } else {
            s.open_failures += 1;
        }
        if s.opened + s.open_failures == self.total {
            self.settled.notify_one();
        }
    }

    async fn run(mut self) {
        let opened = {
            let _permit = self.opening.acquire().await;
            tokio::time::timeout(OPEN_TIMEOUT, open(&self.url, &self.subscribe)).await
        };
        let mut ws = match opened {
            Ok(Ok(ws)) => ws,
            Ok(Err(e)) => {
                self.stats.borrow_mut().sample(|| format!("opening: {e:#}"));
                self.settle(false);
                return;
            }
            Err(_) => {
                self.stats
                    .borrow_mut()
                    .sample(|| format!("opening took over {OPEN_TIMEOUT:?}"));
                self.settle(false);
                return;
            }
        };
        self.settle(true);
        // Bounded by the stop signal, which the driver sends at the window's end.
        loop {
            let msg = tokio::select! {
                msg = ws.next() => msg,
                _ = self.stop.wait_for(|s| *s) => break,
            };
            let received = Instant::now();
            let text = match msg {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Close(frame))) => {
                    self.ended(format!("closed: {frame:?}"));
                    return;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    self.ended(format!("socket error: {e}"));
                    return;
                }
                None => {
                    self.ended("the socket closed".to_owned());
                    return;
                }
            };
            self.message(&text, received, &mut ws).await;
            if *self.stop.borrow() {
                break;
            }
        }
        let _ = ws
            .send(frame(&ClientMessage::Complete { id: ID.into() }))
            .await;
        let _ = ws.close(None).await;
    }

    fn ended(&self, why: String) {
        let mut s = self.stats.borrow_mut();
        s.ended_early += 1;
        s.sample(|| why);
    }

    async fn message(&self, text: &str, received: Instant, ws: &mut Socket) {
        let msg = match ServerMessage::decode(text) {
            Ok(msg) => msg,
            Err(e) => {
                let mut s = self.stats.borrow_mut();
                s.bad_events += 1;
                s.sample(|| format!("not a graphql-transport-ws message ({e}): {text}"));
                return;
            }
        };
        match msg {
            ServerMessage::Next { payload, .. } => {
                let payload = event_payload(payload);
                let checked = payload.as_ref().map_err(Clone::clone).and_then(check_event);
                let mut s = self.stats.borrow_mut();
                let Some((from, to)) = s.window else {
                    // Before the window: checked, not counted.
                    if let Err(e) = checked {
                        s.bad_events += 1;
                        s.sample(|| e);
                    }
                    return;
                };
                match checked {
                    Err(e) => {
                        s.bad_events += 1;
                        s.sample(|| e);
                    }
                    Ok(()) if received >= from && received < to => {
                        s.events_in_window += 1;
                        let published = payload.as_ref().map_or(0.0, |p| {
                            p["data"]["reviewAdded"]["publishedAt"]
                                .as_f64()
                                .unwrap_or(0.0)
                        });
                        // A clock step that puts receipt before publication counts as 0 ms.
                        s.latency.record_ms(now_ms() - published);
                    }
                    Ok(()) => {}
                }
            }
            ServerMessage::Ping { .. } => {
                let _ = ws.send(pong()).await;
            }
            ServerMessage::Pong { .. } => {}
            _ => self.ended(format!("ended: {text}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_checked_for_errors_and_fields() {
        let good = json!({"data": {"reviewAdded": {
            "id": "1", "body": "b", "publishedAt": 1.7e12,
            "product": {"upc": "1", "name": "Table", "price": 899, "inStock": true},
            "author": {"username": "urigo"}
        }}});
        assert_eq!(check_event(&good), Ok(()));
        let errors = json!({"data": null, "errors": [{"message": "boom"}]});
        assert!(check_event(&errors).expect_err("errors").contains("boom"));
        let null = json!({"data": null});
        assert!(check_event(&null).is_err());
        let mut partial = good.clone();
        partial["data"]["reviewAdded"]["product"]["name"] = Value::Null;
        assert!(
            check_event(&partial)
                .expect_err("a null field")
                .contains("missing")
        );
        let mut untimed = good;
        untimed["data"]["reviewAdded"]["publishedAt"] = Value::Null;
        assert!(check_event(&untimed).is_err());
    }

    /// The client's side of the protocol against a scripted server: init, subscribe,
    /// a ping answered, and the first event's data without `publishedAt`.
    #[tokio::test]
    async fn first_event_speaks_graphql_transport_ws() {
        use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a local port");
        let url = format!(
            "ws://{}/graphql",
            listener.local_addr().expect("an address")
        );
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.expect("a connection");
            // The callback's error type is tungstenite's (a whole HTTP response).
            #[allow(clippy::result_large_err)]
            let agree = |_: &Request, mut response: Response| {
                response.headers_mut().insert(
                    "sec-websocket-protocol",
                    http::HeaderValue::from_static(SUBPROTOCOL),
                );
                Ok(response)
            };
            let mut ws = tokio_tungstenite::accept_hdr_async(tcp, agree)
                .await
                .expect("the handshake");
            let event = r#"{"data":{"reviewAdded":{"id":"1","publishedAt":1.7e12,
                "product":{"upc":"1","name":"Table"},"author":{"username":"urigo"}}}}"#;
            let replies = [
                ServerMessage::ConnectionAck { payload: None },
                ServerMessage::Ping { payload: None },
                ServerMessage::Next {
                    id: ID.into(),
                    payload: RawJson::trusted(event),
                },
            ];
            let mut received = Vec::new();
            for reply in replies {
                let Some(Ok(Message::Text(text))) = ws.next().await else {
                    panic!("a text message from the client")
                };
                received.push(text.to_string());
                ws.send(Message::text(reply.encode()))
                    .await
                    .expect("a reply");
            }
            received
        });
        let payload = json!({"query": "subscription { reviewAdded { id } }"});
        let data = first_event(&url, &payload).await.expect("the first event");
        assert_eq!(
            data,
            json!({"reviewAdded": {"id": "1", "product": {"upc": "1", "name": "Table"},
                "author": {"username": "urigo"}}})
        );
        let received = server.await.expect("the server task");
        let kinds: Vec<_> = received
            .iter()
            .map(|text| {
                ClientMessage::decode(text)
                    .expect("a client message")
                    .kind()
            })
            .collect();
        assert_eq!(kinds, ["connection_init", "subscribe", "pong"]);
        assert_eq!(
            ClientMessage::decode(&received[1]).expect("a subscribe"),
            ClientMessage::Subscribe {
                id: ID.into(),
                payload: RawJson::trusted(&payload.to_string()),
            }
        );
    }
}
