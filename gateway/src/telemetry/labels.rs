//! Operation-name labels a client cannot use up. Names come from clients, so at most
//! [`MAX_OPERATION_LABELS`] hold a label at once and the rest count as `(other)`. While
//! slots are free a validated name takes one at once; once they are full, a name gets
//! one only when one of its documents has been requested [`PROMOTE_AFTER`] times, and
//! then the least used label gives way: its series are removed from the registry. So
//! names sent once or a few times each never push out an operation in steady use, and
//! a label that was pushed out is won back on the next request of its operation.
//! Operations in the persisted document list are the operator's, not a client's: each
//! name among them has a label at once, outside the cap and never pushed out (the list
//! bounds them).

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Operation names holding a label at once.
pub const MAX_OPERATION_LABELS: usize = 100;
/// Requests of one cached operation after which its name may take a label from
/// another once every slot is held.
pub const PROMOTE_AFTER: u64 = 8;
/// Label of validated operations without a label of their own.
pub const OTHER: &str = "(other)";

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
    pub const COUNT: usize = 6;
    pub const ALL: [RequestOutcome; Self::COUNT] = [
        RequestOutcome::Ok,
        RequestOutcome::FieldErrors,
        RequestOutcome::RequestError,
        RequestOutcome::Timeout,
        RequestOutcome::Cancelled,
        RequestOutcome::NotReady,
    ];

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

/// The metric families labelled by operation.
#[derive(Clone)]
pub struct Families {
    pub requests: IntCounterVec,
    pub durations: HistogramVec,
    pub costs: HistogramVec,
}

/// One operation label's series, resolved per outcome on first use (outcomes that never
/// happen export no series).
pub struct Series {
    label: Box<str>,
    families: Families,
    handles: [OnceLock<(IntCounter, Histogram)>; RequestOutcome::COUNT],
    cost: OnceLock<Histogram>,
    /// Requests recorded (from [`PROMOTE_AFTER`] for a promoted name): what eviction weighs.
    uses: AtomicU64,
    /// Insertion order: among equally used labels the oldest gives way.
    seq: u64,
    /// Shared by many names (`(other)`): never a name's own.
    shared: bool,
    evicted: AtomicBool,
    /// Serialises resolving handles with eviction, so an evicted label never comes back.
    resolving: Mutex<()>,
}

impl Series {
    pub fn new(label: &str, families: &Families, shared: bool) -> Arc<Self> {
        Self::with_uses(label, families, shared, 0, 0)
    }

    fn with_uses(label: &str, families: &Families, shared: bool, uses: u64, seq: u64) -> Arc<Self> {
        Arc::new(Self {
            label: label.into(),
            families: families.clone(),
            handles: Default::default(),
            cost: OnceLock::new(),
            uses: AtomicU64::new(uses),
            seq,
            shared,
            evicted: AtomicBool::new(false),
            resolving: Mutex::new(()),
        })
    }

    /// `registered`, or handles exported nowhere once evicted.
    fn resolve<T>(&self, registered: impl FnOnce() -> T, detached: impl FnOnce() -> T) -> T {
        let _serial = self.resolving.lock();
        if self.evicted.load(Ordering::Relaxed) {
            detached()
        } else {
            registered()
        }
    }

    fn handles(&self, outcome: RequestOutcome) -> &(IntCounter, Histogram) {
        self.handles[outcome as usize].get_or_init(|| {
            let labels = [&*self.label, outcome.label()];
            self.resolve(
                || {
                    (
                        self.families.requests.with_label_values(&labels),
                        self.families.durations.with_label_values(&labels),
                    )
                },
                || (detached_counter(), detached_histogram()),
            )
        })
    }

    fn record(&self, outcome: RequestOutcome, elapsed: Duration) {
        self.uses.fetch_add(1, Ordering::Relaxed);
        let (count, duration) = self.handles(outcome);
        count.inc();
        duration.observe(elapsed.as_secs_f64());
    }

    fn record_cost(&self, estimate: f64) {
        self.cost
            .get_or_init(|| {
                self.resolve(
                    || self.families.costs.with_label_values(&[&*self.label]),
                    detached_histogram,
                )
            })
            .observe(estimate);
    }

    /// Remove this label's series from the registry, for good. Its request counts move
    /// to `other`, so totals over labels stay whole (its durations and costs go).
    fn evict(&self, other: &Series) {
        let _serial = self.resolving.lock();
        self.evicted.store(true, Ordering::Relaxed);
        for outcome in RequestOutcome::ALL {
            if let Some((count, _)) = self.handles[outcome as usize].get() {
                other.handles(outcome).0.inc_by(count.get());
            }
            // Resolved or not: one may be resolving right now.
            let labels = [&*self.label, outcome.label()];
            let _ = self.families.requests.remove_label_values(&labels);
            let _ = self.families.durations.remove_label_values(&labels);
        }
        let _ = self.families.costs.remove_label_values(&[&*self.label]);
    }
}

fn detached_counter() -> IntCounter {
    IntCounter::new("detached", "unregistered").expect("valid metric name")
}

fn detached_histogram() -> Histogram {
    Histogram::with_opts(HistogramOpts::new("detached", "unregistered")).expect("valid metric name")
}

/// The names holding labels.
pub struct Labels {
    families: Families,
    other: Arc<Series>,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    slots: FxHashMap<Box<str>, Arc<Series>>,
    /// Names of listed operations: outside `slots`' cap, never evicted.
    pinned: FxHashMap<Box<str>, Arc<Series>>,
    seq: u64,
}

impl Table {
    fn insert(&mut self, name: &str, families: &Families, uses: u64) -> Arc<Series> {
        self.seq += 1;
        let series = Series::with_uses(name, families, false, uses, self.seq);
        self.slots.insert(name.into(), series.clone());
        series
    }
}

