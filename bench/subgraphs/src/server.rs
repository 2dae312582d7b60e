//! The HTTP side: hyper 1 (HTTP/1.1 and h2c), one route per endpoint, request
//! counters at `/stats`, optional per-subgraph delays. Subscriptions (and any other
//! operation) are also served on each endpoint's path over WebSocket
//! (graphql-transport-ws, [`ws`]), GraphQL over SSE and Apollo multipart ([`streaming`]).
//!
//! Every route with a `Subscription` type has one clock ([`Clock`]): a task ticking every
//! event interval into a broadcast channel. Each subscription of the route produces its
//! next event on a tick, so all subscribers of a process see events at the same instants
//! (fan-out measurements send N events per tick), while each counts its own events from
//! 0, so event i of every subscription is the same value whatever its start time.

mod streaming;
mod ws;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use graphfleet_bench_model::Set;
use http_body_util::{BodyExt, Either, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::{AbortHandle, JoinSet};

use crate::engine::{Endpoint, SchemaError};
use crate::sets::{monolith_endpoint, subgraph_endpoints};

/// Request bodies above this are refused (the biggest `_entities` call is far smaller).
const MAX_BODY: usize = 64 << 20;

/// What to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every subgraph of the set at `/<subgraph>`.
    Subgraphs,
    /// The set's monolith oracle at `/graphql`.
    Monolith,
}

/// Server options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Extra latency per subgraph name (`graphql` for the monolith); replaces a subgraph's intrinsic delay.
    pub delays: Vec<(String, Duration)>,
}

/// Subscription options (separate from [`Options`] so `Options { delays }` literals keep
/// compiling).
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Time between two events of every subscription (the route's clock period).
    pub event_interval: Duration,
    /// Per-route event intervals (subgraph name, `graphql` for the monolith).
    pub event_intervals: Vec<(String, Duration)>,
    /// A WebSocket must send `connection_init` within this (else close 4408).
    pub connection_init_timeout: Duration,
    /// Apollo multipart subscriptions send a `{}` heartbeat part this often.
    pub multipart_heartbeat: Duration,
    /// Operations one WebSocket may run at once; more get an `error` message each.
    pub max_operations_per_socket: usize,
}

/// The default time between events.
pub const DEFAULT_EVENT_INTERVAL: Duration = Duration::from_millis(100);

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            event_interval: DEFAULT_EVENT_INTERVAL,
            event_intervals: Vec::new(),
            // graphql-ws's server default.
            connection_init_timeout: Duration::from_secs(3),
            // Apollo Router's heartbeat period.
            multipart_heartbeat: Duration::from_secs(5),
            max_operations_per_socket: 10_000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("--delay names {0:?}, which is not served (expected one of: {1})")]
    UnknownDelayTarget(String, String),
    #[error("--event-interval names {0:?}, which serves no subscriptions (expected one of: {1})")]
    UnknownIntervalTarget(String, String),
    #[error("the event interval of {0} must be above zero")]
    ZeroInterval(String),
    #[error("listener: {0}")]
    Io(#[from] std::io::Error),
}

/// A route's event clock: a tick every interval to every subscription of the route.
struct Clock {
    ticks: broadcast::Sender<()>,
    task: AbortHandle,
}

/// Ticks buffered per subscriber; a subscriber further behind skips ticks (its events
/// stay the same sequence, only later).
const CLOCK_BUFFER: usize = 16;

impl Clock {
    fn start(interval: Duration) -> Self {
        let (ticks, _) = broadcast::channel(CLOCK_BUFFER);
        let sender = ticks.clone();
        let task = tokio::spawn(async move {
            let start = tokio::time::Instant::now() + interval;
            let mut timer = tokio::time::interval_at(start, interval);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                timer.tick().await;
                // No receivers is normal (no subscription open).
                let _ = sender.send(());
            }
        });
        Self {
            ticks,
            task: task.abort_handle(),
        }
    }
}

struct Route {
    path: String,
    endpoint: Endpoint,
    delay: Option<Duration>,
    requests: AtomicU64,
    subscriptions: AtomicU64,
    events: AtomicU64,
    clock: Option<Clock>,
}

struct App {
    routes: Vec<Route>,
    stream: StreamOptions,
    /// Set to true when the server stops: open WebSockets and event streams end.
    stopping: watch::Sender<bool>,
}

