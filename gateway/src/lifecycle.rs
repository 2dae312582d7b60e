//! Readiness and shutdown state: what `/health/ready` reports, the requests a graceful
//! shutdown waits for, and the supergraph (re)load bookkeeping. A leaf module: the
//! [`Gateway`](crate::gateway::Gateway) owns a [`Lifecycle`], the reloader and the
//! metrics write and read it.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The GraphQL error (HTTP 503) while the gateway waits for its first supergraph.
pub const NOT_LOADED: &str = "no supergraph loaded yet";

/// What the metrics and logs say about supergraph loading.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadStatus {
    /// SHA-256 (hex) of the supergraph being served; `None` before the first load.
    pub hash: Option<String>,
    /// Subgraphs in the supergraph being served.
    pub subgraphs: usize,
    /// Supergraphs loaded and swapped in, the initial load included.
    pub successful_reloads: u64,
    /// Changed files that could not be read or loaded (the previous supergraph kept serving).
    pub failed_reloads: u64,
    /// The most recent failure, if no load succeeded after it.
    pub last_error: Option<String>,
}

impl ReloadStatus {
    /// The first 12 hex digits of the served hash (`none` before the first load).
    pub fn short_hash(&self) -> &str {
        self.hash
            .as_deref()
            .map_or("none", |h| &h[..12.min(h.len())])
    }
}

/// Process-wide flags kept on the gateway.
#[derive(Debug, Default)]
pub struct Lifecycle {
    draining: AtomicBool,
    in_flight: AtomicUsize,
    reload: Mutex<ReloadStatus>,
}

/// Why the gateway is (not) ready for traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Waiting for a valid supergraph file.
    NoSupergraph,
    /// A shutdown signal arrived; load balancers should stop routing here.
    Draining,
}

impl Readiness {
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::Ready => "ready",
            Readiness::NoSupergraph => NOT_LOADED,
            Readiness::Draining => "shutting down",
        }
    }
}

impl Lifecycle {
    /// Fail readiness from now on (never undone: the process is on its way out).
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// HTTP requests currently being handled.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// A snapshot of the supergraph (re)load bookkeeping, e.g. for metrics.
    pub fn reload_status(&self) -> ReloadStatus {
        self.reload.lock().clone()
    }

    /// Count a supergraph that could not be read or loaded.
    pub fn record_reload_failure(&self, error: String) {
        let mut status = self.reload.lock();
        status.failed_reloads += 1;
        status.last_error = Some(error);
    }

    /// Count a supergraph swapped in (`hash_hex`: its SHA-256 in hex); the status after it.
    pub fn record_loaded(&self, hash_hex: String, subgraphs: usize) -> ReloadStatus {
        let mut status = self.reload.lock();
        status.hash = Some(hash_hex);
        status.subgraphs = subgraphs;
        status.successful_reloads += 1;
        // The file serves now: an earlier failure no longer describes it.
        status.last_error = None;
        status.clone()
    }

    /// Why the gateway is (not) ready, given whether a supergraph is being served.
    pub fn readiness(&self, serving: bool) -> Readiness {
        if self.is_draining() {
            Readiness::Draining
        } else if !serving {
            Readiness::NoSupergraph
        } else {
            Readiness::Ready
        }
    }

    /// Count a request as in flight until the guard drops (also when its task is cut).
    pub fn track_request(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self)
    }
}

/// Guard from [`Lifecycle::track_request`].
pub struct InFlight<'a>(&'a Lifecycle);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}
