//! `graphfleet-operator`: reconciles Subgraphs and GraphGateways into a gateway fleet, and
//! runs LoadTests as k6 Jobs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use graphfleet_operator::admin_server::{self, OpsState};
use graphfleet_operator::controller::{self, Settings};
use graphfleet_operator::lease::{LeaderElector, LeaseSettings};
use graphfleet_operator::metrics::Metrics;
use graphfleet_operator::web::{self, WebState};
use tokio::sync::oneshot;

mod telemetry;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

/// Reconciles Subgraph and GraphGateway resources into rolled-out gateway Deployments.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// Address of /metrics, /healthz and /readyz.
    #[arg(long, env = "GRAPHFLEET_OPS_ADDR", default_value = "0.0.0.0:8080")]
    ops_addr: SocketAddr,
    /// Address of the read-only web view (GraphGateways, Subgraphs, LoadTests); `off`
    /// serves none.
    #[arg(long, env = "GRAPHFLEET_WEB_ADDR", default_value = "0.0.0.0:8081")]
    web_addr: String,
    /// Elect a leader through a Lease so only one replica reconciles.
    #[arg(long, env = "GRAPHFLEET_LEADER_ELECTION", default_value_t = true, action = clap::ArgAction::Set)]
    leader_election: bool,
    /// Name of the leader-election Lease.
    #[arg(
        long,
        env = "GRAPHFLEET_LEASE_NAME",
        default_value = "graphfleet-operator"
    )]
    lease_name: String,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// This replica's identity in the Lease (default: hostname and pid).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// Seconds a leader may go without renewing before another replica takes over.
    #[arg(long, env = "GRAPHFLEET_LEASE_DURATION_SECONDS", default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Quiet period (ms) collapsing bursts of changes into one reconcile.
    #[arg(long, env = "GRAPHFLEET_DEBOUNCE_MS", default_value_t = 100)]
    debounce_ms: u64,
    /// Re-check period (s) of healthy objects, picking up introspected schema drift.
    #[arg(long, env = "GRAPHFLEET_RESYNC_SECONDS", default_value_t = 60)]
    resync_seconds: u64,
    /// Longest period (s) between refreshes of a gateway's `<gateway>-usage` ConfigMap
    /// (the fleet's operations, planned by new pods before they report ready).
    #[arg(long, env = "GRAPHFLEET_USAGE_REFRESH_SECONDS", default_value_t = 60)]
    usage_refresh_seconds: u64,
    /// Gateway image of GraphGateways that name none.
    #[arg(long, env = "GRAPHFLEET_GATEWAY_IMAGE", default_value = graphfleet_api::DEFAULT_GATEWAY_IMAGE)]
    gateway_image: String,
    /// Image of the k6 load-generator Jobs of LoadTests.
    #[arg(long, env = "GRAPHFLEET_K6_IMAGE", default_value = graphfleet_operator::resources::loadtest::DEFAULT_K6_IMAGE)]
    k6_image: String,
    /// Image of the Gatling load-generator Jobs of LoadTests with `executor: gatling`.
    #[arg(long, env = "GRAPHFLEET_GATLING_IMAGE", default_value = graphfleet_operator::resources::loadtest::DEFAULT_GATLING_IMAGE)]
    gatling_image: String,
    /// PEM bundle of CA certificates trusted for `https://` Subgraph introspection, in
    /// addition to the system store (SSL_CERT_FILE, SSL_CERT_DIR) and the webpki roots.
    #[arg(long, env = "GRAPHFLEET_INTROSPECTION_CA_FILE")]
    introspection_ca_file: Option<std::path::PathBuf>,
    /// Concurrent reconciles per controller.
    #[arg(long, env = "GRAPHFLEET_CONCURRENCY", default_value_t = 4)]
    concurrency: u16,
    /// OTLP/gRPC endpoint receiving traces, e.g. http://otel-collector:4317 (off when unset).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// Log format.
    #[arg(
        long,
        env = "GRAPHFLEET_LOG_FORMAT",
        value_enum,
        default_value = "json"
    )]
    log_format: LogFormat,
}

fn default_identity() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "graphfleet-operator".to_owned());
    format!("{host}-{}", std::process::id())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn termination() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.introspection_ca_file {
        // A bad CA bundle stops the operator here rather than failing introspection later.
        graphfleet_operator::subgraph_sdl::Introspector::new(Some(path))
            .map_err(|why| anyhow::anyhow!("--introspection-ca-file: {why}"))?;
    }
    let telemetry = telemetry::init(
        matches!(args.log_format, LogFormat::Json),
        args.otlp_endpoint.as_deref(),
    )?;
    let result = run(args).await;
    telemetry.shutdown();
    result
}

