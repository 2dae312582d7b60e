//! The counts subscriptions and WebSocket connections are held to, and the slots that
//! give a place back when dropped.

use super::Subscriptions;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Which cap of a [`Quota`] is reached.
pub(super) enum Full {
    Total(usize),
    PerClient(usize),
}

/// A count with a cap in all and per client address.
pub(super) struct Quota {
    pub(super) total: AtomicUsize,
    max: usize,
    per_client: Mutex<FxHashMap<IpAddr, usize>>,
    max_per_client: usize,
}

impl Quota {
    pub(super) fn new(max: usize, max_per_client: usize) -> Self {
        Self {
            total: AtomicUsize::new(0),
            max,
            per_client: Mutex::default(),
            max_per_client,
        }
    }

    /// Count one more for `client`, unless a cap is reached.
    pub(super) fn take(&self, client: Option<IpAddr>) -> Result<(), Full> {
        let max = self.max;
        let counted = self
            .total
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if counted.is_err() {
            return Err(Full::Total(max));
        }
        let Some(ip) = client else { return Ok(()) };
        let mut per_client = self.per_client.lock();
        let count = per_client.entry(ip).or_insert(0);
        if *count >= self.max_per_client {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return Err(Full::PerClient(self.max_per_client));
        }
        *count += 1;
        Ok(())
    }

    /// Count one less for `client`.
    pub(super) fn give_back(&self, client: Option<IpAddr>) {
        self.total.fetch_sub(1, Ordering::AcqRel);
        let Some(ip) = client else { return };
        let mut per_client = self.per_client.lock();
        if let Some(count) = per_client.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                per_client.remove(&ip);
            }
        }
    }
}

/// One open WebSocket connection's place in the counts; freed on drop.
pub struct SocketSlot {
    pub(super) hub: Arc<Subscriptions>,
    pub(super) client: Option<IpAddr>,
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.hub.sockets.give_back(self.client);
    }
}

/// One open client subscription's place in the counts; freed on drop.
pub(super) struct Slot {
    pub(super) hub: Arc<Subscriptions>,
    pub(super) client: Option<IpAddr>,
    /// How it ended (`ended_total`'s label).
    pub(super) reason: &'static str,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.hub.open.give_back(self.client);
        self.hub.metrics.open.dec();
        self.hub
            .metrics
            .ended
            .with_label_values(&[self.reason])
            .inc();
    }
}
