//! The canary's judgement, pure: the gateways' own Prometheus metrics (read from each
//! pod's admin port) summed per track, canary against stable, under the thresholds of
//! `spec.rollout.canary`. Canary pods are new, so their counters cover the canary alone;
//! the stable pods' whole history is the baseline.

use graphfleet_api::CanarySpec;
use prometheus_parse::{Scrape, Value};

const REQUESTS: &str = "graphfleet_graphql_requests_total";
const DURATION: &str = "graphfleet_graphql_request_duration_seconds";
const FETCHES: &str = "graphfleet_subgraph_fetches_total";
const FETCH_ERRORS: &str = "graphfleet_subgraph_fetch_errors_total";
/// Request outcomes that count as failed (a cancelled request is the client's doing;
/// `not_ready` never reaches a Ready pod's clients).
const FAILED_OUTCOMES: [&str; 3] = ["field_errors", "request_error", "timeout"];

/// Defaults of [`CanarySpec`]'s thresholds.
pub const DEFAULT_MAX_ERROR_RATE_PERCENT: f64 = 1.0;
pub const DEFAULT_MAX_P99_RATIO: f64 = 2.0;
/// A canary p99 within this many milliseconds of the stable pods' is not held to the
/// ratio: at a few milliseconds, a busy node's scheduling alone doubles a p99 (2.2 ms
/// against 4.8 ms is noise, not a regression).
pub const P99_NOISE_FLOOR_MS: f64 = 10.0;
pub const DEFAULT_MIN_REQUESTS: u32 = 20;

/// One track's metrics, summed over its pods.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrackMetrics {
    pub requests: f64,
    pub failed: f64,
    pub fetches: f64,
    pub fetch_errors: f64,
    /// Cumulative request-duration buckets: (upper bound in seconds, count).
    buckets: Vec<(f64, f64)>,
}

impl TrackMetrics {
    /// Add one pod's metrics text.
    pub fn add_text(&mut self, text: &str) -> Result<(), String> {
        let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .map_err(|e| format!("not Prometheus text: {e}"))?;
        for sample in &scrape.samples {
            let value = match &sample.value {
                Value::Counter(v) | Value::Untyped(v) | Value::Gauge(v) => *v,
                Value::Histogram(buckets) if sample.metric == DURATION => {
                    for bucket in buckets {
                        self.add_bucket(bucket.less_than, bucket.count);
                    }
                    continue;
                }
                _ => continue,
            };
            match sample.metric.as_str() {
                REQUESTS => {
                    self.requests += value;
                    let outcome = sample.labels.get("outcome").unwrap_or_default();
                    if FAILED_OUTCOMES.contains(&outcome) {
                        self.failed += value;
                    }
                }
                FETCHES => self.fetches += value,
                FETCH_ERRORS => self.fetch_errors += value,
                _ => {}
            }
        }
        Ok(())
    }

    fn add_bucket(&mut self, le: f64, count: f64) {
        match self.buckets.iter_mut().find(|(bound, _)| *bound == le) {
            Some((_, total)) => *total += count,
            None => {
                self.buckets.push((le, count));
                self.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
        }
    }

    pub fn error_rate(&self) -> f64 {
        ratio(self.failed, self.requests)
    }

    pub fn fetch_error_rate(&self) -> f64 {
        ratio(self.fetch_errors, self.fetches)
    }

    /// The 99th percentile request time in seconds, interpolated within its bucket.
    pub fn p99(&self) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = total * 0.99;
        let mut lower = (0.0, 0.0);
        for &(bound, count) in &self.buckets {
            if count >= rank {
                if bound.is_infinite() {
                    return Some(lower.0);
                }
                let within = (rank - lower.1) / (count - lower.1).max(f64::MIN_POSITIVE);
                return Some(lower.0 + (bound - lower.0) * within);
            }
            lower = (bound, count);
        }
        Some(lower.0)
    }
}

fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

/// What a step's watch concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    /// Every threshold held; the figures.
    Pass(String),
    /// Too few canary requests yet.
    Inconclusive(String),
    /// A threshold broke: which, with the numbers.
    Fail(String),
}

