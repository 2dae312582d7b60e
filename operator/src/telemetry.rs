//! Structured logs (JSON or text). OTLP trace export is not wired in yet.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Handle kept for the process lifetime (flushes exporters once there are any).
pub struct Telemetry;

impl Telemetry {
    pub fn shutdown(self) {}
}

pub fn init(json: bool) -> anyhow::Result<Telemetry> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,kube=warn"));
    let fmt = tracing_subscriber::fmt::layer().with_target(true);
    let registry = tracing_subscriber::registry().with(filter);
    if json {
        registry.with(fmt.json().flatten_event(true)).try_init()?;
    } else {
        registry.with(fmt).try_init()?;
    }
    Ok(Telemetry)
}
