//! A LoadTest's thresholds evaluated on its whole-test results (pure): which bounds held, which
//! did not, and the words for the `Passed` condition.

use graphfleet_bench_model::duration::{self, DurationError};

use graphfleet_api::{LatencyAggregation, LatencyThresholds, LoadTestResults, LoadTestThresholds};

/// Reasons of the `Passed` condition.
pub const MET: &str = "ThresholdsMet";
pub const NOT_MET: &str = "ThresholdsNotMet";
pub const INVALID: &str = "InvalidThreshold";
pub const NO_RESULTS: &str = "NoResults";
pub const ABORTED: &str = "AbortedOnThreshold";

/// The k6 metrics scenario.js records that the abort thresholds watch.
const K6_LATENCY_METRIC: &str = "gf_scheduled_latency";
const K6_ERROR_RATE_METRIC: &str = "gf_error_rate";
const K6_DROPPED_METRIC: &str = "dropped_iterations";
/// The longest a segment waits before its thresholds may abort it: the first seconds' few
/// samples would otherwise stop a test on one slow request.
const MAX_ABORT_DELAY: std::time::Duration = std::time::Duration::from_secs(10);

/// The outcome for the `Passed` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub passed: bool,
    pub reason: &'static str,
    pub message: String,
}

/// A latency threshold that is not a duration (only when the CRD's validation was bypassed).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("thresholds.latency.{name}: {error}")]
pub struct ThresholdError {
    name: &'static str,
    error: DurationError,
}

/// One bound and what was measured against it.
struct Check {
    ok: bool,
    text: String,
}

/// The latency bounds that are set: name, the bound as written, and its limit in ms.
fn latency_bounds(l: &LatencyThresholds) -> Result<Vec<(&'static str, &str, f64)>, ThresholdError> {
    let all = [
        ("p50", &l.p50),
        ("p90", &l.p90),
        ("p95", &l.p95),
        ("p99", &l.p99),
        ("max", &l.max),
    ];
    all.into_iter()
        .filter_map(|(name, bound)| bound.as_deref().map(|text| (name, text)))
        .map(|(name, text)| {
            let limit = duration::parse(text).map_err(|error| ThresholdError { name, error })?;
            Ok((name, text, limit.as_secs_f64() * 1e3))
        })
        .collect()
}

fn latency_checks(
    bounds: &LatencyThresholds,
    results: &LoadTestResults,
) -> Result<Vec<Check>, ThresholdError> {
    let l = &results.latency_ms;
    let measured = |name| match name {
        "p50" => l.med,
        "p90" => l.p90,
        "p95" => l.p95,
        "p99" => l.p99,
        _ => l.max,
    };
    let mut checks = Vec::new();
    for (name, text, limit) in latency_bounds(bounds)? {
        let got = measured(name);
        let ok = got < limit;
        let op = if ok { "<" } else { ">=" };
        checks.push(Check {
            ok,
            text: format!("{name} {got:.2} ms {op} {text}"),
        });
    }
    Ok(checks)
}

/// Evaluates `thresholds` on a finished test's `results` (`target_rate`: the spec's `rate`).
/// Every bound is reported, failed ones first; a latency figure that is only a bound (the
/// segments had no histograms) is said to be one.
pub fn evaluate(
    thresholds: &LoadTestThresholds,
    target_rate: i32,
    results: &LoadTestResults,
) -> Verdict {
    let mut checks = match thresholds
        .latency
        .as_ref()
        .map(|l| latency_checks(l, results))
        .transpose()
    {
        Ok(checks) => checks.unwrap_or_default(),
        Err(e) => {
            return Verdict {
                passed: false,
                reason: INVALID,
                message: e.to_string(),
            };
        }
    };
    if let Some(max) = thresholds.max_error_percent {
        checks.push(if results.requests == 0 {
            Check {
                ok: false,
                text: "no requests were made, so there is no error rate".to_owned(),
            }
        } else {
            let percent = results.failures as f64 * 100.0 / results.requests as f64;
            let ok = percent < max;
            let op = if ok { "<" } else { ">=" };
            Check {
                ok,
                text: format!(
                    "error rate {percent:.3}% ({} of {}) {op} {max}%",
                    results.failures, results.requests
                ),
            }
        });
    }
    if let Some(min) = thresholds.min_achieved_rate_percent {
        let needed = f64::from(target_rate) * min / 100.0;
        let ok = results.achieved_rate >= needed;
        let op = if ok { ">=" } else { "<" };
        checks.push(Check {
            ok,
            text: format!(
                "achieved {:.1} req/s {op} {min}% of {target_rate} req/s ({needed:.1})",
                results.achieved_rate
            ),
        });
    }
    checks.sort_by_key(|c| c.ok);
    let passed = checks.iter().all(|c| c.ok);
    let mut message = checks
        .iter()
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    if thresholds.latency.is_some()
        && results.latency_aggregation == Some(LatencyAggregation::WorstSegment)
    {
        message.push_str(
            " (latency: the worst segment's figures, upper bounds of the whole test's: a segment had no histogram)",
        );
    }
    Verdict {
        passed,
        reason: if passed { MET } else { NOT_MET },
        message,
    }
}

