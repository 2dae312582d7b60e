//! Stage 8a, reserve memory: a request of an operation whose requests took much memory
//! before reserves that much of the memory budget before it runs, or is refused with
//! 503 `MEMORY_BUDGET_EXCEEDED` and `Retry-After`, like the door's check. The door only
//! sees what is held now, so without this a burst of large requests arriving together
//! would all be let in, then cut halfway as their subgraph answers arrive.

use super::error::RequestError;
use crate::executor::memory::{MEMORY_BUDGET_EXCEEDED, MemoryBudget, Reservation};
use http::StatusCode;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Operations expected to take less than this reserve nothing: no shared counter is
/// touched for them, and they cannot fill a budget that is at least twice
/// `limits.max_response_bytes` before the door's check sees them.
pub const RESERVE_FROM: usize = 64 * 1024;

/// What an operation's requests took: subgraph bytes read, entity copies made and the
/// response written. The last request's, or a larger earlier one's decaying by a
/// quarter per request, so one large answer keeps later ones careful for a while.
#[derive(Debug, Default)]
pub struct Footprint(AtomicUsize);

impl Footprint {
    pub fn expected(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// A request of the operation took `bytes`.
    pub fn observe(&self, bytes: usize) {
        let before = self.expected();
        let after = if bytes >= before {
            bytes
        } else {
            before - (before - bytes) / 4
        };
        if after != before {
            self.0.store(after, Ordering::Relaxed);
        }
    }
}

/// The reservation a request of an operation with `footprint` holds while it runs
/// (`None`: a small one), or its refusal: what it took, an eighth more. At most what one request may hold is
/// reserved (`2 × max_response_bytes`), so alone it always fits.
pub fn reserve(
    budget: &MemoryBudget,
    footprint: &Footprint,
    max_response_bytes: usize,
) -> Result<Option<Reservation>, RequestError> {
    // An eighth more: the writer charges ahead of what it has written, and answers vary.
    let expected = footprint.expected();
    let expected = expected
        .saturating_add(expected / 8)
        .min(max_response_bytes.saturating_mul(2));
    if expected < RESERVE_FROM {
        return Ok(None);
    }
    match budget.reserve(expected) {
        Some(reservation) => Ok(Some(reservation)),
        None => {
            let message = format!(
                "this operation's last requests took about {expected} bytes, more than the \
                 gateway's in-flight requests leave of its {} bytes (limits.max_inflight_bytes); \
                 retry shortly",
                budget.limit()
            );
            let full = RequestError::http(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(MEMORY_BUDGET_EXCEEDED),
                &message,
            );
            Err(full.with_header(http::header::RETRY_AFTER, "1"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footprint_follows_growth_at_once_and_shrinking_slowly() {
        let footprint = Footprint::default();
        footprint.observe(1000);
        assert_eq!(footprint.expected(), 1000);
        footprint.observe(200);
        assert_eq!(footprint.expected(), 800);
        footprint.observe(5000);
        assert_eq!(footprint.expected(), 5000);
    }

    #[test]
    fn large_operations_reserve_and_a_full_budget_refuses_them() {
        let mib = 1024 * 1024;
        let budget = MemoryBudget::new(256 * mib);
        let small = Footprint::default();
        small.observe(RESERVE_FROM / 2);
        assert!(reserve(&budget, &small, 64 * mib).expect("small").is_none());
        let large = Footprint::default();
        large.observe(110 * mib);
        let first = reserve(&budget, &large, 64 * mib).expect("room");
        let second = reserve(&budget, &large, 64 * mib).expect("room");
        assert!(first.is_some() && second.is_some());
        let refused = reserve(&budget, &large, 64 * mib).expect_err("full");
        assert_eq!(refused.status(super::super::request::Media::Json), 503);
        let body = String::from_utf8(refused.into_body()).expect("UTF-8");
        assert!(body.contains(MEMORY_BUDGET_EXCEEDED), "{body}");
        // Capped at what one request may hold: alone, always admitted.
        drop((first, second));
        let huge = Footprint::default();
        huge.observe(usize::MAX);
        assert!(reserve(&budget, &huge, 64 * mib).expect("alone").is_some());
    }
}
