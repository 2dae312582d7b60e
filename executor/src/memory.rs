//! The gateway-wide memory budget (`limits.max_inflight_bytes`): what in-flight requests
//! hold — subgraph bodies as they are read, entity copies as they are merged, responses
//! as they are written, until sent — is charged to one shared counter. A charge that
//! would pass the limit is refused, so a running request fails with
//! [`MEMORY_BUDGET_EXCEEDED`] instead of growing the process, and new requests are
//! turned away while the budget is nearly spent.
//!
//! An operation seen before also reserves, when admitted, what its requests took
//! ([`MemoryBudget::reserve`]): a burst of large requests arriving together is then
//! refused at the door instead of all starting and being cut halfway.
//!
//! Charged per buffer or chunk, never per field: one relaxed atomic add on the shared
//! counter (and one on the charge's own) each time. A [`Charge`] gives back what it holds
//! when dropped, so every way a request ends (answered, cut, cancelled) releases it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// `extensions.code` of a request refused or cut by the memory budget.
pub const MEMORY_BUDGET_EXCEEDED: &str = "MEMORY_BUDGET_EXCEEDED";

/// The budget; clones share it.
#[derive(Debug, Clone)]
pub struct MemoryBudget(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    held: AtomicUsize,
    /// What admitted requests are expected to take ([`Reservation`]s); weighed at
    /// admission only: running charges are held to `limit` by `held` alone.
    reserved: AtomicUsize,
    limit: usize,
    /// Requests turned away before they started ([`MemoryBudget::admit`]).
    refused_new: AtomicU64,
    /// Running requests that a refused charge cut ([`Charge::cut`]).
    cut_running: AtomicU64,
}