/// The k6 `thresholds` option (metric → `[{threshold, abortOnFail, delayAbortEval}]`) that
/// makes each segment stop itself once it breaks a bound on its own share of the load, or
/// `None` without `abortOnFail`. scenario.js reads it from `GF_THRESHOLDS`. `duration` is the
/// test's; `parallelism` the number of segments sharing `rate`.
pub fn k6_abort_thresholds(
    thresholds: &LoadTestThresholds,
    rate: i32,
    duration: std::time::Duration,
    parallelism: i32,
) -> Result<Option<serde_json::Value>, ThresholdError> {
    if !thresholds.abort_on_fail {
        return Ok(None);
    }
    let delay = MAX_ABORT_DELAY.min(duration / 5);
    let delay = format!("{}ms", delay.as_millis());
    let rule = |expr: String, delay: Option<&str>| {
        let mut rule = serde_json::json!({ "threshold": expr, "abortOnFail": true });
        if let Some(d) = delay {
            rule["delayAbortEval"] = d.into();
        }
        rule
    };
    let mut out = serde_json::Map::new();
    if let Some(latency) = &thresholds.latency {
        let mut rules = Vec::new();
        for (name, _, ms) in latency_bounds(latency)? {
            let stat = match name {
                "p50" => "med".to_owned(),
                "max" => "max".to_owned(),
                p => format!("p({})", &p[1..]),
            };
            rules.push(rule(format!("{stat}<{ms}"), Some(&delay)));
        }
        if !rules.is_empty() {
            out.insert(K6_LATENCY_METRIC.to_owned(), rules.into());
        }
    }
    if let Some(max) = thresholds.max_error_percent {
        let expr = format!("rate<{}", max / 100.0);
        out.insert(
            K6_ERROR_RATE_METRIC.to_owned(),
            vec![rule(expr, Some(&delay))].into(),
        );
    }
    if let Some(min) = thresholds.min_achieved_rate_percent {
        // A segment's planned arrivals; once more were dropped than the bound allows, its
        // achieved rate can no longer reach it, so no delay.
        let planned = f64::from(rate) * duration.as_secs_f64() / f64::from(parallelism.max(1));
        let allowed = (planned * (100.0 - min) / 100.0).floor();
        out.insert(
            K6_DROPPED_METRIC.to_owned(),
            vec![rule(format!("count<={allowed}"), None)].into(),
        );
    }
    Ok((!out.is_empty()).then_some(serde_json::Value::Object(out)))
}

/// The verdict of a test a segment stopped early: `segment` broke `failed` (k6's words,
/// e.g. `gf_scheduled_latency p(99)<50`) on its own share of the load.
pub fn aborted(segment: i32, failed: &[String], detail: &str) -> Verdict {
    let what = if failed.is_empty() {
        "a threshold".to_owned()
    } else {
        failed.join(", ")
    };
    Verdict {
        passed: false,
        reason: ABORTED,
        message: format!(
            "segment {segment} broke {what} on its share of the load and stopped the test (thresholds.abortOnFail){detail}"
        ),
    }
}

