//! One WebSocket connection, in either protocol: `connection_init` within
//! `subscriptions.init_timeout` (its token checked, [`init`](super::init)), then any
//! number of operations, each in a task of its own ([`operation`](super::operation)).
//! The gateway pings the client ([`keepalive`](super::keepalive)); a token that expires
//! ends every operation with an error, then the connection (4403).

use super::incoming::Incoming;
use super::init::{self, Upgrade};
use super::keepalive::{Due, KeepAlive};
use super::operation::{self, Out};
use super::wire::Protocol;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::request::{GraphQLRequest, RequestMeta};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use graphfleet_ws_protocol::{Close, CloseCode};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode as WsCode;

/// Messages queued for the socket's writer; a full queue makes operations wait.
const OUTBOX: usize = 64;

/// `extensions.code` and message of the error ending operations whose token expired.
const EXPIRED: (&str, &str) = ("AUTH_ERROR", "invalid JWT: the token has expired");

/// Serve `socket` speaking `protocol` until it closes; `meta` comes from the upgrade.
pub(super) async fn serve<T, S>(
    gateway: Arc<Gateway<T>>,
    socket: WebSocketStream<S>,
    protocol: Protocol,
    meta: RequestMeta,
    upgrade: Upgrade,
) where
    T: Transport,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (revoke, revoked) = watch::channel(None);
    let expiry = expiry(&gateway, &meta);
    let connection = Connection {
        gateway,
        protocol,
        meta: Arc::new(meta),
        upgrade,
        acked: false,
        ops: Arc::default(),
        revoke,
        revoked,
        expiry,
    };
    connection.run(socket).await;
}

struct Connection<T: Transport> {
    gateway: Arc<Gateway<T>>,
    protocol: Protocol,
    meta: Arc<RequestMeta>,
    upgrade: Upgrade,
    acked: bool,
    /// Operations running, by id.
    ops: Arc<Mutex<FxHashMap<String, tokio::task::AbortHandle>>>,
    revoke: watch::Sender<Option<Bytes>>,
    revoked: watch::Receiver<Option<Bytes>>,
    /// When the connection's token stops being valid.
    expiry: Option<Instant>,
}

/// When `meta`'s claims expire, on the runtime's clock.
fn expiry<T: Transport>(gateway: &Gateway<T>, meta: &RequestMeta) -> Option<Instant> {
    let at = gateway.auth.expiry(meta.claims.as_ref()?)?;
    let left = at.duration_since(SystemTime::now()).unwrap_or_default();
    Instant::now().checked_add(left)
}

/// A sleep until `at`, or for as long as a select may wait.
fn until(at: Option<Instant>) -> tokio::time::Sleep {
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    tokio::time::sleep_until(at.unwrap_or(far))
}

