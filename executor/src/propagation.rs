//! W3C trace context on subgraph requests, and the subgraph's status on the fetch span:
//! only while pipeline spans are exported (`graphfleet_planner::trace`).

use graphfleet_planner::trace::enabled;
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// Add the current span's W3C trace context to an outgoing request's headers.
pub fn inject_current(headers: &mut http::HeaderMap) {
    if !enabled() {
        return;
    }
    let cx = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
}

/// Record the subgraph's HTTP status on the current (fetch) span.
pub fn record_status(status: u16) {
    if enabled() {
        tracing::Span::current().record("http.response.status_code", status);
    }
}
