//! Prometheus metrics of the operator (one registry per operator instance).

use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// Reconcile and composition metrics.
pub struct Metrics {
    registry: Registry,
    reconciles: IntCounterVec,
    errors: IntCounterVec,
    durations: HistogramVec,
    compositions: IntCounterVec,
    composition_seconds: HistogramVec,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new_custom(Some("graphfleet_operator".to_owned()), None)
            .expect("a static prefix is valid");
        let reconciles = IntCounterVec::new(
            Opts::new("reconciles_total", "Reconciles run, by controller."),
            &["controller"],
        )
        .expect("valid metric");
        let errors = IntCounterVec::new(
            Opts::new(
                "reconcile_errors_total",
                "Reconciles that failed, by controller and error kind.",
            ),
            &["controller", "error"],
        )
        .expect("valid metric");
        let durations = HistogramVec::new(
            HistogramOpts::new(
                "reconcile_duration_seconds",
                "Reconcile duration, by controller.",
            )
            .buckets(vec![
                0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["controller"],
        )
        .expect("valid metric");
        let compositions = IntCounterVec::new(
            Opts::new(
                "compositions_total",
                "Supergraph compositions, by outcome (success, failure, unavailable).",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        let composition_seconds = HistogramVec::new(
            HistogramOpts::new(
                "composition_duration_seconds",
                "Time to compose a supergraph.",
            )
            .buckets(vec![0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0]),
            &["outcome"],
        )
        .expect("valid metric");
        for collector in [
            Box::new(reconciles.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(errors.clone()),
            Box::new(durations.clone()),
            Box::new(compositions.clone()),
            Box::new(composition_seconds.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Self {
            registry,
            reconciles,
            errors,
            durations,
            compositions,
            composition_seconds,
        }
    }

    pub fn reconciled(&self, controller: &str, took: Duration) {
        self.reconciles.with_label_values(&[controller]).inc();
        self.durations
            .with_label_values(&[controller])
            .observe(took.as_secs_f64());
    }

    pub fn reconcile_failed(&self, controller: &str, error: &str) {
        self.errors.with_label_values(&[controller, error]).inc();
    }

    pub fn composed(&self, outcome: &str, took: Duration) {
        self.compositions.with_label_values(&[outcome]).inc();
        self.composition_seconds
            .with_label_values(&[outcome])
            .observe(took.as_secs_f64());
    }

    /// Current values in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut out)
            .expect("encoding to a Vec cannot fail");
        String::from_utf8(out).expect("the text format is UTF-8")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counted_reconciles_and_compositions() {
        let m = Metrics::new();
        m.reconciled("graphgateway", Duration::from_millis(3));
        m.composed("success", Duration::from_millis(1));
        m.reconcile_failed("subgraph", "kube");
        let text = m.render();
        assert!(
            text.contains("graphfleet_operator_reconciles_total{controller=\"graphgateway\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("graphfleet_operator_compositions_total{outcome=\"success\"} 1"),
            "{text}"
        );
        assert!(text.contains("graphfleet_operator_reconcile_errors_total{controller=\"subgraph\",error=\"kube\"} 1"), "{text}");
    }
}
