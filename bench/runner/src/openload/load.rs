//! One run's parameters and its schedule: when each request is due, an optional ramp first,
//! then the constant arrival rate.

use super::expected::{ExpectedBody, Payload};
use std::sync::Arc;
use std::time::Duration;

use crate::k6::Check;

/// One run of the native generator.
pub struct Load {
    pub url: hyper::Uri,
    pub payload: Payload,
    pub expected: Arc<ExpectedBody>,
    pub check: Check,
    pub rate: u32,
    pub duration: Duration,
    pub max_in_flight: u32,
    /// taskset list for the generator's threads (the non-gateway cores).
    pub cpus: Option<String>,
    /// An uncounted lead-in before the measured requests.
    pub ramp: Option<Ramp>,
}

/// A linear change of the arrival rate from `from` to the run's rate over `over`, before
/// the measured requests; its requests count towards nothing but the in-flight limit.
#[derive(Debug, Clone, Copy)]
pub struct Ramp {
    pub from: u32,
    pub over: Duration,
}

/// When each request is due, relative to the start: first the ramp's, then the run's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Schedule {
    rate: u32,
    /// Requests of the ramp (uncounted), then `measured` requests at `rate`.
    pub(super) ramp_requests: u64,
    pub(super) measured: u64,
    ramp: Option<Ramp>,
}

impl Schedule {
    pub(super) fn new(load: &Load) -> Schedule {
        let ramp_requests = load.ramp.map_or(0, |r| {
            (f64::from(r.from.saturating_add(load.rate)) / 2.0 * r.over.as_secs_f64()) as u64
        });
        Schedule {
            rate: load.rate,
            ramp_requests,
            measured: load.total(),
            ramp: load.ramp,
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.ramp_requests + self.measured
    }

    /// Whether request `i` is one of the measured ones.
    pub(super) fn measured(&self, i: u64) -> bool {
        i >= self.ramp_requests
    }

    /// The due time of request `i`, after the start.
    pub(super) fn offset(&self, i: u64) -> Duration {
        match self.ramp {
            Some(ramp) if i < self.ramp_requests => ramp_offset(ramp, self.rate, i),
            ramp => {
                let k = i - self.ramp_requests;
                let lead = ramp.map_or(Duration::ZERO, |r| r.over);
                lead + Duration::from_nanos(
                    (u128::from(k) * 1_000_000_000 / u128::from(self.rate)) as u64,
                )
            }
        }
    }
}

/// When the `j`th request of a ramp is due: the time `t` at which the ramp's count
/// `from·t + (rate − from)·t²/(2·over)` reaches `j`, in the form that stays exact for a
/// flat ramp and never divides by zero for a ramp from 0.
fn ramp_offset(ramp: Ramp, rate: u32, j: u64) -> Duration {
    if j == 0 {
        return Duration::ZERO;
    }
    let over = ramp.over.as_secs_f64();
    let b = f64::from(ramp.from);
    let a = (f64::from(rate) - b) / (2.0 * over);
    let j = j as f64;
    let t = 2.0 * j / (b + (b * b + 4.0 * a * j).max(0.0).sqrt());
    Duration::from_secs_f64(t.min(over))
}

impl Load {
    /// The total number of requests the run schedules (rate × duration).
    pub(super) fn total(&self) -> u64 {
        (u128::from(self.rate) * self.duration.as_nanos() / 1_000_000_000) as u64
    }
}
