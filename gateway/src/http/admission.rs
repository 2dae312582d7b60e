//! Who may open a client connection: one of `traffic.max_connections` slots, and no more
//! than `traffic.max_connections_per_client` from one address, so one client cannot take
//! every slot and keep the others (and health probes on this port) waiting.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The connection slots and the open connections per client address.
pub struct Admission {
    slots: Arc<Semaphore>,
    per_client: Mutex<FxHashMap<IpAddr, usize>>,
    max_per_client: usize,
}

/// What an open connection holds until it ends: its slot and its client's count.
pub struct Admitted {
    _slot: OwnedSemaphorePermit,
    _client: Option<ClientCount>,
}

/// One of a client's open connections; counted down when dropped.
struct ClientCount {
    admission: Arc<Admission>,
    ip: IpAddr,
}

impl Admission {
    pub fn new(max_connections: usize, max_per_client: usize) -> Arc<Self> {
        Arc::new(Self {
            slots: Arc::new(Semaphore::new(max_connections)),
            per_client: Mutex::new(FxHashMap::default()),
            max_per_client,
        })
    }

    /// Waits for a free connection slot.
    pub async fn slot(&self) -> OwnedSemaphorePermit {
        self.slots
            .clone()
            .acquire_owned()
            .await
            .expect("the connection semaphore is never closed")
    }

    /// The connection from `ip` (unknown: not counted) admitted with `slot`, or `None`
    /// when that client already has its most connections open.
    pub fn admit(
        self: &Arc<Self>,
        slot: OwnedSemaphorePermit,
        ip: Option<IpAddr>,
    ) -> Option<Admitted> {
        let Some(ip) = ip else {
            return Some(Admitted {
                _slot: slot,
                _client: None,
            });
        };
        let mut counts = self
            .per_client
            .lock()
            .expect("the per-client counts are never poisoned");
        let open = counts.entry(ip).or_insert(0);
        if *open >= self.max_per_client {
            return None;
        }
        *open += 1;
        Some(Admitted {
            _slot: slot,
            _client: Some(ClientCount {
                admission: self.clone(),
                ip,
            }),
        })
    }

    /// Connections open from `ip`.
    #[cfg(test)]
    fn open(&self, ip: IpAddr) -> usize {
        let counts = self
            .per_client
            .lock()
            .expect("the per-client counts are never poisoned");
        counts.get(&ip).copied().unwrap_or(0)
    }
}

impl Drop for ClientCount {
    fn drop(&mut self) {
        let mut counts = self
            .admission
            .per_client
            .lock()
            .expect("the per-client counts are never poisoned");
        if let Some(open) = counts.get_mut(&self.ip) {
            *open -= 1;
            // Forgotten once closed: the map holds only clients with open connections.
            if *open == 0 {
                counts.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_client_over_its_share_is_refused_and_counted_down_on_close() {
        let admission = Admission::new(10, 2);
        let a: IpAddr = "10.0.0.1".parse().expect("an address");
        let b: IpAddr = "10.0.0.2".parse().expect("an address");
        let first = admission.admit(admission.slot().await, Some(a));
        let second = admission.admit(admission.slot().await, Some(a));
        assert!(first.is_some() && second.is_some());
        assert!(admission.admit(admission.slot().await, Some(a)).is_none());
        assert!(admission.admit(admission.slot().await, Some(b)).is_some());
        assert!(admission.admit(admission.slot().await, None).is_some());
        drop(first);
        assert_eq!(admission.open(a), 1);
        assert!(admission.admit(admission.slot().await, Some(a)).is_some());
        drop(second);
        assert_eq!(admission.slots.available_permits(), 10);
        assert_eq!(admission.open(a), 0);
    }
}
