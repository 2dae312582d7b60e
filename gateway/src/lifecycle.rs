//! Readiness and shutdown state: what `/health/ready` reports, and the requests a
//! graceful shutdown waits for.

use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::reload::ReloadStatus;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The GraphQL error (HTTP 503) while the gateway waits for its first supergraph.
pub const NOT_LOADED: &str = "no supergraph loaded yet";

/// Process-wide flags kept on the [`Gateway`].
#[derive(Debug, Default)]
pub struct Lifecycle {
    draining: AtomicBool,
    in_flight: AtomicUsize,
    pub(crate) reload: Mutex<ReloadStatus>,
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

impl<T: Transport> Gateway<T> {
    pub fn readiness(&self) -> Readiness {
        if self.lifecycle.is_draining() {
            Readiness::Draining
        } else if self.state().is_none() {
            Readiness::NoSupergraph
        } else {
            Readiness::Ready
        }
    }
}