impl<T: Transport> Connection<T> {
    async fn run<S>(mut self, socket: WebSocketStream<S>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sink, mut stream) = socket.split();
        let (outbox, pending) = mpsc::channel::<Message>(OUTBOX);
        let writer = tokio::spawn(write(
            sink,
            pending,
            self.gateway.config.subscriptions.send_timeout,
        ));
        let config = &self.gateway.config.subscriptions;
        let init_deadline = Instant::now() + config.init_timeout;
        let pong_timeout = config.pong_timeout;
        let mut keepalive = KeepAlive::new(config.ping_interval, pong_timeout, Instant::now());
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
                () = until(self.expiry), if self.expiry.is_some() => {
                    break Some(self.expire().await);
                }
                () = until(keepalive.deadline()), if keepalive.deadline().is_some() => {
                    match keepalive.due(Instant::now()) {
                        Due::Ping => {
                            self.ping(&outbox).await;
                            continue;
                        }
                        Due::Dead => break Some(unanswered(pong_timeout)),
                    }
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
                Some(Ok(Message::Pong(_))) => {
                    keepalive.answered(Instant::now());
                    continue;
                }
                Some(Ok(_)) => continue,
            };
            if let Err(close) = self.on_message(text.as_str(), &outbox).await {
                break close;
            }
        };
        for (_, op) in self.ops.lock().drain() {
            op.abort();
        }
        if let Some(close) = close {
            let frame = CloseFrame {
                code: WsCode::from(u16::from(close.code)),
                reason: close.reason.into_owned().into(),
            };
            let _ = outbox.send(Message::Close(Some(frame))).await;
        }
        drop(outbox);
        let _ = writer.await;
    }

    /// A WebSocket ping, and the protocol's keep-alive message once acknowledged.
    async fn ping(&self, outbox: &mpsc::Sender<Message>) {
        let _ = outbox.send(Message::Ping(Bytes::new())).await;
        if let Some(ka) = self.protocol.keep_alive().filter(|_| self.acked) {
            let _ = outbox.send(ka).await;
        }
    }

    /// The token expired: every operation ends with an error, then the connection.
    async fn expire(&mut self) -> Close {
        let (code, message) = EXPIRED;
        self.revoke
            .send_replace(Some(crate::subscription::errors(code, message)));
        self.drain_ops().await;
        self.expiry = None;
        Close::new(CloseCode::FORBIDDEN, format!("Forbidden: {message}"))
    }

    /// Give running operations a moment to send their last messages.
    async fn drain_ops(&self) {
        let until = Instant::now() + Duration::from_secs(1);
        while !self.ops.lock().is_empty() && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Handle one text message; `Err` ends the connection (with a close frame if
    /// `Some`).
    async fn on_message(
        &mut self,
        text: &str,
        outbox: &mpsc::Sender<Message>,
    ) -> Result<(), Option<Close>> {
        match self.protocol.decode(text)? {
            Incoming::Init(payload) => {
                if self.acked {
                    return Err(Some(Close::too_many_initialisation_requests()));
                }
                self.init(payload, outbox).await?;
            }
            Incoming::Ping => {
                if let Some(pong) = self.protocol.pong() {
                    let _ = outbox.send(pong).await;
                }
            }
            Incoming::Ignored => {}
            Incoming::Subscribe { id, payload } => {
                if !self.acked {
                    return Err(Some(Close::unauthorized()));
                }
                let request: GraphQLRequest = serde_json::from_str(payload)
                    .map_err(|e| Close::bad_request(format_args!("subscribe payload: {e}")))?;
                self.start(id.into_owned(), request, outbox)?;
            }
            Incoming::Stop(id) => {
                let stopped = self.ops.lock().remove(&*id);
                if let Some(op) = stopped {
                    op.abort();
                    if let Some(done) = self.protocol.stopped(&id) {
                        let _ = outbox.send(done).await;
                    }
                }
            }
            Incoming::Terminate => return Err(Some(Close::new(CloseCode::NORMAL, ""))),
        }
        Ok(())
    }

    /// Accept `connection_init` (its token, its forwarded keys) and acknowledge it.
    async fn init(
        &mut self,
        payload: Option<&str>,
        outbox: &mpsc::Sender<Message>,
    ) -> Result<(), Option<Close>> {
        self.acked = true;
        match init::accept(&self.gateway, &self.upgrade, &self.meta, payload).await {
            Ok(None) => {}
            Ok(Some(meta)) => {
                self.expiry = expiry(&self.gateway, &meta);
                self.meta = Arc::new(meta);
            }
            Err(close) => {
                if let Some(refused) = self.protocol.init_refused(&close) {
                    let _ = outbox.send(refused).await;
                }
                return Err(Some(close));
            }
        }
        let _ = outbox.send(self.protocol.ack()).await;
        // The legacy protocol's keep-alive starts right after the ack.
        if let Some(ka) = self.protocol.keep_alive() {
            let _ = outbox.send(ka).await;
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
            return match outbox.try_send(self.protocol.error(&id, &errors)) {
                Err(mpsc::error::TrySendError::Full(_)) => Err(Close::not_reading()),
                Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Ok(()),
            };
        }
        let out = Out {
            protocol: self.protocol,
            outbox: outbox.clone(),
            revoked: self.revoked.clone(),
        };
        let (gateway, meta, registry) = (self.gateway.clone(), self.meta.clone(), self.ops.clone());
        let op_id = id.clone();
        let task = tokio::spawn(async move {
            operation::run(&gateway, &meta, &op_id, request, out).await;
            registry.lock().remove(&op_id);
        });
        ops.insert(id, task.abort_handle());
        Ok(())
    }
}

/// 1008: the client did not answer a ping in time.
fn unanswered(timeout: Duration) -> Close {
    Close::new(
        CloseCode::POLICY_VIOLATION,
        format!("no pong within {timeout:?} (subscriptions.pong_timeout)"),
    )
}

/// Write queued messages until the queue closes or a close frame is sent.
async fn write<S>(
    mut sink: futures::stream::SplitSink<WebSocketStream<S>, Message>,
    mut pending: mpsc::Receiver<Message>,
    send_timeout: Duration,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(message) = pending.recv().await {
        let closing = matches!(message, Message::Close(_));
        // A client that does not take a message in time is cut off: dropping `pending`
        // fails every send to it, and the reader stops too.
        let sent = tokio::time::timeout(send_timeout, sink.send(message)).await;
        if !matches!(sent, Ok(Ok(()))) || closing {
            break;
        }
    }
    drop(pending);
    let _ = tokio::time::timeout(send_timeout, sink.close()).await;
}
