//! Trace export over OTLP/gRPC, set up the same way by every graphfleet binary: a
//! batching exporter to one endpoint, parent-based ratio sampling, the service name as
//! the resource. Each binary adds its own subscriber layers and filters.

use anyhow::Context as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

/// A tracer provider exporting to `endpoint` as `service_name`, keeping the share
/// `sample_ratio` (0.0..=1.0) of root traces and following the parent's decision
/// otherwise. Needs a Tokio runtime entered (tonic's channel spawns on it).
pub fn otlp_tracer_provider(
    endpoint: &str,
    service_name: &str,
    sample_ratio: f64,
) -> anyhow::Result<SdkTracerProvider> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&sample_ratio),
        "the trace sample ratio must be within 0.0..=1.0, got {sample_ratio}"
    );
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()
        .with_context(|| format!("building the OTLP exporter for {endpoint}"))?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            sample_ratio,
        ))))
        .with_resource(
            Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_ratio_outside_zero_to_one_is_refused() {
        let err =
            otlp_tracer_provider("http://127.0.0.1:4317", "test", 1.5).expect_err("1.5 is refused");
        assert!(err.to_string().contains("0.0..=1.0"), "{err}");
    }
}
