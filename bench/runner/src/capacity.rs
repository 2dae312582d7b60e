//! Capacity search (the Grafbase method): raise the arrival rate until the gateway falls
//! 3 req/s or more behind, then interpolate the throughput at 150% of the lowest p99.
//! Each step also records how busy the gateway and the load side's cores were, so the
//! report can say what ran out first: a capacity the load side capped is a lower bound.

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
    /// The gateway's mean CPU use during the step, in cores.
    pub gateway_cpu: Option<f64>,
    /// How busy the load generator's and subgraphs' cores were (0..1), when they have
    /// cores of their own.
    pub load_busy: Option<f64>,
}

/// A share of a CPU budget that counts as used up.
pub const SATURATED: f64 = 0.9;

impl Step {
    pub fn kept_up(&self) -> bool {
        self.failures == 0 && self.achieved > f64::from(self.target) - MARGIN
    }
}

/// Most a CPU reading may grow the rate by in one step.
const MAX_GROWTH: f64 = 4.0;
/// Least it grows by near saturation.
const MIN_GROWTH: f64 = 1.1;

/// The next rate to try after `steps`, or None when the search is done.
/// Until the first miss the rate grows by `factor`, or, when the last step's gateway CPU
/// is known, towards [`SATURATED`] of the `budget` (×[`MIN_GROWTH`] to ×[`MAX_GROWTH`]),
/// so a scenario starting far below capacity gets there in a few steps. After the first
/// miss it bisects between the best rate that kept up and the lowest that did not, until
/// they are within 5% (or 5 req/s).
pub fn next_rate(steps: &[Step], factor: f64, budget: f64) -> Option<u32> {
    let last = steps.last()?;
    let best_ok = steps.iter().filter(|s| s.kept_up()).map(|s| s.target).max();
    let lowest_miss = steps
        .iter()
        .filter(|s| !s.kept_up())
        .map(|s| s.target)
        .min();
    match (best_ok, lowest_miss) {
        (_, None) => {
            let growth = match last.gateway_cpu {
                Some(cpu) if cpu > 0.0 => (SATURATED * budget / cpu).clamp(MIN_GROWTH, MAX_GROWTH),
                _ => factor,
            };
            let next = (f64::from(last.target) * growth).round() as u32;
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
    /// What ran out at the first step that fell behind.
    pub limit: Limit,
}

/// What stopped the rate from rising.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Limit {
    /// The gateway used at least [`SATURATED`] of its CPU budget: a capacity of the gateway.
    GatewayCpu { cores: f64, budget: f64 },
    /// The load side's cores were saturated first: the gateway could do more.
    LoadSide {
        busy: f64,
        gateway_cores: f64,
        budget: f64,
    },
    /// Neither CPU was saturated (latency, failures or dropped requests ended the search).
    Neither {
        gateway_cores: Option<f64>,
        budget: f64,
        busy: Option<f64>,
    },
    /// Every step kept up: the search ran out of steps or time first.
    NotReached,
    /// No step recorded CPU use.
    Unknown,
}

impl Limit {
    fn of(miss: Option<&Step>, budget: f64) -> Limit {
        let Some(miss) = miss else {
            return Limit::NotReached;
        };
        match (miss.gateway_cpu, miss.load_busy) {
            (Some(cores), _) if cores >= SATURATED * budget => Limit::GatewayCpu { cores, budget },
            (Some(gateway_cores), Some(busy)) if busy >= SATURATED => Limit::LoadSide {
                busy,
                gateway_cores,
                budget,
            },
            (None, None) => Limit::Unknown,
            (gateway_cores, busy) => Limit::Neither {
                gateway_cores,
                budget,
                busy,
            },
        }
    }

    /// For the report's table.
    pub fn describe(&self) -> String {
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        match self {
            Limit::GatewayCpu { cores, budget } => {
                format!("gateway CPU ({cores:.2} of {budget} cores)")
            }
            Limit::LoadSide {
                busy,
                gateway_cores,
                budget,
            } => format!(
                "load side ({} busy; gateway {gateway_cores:.2} of {budget} cores): a lower bound",
                pct(*busy)
            ),
            Limit::Neither {
                gateway_cores,
                budget,
                busy,
            } => format!(
                "neither CPU (gateway {} of {budget} cores, load side {})",
                gateway_cores.map_or("-".into(), |c| format!("{c:.2}")),
                busy.map_or("-".into(), pct)
            ),
            Limit::NotReached => "not reached".into(),
            Limit::Unknown => "-".into(),
        }
    }
}

/// `budget`: the gateway's CPU budget in cores.
pub fn analyse(steps: Vec<Step>, budget: f64) -> Capacity {
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
                // A step that fell behind (or failed requests) did not carry its rate: the
                // interpolation never goes past the best rate that kept up.
                let top = peak.map_or(under.achieved, |(rate, _)| rate);
                let rate = under.achieved + t * (over.achieved.min(top) - under.achieved);
                Some((rate.max(under.achieved), limit))
            }
            _ => Some((under.achieved, under.p99)),
        }
    });
    let first_miss = steps
        .iter()
        .filter(|s| !s.kept_up())
        .min_by_key(|s| s.target);
    let limit = Limit::of(first_miss, budget);
    Capacity {
        steps,
        min_p99,
        at_150,
        peak,
        limit,
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
            gateway_cpu: None,
            load_busy: None,
        }
    }

    fn missed(target: u32, gateway_cpu: f64, load_busy: f64) -> Step {
        Step {
            gateway_cpu: Some(gateway_cpu),
            load_busy: Some(load_busy),
            ..step(target, f64::from(target) - 50.0, 90.0)
        }
    }

    #[test]
    fn grows_then_bisects_then_stops() {
        let mut steps = vec![step(100, 100.0, 2.0)];
        assert_eq!(next_rate(&steps, 1.5, 1.0), Some(150));
        steps.push(step(150, 150.0, 2.5));
        steps.push(step(225, 200.0, 40.0)); // fell 25 req/s behind
        assert_eq!(next_rate(&steps, 1.5, 1.0), Some(187));
        steps.push(step(187, 186.5, 3.5));
        assert_eq!(next_rate(&steps, 1.5, 1.0), Some(206));
        steps.push(step(206, 205.0, 5.0));
        steps.push(step(215, 214.0, 9.0));
        assert_eq!(next_rate(&steps, 1.5, 1.0), None, "225 is within 5% of 215");
    }

    #[test]
    fn no_run_kept_up_ends_the_search() {
        assert_eq!(next_rate(&[step(100, 50.0, 900.0)], 1.5, 1.0), None);
        assert_eq!(next_rate(&[], 1.5, 1.0), None);
    }

    #[test]
    fn interpolates_at_150_percent_of_min_p99() {
        let c = analyse(
            vec![
                step(100, 100.0, 2.0),
                step(200, 200.0, 2.5),
                step(300, 299.0, 4.0),
                step(400, 330.0, 80.0),
            ],
            1.0,
        );
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
        assert!(analyse(vec![s], 1.0).min_p99.is_none());
    }

    #[test]
    fn the_first_miss_says_what_ran_out() {
        let ok = step(100, 100.0, 2.0);
        let limit = |miss: Step| analyse(vec![ok, miss, missed(400, 0.1, 0.1)], 0.5).limit;
        assert_eq!(
            limit(missed(200, 0.48, 0.5)),
            Limit::GatewayCpu {
                cores: 0.48,
                budget: 0.5
            }
        );
        assert_eq!(
            limit(missed(200, 0.3, 0.97)),
            Limit::LoadSide {
                busy: 0.97,
                gateway_cores: 0.3,
                budget: 0.5
            }
        );
        assert!(matches!(
            limit(missed(200, 0.3, 0.5)),
            Limit::Neither { .. }
        ));
        assert_eq!(analyse(vec![ok], 0.5).limit, Limit::NotReached);
        assert_eq!(
            analyse(vec![step(100, 10.0, 2.0)], 0.5).limit,
            Limit::Unknown
        );
        assert!(
            limit(missed(200, 0.3, 0.97))
                .describe()
                .contains("a lower bound")
        );
    }

    #[test]
    fn gateway_cpu_steers_the_growth() {
        let at = |cpu: f64| Step {
            gateway_cpu: Some(cpu),
            ..step(100, 100.0, 2.0)
        };
        // Far below the budget: the largest jump.
        assert_eq!(next_rate(&[at(0.01)], 1.5, 1.0), Some(400));
        // A third of a 1-core budget: towards 90% of it.
        assert_eq!(next_rate(&[at(0.3)], 1.5, 1.0), Some(300));
        // The same CPU against half a core is closer to its limit.
        assert_eq!(next_rate(&[at(0.3)], 1.5, 0.5), Some(150));
        // At the limit already: a small step.
        assert_eq!(next_rate(&[at(0.95)], 1.5, 1.0), Some(110));
    }

    #[test]
    fn the_150_percent_point_never_passes_the_peak() {
        let mut failed = step(400, 400.0, 90.0);
        failed.failures = 10;
        let c = analyse(
            vec![step(100, 100.0, 2.0), step(200, 200.0, 2.5), failed],
            1.0,
        );
        let (rate, _) = c.at_150.expect("at 150%");
        assert!(rate <= 200.0, "{rate}");
        assert_eq!(c.peak, Some((200.0, 2.5)));
    }
}
