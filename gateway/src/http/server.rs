//! The accept loop, start-up (supergraph, watcher, runtime) and graceful shutdown.
//!
//! On SIGTERM or SIGINT: readiness fails at once; after `shutdown.readiness_delay`
//! the listener closes; open connections finish their current request (keep-alive
//! connections close after it); the process ends when all are done, or when
//! `shutdown.grace_period` (counted from the signal, like Kubernetes'
//! `terminationGracePeriodSeconds`) is over. A second signal ends it at once. The exit
//! status is 0 only when everything drained; cut requests are counted in the log.

use super::admission::{Admission, Admitted};
use super::handle;
use super::head_errors::{ExplainHeadErrors, MAX_HEAD_BYTES};
use super::idle::{Activity, Tracked};
use super::layers::HttpLayers;
use crate::gateway::Gateway;
use crate::reload::{self, Reloader};
use crate::supergraph::Supergraph;
use anyhow::Context;
use graphfleet_config::Config;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulConnection, GracefulShutdown};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

/// Start a tokio runtime, load the supergraph from `config.supergraph.path` and serve
/// until a shutdown signal. With `supergraph.watch` a missing or invalid file is not
/// fatal: the gateway listens, reports not ready, and loads the file once it is valid.
pub fn serve_blocking(config: Arc<Config>) -> anyhow::Result<()> {
    let path = config
        .supergraph
        .path
        .clone()
        .context("no supergraph path configured (supergraph.path or --supergraph)")?;
    let tls = listener_tls(&config)?;
    let gateway = Arc::new(Gateway::without_supergraph(config.clone()));
    // Load before the runtime exists: a fatal error should not wait for anything.
    let _watch = if config.supergraph.watch {
        let mut reloader = Reloader::new(gateway.clone(), path);
        reloader.check();
        Some(reload::watch(reloader, config.supergraph.poll_interval)?)
    } else {
        let supergraph = Supergraph::from_file(&path)
            .with_context(|| format!("loading supergraph {}", path.display()))?;
        reload::record_initial(
            &gateway.lifecycle,
            &supergraph.hash,
            supergraph.meta.subgraphs.len(),
        );
        gateway.swap_supergraph(supergraph);
        None
    };
    let _watch_documents = crate::persisted::watch(gateway.persisted.as_deref(), &config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::runtime::worker_threads(&config))
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let mut signals = Signals::new().context("installing signal handlers")?;
        warm_up(&gateway).await;
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("binding {}", config.listen))?;
        let addr = listener.local_addr()?;
        tracing::info!(address = %addr, https = tls.is_some(), "graphfleet-gateway listening");
        // Tests and scripts wait for this exact line.
        eprintln!("graphfleet-gateway listening on {addr}");
        if let Some(admin) = config.admin.listen {
            let admin_listener = TcpListener::bind(admin)
                .await
                .with_context(|| format!("binding the admin listener {admin}"))?;
            let admin_addr = admin_listener.local_addr()?;
            tracing::info!(address = %admin_addr, "admin listener");
            // Tests wait for this line to learn an ephemeral port.
            eprintln!("graphfleet-gateway admin listener on {admin_addr}");
            tokio::spawn(super::serve_admin(admin_listener, gateway.clone()));
        }
        serve_until_signal(listener, gateway, tls, &mut signals).await
    });
    // Cut connections may still have tasks; they are dropped without waiting long.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Plan `usage.warm_up_file`'s operations before the listener opens, within
/// `usage.warm_up_timeout` (the pod is not ready meanwhile); a file that cannot be read
/// is logged and skipped: the operations are planned on first use instead.
async fn warm_up(gateway: &Gateway) {
    let usage = &gateway.config.usage;
    let Some(path) = usage.warm_up_file.as_deref() else {
        return;
    };
    let started = std::time::Instant::now();
    let report = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()))
    {
        Ok(report) => report,
        Err(why) => {
            tracing::warn!(path = %path.display(), %why, "usage.warm_up_file not read; no warm-up");
            return;
        }
    };
    let planned = gateway
        .warm_up(&report, started + usage.warm_up_timeout)
        .await;
    tracing::info!(
        planned,
        operations = report.operations.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "plan cache warmed"
    );
    // Tests and scripts read this line.
    eprintln!(
        "graphfleet-gateway warmed {planned} plans for {} operations in {} ms",
        report.operations.len(),
        started.elapsed().as_millis()
    );
}

