//! Per-subgraph fetch metrics the executor records: fetches, errors and latency, through
//! Prometheus handles the gateway's registry creates (`SubgraphHandles`).

use prometheus::{Histogram, IntCounter};
use std::time::Duration;

/// Handles of one subgraph.
pub struct SubgraphHandles {
    pub fetches: IntCounter,
    pub errors: IntCounter,
    pub duration: Histogram,
}

/// Per-subgraph handles of one supergraph, indexed by subgraph id. The default records
/// nothing (a gateway state built without metrics).
#[derive(Default)]
pub struct FetchMetrics(Vec<SubgraphHandles>);

impl FetchMetrics {
    /// Handles per subgraph, in `SubgraphId` order.
    pub fn new(handles: Vec<SubgraphHandles>) -> Self {
        Self(handles)
    }

    /// Record one fetch of subgraph `index` (its `SubgraphId`).
    pub fn record(&self, index: usize, elapsed: Duration, ok: bool) {
        let Some(h) = self.0.get(index) else { return };
        h.fetches.inc();
        h.duration.observe(elapsed.as_secs_f64());
        if !ok {
            h.errors.inc();
        }
    }
}

/// Records one fetch when dropped: a fetch cut short (the request timed out and its
/// future was dropped) still counts, as an error.
pub struct FetchRecord<'a> {
    metrics: &'a FetchMetrics,
    index: usize,
    start: std::time::Instant,
    ok: bool,
}

impl<'a> FetchRecord<'a> {
    /// Start timing a fetch of subgraph `index`.
    pub fn start(metrics: &'a FetchMetrics, index: usize) -> Self {
        FetchRecord {
            metrics,
            index,
            start: std::time::Instant::now(),
            ok: false,
        }
    }

    /// The fetch finished; `ok` says whether it succeeded.
    pub fn finish(mut self, ok: bool) {
        self.ok = ok;
    }
}

impl Drop for FetchRecord<'_> {
    fn drop(&mut self) {
        self.metrics
            .record(self.index, self.start.elapsed(), self.ok);
    }
}
