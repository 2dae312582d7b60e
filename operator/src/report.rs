//! A finished LoadTest's full report (pure), kept in the ConfigMap `<name>-report`: markdown
//! tables (the whole test, its latency distribution from the merged histogram, each segment;
//! with `spec.targets` a side-by-side comparison and the same per target) the merged
//! histograms themselves and an SVG chart of latency by percentile, so `kubectl` users get
//! what the local runner prints. Tables and chart are `graphfleet_bench_model`'s (`report`,
//! `charts`), the runner's too.

use std::collections::BTreeMap;

use graphfleet_bench_model::charts;
use graphfleet_bench_model::latency_histogram;
use graphfleet_bench_model::report::table as aligned_table;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::k6_summary::{Segment, merge_histograms};
use crate::status::PASSED;
use crate::status::loadtest::Observed;
use graphfleet_api::{
    GatewayCpu, LatencySummary, LoadTest, LoadTestResults, LoadTestStatus, SegmentStatus,
    SummarySource, TargetStatus,
};

/// The report's key in its ConfigMap.
pub const REPORT_KEY: &str = "REPORT.md";
/// The merged latency histogram's key: `latency_histogram`'s encoding plus its parameters.
pub const HISTOGRAM_KEY: &str = "histogram.json";

/// Name of a LoadTest's report ConfigMap.
pub fn config_map_name(lt: &str) -> String {
    format!("{lt}-report")
}

/// A markdown table: columns of numbers right-aligned, text left-aligned.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let numeric = |i: usize| {
        rows.iter().all(|r| {
            r.get(i)
                .is_none_or(|c| c.is_empty() || c == "-" || c.parse::<f64>().is_ok())
        })
    };
    let right: Vec<bool> = (0..header.len()).map(numeric).collect();
    aligned_table(header, &right, rows)
}

fn ms(v: f64) -> String {
    format!("{v:.2}")
}

fn latency_cells(l: &LatencySummary) -> Vec<String> {
    [l.min, l.med, l.p90, l.p95, l.p99, l.max]
        .into_iter()
        .map(ms)
        .collect()
}

/// What the test loaded, for the report's first line.
fn target_words(lt: &LoadTest) -> String {
    let spec = &lt.spec;
    match (&spec.target, &spec.targets) {
        (Some(t), _) => match (&t.gateway_ref, &t.url) {
            (Some(gw), _) => format!("GraphGateway `{}`", gw.name),
            (None, Some(url)) => format!("`{url}`"),
            _ => "?".to_owned(),
        },
        (None, Some(ts)) => {
            let names: Vec<String> = ts.iter().map(|t| format!("`{}`", t.name)).collect();
            format!("{} targets in turn ({})", ts.len(), names.join(", "))
        }
        (None, None) => "?".to_owned(),
    }
}

/// The heading, the load and the verdict.
fn header(lt: &LoadTest, status: &LoadTestStatus) -> String {
    let spec = &lt.spec;
    let mut out = format!(
        "# LoadTest {}/{}\n\n",
        lt.namespace().unwrap_or_default(),
        lt.name_any()
    );
    let what = match &spec.scenario {
        Some(s) if !spec.executor.is_k6() => format!("scenario `{s}` (Gatling)"),
        Some(s) => format!("scenario `{s}`"),
        None => "a custom script".to_owned(),
    };
    out.push_str(&format!(
        "{what} against {}: {} req/s (open model) for {}, {} segment{}, {} start. Phase: **{:?}**.\n\n",
        target_words(lt),
        spec.rate,
        spec.duration,
        spec.parallelism,
        if spec.parallelism == 1 { "" } else { "s" },
        if spec.synchronized() { "synchronized" } else { "unsynchronized" },
        status.phase.unwrap_or_default(),
    ));
    if let Some(cpu) = &status.gateway_cpu {
        out.push_str(&format!("Gateway CPU: {}.\n\n", cpu_words(cpu)));
    }
    if let Some(c) = status.conditions.iter().find(|c| c.type_ == PASSED) {
        out.push_str(&format!(
            "Thresholds: **{}** ({}): {}\n\n",
            if c.status == "True" {
                "passed"
            } else {
                "failed"
            },
            c.reason,
            c.message
        ));
    }
    out
}

