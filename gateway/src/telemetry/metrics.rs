//! Prometheus metrics in a registry owned by one gateway (not the process-global
//! default), so several gateways in one process never share series.
//!
//! The hot path only touches pre-resolved handles (atomics): per-operation handles are
//! resolved once per cached operation, per-subgraph handles once per supergraph.

use super::labels::{Families, Labels, Series};
pub use super::labels::{OperationMetrics, RequestOutcome};
use crate::executor::memory::MemoryBudget;
use crate::executor::metrics::{FetchMetrics, SubgraphHandles};
use parking_lot::Mutex;
use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use std::sync::Arc;

/// Label of validated operations without a name.
const ANONYMOUS: &str = "(anonymous)";
/// Label of requests that never reached a validated operation (their name is untrusted).
pub const INVALID: &str = "(invalid)";

/// Request latency buckets (seconds): 1 ms to 30 s.
const REQUEST_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// Buckets of `graphfleet_operation_estimated_cost` (demand control).
const COST_BUCKETS: &[f64] = &[
    1.0,
    5.0,
    10.0,
    25.0,
    50.0,
    100.0,
    250.0,
    500.0,
    1000.0,
    2500.0,
    5000.0,
    10_000.0,
    50_000.0,
    100_000.0,
    1_000_000.0,
];

/// Plan cache counters; the default is detached (counts into nothing exported).
#[derive(Clone)]
pub struct CacheMetrics {
    pub hits: IntCounter,
    pub misses: IntCounter,
}

impl Default for CacheMetrics {
    fn default() -> Self {
        let detached = |name| IntCounter::new(name, "unregistered").expect("valid metric name");
        Self {
            hits: detached("detached_hits"),
            misses: detached("detached_misses"),
        }
    }
}

