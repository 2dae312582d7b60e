//! The HTTP side: hyper 1 (HTTP/1.1 and h2c), one route per endpoint, request
//! counters at `/stats`, optional per-subgraph delays.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::engine::{Endpoint, SchemaError};
use crate::sets::Set;

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

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("--delay names {0:?}, which is not served (expected one of: {1})")]
    UnknownDelayTarget(String, String),
    #[error("listener: {0}")]
    Io(#[from] std::io::Error),
}

struct Route {
    path: String,
    endpoint: Endpoint,
    delay: Option<Duration>,
    requests: AtomicU64,
}

struct App {
    routes: Vec<Route>,
}

impl App {
    fn new(set: Set, mode: Mode, opts: &Options) -> Result<Self, ServeError> {
        let routes: Vec<Route> = match mode {
            Mode::Subgraphs => set
                .subgraph_endpoints()?
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
            Mode::Monolith => vec![route(set.monolith_endpoint()?, None)],
        };
        let mut app = App { routes };
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
        let counts: serde_json::Map<String, serde_json::Value> = self
            .routes
            .iter()
            .map(|r| {
                (
                    r.endpoint.name().to_owned(),
                    r.requests.load(Ordering::Relaxed).into(),
                )
            })
            .collect();
        let total: u64 = self
            .routes
            .iter()
            .map(|r| r.requests.load(Ordering::Relaxed))
            .sum();
        let body = serde_json::json!({ "total": total, "requests": counts });
        Bytes::from(body.to_string())
    }

    fn reset(&self) {
        for r in &self.routes {
            r.requests.store(0, Ordering::Relaxed);
        }
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
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
        if method != Method::POST {
            return Ok(error(
                StatusCode::METHOD_NOT_ALLOWED,
                "Send GraphQL requests with POST.",
            ));
        }
        let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                return Ok(error(
                    StatusCode::BAD_REQUEST,
                    &format!("Could not read the body: {e}"),
                ));
            }
        };
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
    }
}

fn json(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
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
            () = &mut shutdown => break,
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
                .serve_connection(TokioIo::new(stream), service)
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
) -> Result<(), ServeError> {
    let app = Arc::new(App::new(set, mode, &opts)?);
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
    let addr = listener.local_addr()?;
    let app = Arc::new(App::new(set, mode, &opts)?);
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