/// A target's CPU in words: "2.41 CPU seconds on 1 pod: 4,150 requests per CPU second".
pub fn cpu_words(cpu: &GatewayCpu) -> String {
    let pods = if cpu.pods == 1 { "pod" } else { "pods" };
    let mut out = format!("{:.2} CPU seconds on {} {pods}", cpu.core_seconds, cpu.pods);
    if let Some(r) = cpu.requests_per_core_second {
        out.push_str(&format!(": {r:.0} requests per CPU second"));
    }
    if cpu.pods_lost > 0 {
        out.push_str(&format!(
            " ({} pod(s) gone before the second reading: an upper bound)",
            cpu.pods_lost
        ));
    }
    out
}

/// One run's figures (the whole test's, or one target's): results, latency distribution,
/// segments. `h` is the heading prefix (`##`, `###`), `chart` the chart's key if drawn.
struct RunReport<'a> {
    h: &'a str,
    results: Option<&'a LoadTestResults>,
    summaries: &'a [Segment],
    segments: &'a [SegmentStatus],
    start_skew_ms: Option<f64>,
    message: Option<&'a str>,
    chart: Option<&'a str>,
}

fn run_sections(out: &mut String, run: &RunReport<'_>) {
    let h = run.h;
    if let Some(skew) = run.start_skew_ms {
        out.push_str(&format!(
            "The segments started within {skew:.1} ms of each other (each k6's own clock).\n\n"
        ));
    }
    if let Some(m) = run.message {
        out.push_str(&format!("Note: {m}\n\n"));
    }
    if let Some(r) = run.results {
        out.push_str(&format!(
            "{h} Whole test\n\nLatency in ms, from each request's scheduled send time.\n\n"
        ));
        let mut row = vec![
            r.requests.to_string(),
            r.failures.to_string(),
            r.dropped_iterations.to_string(),
            format!("{:.1}", r.achieved_rate),
        ];
        row.extend(latency_cells(&r.latency_ms));
        row.push(
            r.latency_aggregation
                .map(|a| format!("{a:?}"))
                .unwrap_or_default(),
        );
        out.push_str(&table(
            &[
                "Requests",
                "Failures",
                "Dropped",
                "Achieved req/s",
                "Min",
                "Med",
                "P90",
                "P95",
                "P99",
                "Max",
                "Percentiles",
            ],
            &[row],
        ));
        out.push('\n');
    }
    if let Some(hist) = merge_histograms(run.summaries) {
        out.push_str(&format!(
            "{h} Latency distribution\n\nAll {} requests' latency (ms) from the segments' merged histogram (within {:.1}%).\n\n",
            hist.total(),
            latency_histogram::RELATIVE_ERROR * 100.0
        ));
        let qs = [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999];
        let row: Vec<String> = qs
            .iter()
            .map(|q| hist.quantile(*q).map(ms).unwrap_or_default())
            .collect();
        out.push_str(&table(
            &["P50", "P75", "P90", "P95", "P99", "P99.9", "P99.99"],
            &[row],
        ));
        match run.chart {
            Some(chart) => out.push_str(&format!("\n![latency by percentile]({chart})\n\n")),
            None => out.push('\n'),
        }
    }
    if !run.segments.is_empty() {
        out.push_str(&format!("{h} Segments\n\n"));
        let rows: Vec<Vec<String>> = run.segments.iter().map(segment_row).collect();
        out.push_str(&table(
            &[
                "#",
                "Segment",
                "Phase",
                "Requests",
                "Failures",
                "Dropped",
                "Achieved req/s",
                "Med",
                "P99",
                "Max",
                "Started at",
                "Summary from",
            ],
            &rows,
        ));
        for s in run.segments.iter().filter(|s| s.message.is_some()) {
            out.push_str(&format!(
                "\nSegment {}: {}\n",
                s.index,
                s.message.as_deref().unwrap_or_default()
            ));
        }
    }
}

fn segment_row(s: &SegmentStatus) -> Vec<String> {
    let mut row = vec![
        s.index.to_string(),
        format!("`{}`", s.segment),
        format!("{:?}", s.phase),
    ];
    match &s.results {
        Some(r) => {
            row.extend([
                r.requests.to_string(),
                r.failures.to_string(),
                r.dropped_iterations.to_string(),
                format!("{:.1}", r.achieved_rate),
                ms(r.latency_ms.med),
                ms(r.latency_ms.p99),
                ms(r.latency_ms.max),
            ]);
        }
        None => row.extend(std::iter::repeat_n(String::new(), 7)),
    }
    row.push(
        s.started_at
            .as_ref()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
    );
    row.push(
        match s.summary_source {
            Some(SummarySource::PodLog) => "pod log",
            Some(SummarySource::TerminationMessage) => "termination message",
            None => "",
        }
        .to_owned(),
    );
    row
}

