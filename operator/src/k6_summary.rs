//! k6 results: the JSON summary `scenario.js` writes to a segment pod's termination message,
//! parsed into `LoadTestResults`, and the segments' results combined into one.

use serde::Deserialize;

use crate::crd::{LatencySummary, LoadTestResults};

/// The part of scenario.js's JSON summary the operator reads.
#[derive(Debug, Deserialize)]
pub struct K6Summary {
    pub requests: u64,
    #[serde(default)]
    pub failures: u64,
    #[serde(default)]
    pub dropped_iterations: u64,
    #[serde(default)]
    pub achieved_rate: Option<f64>,
    #[serde(default)]
    pub run_duration_s: Option<f64>,
    #[serde(default)]
    pub latency_ms: Option<Trend>,
    #[serde(default)]
    pub scheduled_latency_ms: Option<Trend>,
}

/// A k6 trend in milliseconds.
#[derive(Debug, Deserialize)]
pub struct Trend {
    pub min: f64,
    pub med: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// A termination message that is not a k6 summary.
#[derive(Debug, thiserror::Error)]
#[error("the k6 summary is not valid: {0}")]
pub struct SummaryError(#[from] serde_json::Error);

/// Parses one k6 summary. Latency counts from the scheduled send time when the script
/// recorded it (open model), else from the actual send.
pub fn parse_summary(message: &str) -> Result<LoadTestResults, SummaryError> {
    let s: K6Summary = serde_json::from_str(message)?;
    let trend = s.scheduled_latency_ms.or(s.latency_ms);
    let latency_ms = trend
        .map(|t| LatencySummary {
            min: t.min,
            med: t.med,
            p90: t.p90,
            p95: t.p95,
            p99: t.p99,
            max: t.max,
        })
        .unwrap_or_default();
    let achieved_rate = s.achieved_rate.unwrap_or_else(|| match s.run_duration_s {
        Some(d) if d > 0.0 => s.requests as f64 / d,
        _ => 0.0,
    });
    Ok(LoadTestResults {
        requests: s.requests,
        failures: s.failures,
        dropped_iterations: s.dropped_iterations,
        achieved_rate,
        latency_ms,
    })
}

/// Combines per-segment results. Counts and rates add up; percentiles cannot be merged
/// exactly without histograms, so p90/p95/p99/max are the worst segment's (an upper bound)
/// and the median is the request-weighted mean of the segments' medians.
pub fn aggregate(segments: &[LoadTestResults]) -> Option<LoadTestResults> {
    if segments.is_empty() {
        return None;
    }
    let requests: u64 = segments.iter().map(|s| s.requests).sum();
    let worst = |f: fn(&LatencySummary) -> f64| {
        segments
            .iter()
            .map(|s| f(&s.latency_ms))
            .fold(0.0, f64::max)
    };
    let weighted_med = if requests == 0 {
        0.0
    } else {
        segments
            .iter()
            .map(|s| s.latency_ms.med * s.requests as f64)
            .sum::<f64>()
            / requests as f64
    };
    Some(LoadTestResults {
        requests,
        failures: segments.iter().map(|s| s.failures).sum(),
        dropped_iterations: segments.iter().map(|s| s.dropped_iterations).sum(),
        achieved_rate: segments.iter().map(|s| s.achieved_rate).sum(),
        latency_ms: LatencySummary {
            min: segments
                .iter()
                .map(|s| s.latency_ms.min)
                .fold(f64::INFINITY, f64::min),
            med: weighted_med,
            p90: worst(|l| l.p90),
            p95: worst(|l| l.p95),
            p99: worst(|l| l.p99),
            max: worst(|l| l.max),
        },
    })
}
