//! Metrics of subgraph resilience (`traffic.resilience`): retries sent, fetches the
//! circuit breaker failed at once, and whether each breaker is open. Counted by the
//! transport with plain atomics and brought up to date at scrape time.

use crate::executor::resilience::GuardStats;
use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};

pub struct ResilienceMetrics {
    retries: IntCounterVec,
    rejected: IntCounterVec,
    opened: IntCounterVec,
    open: IntGaugeVec,
}

impl ResilienceMetrics {
    pub fn new(registry: &Registry) -> Self {
        let counter = |name: &str, help: &str| {
            IntCounterVec::new(Opts::new(name, help), &["subgraph"]).expect("valid metric")
        };
        let metrics = Self {
            retries: counter(
                "graphfleet_subgraph_retries_total",
                "Retries of failed query fetches (traffic.resilience.retry).",
            ),
            rejected: counter(
                "graphfleet_subgraph_circuit_rejected_total",
                "Fetches failed at once with SUBREQUEST_CIRCUIT_OPEN while the subgraph's breaker was open.",
            ),
            opened: counter(
                "graphfleet_subgraph_circuit_opened_total",
                "Times the subgraph's circuit breaker opened.",
            ),
            open: IntGaugeVec::new(
                Opts::new(
                    "graphfleet_subgraph_circuit_open",
                    "1 while the subgraph's circuit breaker is open (or probing), else 0.",
                ),
                &["subgraph"],
            )
            .expect("valid metric"),
        };
        for collector in [
            Box::new(metrics.retries.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(metrics.rejected.clone()),
            Box::new(metrics.opened.clone()),
            Box::new(metrics.open.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        metrics
    }

    /// Bring the series up to the transport's counts.
    pub fn set(&self, stats: &[(String, GuardStats)]) {
        for (subgraph, s) in stats {
            let labels = [subgraph.as_str()];
            for (counter, total) in [
                (&self.retries, s.retries),
                (&self.rejected, s.circuit_rejections),
                (&self.opened, s.circuit_opened),
            ] {
                let c = counter.with_label_values(&labels);
                c.inc_by(total.saturating_sub(c.get()));
            }
            self.open
                .with_label_values(&labels)
                .set(i64::from(s.circuit_open));
        }
    }
}