/// Judge `canary` against `stable` under `spec`'s thresholds.
pub fn judge(spec: &CanarySpec, canary: &TrackMetrics, stable: &TrackMetrics) -> Judgement {
    let min_requests = f64::from(spec.min_requests.unwrap_or(DEFAULT_MIN_REQUESTS));
    let max_errors = spec
        .max_error_rate_percent
        .unwrap_or(DEFAULT_MAX_ERROR_RATE_PERCENT);
    let max_fetch_errors = spec
        .max_fetch_error_rate_percent
        .unwrap_or(DEFAULT_MAX_ERROR_RATE_PERCENT);
    let max_ratio = spec.max_p99_ratio.unwrap_or(DEFAULT_MAX_P99_RATIO);
    let errors = canary.error_rate() * 100.0;
    if errors > max_errors {
        return Judgement::Fail(format!(
            "GraphQL error rate {errors:.2}% on the canary ({} of {} requests) is over {max_errors}% (stable: {:.2}%)",
            canary.failed,
            canary.requests,
            stable.error_rate() * 100.0
        ));
    }
    let fetch_errors = canary.fetch_error_rate() * 100.0;
    if fetch_errors > max_fetch_errors {
        return Judgement::Fail(format!(
            "subgraph fetch error rate {fetch_errors:.2}% on the canary ({} of {} fetches) is over {max_fetch_errors}% (stable: {:.2}%)",
            canary.fetch_errors,
            canary.fetches,
            stable.fetch_error_rate() * 100.0
        ));
    }
    if canary.requests < min_requests {
        return Judgement::Inconclusive(format!(
            "{} canary requests, {min_requests} needed to judge",
            canary.requests
        ));
    }
    let p99 = |m: &TrackMetrics| m.p99().map(|s| s * 1000.0);
    if let (Some(canary_p99), Some(stable_p99)) = (p99(canary), p99(stable))
        && stable_p99 > 0.0
        && canary_p99 - stable_p99 > P99_NOISE_FLOOR_MS
        && canary_p99 / stable_p99 > max_ratio
    {
        return Judgement::Fail(format!(
            "p99 {canary_p99:.1} ms on the canary is {:.2}× the stable pods' {stable_p99:.1} ms (at most {max_ratio}×)",
            canary_p99 / stable_p99
        ));
    }
    Judgement::Pass(format!(
        "{} canary requests, {errors:.2}% failed, {fetch_errors:.2}% fetches failed, p99 {} ms (stable {} ms)",
        canary.requests,
        p99(canary).map_or("-".to_owned(), |v| format!("{v:.1}")),
        p99(stable).map_or("-".to_owned(), |v| format!("{v:.1}")),
    ))
}

/// Canary pods beside `stable` for a `weight`% share: as close as whole pods allow, at
/// least one.
pub fn canary_replicas(stable: i32, weight: u32) -> i32 {
    let weight = f64::from(weight.clamp(1, 99));
    let exact = weight * f64::from(stable.max(1)) / (100.0 - weight);
    (exact.round() as i32).max(1)
}

