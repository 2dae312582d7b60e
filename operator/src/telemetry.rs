//! Structured logs (JSON or text) and, when an OTLP endpoint is given, trace export over
//! OTLP/gRPC (reconcile spans become traces).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the trace pipeline alive; `shutdown` flushes pending spans.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            eprintln!("flushing traces failed: {e}");
        }
    }
}

fn tracer_provider(endpoint: &str) -> anyhow::Result<SdkTracerProvider> {
    graphfleet_telemetry::otlp_tracer_provider(endpoint, "graphfleet-operator", 1.0)
}

/// Installs the global subscriber: env-filtered logs, plus OTLP traces when `otlp_endpoint`
/// is set.
pub fn init(json: bool, otlp_endpoint: Option<&str>) -> anyhow::Result<Telemetry> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,kube=warn"));
    let provider = otlp_endpoint.map(tracer_provider).transpose()?;
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("graphfleet-operator")));
    let fmt = tracing_subscriber::fmt::layer().with_target(true);
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    if json {
        registry.with(fmt.json().flatten_event(true)).try_init()?;
    } else {
        registry.with(fmt).try_init()?;
    }
    Ok(Telemetry { provider })
}