/// A charge the budget had no room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the gateway's in-flight requests would hold more than {limit} bytes (limits.max_inflight_bytes); retry shortly"
)]
pub struct OverBudget {
    pub limit: usize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self(Arc::new(Shared {
            held: AtomicUsize::new(0),
            reserved: AtomicUsize::new(0),
            limit,
            refused_new: AtomicU64::new(0),
            cut_running: AtomicU64::new(0),
        }))
    }

    /// A budget that never refuses (tests, tools), still counting what is held.
    pub fn unlimited() -> Self {
        Self::new(usize::MAX)
    }

    pub fn limit(&self) -> usize {
        self.0.limit
    }

    /// Bytes charged now.
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::Relaxed)
    }

    /// Whether a new request may start: at least `headroom` bytes of the budget are
    /// free. A refusal is counted.
    pub fn admit(&self, headroom: usize) -> bool {
        let room = self.0.limit.saturating_sub(self.held());
        let admitted = room >= headroom;
        if !admitted {
            self.0.refused_new.fetch_add(1, Ordering::Relaxed);
        }
        admitted
    }

    /// Bytes reserved by admitted requests now.
    pub fn reserved(&self) -> usize {
        self.0.reserved.load(Ordering::Relaxed)
    }

    /// Admit a request expected to take `bytes` (what its operation's requests took
    /// before): refused, and counted, unless they fit beside what is held or reserved,
    /// whichever is more (a running request's charges and its reservation are the
    /// same bytes, counted once). Alone a request always fits: callers cap `bytes` at
    /// what one request may hold, which the limit is at least.
    pub fn reserve(&self, bytes: usize) -> Option<Reservation> {
        let shared = &self.0;
        let reserved = shared.reserved.fetch_add(bytes, Ordering::Relaxed);
        let committed = reserved.max(self.held());
        if committed.saturating_add(bytes) > shared.limit && committed > 0 {
            shared.reserved.fetch_sub(bytes, Ordering::Relaxed);
            shared.refused_new.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    /// An empty charge against this budget.
    pub fn charge(&self) -> Charge {
        Charge {
            budget: self.clone(),
            held: AtomicUsize::new(0),
            cut: AtomicBool::new(false),
        }
    }

    /// Requests turned away before they started, and running requests cut, so far.
    pub fn refusals(&self) -> (u64, u64) {
        (
            self.0.refused_new.load(Ordering::Relaxed),
            self.0.cut_running.load(Ordering::Relaxed),
        )
    }
}

/// Bytes one request (or one buffer) holds against a [`MemoryBudget`], released when
/// dropped. `&self` methods: a request's fetches charge it from concurrent futures.
#[derive(Debug)]
pub struct Charge {
    budget: MemoryBudget,
    held: AtomicUsize,
    /// Counted in the budget's cut requests already.
    cut: AtomicBool,
}

impl Charge {
    /// Charge `bytes` more, unless that passes the budget's limit: then nothing is
    /// charged.
    pub fn try_add(&self, bytes: usize) -> Result<(), OverBudget> {
        let shared = &self.budget.0;
        let before = shared.held.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > shared.limit {
            shared.held.fetch_sub(bytes, Ordering::Relaxed);
            return Err(OverBudget {
                limit: shared.limit,
            });
        }
        self.held.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes this charge holds.
    pub fn bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Keep at most `bytes` charged: what the request holds once its working buffers
    /// are gone and only its answer is left.
    pub fn release_to(&self, bytes: usize) {
        let before = self.held.fetch_min(bytes, Ordering::Relaxed);
        if before > bytes {
            self.budget
                .0
                .held
                .fetch_sub(before - bytes, Ordering::Relaxed);
        }
    }

    /// This request was cut by the budget: counted once however many charges failed.
    pub fn cut(&self) {
        if !self.cut.swap(true, Ordering::Relaxed) {
            self.budget.0.cut_running.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The budget this charge is against.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let held = *self.held.get_mut();
        if held > 0 {
            self.budget.0.held.fetch_sub(held, Ordering::Relaxed);
        }
    }
}

/// What an admitted request is expected to take, weighed when others are admitted
/// until it ends (dropped).
#[derive(Debug)]
pub struct Reservation {
    budget: MemoryBudget,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget
            .0
            .reserved
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_held_until_dropped() {
        let budget = MemoryBudget::new(100);
        let a = budget.charge();
        let b = budget.charge();
        a.try_add(60).expect("room");
        b.try_add(30).expect("room");
        assert_eq!((budget.held(), a.bytes(), b.bytes()), (90, 60, 30));
        drop(a);
        assert_eq!(budget.held(), 30);
        drop(b);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn a_charge_past_the_limit_is_refused_and_leaves_nothing() {
        let budget = MemoryBudget::new(100);
        let a = budget.charge();
        a.try_add(70).expect("room");
        let b = budget.charge();
        assert_eq!(b.try_add(31), Err(OverBudget { limit: 100 }));
        assert_eq!((budget.held(), b.bytes()), (70, 0));
        // Exactly the limit fits.
        b.try_add(30).expect("up to the limit");
        assert_eq!(budget.held(), 100);
        assert!(b.try_add(1).is_err());
    }

    #[test]
    fn release_to_keeps_at_most_what_is_asked() {
        let budget = MemoryBudget::new(1000);
        let charge = budget.charge();
        charge.try_add(500).expect("room");
        charge.release_to(200);
        assert_eq!((budget.held(), charge.bytes()), (200, 200));
        charge.release_to(300);
        assert_eq!(budget.held(), 200, "never raises it");
        drop(charge);
        assert_eq!(budget.held(), 0);
    }

    #[test]
    fn admission_wants_headroom_and_counts_refusals() {
        let budget = MemoryBudget::new(100);
        assert!(
            budget.admit(100),
            "an idle gateway admits a request of the whole budget"
        );
        let charge = budget.charge();
        charge.try_add(50).expect("room");
        assert!(budget.admit(50));
        assert!(!budget.admit(51));
        assert_eq!(budget.refusals(), (1, 0));
        charge.cut();
        charge.cut();
        assert_eq!(
            budget.refusals(),
            (1, 1),
            "a request is counted as cut once"
        );
    }

    #[test]
    fn concurrent_charges_never_pass_the_limit() {
        let budget = MemoryBudget::new(1 << 20);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        let charge = budget.charge();
                        while charge.try_add(4096).is_ok() {
                            assert!(budget.held() <= budget.limit() + 3 * 4096);
                        }
                        assert!(charge.bytes() <= budget.limit());
                    }
                });
            }
        });
        assert_eq!(budget.held(), 0, "every charge given back");
    }

    #[test]
    fn reservations_admit_until_the_expected_bytes_fill_the_budget() {
        let budget = MemoryBudget::new(250);
        let first = budget.reserve(120).expect("room");
        let second = budget.reserve(120).expect("room");
        assert!(budget.reserve(120).is_none(), "a third does not fit");
        assert_eq!((budget.reserved(), budget.refusals().0), (240, 1));
        // Running requests' charges are their reservations' bytes: counted once.
        let charge = budget.charge();
        charge.try_add(200).expect("charges ignore reservations");
        assert!(budget.reserve(20).is_none(), "240 committed");
        assert!(budget.reserve(10).is_some());
        drop((first, second));
        // Held alone now: 200 of 250.
        assert!(budget.reserve(60).is_none());
        assert!(budget.reserve(50).is_some());
        drop(charge);
        assert_eq!((budget.held(), budget.reserved()), (0, 0));
        // On an idle gateway one request fits whatever it expects.
        assert!(budget.reserve(1000).is_some());
    }
}