/// The canary's share of all pods, in percent.
pub fn share_percent(stable: i32, canary: i32) -> u32 {
    let total = stable + canary;
    if total <= 0 {
        return 0;
    }
    u32::try_from(canary * 100 / total).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(ok: u64, failed: u64, slow: bool) -> String {
        let (fast, total) = if slow {
            (0, ok + failed)
        } else {
            (ok + failed, ok + failed)
        };
        format!(
            "# TYPE graphfleet_graphql_requests_total counter\n\
             graphfleet_graphql_requests_total{{operation=\"Q\",outcome=\"ok\"}} {ok}\n\
             graphfleet_graphql_requests_total{{operation=\"Q\",outcome=\"field_errors\"}} {failed}\n\
             graphfleet_graphql_requests_total{{operation=\"Q\",outcome=\"cancelled\"}} 3\n\
             # TYPE graphfleet_graphql_request_duration_seconds histogram\n\
             graphfleet_graphql_request_duration_seconds_bucket{{operation=\"Q\",outcome=\"ok\",le=\"0.01\"}} {fast}\n\
             graphfleet_graphql_request_duration_seconds_bucket{{operation=\"Q\",outcome=\"ok\",le=\"0.1\"}} {total}\n\
             graphfleet_graphql_request_duration_seconds_bucket{{operation=\"Q\",outcome=\"ok\",le=\"+Inf\"}} {total}\n\
             graphfleet_graphql_request_duration_seconds_sum{{operation=\"Q\",outcome=\"ok\"}} 1\n\
             graphfleet_graphql_request_duration_seconds_count{{operation=\"Q\",outcome=\"ok\"}} {total}\n\
             # TYPE graphfleet_subgraph_fetches_total counter\n\
             graphfleet_subgraph_fetches_total{{subgraph=\"a\"}} {}\n",
            ok + failed
        )
    }

    fn track(texts: &[String]) -> TrackMetrics {
        let mut m = TrackMetrics::default();
        for text in texts {
            m.add_text(text).expect("valid metrics text");
        }
        m
    }

    #[test]
    fn pods_sum_per_track_and_p99_interpolates() {
        let m = track(&[metrics(90, 10, false), metrics(100, 0, false)]);
        assert_eq!((m.requests, m.failed, m.fetches), (206.0, 10.0, 200.0));
        let p99 = m.p99().expect("a p99");
        assert!(p99 > 0.0 && p99 <= 0.01, "{p99}");
    }

    #[test]
    fn a_failing_canary_fails_with_its_numbers() {
        let stable = track(&[metrics(1000, 0, false)]);
        let canary = track(&[metrics(80, 20, false)]);
        let Judgement::Fail(why) = judge(&CanarySpec::default(), &canary, &stable) else {
            panic!("20% errors passed");
        };
        assert!(
            why.starts_with(
                "GraphQL error rate 19.42% on the canary (20 of 103 requests) is over 1%"
            ),
            "{why}"
        );
    }

    #[test]
    fn a_slow_canary_fails_on_the_p99_ratio_and_a_quiet_one_waits() {
        let stable = track(&[metrics(1000, 0, false)]);
        let slow = track(&[metrics(100, 0, true)]);
        let Judgement::Fail(why) = judge(&CanarySpec::default(), &slow, &stable) else {
            panic!("a 10× slower canary passed");
        };
        assert!(why.contains("× the stable pods'"), "{why}");
        let quiet = track(&[metrics(5, 0, false)]);
        assert!(matches!(
            judge(&CanarySpec::default(), &quiet, &stable),
            Judgement::Inconclusive(_)
        ));
        let healthy = track(&[metrics(100, 0, false)]);
        assert!(matches!(
            judge(&CanarySpec::default(), &healthy, &stable),
            Judgement::Pass(_)
        ));
    }

    #[test]
    fn a_few_milliseconds_of_p99_are_noise_not_a_regression() {
        let quick = |ms: f64| {
            let mut m = TrackMetrics {
                requests: 100.0,
                ..TrackMetrics::default()
            };
            m.add_bucket(ms / 1000.0, 100.0);
            m.add_bucket(f64::INFINITY, 100.0);
            m
        };
        let (stable, canary) = (quick(2.2), quick(4.8));
        assert!(
            matches!(
                judge(&CanarySpec::default(), &canary, &stable),
                Judgement::Pass(_)
            ),
            "{:?}",
            judge(&CanarySpec::default(), &canary, &stable)
        );
        let Judgement::Fail(why) = judge(&CanarySpec::default(), &quick(30.0), &stable) else {
            panic!("a canary 28 ms slower passed");
        };
        assert!(why.contains("× the stable pods'"), "{why}");
    }

    #[test]
    fn replicas_and_shares() {
        assert_eq!(canary_replicas(3, 25), 1);
        assert_eq!(canary_replicas(2, 50), 2);
        assert_eq!(canary_replicas(2, 25), 1);
        assert_eq!(share_percent(2, 1), 33);
        assert_eq!(share_percent(3, 1), 25);
    }
}