impl Drop for App {
    fn drop(&mut self) {
        for route in &self.routes {
            if let Some(clock) = &route.clock {
                clock.task.abort();
            }
        }
    }
}

/// The response body: a complete buffer, or a stream (SSE, multipart).
type Body = Either<Full<Bytes>, StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>>;

impl App {
    fn new(
        set: Set,
        mode: Mode,
        opts: &Options,
        stream: &StreamOptions,
    ) -> Result<Self, ServeError> {
        let mut app = Self::routes(set, mode, opts)?;
        app.stream = stream.clone();
        let intervals: Vec<Duration> = app
            .routes
            .iter()
            .map(|r| {
                stream
                    .event_intervals
                    .iter()
                    .find(|(name, _)| name == r.endpoint.name())
                    .map_or(stream.event_interval, |(_, d)| *d)
            })
            .collect();
        for (name, _) in &stream.event_intervals {
            if !app
                .routes
                .iter()
                .any(|r| r.endpoint.name() == name && r.endpoint.has_subscriptions())
            {
                let names: Vec<&str> = app
                    .routes
                    .iter()
                    .filter(|r| r.endpoint.has_subscriptions())
                    .map(|r| r.endpoint.name())
                    .collect();
                return Err(ServeError::UnknownIntervalTarget(
                    name.clone(),
                    names.join(", "),
                ));
            }
        }
        for (route, interval) in app.routes.iter_mut().zip(intervals) {
            if route.endpoint.has_subscriptions() {
                if interval.is_zero() {
                    return Err(ServeError::ZeroInterval(route.endpoint.name().to_owned()));
                }
                route.clock = Some(Clock::start(interval));
            }
        }
        Ok(app)
    }

    fn routes(set: Set, mode: Mode, opts: &Options) -> Result<Self, ServeError> {
        let routes: Vec<Route> = match mode {
            Mode::Subgraphs => subgraph_endpoints(set)?
                .into_iter()
                .map(|endpoint| {
                    let intrinsic = set
                        .subgraphs()
                        .iter()
                        .find(|d| d.name == endpoint.name())
                        .and_then(|d| d.intrinsic_delay);
                    route(endpoint, intrinsic)
                })
                .collect(),
            Mode::Monolith => vec![route(monolith_endpoint(set)?, None)],
        };
        let mut app = App {
            routes,
            stream: StreamOptions::default(),
            stopping: watch::Sender::new(false),
        };
        for (name, delay) in &opts.delays {
            let Some(index) = app.routes.iter().position(|r| r.endpoint.name() == name) else {
                let names: Vec<&str> = app.routes.iter().map(|r| r.endpoint.name()).collect();
                return Err(ServeError::UnknownDelayTarget(
                    name.clone(),
                    names.join(", "),
                ));
            };
            let route = &mut app.routes[index];
            route.delay = Some(*delay).filter(|d| !d.is_zero());
        }
        Ok(app)
    }

    fn stats(&self) -> Bytes {
        let counter =
            |read: fn(&Route) -> &AtomicU64| -> serde_json::Map<String, serde_json::Value> {
                self.routes
                    .iter()
                    .map(|r| {
                        (
                            r.endpoint.name().to_owned(),
                            read(r).load(Ordering::Relaxed).into(),
                        )
                    })
                    .collect()
            };
        let total: u64 = self
            .routes
            .iter()
            .map(|r| r.requests.load(Ordering::Relaxed))
            .sum();
        let body = serde_json::json!({
            "total": total,
            "requests": counter(|r| &r.requests),
            "subscriptions": counter(|r| &r.subscriptions),
            "events": counter(|r| &r.events),
        });
        Bytes::from(body.to_string())
    }

