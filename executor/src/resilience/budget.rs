//! The retry budget of one subgraph: over the last 10 s, at most `min_per_second × 10`
//! retries plus `ratio` of the fetches sent, so retries to a subgraph that is down
//! stay a trickle instead of multiplying its load.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

const SECONDS: usize = 10;

#[derive(Debug)]
pub struct RetryBudget {
    ratio: f64,
    min_per_second: u32,
    epoch: Instant,
    seconds: Mutex<[Second; SECONDS]>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Second {
    at: u64,
    fetches: u64,
    retries: u64,
}

impl RetryBudget {
    pub fn new(ratio: f64, min_per_second: u32, epoch: Instant) -> Self {
        Self {
            ratio,
            min_per_second,
            epoch,
            seconds: Mutex::new(Default::default()),
        }
    }

    /// A first attempt went out.
    pub fn fetched(&self, now: Instant) {
        self.with_second(now, |s| s.fetches += 1);
    }

    /// Whether one more retry fits; if so it is counted.
    pub fn try_retry(&self, now: Instant) -> bool {
        let at = self.second_of(now);
        let mut seconds = self.seconds.lock();
        let (fetches, retries) = seconds
            .iter()
            .filter(|s| at.saturating_sub(s.at) < SECONDS as u64)
            .fold((0, 0), |(f, r), s| (f + s.fetches, r + s.retries));
        let allowed = f64::from(self.min_per_second) * SECONDS as f64 + self.ratio * fetches as f64;
        if retries as f64 >= allowed {
            return false;
        }
        Self::current(&mut seconds, at).retries += 1;
        true
    }

    fn with_second(&self, now: Instant, f: impl FnOnce(&mut Second)) {
        let at = self.second_of(now);
        f(Self::current(&mut self.seconds.lock(), at));
    }

    fn current(seconds: &mut [Second; SECONDS], at: u64) -> &mut Second {
        let second = &mut seconds[(at % SECONDS as u64) as usize];
        if second.at != at {
            *second = Second {
                at,
                ..Second::default()
            };
        }
        second
    }

    fn second_of(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_secs()
    }
}

/// The wait before retry `n` (0 for the first): up to `backoff × 2^n`, at most
/// `max`, drawn at random (full jitter) from `unit` in [0, 1).
pub fn backoff(n: u32, backoff: Duration, max: Duration, unit: f64) -> Duration {
    let ceiling = backoff.saturating_mul(1u32 << n.min(20)).min(max);
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_are_held_to_the_floor_plus_a_share_of_fetches() {
        let t0 = Instant::now();
        let budget = RetryBudget::new(0.2, 1, t0);
        // Floor: 1 per second over 10 s.
        let floor = (0..100).filter(|_| budget.try_retry(t0)).count();
        assert_eq!(floor, 10);
        // 100 fetches add 20 more.
        for _ in 0..100 {
            budget.fetched(t0);
        }
        let more = (0..100).filter(|_| budget.try_retry(t0)).count();
        assert_eq!(more, 20);
        // Ten seconds later the window is fresh.
        let later = t0 + Duration::from_secs(10);
        assert_eq!((0..100).filter(|_| budget.try_retry(later)).count(), 10);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_is_jittered() {
        let (b, max) = (Duration::from_millis(50), Duration::from_millis(300));
        assert_eq!(backoff(0, b, max, 1.0), Duration::from_millis(50));
        assert_eq!(backoff(2, b, max, 1.0), Duration::from_millis(200));
        assert_eq!(backoff(5, b, max, 1.0), max);
        assert_eq!(backoff(1, b, max, 0.5), Duration::from_millis(50));
        assert_eq!(backoff(40, b, max, 0.0), Duration::ZERO);
    }
}
