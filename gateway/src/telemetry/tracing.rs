//! Logs (text or JSON, filtered by `RUST_LOG`) and, when an OTLP endpoint is set, trace
//! export over OTLP/gRPC with W3C trace-context propagation.
//!
//! Pipeline spans are only created while export is on ([`enabled`]); otherwise the hot
//! path pays one relaxed atomic load per span site.

use anyhow::Context as _;
use graphfleet_config::{LogFormat, TelemetryConfig};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Whether pipeline spans are exported (set by [`init`]).
pub use graphfleet_planner::trace::enabled;

/// Keeps the trace pipeline alive; dropping it flushes pending spans.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
    /// The exporter's gRPC channel runs here, apart from request workers, so a flush
    /// on exit works after the serving runtime is gone.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        graphfleet_planner::trace::set_enabled(false);
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("flushing traces failed: {e}");
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn tracer_provider(
    endpoint: &str,
    config: &TelemetryConfig,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<SdkTracerProvider> {
    // tonic's lazy channel spawns its worker on the current runtime.
    let _entered = runtime.enter();
    graphfleet_telemetry::otlp_tracer_provider(
        endpoint,
        &config.tracing.service_name,
        config.tracing.sample_ratio,
    )
    .context("telemetry.tracing")
}

/// Install the global subscriber: logs per `log_format` filtered by `RUST_LOG` (default
/// `info`), plus OTLP export of pipeline spans when `tracing.otlp_endpoint` is set.
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    let (provider, runtime) = match &config.tracing.otlp_endpoint {
        Some(endpoint) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("otlp-export")
                .enable_all()
                .build()
                .context("starting the OTLP export runtime")?;
            let provider = tracer_provider(endpoint, config, &runtime)?;
            (Some(provider), Some(runtime))
        }
        None => (None, None),
    };
    // Pipeline spans go to the exporter whatever RUST_LOG says; logs follow RUST_LOG.
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer("graphfleet-gateway"))
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target("graphfleet::pipeline", tracing::Level::INFO),
            )
    });
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only on a terminal: log files and collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let registry = tracing_subscriber::registry().with(otel);
    match config.log_format {
        LogFormat::Json => registry
            .with(fmt.json().flatten_event(true).with_filter(filter))
            .try_init(),
        LogFormat::Text => registry.with(fmt.with_filter(filter)).try_init(),
    }
    .context("installing the tracing subscriber")?;
    graphfleet_planner::trace::set_enabled(provider.is_some());
    Ok(TelemetryGuard { provider, runtime })
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// The client's W3C trace context headers, kept for [`set_remote_parent`]; empty (no
/// allocation) while export is off.
pub fn trace_headers(headers: &http::HeaderMap) -> http::HeaderMap {
    let mut out = http::HeaderMap::new();
    if enabled() {
        for name in ["traceparent", "tracestate"] {
            if let Some(value) = headers.get(name) {
                out.insert(name, value.clone());
            }
        }
    }
    out
}

/// Name the current (request) span's operation.
pub fn record_operation(name: Option<&str>) {
    if let (true, Some(name)) = (enabled(), name) {
        tracing::Span::current().record("graphql.operation.name", name);
    }
}

/// Make the client's W3C `traceparent` (if any) the parent of `span`.
pub fn set_remote_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    if span.is_none() || !headers.contains_key("traceparent") {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    // Fails only for a span that already started in another trace; keep it then.
    let _ = span.set_parent(cx);
}