    fn reset(&self) {
        for r in &self.routes {
            r.requests.store(0, Ordering::Relaxed);
            r.subscriptions.store(0, Ordering::Relaxed);
            r.events.store(0, Ordering::Relaxed);
        }
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
        let path = req.uri().path();
        let method = req.method().clone();
        if path == "/stats" && method == Method::GET {
            return Ok(json(StatusCode::OK, self.stats()));
        }
        if path == "/stats/reset" && method == Method::POST {
            let before = self.stats();
            self.reset();
            return Ok(json(StatusCode::OK, before));
        }
        if path == "/health" {
            return Ok(json(
                StatusCode::OK,
                Bytes::from_static(b"{\"status\":\"ok\"}"),
            ));
        }
        let Some(index) = self.routes.iter().position(|r| r.path == path) else {
            return Ok(error(StatusCode::NOT_FOUND, "No endpoint at this path."));
        };
        if ws::is_upgrade(&req) {
            return Ok(ws::upgrade(self, index, req));
        }
        let transport = streaming::Transport::accepted(req.headers().get(ACCEPT));
        let body = match (&method, transport) {
            (&Method::POST, _) => match Limited::new(req.into_body(), MAX_BODY).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => {
                    return Ok(error(
                        StatusCode::BAD_REQUEST,
                        &format!("Could not read the body: {e}"),
                    ));
                }
            },
            // GraphQL over SSE also allows GET with the request in the query string.
            (&Method::GET, Some(streaming::Transport::Sse)) => {
                match streaming::request_from_query(req.uri().query().unwrap_or("")) {
                    Ok(body) => Bytes::from(body),
                    Err(e) => return Ok(error(StatusCode::BAD_REQUEST, &e)),
                }
            }
            _ => {
                return Ok(error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "Send GraphQL requests with POST (GET only for GraphQL over SSE, or a \
                     WebSocket upgrade with the graphql-transport-ws subprotocol).",
                ));
            }
        };
        if let Some(transport) = transport {
            return Ok(streaming::respond(self, index, transport, body).await);
        }
        let route = &self.routes[index];
        route.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(delay) = route.delay {
            tokio::time::sleep(delay).await;
        }
        let reply = route.endpoint.handle(&body);
        let status =
            StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Ok(json(status, Bytes::from(reply.body)))
    }
}

fn route(endpoint: Endpoint, delay: Option<Duration>) -> Route {
    Route {
        path: format!("/{}", endpoint.name()),
        endpoint,
        delay,
        requests: AtomicU64::new(0),
        subscriptions: AtomicU64::new(0),
        events: AtomicU64::new(0),
        clock: None,
    }
}

fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Either::Left(Full::new(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    let body = serde_json::json!({ "errors": [{ "message": message }] });
    json(status, Bytes::from(body.to_string()))
}

/// Serves `set` on `listener` until `shutdown` resolves; open connections are closed then.
async fn run(app: Arc<App>, listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => {
                app.stopping.send_replace(true);
                break;
            }
        };
        while connections.try_join_next().is_some() {}
        // Accept errors (e.g. out of file descriptors) are transient: keep serving.
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        connections.spawn(async move {
            let service = service_fn(move |req| app.clone().handle(req));
            // Connection errors (client resets) end only that connection.
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection_with_upgrades(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Serves `set` in `mode` on `listener` forever.
pub async fn serve(
    set: Set,
    mode: Mode,
    listener: TcpListener,
    opts: Options,
    stream: StreamOptions,
) -> Result<(), ServeError> {
    let app = Arc::new(App::new(set, mode, &opts, &stream)?);
    run(app, listener, std::future::pending()).await;
    Ok(())
}

/// A server started by [`spawn`]; dropping it shuts the server down.
pub struct Handle {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Handle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, the prefix for `/<subgraph>`, `/graphql` and `/stats`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, closes open connections and waits for the server task.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Starts `set` in `mode` on `listener` in a background task (requires a tokio runtime).
pub fn spawn(
    set: Set,
    mode: Mode,
    listener: TcpListener,
    opts: Options,
) -> Result<Handle, ServeError> {
    spawn_with(set, mode, listener, opts, StreamOptions::default())
}

/// [`spawn`] with subscription options.
pub fn spawn_with(
    set: Set,
    mode: Mode,
    listener: TcpListener,
    opts: Options,
    stream: StreamOptions,
) -> Result<Handle, ServeError> {
    let addr = listener.local_addr()?;
    let app = Arc::new(App::new(set, mode, &opts, &stream)?);
    let (tx, rx) = oneshot::channel();
    let task = tokio::spawn(run(app, listener, async move {
        let _ = rx.await;
    }));
    Ok(Handle {
        addr,
        shutdown: Some(tx),
        task: Some(task),
    })
}