/// The report's markdown (`spec.target`).
pub fn markdown(lt: &LoadTest, status: &LoadTestStatus, summaries: &[Segment]) -> String {
    let mut out = header(lt, status);
    let chart = merge_histograms(summaries).map(|_| CHART_KEY);
    run_sections(
        &mut out,
        &RunReport {
            h: "##",
            results: status.results.as_ref(),
            summaries,
            segments: &status.segments,
            start_skew_ms: status.start_skew_ms,
            message: status.message.as_deref(),
            chart,
        },
    );
    out
}

/// The side-by-side table of `spec.targets`, as graphfleet-bench prints several gateways:
/// one row per target, the measured ones by p99 (best first), then those without results.
fn comparison_table(targets: &[TargetStatus]) -> String {
    let mut measured: Vec<(&TargetStatus, &LoadTestResults)> = targets
        .iter()
        .filter_map(|t| t.results.as_ref().map(|r| (t, r)))
        .collect();
    measured.sort_by(|a, b| a.1.latency_ms.p99.total_cmp(&b.1.latency_ms.p99));
    let verdict = |t: &TargetStatus| match t.passed {
        Some(true) => "passed".to_owned(),
        Some(false) => format!("failed ({})", t.passed_reason.as_deref().unwrap_or("?")),
        None => "-".to_owned(),
    };
    let mut rows: Vec<Vec<String>> = measured
        .iter()
        .map(|(t, r)| {
            let mut row = vec![format!("{}", t.name), format!("{:?}", t.phase), verdict(t)];
            row.extend(latency_cells(&r.latency_ms));
            row.extend([
                r.requests.to_string(),
                r.failures.to_string(),
                r.dropped_iterations.to_string(),
                format!("{:.1}", r.achieved_rate),
            ]);
            row.extend(cpu_cells(t.gateway_cpu.as_ref()));
            row
        })
        .collect();
    for t in targets.iter().filter(|t| t.results.is_none()) {
        let mut row = vec![t.name.clone(), format!("{:?}", t.phase), verdict(t)];
        row.extend(std::iter::repeat_n("-".to_owned(), 12));
        rows.push(row);
    }
    table(
        &[
            "Target",
            "Phase",
            "Thresholds",
            "Min",
            "Med",
            "P90",
            "P95",
            "P99",
            "Max",
            "Requests",
            "Failures",
            "Dropped",
            "Achieved req/s",
            "Gateway CPU s",
            "Req/CPU s",
        ],
        &rows,
    )
}

/// The CPU columns of a target: seconds used and requests per CPU second, or dashes for a
/// target not measured (a `url` target).
fn cpu_cells(cpu: Option<&GatewayCpu>) -> [String; 2] {
    match cpu {
        Some(c) => [
            format!("{:.2}", c.core_seconds),
            c.requests_per_core_second
                .map_or("-".to_owned(), |r| format!("{r:.0}")),
        ],
        None => ["-".to_owned(), "-".to_owned()],
    }
}

/// The report's markdown with `spec.targets`: the comparison, then each target's sections
/// in the order they ran. `summaries` are the targets' (same order as `status.targets`).
fn targets_markdown(lt: &LoadTest, status: &LoadTestStatus, summaries: &[Vec<Segment>]) -> String {
    let mut out = header(lt, status);
    out.push_str(
        "## Comparison\n\nThe targets ran one after another with the same load; latency in ms from each request's scheduled send time, best p99 first.\n\n",
    );
    out.push_str(&comparison_table(&status.targets));
    if summaries.iter().any(|s| merge_histograms(s).is_some()) {
        out.push_str(&format!("\n![latency by percentile]({CHART_KEY})\n"));
    }
    out.push('\n');
    for (k, t) in status.targets.iter().enumerate() {
        out.push_str(&format!("## Target `{}`\n\n`{}`", t.name, t.url));
        // Whole seconds, as the API server keeps status times.
        let span = match (&t.start_time, &t.completion_time) {
            (Some(a), Some(b)) => format!(", {:.0} → {:.0}", a.0, b.0),
            (Some(a), None) => format!(", from {:.0}", a.0),
            _ => String::new(),
        };
        out.push_str(&format!("{span}. Phase: **{:?}**.", t.phase));
        if let (Some(passed), Some(m)) = (t.passed, &t.passed_message) {
            out.push_str(&format!(
                " Thresholds: **{}**: {m}",
                if passed { "passed" } else { "failed" }
            ));
        }
        out.push_str("\n\n");
        let none = Vec::new();
        let of = summaries.get(k).unwrap_or(&none);
        run_sections(
            &mut out,
            &RunReport {
                h: "###",
                results: t.results.as_ref(),
                summaries: of,
                segments: &t.segments,
                start_skew_ms: t.start_skew_ms,
                message: t.message.as_deref(),
                chart: None,
            },
        );
    }
    out
}