/// The verdict when the test ended without whole-test results (a segment failed).
pub fn no_results() -> Verdict {
    Verdict {
        passed: false,
        reason: NO_RESULTS,
        message: "the load test failed before every segment reported results; see status.message"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_api::LatencySummary;

    fn results(p99: f64, failures: u64, achieved_rate: f64) -> LoadTestResults {
        LoadTestResults {
            requests: 10_000,
            failures,
            dropped_iterations: 0,
            achieved_rate,
            latency_ms: LatencySummary {
                min: 0.5,
                med: 2.0,
                p90: 8.0,
                p95: 12.0,
                p99,
                max: 80.0,
            },
            latency_aggregation: Some(LatencyAggregation::Histogram),
        }
    }

    /// `p99 < 50ms`, error rate < 0.1%, achieved rate >= 99% of the target.
    fn issue_example() -> LoadTestThresholds {
        LoadTestThresholds {
            latency: Some(LatencyThresholds {
                p99: Some("50ms".to_owned()),
                ..LatencyThresholds::default()
            }),
            max_error_percent: Some(0.1),
            min_achieved_rate_percent: Some(99.0),
            abort_on_fail: false,
        }
    }

    #[test]
    fn abort_thresholds_are_k6_thresholds_on_each_segments_share() {
        let mut t = issue_example();
        let minute = std::time::Duration::from_secs(60);
        assert_eq!(k6_abort_thresholds(&t, 600, minute, 4), Ok(None));
        t.abort_on_fail = true;
        let got = k6_abort_thresholds(&t, 600, minute, 4)
            .expect("valid")
            .expect("thresholds");
        assert_eq!(
            got,
            serde_json::json!({
                "gf_scheduled_latency": [
                    { "threshold": "p(99)<50", "abortOnFail": true, "delayAbortEval": "10000ms" }
                ],
                "gf_error_rate": [
                    { "threshold": "rate<0.001", "abortOnFail": true, "delayAbortEval": "10000ms" }
                ],
                // 600 req/s × 60 s / 4 segments = 9,000 arrivals each; 1% may drop.
                "dropped_iterations": [{ "threshold": "count<=90", "abortOnFail": true }],
            })
        );
        // A short test waits a fifth of its duration; p50 and max use k6's names.
        let t = LoadTestThresholds {
            latency: Some(LatencyThresholds {
                p50: Some("2.5ms".to_owned()),
                max: Some("1s".to_owned()),
                ..LatencyThresholds::default()
            }),
            abort_on_fail: true,
            ..LoadTestThresholds::default()
        };
        let got = k6_abort_thresholds(&t, 10, std::time::Duration::from_secs(20), 1)
            .expect("valid")
            .expect("thresholds");
        assert_eq!(
            got["gf_scheduled_latency"],
            serde_json::json!([
                { "threshold": "med<2.5", "abortOnFail": true, "delayAbortEval": "4000ms" },
                { "threshold": "max<1000", "abortOnFail": true, "delayAbortEval": "4000ms" },
            ])
        );
    }

    #[test]
    fn all_bounds_held_is_a_pass_naming_each() {
        let v = evaluate(&issue_example(), 600, &results(31.5, 5, 597.0));
        assert!(v.passed, "{v:?}");
        assert_eq!(v.reason, MET);
        assert_eq!(
            v.message,
            "p99 31.50 ms < 50ms; error rate 0.050% (5 of 10000) < 0.1%; \
             achieved 597.0 req/s >= 99% of 600 req/s (594.0)"
        );
    }

    #[test]
    fn each_broken_bound_fails_and_comes_first() {
        let t = issue_example();
        let v = evaluate(&t, 600, &results(50.0, 5, 597.0));
        assert!(!v.passed);
        assert_eq!(v.reason, NOT_MET);
        assert!(
            v.message.starts_with("p99 50.00 ms >= 50ms;"),
            "{}",
            v.message
        );
        let v = evaluate(&t, 600, &results(31.5, 10, 597.0));
        assert!(
            v.message
                .starts_with("error rate 0.100% (10 of 10000) >= 0.1%;"),
            "{}",
            v.message
        );
        let v = evaluate(&t, 600, &results(31.5, 0, 593.9));
        assert!(!v.passed);
        assert!(
            v.message
                .starts_with("achieved 593.9 req/s < 99% of 600 req/s"),
            "{}",
            v.message
        );
    }

    #[test]
    fn every_latency_figure_can_be_bounded() {
        let t = LoadTestThresholds {
            latency: Some(LatencyThresholds {
                p50: Some("2.5ms".to_owned()),
                p90: Some("8ms".to_owned()),
                p95: Some("1s".to_owned()),
                p99: None,
                max: Some("1m".to_owned()),
            }),
            ..LoadTestThresholds::default()
        };
        let v = evaluate(&t, 100, &results(40.0, 0, 100.0));
        assert!(!v.passed, "p90 8.0 is not below 8ms");
        assert_eq!(
            v.message,
            "p90 8.00 ms >= 8ms; p50 2.00 ms < 2.5ms; p95 12.00 ms < 1s; max 80.00 ms < 1m"
        );
    }

    #[test]
    fn bounds_from_the_worst_segment_are_said_to_be_bounds() {
        let mut r = results(31.5, 0, 600.0);
        r.latency_aggregation = Some(LatencyAggregation::WorstSegment);
        let v = evaluate(&issue_example(), 600, &r);
        assert!(v.passed);
        assert!(v.message.contains("upper bounds"), "{}", v.message);
    }

    #[test]
    fn no_requests_and_bad_thresholds_fail_with_a_reason() {
        let mut r = results(1.0, 0, 0.0);
        r.requests = 0;
        let t = LoadTestThresholds {
            max_error_percent: Some(1.0),
            ..LoadTestThresholds::default()
        };
        let v = evaluate(&t, 10, &r);
        assert!(!v.passed);
        assert!(v.message.contains("no requests"), "{}", v.message);
        let t = LoadTestThresholds {
            latency: Some(LatencyThresholds {
                p99: Some("fast".to_owned()),
                ..LatencyThresholds::default()
            }),
            ..LoadTestThresholds::default()
        };
        let v = evaluate(&t, 10, &results(1.0, 0, 10.0));
        assert_eq!((v.passed, v.reason), (false, INVALID));
        assert!(
            v.message.starts_with("thresholds.latency.p99: "),
            "{}",
            v.message
        );
    }
}
