//! A finished LoadTest's full report (pure), kept in the ConfigMap `<name>-report`: markdown
//! tables (the whole test, its latency distribution from the merged histogram, each segment)
//! the merged histogram itself and an SVG chart of latency by percentile, so `kubectl` users
//! get what the local runner prints.

use std::collections::BTreeMap;

use graphfleet_loadtest::latency_histogram;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::crd::{LatencySummary, LoadTest, LoadTestStatus, SummarySource};
use crate::k6_summary::{Segment, merge_histograms};
use crate::status::PASSED;

/// The report's key in its ConfigMap.
pub const REPORT_KEY: &str = "REPORT.md";
/// The merged latency histogram's key: `latency_histogram`'s encoding plus its parameters.
pub const HISTOGRAM_KEY: &str = "histogram.json";

/// Name of a LoadTest's report ConfigMap.
pub fn config_map_name(lt: &str) -> String {
    format!("{lt}-report")
}

/// A markdown table; numbers right-aligned.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut out = line(header.iter().map(|h| (*h).to_owned()).collect());
    out.push_str(&line(
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { ":--" } else { "--:" }.to_owned())
            .collect(),
    ));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
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

/// The report's markdown.
pub fn markdown(lt: &LoadTest, status: &LoadTestStatus, summaries: &[Segment]) -> String {
    let spec = &lt.spec;
    let mut out = format!(
        "# LoadTest {}/{}\n\n",
        lt.namespace().unwrap_or_default(),
        lt.name_any()
    );
    let what = match (&spec.scenario, &spec.target.url, &spec.target.gateway_ref) {
        (Some(s), _, _) if !spec.executor.is_k6() => format!("scenario `{s}` (Gatling)"),
        (Some(s), _, _) => format!("scenario `{s}`"),
        _ => "a custom script".to_owned(),
    };
    let target = match (&spec.target.gateway_ref, &spec.target.url) {
        (Some(gw), _) => format!("GraphGateway `{}`", gw.name),
        (None, Some(url)) => format!("`{url}`"),
        _ => "?".to_owned(),
    };
    out.push_str(&format!(
        "{what} against {target}: {} req/s (open model) for {}, {} segment{}, {} start. Phase: **{:?}**.\n\n",
        spec.rate,
        spec.duration,
        spec.parallelism,
        if spec.parallelism == 1 { "" } else { "s" },
        if spec.synchronized() { "synchronized" } else { "unsynchronized" },
        status.phase.unwrap_or_default(),
    ));
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
    if let Some(skew) = status.start_skew_ms {
        out.push_str(&format!(
            "The segments started within {skew:.1} ms of each other (each k6's own clock).\n\n"
        ));
    }
    if let Some(m) = &status.message {
        out.push_str(&format!("Note: {m}\n\n"));
    }
    if let Some(r) = &status.results {
        out.push_str(
            "## Whole test\n\nLatency in ms, from each request's scheduled send time.\n\n",
        );
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
    if let Some(h) = merge_histograms(summaries) {
        out.push_str(&format!(
            "## Latency distribution\n\nAll {} requests' latency (ms) from the segments' merged histogram (within {:.1}%).\n\n",
            h.total(),
            latency_histogram::RELATIVE_ERROR * 100.0
        ));
        let qs = [0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999];
        let row: Vec<String> = qs
            .iter()
            .map(|q| h.quantile(*q).map(ms).unwrap_or_default())
            .collect();
        out.push_str(&table(
            &["P50", "P75", "P90", "P95", "P99", "P99.9", "P99.99"],
            &[row],
        ));
        out.push_str(&format!("\n![latency by percentile]({CHART_KEY})\n\n"));
    }
    if !status.segments.is_empty() {
        out.push_str("## Segments\n\n");
        let rows: Vec<Vec<String>> = status
            .segments
            .iter()
            .map(|s| {
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
            })
            .collect();
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
        for s in status.segments.iter().filter(|s| s.message.is_some()) {
            out.push_str(&format!(
                "\nSegment {}: {}\n",
                s.index,
                s.message.as_deref().unwrap_or_default()
            ));
        }
    }
    out
}

/// The merged histogram as JSON: its buckets' parameters and `latency_histogram`'s encoding
/// (pairs of bucket-index gap and count).
pub fn histogram_json(summaries: &[Segment]) -> Option<String> {
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

/// The chart's key: latency by percentile from the merged histogram.
pub const CHART_KEY: &str = "latency.svg";

/// Latency (ms, linear) by percentile on a "nines" axis (0, 90, 99, 99.9, 99.99%), the way
/// HDR histograms are plotted: the tail gets as much room as the body.
pub fn latency_svg(h: &latency_histogram::Histogram) -> Option<String> {
    const W: f64 = 640.0;
    const H: f64 = 320.0;
    const LEFT: f64 = 60.0;
    const BOTTOM: f64 = 40.0;
    const TOP: f64 = 20.0;
    const RIGHT: f64 = 20.0;
    const NINES: f64 = 4.0;
    let quantile = |nines: f64| 1.0 - 10f64.powf(-nines);
    let points: Vec<(f64, f64)> = (0..=80)
        .map(|i| f64::from(i) * NINES / 80.0)
        .map(|x| h.quantile(quantile(x)).map(|ms| (x, ms)))
        .collect::<Option<_>>()?;
    let top = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-3) * 1.05;
    let px = |x: f64| LEFT + x / NINES * (W - LEFT - RIGHT);
    let py = |ms: f64| H - BOTTOM - ms / top * (H - BOTTOM - TOP);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>\n"
    );
    for (x, label) in [
        (0.0, "0%"),
        (1.0, "90%"),
        (2.0, "99%"),
        (3.0, "99.9%"),
        (4.0, "99.99%"),
    ] {
        let at = px(x);
        svg.push_str(&format!(
            "<line x1=\"{at:.1}\" y1=\"{TOP}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>\n",
            H - BOTTOM,
            H - BOTTOM + 15.0
        ));
    }
    for i in 0..=4 {
        let ms = top * f64::from(i) / 4.0;
        let at = py(ms);
        svg.push_str(&format!(
            "<line x1=\"{LEFT}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{ms:.1}</text>\n",
            W - RIGHT,
            LEFT - 5.0,
            at + 4.0
        ));
    }
    let line: Vec<String> = points
        .iter()
        .map(|(x, ms)| format!("{:.1},{:.1}", px(*x), py(*ms)))
        .collect();
    svg.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">percentile (all {} requests, merged histogram)</text>\n\
         <text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">latency, ms</text>\n</svg>\n",
        line.join(" "),
        (LEFT + W - RIGHT) / 2.0,
        H - 5.0,
        h.total(),
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
    ));
    Some(svg)
}

/// The report ConfigMap, owned by the LoadTest.
pub fn config_map(lt: &LoadTest, status: &LoadTestStatus, summaries: &[Segment]) -> ConfigMap {
    let mut data = BTreeMap::from([(REPORT_KEY.to_owned(), markdown(lt, status, summaries))]);
    if let Some(h) = histogram_json(summaries) {
        data.insert(HISTOGRAM_KEY.to_owned(), h);
    }
    if let Some(svg) = merge_histograms(summaries).and_then(|h| latency_svg(&h)) {
        data.insert(CHART_KEY.to_owned(), svg);
    }
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