/// The merged histogram as JSON: its buckets' parameters and `latency_histogram`'s encoding
/// (pairs of bucket-index gap and count).
fn histogram_json(summaries: &[Segment]) -> Option<String> {
    let h = merge_histograms(summaries)?;
    let v = serde_json::json!({
        "unit": "ms",
        "minMs": latency_histogram::MIN_MS,
        "gamma": latency_histogram::GAMMA,
        "buckets": latency_histogram::BUCKETS,
        "total": h.total(),
        "encoded": h.encode(),
    });
    Some(v.to_string())
}

/// The chart's key: latency by percentile from the merged histogram(s).
pub const CHART_KEY: &str = "latency.svg";

/// Key of one target's merged histogram (`spec.targets`).
fn target_histogram_key(target: &str) -> String {
    format!("histogram-{target}.json")
}

/// Latency (ms, linear) by percentile on a "nines" axis, a line per `(label, histogram)`:
/// `graphfleet_bench_model::charts`'. Drawing into a string does not fail on finite data; if
/// it did, the report goes out without its chart rather than not at all.
fn latency_svg(series: &[(&str, &latency_histogram::Histogram)]) -> Option<String> {
    charts::latency_by_percentile(series).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "LoadTest report without its latency chart");
        None
    })
}

/// The report ConfigMap of an observed, finished LoadTest (either kind of target).
pub fn config_map_of(lt: &LoadTest, status: &LoadTestStatus, observed: &Observed) -> ConfigMap {
    if status.targets.is_empty() {
        config_map(lt, status, &observed.summaries)
    } else {
        targets_config_map(lt, status, &observed.target_summaries)
    }
}

/// The report ConfigMap, owned by the LoadTest (`spec.target`).
pub fn config_map(lt: &LoadTest, status: &LoadTestStatus, summaries: &[Segment]) -> ConfigMap {
    let mut data = BTreeMap::from([(REPORT_KEY.to_owned(), markdown(lt, status, summaries))]);
    if let Some(h) = histogram_json(summaries) {
        data.insert(HISTOGRAM_KEY.to_owned(), h);
    }
    if let Some(svg) = merge_histograms(summaries).and_then(|h| latency_svg(&[("all", &h)])) {
        data.insert(CHART_KEY.to_owned(), svg);
    }
    report_config_map(lt, data)
}

/// The report ConfigMap with `spec.targets`: REPORT.md, one chart with a line per target
/// and each target's merged histogram (`histogram-<target>.json`).
fn targets_config_map(
    lt: &LoadTest,
    status: &LoadTestStatus,
    summaries: &[Vec<Segment>],
) -> ConfigMap {
    let mut data = BTreeMap::from([(
        REPORT_KEY.to_owned(),
        targets_markdown(lt, status, summaries),
    )]);
    let mut merged = Vec::new();
    for (t, s) in status.targets.iter().zip(summaries) {
        if let Some(h) = histogram_json(s) {
            data.insert(target_histogram_key(&t.name), h);
        }
        if let Some(h) = merge_histograms(s) {
            merged.push((t.name.as_str(), h));
        }
    }
    let series: Vec<(&str, &latency_histogram::Histogram)> =
        merged.iter().map(|(n, h)| (*n, h)).collect();
    if let Some(svg) = latency_svg(&series) {
        data.insert(CHART_KEY.to_owned(), svg);
    }
    report_config_map(lt, data)
}

fn report_config_map(lt: &LoadTest, data: BTreeMap<String, String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&lt.name_any())),
            namespace: lt.namespace(),
            labels: Some(BTreeMap::from([
                (
                    "app.kubernetes.io/managed-by".to_owned(),
                    crate::resources::MANAGER.to_owned(),
                ),
                (
                    crate::resources::loadtest::LOADTEST_LABEL.to_owned(),
                    lt.name_any(),
                ),
            ])),
            owner_references: lt.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}
