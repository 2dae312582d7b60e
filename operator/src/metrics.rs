//! Prometheus metrics of the operator (one registry per operator instance).

use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, TextEncoder,
};

/// Reconcile, composition, rollout and load test metrics.
pub struct Metrics {
    registry: Registry,
    reconciles: IntCounterVec,
    errors: IntCounterVec,
    durations: HistogramVec,
    compositions: IntCounterVec,
    composition_seconds: HistogramVec,
    rollouts: IntCounterVec,
    loadtests: IntCounterVec,
}

/// What a rollout step can come to, each counted from 0 so dashboards show them before
/// the first.
pub const ROLLOUT_RESULTS: [&str; 4] = ["served", "canary_started", "promoted", "rolled_back"];
/// The controllers, whose reconcile series exist from the start.
pub const CONTROLLERS: [&str; 3] = ["graphgateway", "subgraph", "loadtest"];
/// How a load test can end.
pub const LOADTEST_RESULTS: [&str; 3] = ["succeeded", "failed", "aborted"];

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
        let rollouts = IntCounterVec::new(
            Opts::new(
                "rollouts_total",
                "GraphGateway rollouts by result: a new supergraph revision served, a canary started, promoted or rolled back.",
            ),
            &["result"],
        )
        .expect("valid metric");
        let loadtests = IntCounterVec::new(
            Opts::new("loadtests_total", "LoadTests finished, by result."),
            &["result"],
        )
        .expect("valid metric");
        // Series that exist before their first event: a rate over them is 0, not absent,
        // and the first event shows as an increase.
        for controller in CONTROLLERS {
            reconciles.with_label_values(&[controller]);
            durations.with_label_values(&[controller]);
        }
        for outcome in ["success", "failure", "unavailable"] {
            compositions.with_label_values(&[outcome]);
            composition_seconds.with_label_values(&[outcome]);
        }
        for result in ROLLOUT_RESULTS {
            rollouts.with_label_values(&[result]);
        }
        for result in LOADTEST_RESULTS {
            loadtests.with_label_values(&[result]);
        }
        for collector in [
            Box::new(reconciles.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(rollouts.clone()),
            Box::new(loadtests.clone()),
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
            rollouts,
            loadtests,
        }
    }

    /// A rollout step, one of [`ROLLOUT_RESULTS`].
    pub fn rollout(&self, result: &str) {
        self.rollouts.with_label_values(&[result]).inc();
    }

    /// A load test that ended, one of [`LOADTEST_RESULTS`].
    pub fn loadtest_finished(&self, result: &str) {
        self.loadtests.with_label_values(&[result]).inc();
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
        m.rollout("promoted");
        let text = m.render();
        assert!(
            text.contains("graphfleet_operator_rollouts_total{result=\"promoted\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("graphfleet_operator_rollouts_total{result=\"rolled_back\"} 0"),
            "counted from zero: {text}"
        );
        assert!(
            text.contains("graphfleet_operator_loadtests_total{result=\"failed\"} 0"),
            "{text}"
        );
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