/// Decrements the in-flight gauge when the request ends (also on cancellation).
pub struct InFlight(IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

pub struct Metrics {
    registry: Registry,
    pub(crate) resilience: super::resilience::ResilienceMetrics,
    pub(crate) rate_limit: super::rate_limit::RateLimitMetrics,
    fetches: IntCounterVec,
    fetch_errors: IntCounterVec,
    fetch_duration: HistogramVec,
    cache: CacheMetrics,
    in_flight: IntGauge,
    supergraph_info: IntGaugeVec,
    /// The hash `supergraph_info` carries; serialises its updates.
    supergraph_hash: Mutex<Option<String>>,
    reloads: IntCounterVec,
    labels: Arc<Labels>,
    anonymous: Arc<Series>,
    memory_held: IntGauge,
    memory_reserved: IntGauge,
    memory_limit: IntGauge,
    memory_refused: IntCounterVec,
    invalid: Arc<OperationMetrics>,
    pub subscriptions: SubscriptionMetrics,
}

/// Subscription gauges and counters.
#[derive(Clone)]
pub struct SubscriptionMetrics {
    /// Client subscriptions open now.
    pub open: IntGauge,
    /// Subscriptions to subgraphs open now (identical client subscriptions share one).
    pub upstreams: IntGauge,
    /// Events completed from subgraph events (once per shared subscription).
    pub events: IntCounter,
    /// Events delivered to clients.
    pub delivered: IntCounter,
    /// Client subscriptions ended, by reason.
    pub ended: IntCounterVec,
}

impl SubscriptionMetrics {
    fn new() -> Self {
        Self {
            open: IntGauge::new(
                "graphfleet_subscriptions_open",
                "Client subscriptions open now.",
            )
            .expect("valid metric"),
            upstreams: IntGauge::new(
                "graphfleet_subscription_upstreams_open",
                "Subscriptions to subgraphs open now (identical client subscriptions share one).",
            )
            .expect("valid metric"),
            events: IntCounter::new(
                "graphfleet_subscription_events_total",
                "Subgraph subscription events completed across subgraphs.",
            )
            .expect("valid metric"),
            delivered: IntCounter::new(
                "graphfleet_subscription_events_delivered_total",
                "Subscription events sent to clients.",
            )
            .expect("valid metric"),
            ended: IntCounterVec::new(
                Opts::new(
                    "graphfleet_subscriptions_ended_total",
                    "Client subscriptions ended, by reason (complete, client, error, slow_consumer, reload, shutdown).",
                ),
                &["reason"],
            )
            .expect("valid metric"),
        }
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The registry, for metrics registered only when their feature is on.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }
}

impl Metrics {
    pub fn new() -> Self {
        let registry = Registry::new();
        // process_cpu_seconds_total, memory, fds for dashboards; and CPU at 10 ms resolution
        // for the operator's LoadTest efficiency (requests per CPU second). Linux only.
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(
                prometheus::process_collector::ProcessCollector::for_self(),
            ))
            .expect("process metrics register once per registry");
        #[cfg(target_os = "linux")]
        registry
            .register(Box::new(super::process_cpu::ProcessCpu::new()))
            .expect("the CPU counter registers once per registry");
        let requests = IntCounterVec::new(
            Opts::new(
                "graphfleet_graphql_requests_total",
                "GraphQL requests by operation name and outcome.",
            ),
            &["operation", "outcome"],
        )
        .expect("valid metric");
        let request_duration = HistogramVec::new(
            HistogramOpts::new(
                "graphfleet_graphql_request_duration_seconds",
                "GraphQL request time from parse to response body, by operation and outcome.",
            )
            .buckets(REQUEST_BUCKETS.to_vec()),
            &["operation", "outcome"],
        )
        .expect("valid metric");
        let estimated_cost = HistogramVec::new(
            HistogramOpts::new(
                "graphfleet_operation_estimated_cost",
                "Demand control's static cost estimate of each request, by operation name.",
            )
            .buckets(COST_BUCKETS.to_vec()),
            &["operation"],
        )
        .expect("valid metric");
        let fetches = IntCounterVec::new(
            Opts::new(
                "graphfleet_subgraph_fetches_total",
                "Subgraph requests sent, by subgraph.",
            ),
            &["subgraph"],
        )
        .expect("valid metric");
        let fetch_errors = IntCounterVec::new(
            Opts::new(
                "graphfleet_subgraph_fetch_errors_total",
                "Subgraph requests that failed (connection, HTTP status, timeout), by subgraph.",
            ),
            &["subgraph"],
        )
        .expect("valid metric");
        let fetch_duration = HistogramVec::new(
            HistogramOpts::new(
                "graphfleet_subgraph_fetch_duration_seconds",
                "Subgraph request time, by subgraph.",
            )
            .buckets(REQUEST_BUCKETS.to_vec()),
            &["subgraph"],
        )
        .expect("valid metric");
        let cache = CacheMetrics {
            hits: IntCounter::new(
                "graphfleet_plan_cache_hits_total",
                "Requests whose operation was already parsed, validated and planned.",
            )
            .expect("valid metric"),
            misses: IntCounter::new(
                "graphfleet_plan_cache_misses_total",
                "Requests whose operation had to be parsed, validated and planned.",
            )
            .expect("valid metric"),
        };
        let in_flight = IntGauge::new(
            "graphfleet_graphql_requests_in_flight",
            "GraphQL requests being processed.",
        )
        .expect("valid metric");
        let supergraph_info = IntGaugeVec::new(
            Opts::new(
                "graphfleet_supergraph_info",
                "The supergraph being served (1), labelled by its SHA-256.",
            ),
            &["hash"],
        )
        .expect("valid metric");
        let reloads = IntCounterVec::new(
            Opts::new(
                "graphfleet_supergraph_reloads_total",
                "Supergraph reload attempts by result (success, failure).",
            ),
            &["result"],
        )
        .expect("valid metric");
        let memory_held = IntGauge::new(
            "graphfleet_memory_inflight_bytes",
            "Bytes in-flight requests hold against the memory budget (subgraph bodies, entity copies, responses until sent).",
        )
        .expect("valid metric");
        let memory_reserved = IntGauge::new(
            "graphfleet_memory_reserved_bytes",
            "Bytes admitted requests reserved against the memory budget: what their operations took before.",
        )
        .expect("valid metric");
        let memory_limit = IntGauge::new(
            "graphfleet_memory_inflight_limit_bytes",
            "The memory budget of in-flight requests (limits.max_inflight_bytes, or derived).",
        )
        .expect("valid metric");
        let memory_refused = IntCounterVec::new(
            Opts::new(
                "graphfleet_memory_refused_requests_total",
                "Requests refused for memory: new ones answered 503 (when=new), running ones cut with MEMORY_BUDGET_EXCEEDED (when=running).",
            ),
            &["when"],
        )
        .expect("valid metric");
        let subscriptions = SubscriptionMetrics::new();
        for collector in [
            Box::new(requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(request_duration.clone()),
            Box::new(estimated_cost.clone()),
            Box::new(fetches.clone()),
            Box::new(fetch_errors.clone()),
            Box::new(fetch_duration.clone()),
            Box::new(cache.hits.clone()),
            Box::new(cache.misses.clone()),
            Box::new(in_flight.clone()),
            Box::new(supergraph_info.clone()),
            Box::new(reloads.clone()),
            Box::new(memory_held.clone()),
            Box::new(memory_reserved.clone()),
            Box::new(memory_limit.clone()),
            Box::new(memory_refused.clone()),
            Box::new(subscriptions.open.clone()),
            Box::new(subscriptions.upstreams.clone()),
            Box::new(subscriptions.events.clone()),
            Box::new(subscriptions.delivered.clone()),
            Box::new(subscriptions.ended.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        let families = Families {
            requests,
            durations: request_duration,
            costs: estimated_cost,
        };
        let invalid = Arc::new(OperationMetrics::fixed(Series::new(
            INVALID, &families, true,
        )));
        Self {
            resilience: super::resilience::ResilienceMetrics::new(&registry),
            rate_limit: super::rate_limit::RateLimitMetrics::new(&registry),
            registry,
            fetches,
            fetch_errors,
            fetch_duration,
            cache,
            in_flight,
            supergraph_info,
            supergraph_hash: Mutex::new(None),
            reloads,
            anonymous: Series::new(ANONYMOUS, &families, true),
            labels: Labels::new(families),
            memory_held,
            memory_reserved,
            memory_limit,
            memory_refused,
            invalid,
            subscriptions,
        }
    }

    /// Handles for a newly cached validated operation (`None`: anonymous); its name's
    /// label is bounded and recycled (see [`super::labels`]), unless the operation is
    /// `listed` in the persisted documents: then it is labelled at once, for good.
    pub fn operation(&self, name: Option<&str>, listed: bool) -> Arc<OperationMetrics> {
        Arc::new(match name {
            Some(name) if listed => self.labels.listed_operation(name),
            Some(name) => self.labels.operation(name),
            None => OperationMetrics::fixed(self.anonymous.clone()),
        })
    }

    /// Handles for requests that never had a validated operation.
    pub fn invalid_operation(&self) -> Arc<OperationMetrics> {
        self.invalid.clone()
    }

    /// Per-subgraph handles for a supergraph's subgraphs, in `SubgraphId` order.
    pub fn fetch_metrics<'a>(&self, subgraph_names: impl Iterator<Item = &'a str>) -> FetchMetrics {
        FetchMetrics::new(
            subgraph_names
                .map(|name| SubgraphHandles {
                    fetches: self.fetches.with_label_values(&[name]),
                    errors: self.fetch_errors.with_label_values(&[name]),
                    duration: self.fetch_duration.with_label_values(&[name]),
                })
                .collect(),
        )
    }

    pub fn cache(&self) -> CacheMetrics {
        self.cache.clone()
    }

    pub fn in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// The supergraph now served: the info metric carries only its hash.
    pub fn set_supergraph(&self, hash_hex: &str) {
        let mut current = self.supergraph_hash.lock();
        if current.as_deref() != Some(hash_hex) {
            self.supergraph_info.reset();
            self.supergraph_info.with_label_values(&[hash_hex]).set(1);
            *current = Some(hash_hex.to_owned());
        }
    }

    /// No supergraph served (yet).
    pub fn clear_supergraph(&self) {
        let mut current = self.supergraph_hash.lock();
        self.supergraph_info.reset();
        *current = None;
    }

    /// Bring the reload counters up to the totals kept by the reloader.
    pub fn set_reloads(&self, successes: u64, failures: u64) {
        for (result, total) in [("success", successes), ("failure", failures)] {
            let counter = self.reloads.with_label_values(&[result]);
            counter.inc_by(total.saturating_sub(counter.get()));
        }
    }

    /// Bring the memory gauges and refusal counters up to `budget` (they are counted
    /// there, on the hot path, with plain atomics).
    pub fn set_memory(&self, budget: &MemoryBudget) {
        let gauge = |bytes: usize| i64::try_from(bytes).unwrap_or(i64::MAX);
        self.memory_held.set(gauge(budget.held()));
        self.memory_reserved.set(gauge(budget.reserved()));
        self.memory_limit.set(gauge(budget.limit()));
        let (new, running) = budget.refusals();
        for (when, total) in [("new", new), ("running", running)] {
            let counter = self.memory_refused.with_label_values(&[when]);
            counter.inc_by(total.saturating_sub(counter.get()));
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn encode(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .expect("text encoding of gathered metrics cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::telemetry::labels::{MAX_OPERATION_LABELS, OTHER, PROMOTE_AFTER};
    use std::collections::BTreeSet;
    use std::time::Duration;

    /// The operation labels of `graphfleet_graphql_requests_total`, and its series.
    fn labelled(metrics: &Metrics) -> (BTreeSet<String>, usize) {
        let text = metrics.encode();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("graphfleet_graphql_requests_total{"))
            .collect();
        let labels = series
            .iter()
            .filter_map(|l| l.split("operation=\"").nth(1)?.split('"').next())
            .map(str::to_owned)
            .collect();
        (labels, series.len())
    }

    fn ok(op: &OperationMetrics) {
        op.record(RequestOutcome::Ok, Duration::ZERO);
    }

    #[test]
    fn operation_labels_are_bounded_and_recycled() {
        let metrics = Metrics::new();
        // 10,000 names once each: the first fill the slots, the rest count as (other).
        for i in 0..10_000 {
            ok(&metrics.operation(Some(&format!("Op{i}")), false));
        }
        ok(&metrics.operation(None, false));
        let (labels, series) = labelled(&metrics);
        assert!(labels.contains(OTHER) && labels.contains(ANONYMOUS));
        assert!(labels.contains("Op0") && !labels.contains("Op9999"));
        assert_eq!(labels.len(), MAX_OPERATION_LABELS + 2);
        assert_eq!(series, labels.len());

        // A frequent operation arriving after them gets a label of its own.
        let legit = metrics.operation(Some("Legit"), false);
        for _ in 0..PROMOTE_AFTER {
            ok(&legit);
        }
        let (labels, _) = labelled(&metrics);
        assert!(labels.contains("Legit"), "{labels:?}");
        assert_eq!(labels.len(), MAX_OPERATION_LABELS + 2);

        // Names promoted by a few requests each push out the least used labels (their
        // series leave the registry), never the operation in steady use.
        for i in 0..1_000 {
            let churn = metrics.operation(Some(&format!("Churn{i}")), false);
            for _ in 0..PROMOTE_AFTER {
                ok(&churn);
            }
            if i % 10 == 0 {
                ok(&legit);
            }
        }
        let (labels, series) = labelled(&metrics);
        assert!(labels.contains("Legit"), "{labels:?}");
        assert!(labels.contains("Churn999"), "{labels:?}");
        assert!(!labels.contains("Op1"), "{labels:?}");
        assert_eq!(labels.len(), MAX_OPERATION_LABELS + 2);
        assert_eq!(series, labels.len());
    }

    #[test]
    fn listed_operations_are_labelled_at_once_and_kept() {
        let metrics = Metrics::new();
        for i in 0..MAX_OPERATION_LABELS {
            ok(&metrics.operation(Some(&format!("Op{i}")), false));
        }
        // Every slot held: a listed name is labelled on its first request anyway.
        ok(&metrics.operation(Some("Listed"), true));
        // A name holding a slot that turns out listed keeps its series.
        ok(&metrics.operation(Some("Op0"), true));
        let (labels, _) = labelled(&metrics);
        assert!(
            labels.contains("Listed") && labels.contains("Op0"),
            "{labels:?}"
        );
        // Churn pushes out capped labels only.
        for i in 0..500 {
            let churn = metrics.operation(Some(&format!("Churn{i}")), false);
            for _ in 0..PROMOTE_AFTER {
                ok(&churn);
            }
        }
        let (labels, series) = labelled(&metrics);
        assert!(
            labels.contains("Listed") && labels.contains("Op0"),
            "{labels:?}"
        );
        assert!(!labels.contains("Op1"), "{labels:?}");
        // The two pinned, the capped slots (one freed by Op0 and refilled), (other).
        assert_eq!(labels.len(), MAX_OPERATION_LABELS + 3);
        assert_eq!(series, labels.len());
    }
}