async fn run(args: Args) -> anyhow::Result<()> {
    let client = kube::Client::try_default()
        .await
        .context("building a Kubernetes client (in-cluster or KUBECONFIG)")?;
    let metrics = Arc::new(Metrics::new());
    let state = Arc::new(OpsState {
        metrics: metrics.clone(),
        ready: false.into(),
        leader: false.into(),
    });
    let listener = tokio::net::TcpListener::bind(args.ops_addr)
        .await
        .with_context(|| format!("binding the ops endpoint {}", args.ops_addr))?;
    let ops_addr = listener.local_addr().context("ops endpoint address")?;
    tracing::info!(ops_addr = %ops_addr, "ops endpoint listening");
    let (ops_stop, ops_stopped) = oneshot::channel::<()>();
    let ops_task = tokio::spawn(admin_server::serve(listener, state.clone(), async {
        let _ = ops_stopped.await;
    }));
    let web_task = match args.web_addr.as_str() {
        "off" => None,
        addr => {
            let addr: SocketAddr = addr
                .parse()
                .with_context(|| format!("--web-addr {addr}: not an address (or `off`)"))?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding the web view {addr}"))?;
            let web_addr = listener.local_addr().context("web view address")?;
            tracing::info!(web_addr = %web_addr, "web view listening");
            let state = Arc::new(WebState::new(client.clone(), args.namespace.clone()));
            Some(tokio::spawn(web::serve(
                listener,
                state,
                std::future::pending(),
            )))
        }
    };
    let version = client
        .apiserver_version()
        .await
        .context("reaching the API server")?;
    tracing::info!(apiserver = %version.git_version, "connected");
    state.ready.store(true, Ordering::Relaxed);

    let elector = args.leader_election.then(|| {
        let duration = Duration::from_secs(args.lease_duration_seconds.max(3));
        LeaderElector::new(
            client.clone(),
            LeaseSettings {
                name: args.lease_name.clone(),
                namespace: args.lease_namespace.clone(),
                identity: args.identity.clone().unwrap_or_else(default_identity),
                duration,
                renew_every: duration / 3,
            },
        )
    });
    let terminated = termination();
    tokio::pin!(terminated);
    if let Some(elector) = &elector {
        tracing::info!(identity = %elector.settings().identity, lease = %elector.settings().name, "waiting for leadership");
        tokio::select! {
            () = elector.acquire() => {}
            () = &mut terminated => {
                let _ = ops_stop.send(());
                return Ok(());
            }
        }
        state.leader.store(true, Ordering::Relaxed);
        tracing::info!("elected leader");
    } else {
        state.leader.store(true, Ordering::Relaxed);
    }

    let settings = Settings {
        namespace: args.namespace.clone(),
        debounce: Duration::from_millis(args.debounce_ms),
        resync: Duration::from_secs(args.resync_seconds.max(1)),
        concurrency: args.concurrency.max(1),
        default_image: args.gateway_image.clone(),
        k6_image: args.k6_image.clone(),
        gatling_image: args.gatling_image.clone(),
        admin_address: Default::default(),
        usage_refresh: Duration::from_secs(args.usage_refresh_seconds.max(1)),
        introspection_ca_file: args.introspection_ca_file.clone(),
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let controllers = tokio::spawn(controller::run(client, metrics, settings, async {
        let _ = stopped.await;
    }));
    let lost = async {
        match &elector {
            Some(e) => e.hold().await,
            None => std::future::pending().await,
        }
    };
    let lost_leadership = tokio::select! {
        () = &mut terminated => { tracing::info!("terminating: finishing in-flight reconciles"); false }
        () = lost => { tracing::error!("lost leadership: stopping"); true }
    };
    let _ = stop.send(());
    controllers.await.context("controller task panicked")?;
    if let Some(elector) = elector.as_ref().filter(|_| !lost_leadership) {
        elector.release().await;
    }
    state.leader.store(false, Ordering::Relaxed);
    let _ = ops_stop.send(());
    let _ = ops_task.await;
    if let Some(task) = web_task {
        task.abort();
    }
    anyhow::ensure!(!lost_leadership, "lost the leader lease");
    tracing::info!("stopped");
    Ok(())
}
