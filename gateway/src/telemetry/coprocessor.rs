//! Metrics of the coprocessor (`coprocessor`): calls per stage and outcome, and their
//! durations. Registered only when a coprocessor is configured.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use std::time::Duration;

pub struct CoprocessorMetrics {
    calls: IntCounterVec,
    duration: HistogramVec,
}

impl CoprocessorMetrics {
    pub fn new(registry: &Registry) -> Self {
        let calls = IntCounterVec::new(
            Opts::new(
                "graphfleet_coprocessor_calls_total",
                "Coprocessor calls by stage and outcome (continue, break, failed: the request or fetch failed, failed_open: on_error continue went on without it).",
            ),
            &["stage", "outcome"],
        )
        .expect("valid metric");
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "graphfleet_coprocessor_duration_seconds",
                "Time of a coprocessor call, by stage (failed calls included).",
            )
            .buckets(vec![
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
            ]),
            &["stage"],
        )
        .expect("valid metric");
        for metric in [
            Box::new(calls.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(duration.clone()),
        ] {
            registry.register(metric).expect("metric names are unique");
        }
        Self { calls, duration }
    }

    pub fn record(&self, stage: &str, outcome: &str, took: Duration) {
        self.calls.with_label_values(&[stage, outcome]).inc();
        self.duration
            .with_label_values(&[stage])
            .observe(took.as_secs_f64());
    }
}
