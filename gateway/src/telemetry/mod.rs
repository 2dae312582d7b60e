//! Telemetry: Prometheus metrics per gateway ([`metrics`]), logs and OTLP traces for the
//! process ([`tracing`]).

pub mod coprocessor;
mod labels;
pub mod metrics;
#[cfg(target_os = "linux")]
mod process_cpu;
mod rate_limit;
mod resilience;
pub mod tracing;

pub use metrics::{Metrics, RequestOutcome};
pub use tracing::{TelemetryGuard, init};

use crate::lifecycle::ReloadStatus;
use metrics::{InFlight, OperationMetrics};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts one GraphQL request when dropped: with the outcome given to [`finish`], or as
/// cut short (timeout or client gone) when its future was dropped first.
///
/// [`finish`]: RequestRecorder::finish
pub struct RequestRecorder<'a> {
    metrics: &'a Metrics,
    start: Instant,
    deadline: Instant,
    operation: Option<Arc<OperationMetrics>>,
    outcome: Option<RequestOutcome>,
    _in_flight: InFlight,
}

impl<'a> RequestRecorder<'a> {
    /// `deadline` is when the request timeout fires: a request dropped then or after
    /// counts as `timeout`, before it as `cancelled` (the client went away).
    pub fn start(metrics: &'a Metrics, deadline: Instant) -> Self {
        Self {
            metrics,
            start: Instant::now(),
            deadline,
            operation: None,
            outcome: None,
            _in_flight: metrics.in_flight(),
        }
    }

    /// The validated operation's handles (label by its name, bounded).
    pub fn operation(&mut self, handles: &Arc<OperationMetrics>) {
        self.operation = Some(handles.clone());
    }

    pub fn finish(&mut self, outcome: RequestOutcome) {
        self.outcome = Some(outcome);
    }
}

impl Drop for RequestRecorder<'_> {
    fn drop(&mut self) {
        let elapsed = self.start.elapsed();
        // The timer may fire a hair before `deadline` by this clock; 1 ms covers it.
        let timed_out = Instant::now() + Duration::from_millis(1) >= self.deadline;
        let outcome = self.outcome.unwrap_or(if timed_out {
            RequestOutcome::Timeout
        } else {
            RequestOutcome::Cancelled
        });
        match &self.operation {
            Some(op) => op.record(outcome, elapsed),
            None => self.metrics.invalid_operation().record(outcome, elapsed),
        }
    }
}

/// The Prometheus text of `metrics`, with the values read at scrape time (served
/// supergraph, reload counts, the memory budget, subgraph resilience) brought up to
/// date first.
pub fn render_metrics(
    metrics: &Metrics,
    served_hash: Option<&[u8; 32]>,
    status: &ReloadStatus,
    memory: &crate::executor::memory::MemoryBudget,
    resilience: &[(String, crate::executor::resilience::GuardStats)],
    rate_limited: Option<(u64, u64)>,
) -> String {
    match served_hash {
        Some(hash) => metrics.set_supergraph(&crate::supergraph::hex(hash)),
        None => metrics.clear_supergraph(),
    }
    metrics.set_reloads(status.successful_reloads, status.failed_reloads);
    metrics.set_memory(memory);
    metrics.resilience.set(resilience);
    if let Some(counts) = rate_limited {
        metrics.rate_limit.set(counts);
    }
    metrics.encode()
}
