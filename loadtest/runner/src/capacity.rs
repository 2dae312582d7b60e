//! Capacity search (the Grafbase method): raise the arrival rate until the gateway falls
//! 3 req/s or more behind, then interpolate the throughput at 150% of the lowest p99.

use serde::Serialize;

/// A run "keeps up" when it achieves at least the target minus this, without failures.
pub const MARGIN: f64 = 3.0;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Step {
    pub target: u32,
    pub achieved: f64,
    pub p99: f64,
    pub failures: u64,
    pub dropped: u64,
}

impl Step {
    pub fn kept_up(&self) -> bool {
        self.failures == 0 && self.achieved > f64::from(self.target) - MARGIN
    }
}

/// The next rate to try after `steps`, or None when the search is done.
/// Grows by `factor` until the first miss, then bisects between the best rate that kept up
/// and the lowest that did not, until they are within 5% (or 5 req/s).
pub fn next_rate(steps: &[Step], factor: f64) -> Option<u32> {
    let last = steps.last()?;
    let best_ok = steps.iter().filter(|s| s.kept_up()).map(|s| s.target).max();
    let lowest_miss = steps
        .iter()
        .filter(|s| !s.kept_up())
        .map(|s| s.target)
        .min();
    match (best_ok, lowest_miss) {
        (_, None) => {
            let next = (f64::from(last.target) * factor).ceil() as u32;
            Some(next.max(last.target + 1))
        }
        (None, Some(_)) => None,
        (Some(ok), Some(miss)) => {
            let gap = miss.saturating_sub(ok);
            if gap <= 5 || f64::from(gap) <= f64::from(ok) * 0.05 {
                return None;
            }
            Some(ok + gap / 2)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Capacity {
    pub steps: Vec<Step>,
    /// The lowest p99 of the runs that kept up (ms).
    pub min_p99: Option<f64>,
    /// Interpolated throughput (req/s) at 150% of `min_p99`, with that latency.
    pub at_150: Option<(f64, f64)>,
    /// The highest achieved rate that kept up, with its p99.
    pub peak: Option<(f64, f64)>,
}

pub fn analyse(steps: Vec<Step>) -> Capacity {
    let mut ok: Vec<Step> = steps.iter().copied().filter(Step::kept_up).collect();
    ok.sort_by_key(|s| s.target);
    let min_p99 = ok.iter().map(|s| s.p99).reduce(f64::min);
    let peak = ok
        .iter()
        .max_by(|a, b| a.achieved.total_cmp(&b.achieved))
        .map(|s| (s.achieved, s.p99));
    let at_150 = min_p99.and_then(|min| {
        let limit = 1.5 * min;
        let mut all = steps.clone();
        all.sort_by_key(|s| s.target);
        // The last run under the limit (in rate order, stopping at the first over it)...
        let under = all
            .iter()
            .take_while(|s| s.kept_up() && s.p99 <= limit)
            .last()?;
        // ...and the next one, which went over the limit or fell behind.
        match all.iter().find(|s| s.target > under.target) {
            Some(over) if over.p99 > under.p99 => {
                let t = ((limit - under.p99) / (over.p99 - under.p99)).clamp(0.0, 1.0);
                let rate = under.achieved + t * (over.achieved - under.achieved);
                Some((rate.max(under.achieved), limit))
            }
            _ => Some((under.achieved, under.p99)),
        }
    });
    Capacity {
        steps,
        min_p99,
        at_150,
        peak,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(target: u32, achieved: f64, p99: f64) -> Step {
        Step {
            target,
            achieved,
            p99,
            failures: 0,
            dropped: 0,
        }
    }

    #[test]
    fn grows_then_bisects_then_stops() {
        let mut steps = vec![step(100, 100.0, 2.0)];
        assert_eq!(next_rate(&steps, 1.5), Some(150));
        steps.push(step(150, 150.0, 2.5));
        steps.push(step(225, 200.0, 40.0)); // fell 25 req/s behind
        assert_eq!(next_rate(&steps, 1.5), Some(187));
        steps.push(step(187, 186.5, 3.5));
        assert_eq!(next_rate(&steps, 1.5), Some(206));
        steps.push(step(206, 205.0, 5.0));
        steps.push(step(215, 214.0, 9.0));
        assert_eq!(next_rate(&steps, 1.5), None, "225 is within 5% of 215");
    }

    #[test]
    fn no_run_kept_up_ends_the_search() {
        assert_eq!(next_rate(&[step(100, 50.0, 900.0)], 1.5), None);
        assert_eq!(next_rate(&[], 1.5), None);
    }

    #[test]
    fn interpolates_at_150_percent_of_min_p99() {
        let c = analyse(vec![
            step(100, 100.0, 2.0),
            step(200, 200.0, 2.5),
            step(300, 299.0, 4.0),
            step(400, 330.0, 80.0),
        ]);
        assert_eq!(c.min_p99, Some(2.0));
        // limit 3.0 ms lies between 200 req/s (2.5 ms) and 299 req/s (4.0 ms): a third of the way.
        let (rate, p99) = c.at_150.expect("at 150%");
        assert!((rate - 233.0).abs() < 1e-9, "{rate}");
        assert_eq!(p99, 3.0);
        assert_eq!(c.peak, Some((299.0, 4.0)));
    }

    #[test]
    fn failures_mean_not_kept_up() {
        let mut s = step(10, 10.0, 1.0);
        s.failures = 1;
        assert!(!s.kept_up());
        assert!(analyse(vec![s]).min_p99.is_none());
    }
}
