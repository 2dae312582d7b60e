//! k6 results: the JSON summary `scenario.js` prints on a marked line of a segment pod's log
//! (and writes to its termination message, which may lack the histogram), parsed into
//! `LoadTestResults` plus the segment's latency histogram, and the segments' results combined
//! into the whole test's.

use graphfleet_bench_model::latency_histogram::{Histogram, HistogramError};
use serde::Deserialize;

use graphfleet_api::{LatencyAggregation, LatencySummary, LoadTestResults};

/// Starts the log line on which scenario.js prints its whole summary (`GF_SUMMARY_STDOUT=1`).
pub const LOG_MARKER: &str = "graphfleet-summary ";

/// The summary a k6 pod's log carries: the last line starting with [`LOG_MARKER`].
pub fn summary_from_log(log: &str) -> Option<&str> {
    log.lines()
        .rev()
        .find_map(|line| line.strip_prefix(LOG_MARKER))
        .map(str::trim_end)
}

/// The part of scenario.js's JSON summary the operator reads.
#[derive(Debug, Deserialize)]
struct K6Summary {
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
    /// The reported latency's histogram (`latency_histogram`'s encoded form).
    #[serde(default)]
    pub hist: Option<Vec<u64>>,
    /// The script left the histogram out to fit the termination message.
    #[serde(default)]
    pub hist_dropped: bool,
    /// The abort thresholds (`GF_THRESHOLDS`) k6 found broken: `metric expression`.
    #[serde(default)]
    pub thresholds_failed: Vec<String>,
    /// When k6 started the scenario, Unix milliseconds by the pod's clock.
    #[serde(default)]
    pub started_at_ms: Option<f64>,
}

/// A k6 trend in milliseconds.
#[derive(Debug, Deserialize)]
struct Trend {
    pub min: f64,
    pub med: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// A termination message that is not a k6 summary.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error("the k6 summary is not valid: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the k6 summary's latency histogram is not valid: {0}")]
    Histogram(#[from] HistogramError),
}

/// One segment's results and, when its script recorded one, its latency histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub results: LoadTestResults,
    pub histogram: Option<Histogram>,
    /// Why `histogram` is `None`.
    pub no_histogram: Option<String>,
    /// The abort thresholds this segment broke.
    pub thresholds_failed: Vec<String>,
    /// When k6 started the scenario, Unix milliseconds by the pod's clock.
    pub started_at_ms: Option<f64>,
    /// Read from the pod's log (else from its termination message).
    pub from_log: bool,
}

/// Parses one k6 summary. Latency counts from the scheduled send time when the script
/// recorded it (open model), else from the actual send.
pub fn parse_segment(message: &str) -> Result<Segment, SummaryError> {
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
    let (histogram, no_histogram) = match (s.hist.as_deref().map(Histogram::decode), s.hist_dropped)
    {
        (Some(decoded), _) => {
            let h = decoded?;
            // A histogram that does not count every request (a script or k6 version that
            // loses bucket series): merging it would misweigh the segment.
            if h.total() == s.requests {
                (Some(h), None)
            } else {
                let why = format!(
                    "its latency histogram counts {} of its {} requests",
                    h.total(),
                    s.requests
                );
                (None, Some(why))
            }
        }
        (None, true) => (
            None,
            Some(
                "its summary left the latency histogram out to fit the termination message"
                    .to_owned(),
            ),
        ),
        (None, false) => (
            None,
            Some(
                "its summary has no latency histogram (a script other than scenario.js?)"
                    .to_owned(),
            ),
        ),
    };
    Ok(Segment {
        results: LoadTestResults {
            requests: s.requests,
            failures: s.failures,
            dropped_iterations: s.dropped_iterations,
            achieved_rate,
            latency_ms,
            latency_aggregation: None,
        },
        histogram,
        no_histogram,
        thresholds_failed: s.thresholds_failed,
        started_at_ms: s.started_at_ms,
        from_log: false,
    })
}

/// [`parse_segment`]'s results alone.
pub fn parse_summary(message: &str) -> Result<LoadTestResults, SummaryError> {
    parse_segment(message).map(|s| s.results)
}

/// Combines the segments into the whole test's results. Counts and rates add up, min and max
/// are the extremes of the segments' (exact). The percentiles: one segment's own; several
/// segments' from their histograms merged bucket by bucket (the whole test's, within the
/// buckets' 1%); [`aggregate_bounds`] when a segment has no histogram.
pub fn aggregate(segments: &[Segment]) -> Option<LoadTestResults> {
    let results: Vec<LoadTestResults> = segments.iter().map(|s| s.results.clone()).collect();
    let mut total = aggregate_bounds(&results)?;
    if let [one] = segments {
        total.latency_ms = one.results.latency_ms.clone();
        total.latency_aggregation = Some(LatencyAggregation::Exact);
        return Some(total);
    }
    let Some(merged) = merge_histograms(segments) else {
        return Some(total);
    };
    let l = &mut total.latency_ms;
    // The exact extremes bound the bucket representatives (which may be 1% beyond them).
    let (min, max) = (l.min, l.max);
    // Not `clamp`, which panics on a summary whose min exceeds its max.
    let at = |q: f64| merged.quantile(q).map(|v| v.max(min).min(max));
    if let (Some(med), Some(p90), Some(p95), Some(p99)) = (at(0.5), at(0.9), at(0.95), at(0.99)) {
        (l.med, l.p90, l.p95, l.p99) = (med, p90, p95, p99);
        total.latency_aggregation = Some(LatencyAggregation::Histogram);
    }
    Some(total)
}

/// Every segment's histogram added up, or `None` when one has none (or all are empty).
pub fn merge_histograms(segments: &[Segment]) -> Option<Histogram> {
    let mut merged = Histogram::new();
    for s in segments {
        merged.merge(s.histogram.as_ref()?).ok()?;
    }
    (merged.total() > 0).then_some(merged)
}

/// The segments without a usable histogram: (index, why).
pub fn segments_without_histogram(segments: &[Segment]) -> Vec<(usize, &str)> {
    segments
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.no_histogram.as_deref()?)))
        .collect()
}

/// Combines per-segment results without histograms. Counts and rates add up; p90/p95/p99/max
/// are the worst segment's (an upper bound of the whole test's) and the median is the
/// request-weighted mean of the segments' medians (neither bound nor exact).
pub fn aggregate_bounds(segments: &[LoadTestResults]) -> Option<LoadTestResults> {
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
        latency_aggregation: Some(LatencyAggregation::WorstSegment),
    })
}