/// Accept connections forever (tests run this in a task and drop the runtime); HTTPS
/// when the config's `tls` is set (an unusable one is logged and nothing is served).
pub async fn serve(listener: TcpListener, gateway: Arc<Gateway>) {
    let tls = match listener_tls(&gateway.config) {
        Ok(tls) => tls,
        Err(e) => {
            tracing::error!("{e:#}");
            return;
        }
    };
    let graceful = GracefulShutdown::new();
    let admission = admission(&gateway);
    let layers = Arc::new(HttpLayers::from_config(&gateway.config));
    let _watch_documents = crate::persisted::watch(gateway.persisted.as_deref(), &gateway.config)
        .inspect_err(|e| tracing::error!("cannot watch the persisted documents file: {e}"));
    loop {
        accept_one(
            &listener,
            &gateway,
            &layers,
            &graceful,
            &admission,
            tls.as_ref(),
        )
        .await;
    }
}

/// The TLS acceptor of the listener, or `None` for plain HTTP (the default).
fn listener_tls(config: &Config) -> anyhow::Result<Option<TlsAcceptor>> {
    let server = crate::config::server_config(&config.tls)
        .map_err(|(key, why)| anyhow::anyhow!("tls.{key}: {why}"))?;
    Ok(server.map(TlsAcceptor::from))
}

/// The connection slots and per-client caps of `traffic`.
fn admission(gateway: &Gateway) -> Arc<Admission> {
    let traffic = &gateway.config.traffic;
    Admission::new(traffic.max_connections, traffic.max_connections_per_client)
}

/// Serve until SIGTERM/SIGINT, then drain; an error if requests had to be cut.
async fn serve_until_signal(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    tls: Option<TlsAcceptor>,
    signals: &mut Signals,
) -> anyhow::Result<()> {
    let tls = tls.as_ref();
    let graceful = GracefulShutdown::new();
    let admission = admission(&gateway);
    let layers = Arc::new(HttpLayers::from_config(&gateway.config));
    let signal = loop {
        tokio::select! {
            () = accept_one(&listener, &gateway, &layers, &graceful, &admission, tls) => {}
            signal = signals.recv() => break signal,
        }
    };
    let started = Instant::now();
    let shutdown = &gateway.config.shutdown;
    gateway.lifecycle.begin_drain();
    // Subscriptions end now with a last message; their clients resubscribe elsewhere.
    gateway.end_subscriptions();
    tracing::info!(
        "{signal} received: readiness fails now, listener closes in {:?}",
        shutdown.readiness_delay
    );
    // Keep accepting while endpoint controllers notice the failed readiness.
    let close_at = started + shutdown.readiness_delay;
    loop {
        tokio::select! {
            () = accept_one(&listener, &gateway, &layers, &graceful, &admission, tls) => {}
            () = tokio::time::sleep_until(close_at) => break,
            signal = signals.recv() => return Err(forced(signal, &gateway)),
        }
    }
    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        requests = gateway.lifecycle.in_flight(),
        "listener closed, draining"
    );
    tokio::select! {
        () = graceful.shutdown() => {
            // WebSocket connections left hyper at their upgrade: give their last
            // messages and close frames the time to go out.
            let until = started + shutdown.grace_period;
            while gateway.open_subscriptions() > 0 && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            tracing::info!(elapsed = ?started.elapsed(), "drained, exiting");
            Ok(())
        }
        () = tokio::time::sleep_until(started + shutdown.grace_period) => {
            let cut = gateway.lifecycle.in_flight();
            tracing::warn!(requests_cut = cut, "shutdown grace period {:?} over", shutdown.grace_period);
            anyhow::bail!(
                "shutdown grace period {:?} exceeded; {cut} request(s) cut",
                shutdown.grace_period
            )
        }
        signal = signals.recv() => Err(forced(signal, &gateway)),
    }
}

fn forced(signal: &str, gateway: &Gateway) -> anyhow::Error {
    let cut = gateway.lifecycle.in_flight();
    tracing::warn!(
        requests_cut = cut,
        "second {signal}: exiting without draining"
    );
    anyhow::anyhow!("second {signal} during shutdown; {cut} request(s) cut")
}