impl Labels {
    pub fn new(families: Families) -> Arc<Self> {
        Arc::new(Self {
            other: Series::new(OTHER, &families, true),
            families,
            table: Mutex::new(Table::default()),
        })
    }

    /// The series of `name` for a newly cached operation: its label, a free slot, or
    /// `(other)` while every slot is held.
    fn lookup(&self, name: &str) -> Arc<Series> {
        let mut table = self.table.lock();
        if let Some(series) = table.pinned.get(name).or_else(|| table.slots.get(name)) {
            return series.clone();
        }
        if table.slots.len() < MAX_OPERATION_LABELS {
            return table.insert(name, &self.families, 0);
        }
        self.other.clone()
    }

    /// A label for `name`, taken from the least used one if every slot is held; it
    /// starts at `uses` (its requests so far), so an operation in steady use outweighs
    /// names promoted after a few requests.
    fn promote(&self, name: &str, uses: u64) -> Arc<Series> {
        let mut table = self.table.lock();
        if let Some(series) = table.pinned.get(name).or_else(|| table.slots.get(name)) {
            return series.clone();
        }
        if table.slots.len() >= MAX_OPERATION_LABELS {
            let victim = table
                .slots
                .iter()
                .min_by_key(|(_, s)| (s.uses.load(Ordering::Relaxed), s.seq))
                .map(|(n, _)| n.clone());
            if let Some(series) = victim.and_then(|n| table.slots.remove(&n)) {
                series.evict(&self.other);
            }
        }
        table.insert(name, &self.families, uses)
    }

    /// The label of a listed operation's `name`: its own at once, kept for good. A name
    /// already holding a slot keeps its series and leaves the capped slots.
    fn pinned(&self, name: &str) -> Arc<Series> {
        let mut table = self.table.lock();
        if let Some(series) = table.pinned.get(name) {
            return series.clone();
        }
        let series = match table.slots.remove(name) {
            Some(series) => series,
            None => {
                table.seq += 1;
                Series::with_uses(name, &self.families, false, 0, table.seq)
            }
        };
        table.pinned.insert(name.into(), series.clone());
        series
    }

    /// Handles of one cached operation named `name` whose text is in the persisted
    /// document list.
    pub fn listed_operation(&self, name: &str) -> OperationMetrics {
        OperationMetrics::fixed(self.pinned(name))
    }

    /// Handles of one cached operation named `name`.
    pub fn operation(self: &Arc<Self>, name: &str) -> OperationMetrics {
        OperationMetrics {
            name: Some(name.into()),
            labels: Some(self.clone()),
            series: ArcSwap::new(self.lookup(name)),
            hits: AtomicU64::new(0),
        }
    }
}

/// The metric handles of one cached operation; the hot path reads them lock-free.
pub struct OperationMetrics {
    /// `None` for the fixed labels (anonymous, invalid), never recycled.
    name: Option<Box<str>>,
    labels: Option<Arc<Labels>>,
    series: ArcSwap<Series>,
    /// Requests of this cached operation while it counted as `(other)`.
    hits: AtomicU64,
}

impl OperationMetrics {
    /// Handles under a fixed label of their own.
    pub fn fixed(series: Arc<Series>) -> Self {
        Self {
            name: None,
            labels: None,
            series: ArcSwap::new(series),
            hits: AtomicU64::new(0),
        }
    }

    pub fn record(&self, outcome: RequestOutcome, elapsed: Duration) {
        let current = self.series.load();
        let (Some(name), Some(labels)) = (&self.name, &self.labels) else {
            return current.record(outcome, elapsed);
        };
        let uses = if current.evicted.load(Ordering::Relaxed) {
            // Pushed out while in use: won back, with the uses it had.
            current.uses.load(Ordering::Relaxed)
        } else if current.shared {
            let hits = self.hits.fetch_add(1, Ordering::Relaxed) + 1;
            if hits < PROMOTE_AFTER {
                return current.record(outcome, elapsed);
            }
            hits - 1
        } else {
            return current.record(outcome, elapsed);
        };
        let own = labels.promote(name, uses);
        own.record(outcome, elapsed);
        self.series.store(own);
    }

    /// Record a demand-control cost estimate of this operation.
    pub fn record_cost(&self, estimate: f64) {
        self.series.load().record_cost(estimate);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evicted_label_leaves_no_series_behind() {
        let families = Families {
            requests: IntCounterVec::new(
                prometheus::Opts::new("r", "r"),
                &["operation", "outcome"],
            )
            .expect("valid"),
            durations: HistogramVec::new(HistogramOpts::new("d", "d"), &["operation", "outcome"])
                .expect("valid"),
            costs: HistogramVec::new(HistogramOpts::new("c", "c"), &["operation"]).expect("valid"),
        };
        let series = Series::new("Op", &families, false);
        series.record(RequestOutcome::Ok, Duration::ZERO);
        series.record_cost(1.0);
        let other = Series::new(OTHER, &families, true);
        series.evict(&other);
        // Outcomes first seen after eviction stay out of the registry.
        series.record(RequestOutcome::Timeout, Duration::ZERO);
        // The request it counted now counts under (other).
        let moved = families.requests.with_label_values(&[OTHER, "ok"]);
        assert_eq!(moved.get(), 1);
        families
            .requests
            .remove_label_values(&[OTHER, "ok"])
            .expect("(other) counted");
        families
            .durations
            .remove_label_values(&[OTHER, "ok"])
            .expect("(other) resolved");
        for collector in [
            Box::new(families.requests.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(families.durations.clone()),
            Box::new(families.costs.clone()),
        ] {
            let gathered = collector.collect();
            assert!(gathered.iter().all(|f| f.get_metric().is_empty()));
        }
    }
}
