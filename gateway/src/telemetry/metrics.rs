//! Prometheus metrics in a registry owned by one gateway (not the process-global
//! default), so several gateways in one process never share series.
//!
//! The hot path only touches pre-resolved handles (atomics): per-operation handles are
//! resolved once per cached operation, per-subgraph handles once per supergraph.

use crate::executor::memory::MemoryBudget;
use crate::executor::metrics::{FetchMetrics, SubgraphHandles};
use parking_lot::Mutex;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Distinct operation names given their own label; later names share [`OTHER`].
const MAX_OPERATION_LABELS: usize = 100;
/// Label of validated operations past [`MAX_OPERATION_LABELS`] distinct names.
const OTHER: &str = "(other)";
/// Label of validated operations without a name.
const ANONYMOUS: &str = "(anonymous)";
/// Label of requests that never reached a validated operation (their name is untrusted).
pub const INVALID: &str = "(invalid)";

/// Request latency buckets (seconds): 1 ms to 30 s.
const REQUEST_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How a GraphQL request ended, as the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// Executed without errors.
    Ok,
    /// Executed; the response carries field errors (a subgraph failed or returned errors).
    FieldErrors,
    /// Parse, validation, limit, variable or planning error: nothing executed.
    RequestError,
    /// Cut off by the request timeout.
    Timeout,
    /// Dropped before the timeout (the client went away).
    Cancelled,
    /// No supergraph loaded yet.
    NotReady,
}

impl RequestOutcome {
    const COUNT: usize = 6;

    pub fn label(self) -> &'static str {
        match self {
            RequestOutcome::Ok => "ok",
            RequestOutcome::FieldErrors => "field_errors",
            RequestOutcome::RequestError => "request_error",
            RequestOutcome::Timeout => "timeout",
            RequestOutcome::Cancelled => "cancelled",
            RequestOutcome::NotReady => "not_ready",
        }
    }
}

/// Counter and histogram handles of one operation label, resolved per outcome on first
/// use (so outcomes that never happen export no series).
pub struct OperationMetrics {
    label: String,
    requests: IntCounterVec,
    durations: HistogramVec,
    handles: [OnceLock<(IntCounter, Histogram)>; RequestOutcome::COUNT],
    costs: HistogramVec,
    cost: OnceLock<Histogram>,
}

impl OperationMetrics {
    pub fn record(&self, outcome: RequestOutcome, elapsed: Duration) {
        let (count, duration) = self.handles[outcome as usize].get_or_init(|| {
            let labels = [self.label.as_str(), outcome.label()];
            (
                self.requests.with_label_values(&labels),
                self.durations.with_label_values(&labels),
            )
        });
        count.inc();
        duration.observe(elapsed.as_secs_f64());
    }

    /// Record a demand-control cost estimate of this operation.
    pub fn record_cost(&self, estimate: f64) {
        self.cost
            .get_or_init(|| self.costs.with_label_values(&[self.label.as_str()]))
            .observe(estimate);
    }
}

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
    requests: IntCounterVec,
    request_duration: HistogramVec,
    estimated_cost: HistogramVec,
    fetches: IntCounterVec,
    fetch_errors: IntCounterVec,
    fetch_duration: HistogramVec,
    cache: CacheMetrics,
    in_flight: IntGauge,
    supergraph_info: IntGaugeVec,
    /// The hash `supergraph_info` carries; serialises its updates.
    supergraph_hash: Mutex<Option<String>>,
    reloads: IntCounterVec,
    memory_held: IntGauge,
    memory_limit: IntGauge,
    memory_refused: IntCounterVec,
    operations: Mutex<FxHashMap<String, Arc<OperationMetrics>>>,
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
    pub fn new() -> Self {
        let registry = Registry::new();
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
        let invalid = Arc::new(resolve_operation(
            &requests,
            &request_duration,
            &estimated_cost,
            INVALID,
        ));
        Self {
            registry,
            requests,
            request_duration,
            estimated_cost,
            fetches,
            fetch_errors,
            fetch_duration,
            cache,
            in_flight,
            supergraph_info,
            supergraph_hash: Mutex::new(None),
            reloads,
            memory_held,
            memory_limit,
            memory_refused,
            operations: Mutex::new(FxHashMap::default()),
            invalid,
            subscriptions,
        }
    }

    /// Handles for a validated operation (`None`: anonymous). Names past the bound share
    /// one label, so clients cannot grow the series without limit.
    pub fn operation(&self, name: Option<&str>) -> Arc<OperationMetrics> {
        let name = name.unwrap_or(ANONYMOUS);
        let mut ops = self.operations.lock();
        if let Some(handles) = ops.get(name) {
            return handles.clone();
        }
        let label = if name == ANONYMOUS || ops.len() < MAX_OPERATION_LABELS {
            name
        } else {
            OTHER
        };
        let handles = ops.get(label).cloned().unwrap_or_else(|| {
            Arc::new(resolve_operation(
                &self.requests,
                &self.request_duration,
                &self.estimated_cost,
                label,
            ))
        });
        ops.insert(label.to_owned(), handles.clone());
        handles
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

fn resolve_operation(
    requests: &IntCounterVec,
    durations: &HistogramVec,
    costs: &HistogramVec,
    label: &str,
) -> OperationMetrics {
    OperationMetrics {
        label: label.to_owned(),
        requests: requests.clone(),
        durations: durations.clone(),
        handles: Default::default(),
        costs: costs.clone(),
        cost: OnceLock::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_labels_are_bounded() {
        let metrics = Metrics::new();
        for i in 0..MAX_OPERATION_LABELS + 50 {
            metrics
                .operation(Some(&format!("Op{i}")))
                .record(RequestOutcome::Ok, Duration::ZERO);
        }
        metrics
            .operation(None)
            .record(RequestOutcome::Ok, Duration::ZERO);
        let text = metrics.encode();
        let labelled: std::collections::BTreeSet<&str> = text
            .lines()
            .filter(|l| l.starts_with("graphfleet_graphql_requests_total{"))
            .filter_map(|l| l.split("operation=\"").nth(1)?.split('"').next())
            .collect();
        assert!(labelled.contains(OTHER), "{text}");
        assert!(labelled.contains(ANONYMOUS), "{text}");
        assert!(labelled.contains("Op0"), "{text}");
        assert!(!labelled.contains("Op149"), "{text}");
        // At most the bound, plus INVALID, ANONYMOUS and OTHER.
        assert!(
            labelled.len() <= MAX_OPERATION_LABELS + 3,
            "{}",
            labelled.len()
        );
    }
}