/// Accept one connection, once a connection slot is free, and serve it in its own
/// task, watched by `graceful`; a client past its connection cap is closed at once.
async fn accept_one(
    listener: &TcpListener,
    gateway: &Arc<Gateway>,
    layers: &Arc<HttpLayers>,
    graceful: &GracefulShutdown,
    admission: &Arc<Admission>,
    tls: Option<&TlsAcceptor>,
) {
    let slot = admission.slot().await;
    match listener.accept().await {
        Ok((stream, peer)) => {
            let Some(admitted) = admission.admit(slot, Some(peer.ip())) else {
                tracing::debug!(client = %peer.ip(), "traffic.max_connections_per_client reached: connection closed");
                return;
            };
            let served = (gateway.clone(), layers.clone());
            spawn_connection(stream, served, graceful, admitted, tls);
        }
        Err(e) => {
            // E.g. out of file descriptors: back off instead of spinning.
            tracing::warn!(error = %e, "accept failed");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The gateway and the HTTP layers around it.
type Served = (Arc<Gateway>, Arc<HttpLayers>);

fn spawn_connection(
    stream: TcpStream,
    served: Served,
    graceful: &GracefulShutdown,
    admitted: Admitted,
    tls: Option<&TlsAcceptor>,
) {
    let _ = stream.set_nodelay(true);
    let client = stream.peer_addr().ok().map(|a| super::ClientAddr(a.ip()));
    let gateway = &served.0;
    let header_read_timeout = gateway.config.traffic.header_read_timeout;
    let timeouts = (header_read_timeout, gateway.config.traffic.idle_timeout);
    let activity = Activity::new();
    // Under TLS too: the idle clock sees the encrypted bytes move.
    let stream = Tracked::new(stream, activity.clone());
    let Some(acceptor) = tls else {
        let connection = graceful.watch(connection(stream, served, &activity, client));
        tokio::spawn(run(connection, activity, timeouts, admitted));
        return;
    };
    let acceptor = acceptor.clone();
    // Owned, since the connection is watched only once its handshake is done.
    let watcher = graceful.watcher();
    tokio::spawn(async move {
        // A client that never finishes its handshake would hold a connection slot; a
        // failed one (e.g. plain HTTP on this port) ends only this connection.
        let handshake = tokio::time::timeout(header_read_timeout, acceptor.accept(stream));
        let stream = match handshake.await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake not done within {header_read_timeout:?}");
                return;
            }
        };
        let connection = watcher.watch(connection(stream, served, &activity, client));
        run(connection, activity, timeouts, admitted).await;
    });
}

/// The HTTP/1 or HTTP/2 connection serving `io`, counting requests on `activity`.
fn connection<I>(
    io: I,
    (gateway, layers): Served,
    activity: &Arc<Activity>,
    client: Option<super::ClientAddr>,
) -> impl GracefulConnection + Send + 'static
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let header_read_timeout = gateway.config.traffic.header_read_timeout;
    let h2_header_list = gateway.config.limits.http2_max_header_list_bytes;
    let max_age = gateway.config.traffic.max_connection_age.map(spread);
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
        if let Some(client) = client {
            req.extensions_mut().insert(client);
        }
        let gateway = gateway.clone();
        let layers = layers.clone();
        let on_connection = requests.request();
        async move {
            let _on_connection = on_connection;
            let _in_flight = gateway.lifecycle.track_request();
            // CORS and compression around the handler, when configured.
            let mut response = layers.respond(req, |req| handle(&gateway, req)).await;
            // Kept-alive connections outlive the endpoint's removal (conntrack keeps them
            // on this pod), so while draining every answer tells the client to reconnect:
            // its next request opens a connection to a pod that stays. Closing idle
            // connections instead would race with requests already on their way.
            // Past its age the same holds: the client reconnects, and the Service may pick
            // a pod added since (a scale-up, a canary).
            let aged = max_age.is_some_and(|age| _on_connection.age() >= age);
            if gateway.lifecycle.is_draining() || aged {
                response.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, std::convert::Infallible>(response)
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper enforces the header timeout only with a timer.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_buf_size(MAX_HEAD_BYTES);
    // By default a GET's query string may be as long over HTTP/2 as over HTTP/1 (h2's
    // own default header list is 16 KiB): the longest URI and 16 KiB of other headers.
    builder
        .http2()
        .max_header_list_size(u32::try_from(h2_header_list).unwrap_or(u32::MAX));
    builder
        // Upgrades: WebSocket subscriptions take the connection over.
        .serve_connection_with_upgrades(TokioIo::new(ExplainHeadErrors::new(io)), service)
        .into_owned()
}

/// `age` shortened by up to a tenth, differently per connection, so connections opened
/// together (a client's pool) do not all reconnect on the same request.
fn spread(age: Duration) -> Duration {
    age.mul_f64(1.0 - fastrand::f64() / 10.0)
}

/// Serve a watched connection until it ends, idles out, or sends no request within the
/// first of `(first_request, idle)` timeouts, then free its slot.
async fn run(
    connection: impl Future + Send,
    activity: Arc<Activity>,
    (first_request, idle): (Duration, Duration),
    admitted: Admitted,
) {
    tokio::select! {
        // Connection errors (client resets) end only that connection.
        _ = connection => {}
        // Idle: nothing in flight, so dropping the connection loses no answer.
        () = activity.idle_for(idle) => {}
        // Silent since it was accepted (before HTTP/1 or HTTP/2 is even chosen, where
        // hyper's header timeout does not run yet).
        () = activity.silent_for(first_request) => {}
    }
    drop(admitted);
}

/// SIGTERM (Kubernetes) and SIGINT (Ctrl-C).
struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Install the handlers (before listening: from then on a signal means drain, not die).
    fn new() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
