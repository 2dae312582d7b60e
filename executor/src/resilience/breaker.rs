//! A circuit breaker for one subgraph: closed while few of the fetches in its window
//! fail; open (fetches fail at once) once enough of them do; after `open_for`, one
//! fetch is let through as a probe, whose outcome closes or reopens it.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// Slices of the window: counts older than the window fall out slice by slice.
const SLICES: usize = 10;

#[derive(Debug, Clone, PartialEq)]
pub struct BreakerPolicy {
    pub error_ratio: f64,
    pub min_fetches: u32,
    pub window: Duration,
    pub open_for: Duration,
}

/// What the breaker says about a fetch about to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Allowed,
    /// Let through while open, to see whether the subgraph recovered.
    Probe,
    /// Open: fail at once; it may probe again after this long.
    Rejected(Duration),
}

#[derive(Debug)]
pub struct Breaker {
    policy: BreakerPolicy,
    epoch: Instant,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    mode: Mode,
    slices: [Slice; SLICES],
    /// Times it opened, for the metrics.
    opened: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Mode {
    #[default]
    Closed,
    Open {
        until: Instant,
    },
    /// A probe is out (or may go when `probing` is false).
    HalfOpen {
        probing: bool,
    },
}

#[derive(Debug, Default, Clone, Copy)]
struct Slice {
    /// Which slice of time since the epoch these counts are for.
    at: u64,
    ok: u32,
    failed: u32,
}

impl Breaker {
    pub fn new(policy: BreakerPolicy, epoch: Instant) -> Self {
        Self {
            policy,
            epoch,
            state: Mutex::new(State::default()),
        }
    }

    pub fn admit(&self, now: Instant) -> Admit {
        let mut state = self.state.lock();
        match state.mode {
            Mode::Closed => Admit::Allowed,
            Mode::Open { until } if now < until => Admit::Rejected(until - now),
            Mode::Open { .. } | Mode::HalfOpen { probing: false } => {
                state.mode = Mode::HalfOpen { probing: true };
                Admit::Probe
            }
            Mode::HalfOpen { probing: true } => Admit::Rejected(Duration::ZERO),
        }
    }

    /// A fetch admitted as `admitted` ended, `ok` or not.
    pub fn record(&self, now: Instant, admitted: Admit, ok: bool) {
        let mut state = self.state.lock();
        if admitted == Admit::Probe {
            state.mode = if ok {
                state.slices = Default::default();
                Mode::Closed
            } else {
                state.opened += 1;
                Mode::Open {
                    until: now + self.policy.open_for,
                }
            };
            return;
        }
        // A fetch that started before the breaker opened says nothing new.
        if state.mode != Mode::Closed {
            return;
        }
        let at = self.slice_of(now);
        let slice = &mut state.slices[(at % SLICES as u64) as usize];
        if slice.at != at {
            *slice = Slice {
                at,
                ok: 0,
                failed: 0,
            };
        }
        if ok {
            slice.ok += 1;
        } else {
            slice.failed += 1;
        }
        let (total, failed) = state
            .slices
            .iter()
            .filter(|s| at.saturating_sub(s.at) < SLICES as u64)
            .fold((0u64, 0u64), |(t, f), s| {
                (t + u64::from(s.ok + s.failed), f + u64::from(s.failed))
            });
        let tripped = total >= u64::from(self.policy.min_fetches)
            && failed as f64 >= self.policy.error_ratio * total as f64;
        if !ok && tripped {
            state.opened += 1;
            state.mode = Mode::Open {
                until: now + self.policy.open_for,
            };
        }
    }

    /// Whether fetches fail at once now (open, or half-open with its probe out).
    pub fn is_open(&self) -> bool {
        self.state.lock().mode != Mode::Closed
    }

    pub fn times_opened(&self) -> u64 {
        self.state.lock().opened
    }

    fn slice_of(&self, now: Instant) -> u64 {
        let slice = (self.policy.window / SLICES as u32).max(Duration::from_millis(1));
        (now.saturating_duration_since(self.epoch).as_nanos() / slice.as_nanos()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(epoch: Instant) -> Breaker {
        let policy = BreakerPolicy {
            error_ratio: 0.5,
            min_fetches: 4,
            window: Duration::from_secs(10),
            open_for: Duration::from_secs(5),
        };
        Breaker::new(policy, epoch)
    }

    fn fetch(b: &Breaker, now: Instant, ok: bool) -> Admit {
        let admitted = b.admit(now);
        if admitted != Admit::Rejected(Duration::ZERO) && !matches!(admitted, Admit::Rejected(_)) {
            b.record(now, admitted, ok);
        }
        admitted
    }

    #[test]
    fn opens_on_the_error_ratio_once_enough_fetches_were_seen() {
        let t0 = Instant::now();
        let b = breaker(t0);
        // Three failures of three: too few fetches to judge.
        for _ in 0..3 {
            assert_eq!(fetch(&b, t0, false), Admit::Allowed);
        }
        assert!(!b.is_open());
        assert_eq!(fetch(&b, t0, false), Admit::Allowed);
        assert!(b.is_open(), "4 of 4 failed");
        let later = t0 + Duration::from_secs(2);
        assert_eq!(b.admit(later), Admit::Rejected(Duration::from_secs(3)));
        assert_eq!(b.times_opened(), 1);
    }

    #[test]
    fn successes_keep_it_closed_and_old_failures_fall_out_of_the_window() {
        let t0 = Instant::now();
        let b = breaker(t0);
        for _ in 0..3 {
            fetch(&b, t0, false);
        }
        for _ in 0..4 {
            fetch(&b, t0, true);
        }
        assert!(!b.is_open(), "3 of 7 failed");
        // Eleven seconds on, those counts are gone: four new fetches, one failing.
        let later = t0 + Duration::from_secs(11);
        for ok in [true, true, true, false] {
            fetch(&b, later, ok);
        }
        assert!(!b.is_open(), "1 of 4 in the window");
    }

    #[test]
    fn one_probe_after_open_for_closes_or_reopens_it() {
        let t0 = Instant::now();
        let b = breaker(t0);
        for _ in 0..4 {
            fetch(&b, t0, false);
        }
        let t1 = t0 + Duration::from_secs(5);
        let probe = b.admit(t1);
        assert_eq!(probe, Admit::Probe);
        // While the probe is out, others still fail at once.
        assert!(matches!(b.admit(t1), Admit::Rejected(_)));
        b.record(t1, probe, false);
        assert_eq!(b.times_opened(), 2, "the failed probe reopened it");
        let t2 = t1 + Duration::from_secs(5);
        let probe = b.admit(t2);
        assert_eq!(probe, Admit::Probe);
        b.record(t2, probe, true);
        assert!(!b.is_open());
        assert_eq!(b.admit(t2), Admit::Allowed);
    }
}
