//! The LoadTest page (pure): its status as tables, a chart of the targets side by side, and
//! the full report of its `<name>-report` ConfigMap rendered (the markdown tables as HTML
//! tables, the latency chart as an image).

use std::collections::BTreeMap;

use base64::Engine as _;
use graphfleet_api::{LoadTest, LoadTestResults, LoadTestStatus, SegmentStatus, TargetStatus};
use graphfleet_bench_model::charts::{self, Bars};
use kube::ResourceExt;
use maud::{Markup, PreEscaped, html};
use pulldown_cmark::{Event, Options, Parser, Tag};

use super::layout::{LOADTESTS, conditions_table, num, object_link, page, time};
use crate::report::{CHART_KEY, REPORT_KEY};

/// A row of the overview's LoadTest table.
pub fn loadtest_row(lt: &LoadTest) -> Markup {
    let ns = lt.namespace().unwrap_or_default();
    let status = lt.status.clone().unwrap_or_default();
    let results = overall(&status);
    let passed = status.conditions.iter().find(|c| c.type_ == "Passed");
    html! {
        tr {
            td { (ns) }
            td { (object_link(LOADTESTS, &ns, &lt.name_any())) }
            td { (status.phase.map(|p| format!("{p:?}")).unwrap_or_else(|| "Pending".to_owned())) }
            @match &results {
                Some(r) => {
                    (num(r.requests as f64, 0))
                    (num(r.failures as f64, 0))
                    (num(r.achieved_rate, 1))
                    (num(r.latency_ms.p99, 2))
                }
                None => { td {} td {} td {} td {} }
            }
            td { @if let Some(c) = passed { (super::layout::condition_status(c)) } }
        }
    }
}

/// The whole test's results; with targets, the first target's (the overview is a glance).
fn overall(status: &LoadTestStatus) -> Option<LoadTestResults> {
    status
        .results
        .clone()
        .or_else(|| status.targets.iter().find_map(|t| t.results.clone()))
}

/// One LoadTest; `report` is its report ConfigMap's data when it has one.
pub fn loadtest(lt: &LoadTest, report: Option<&BTreeMap<String, String>>) -> Markup {
    let ns = lt.namespace().unwrap_or_default();
    let status = lt.status.clone().unwrap_or_default();
    let template = &lt.spec.template;
    page(
        &format!("LoadTest {ns}/{}", lt.name_any()),
        html! {
            dl.facts {
                dt { "Phase" } dd { (status.phase.map(|p| format!("{p:?}")).unwrap_or_else(|| "Pending".to_owned())) }
                dt { "Load" } dd {
                    (template.rate) " req/s for " (template.duration) " in " (template.parallelism) " segment(s)"
                    @if let Some(s) = &template.scenario { ", scenario " code { (s) } }
                }
                @if let Some(t) = &status.start_time { dt { "Started" } dd { (time(t)) } }
                @if let Some(t) = &status.completion_time { dt { "Finished" } dd { (time(t)) } }
                @if let Some(m) = &status.message { dt { "Message" } dd { (m) } }
                @if let Some(cpu) = &status.gateway_cpu { dt { "Gateway CPU" } dd { (crate::report::cpu_words(cpu)) } }
            }
            h2 { "Conditions" }
            (conditions_table(&status.conditions))
            @if !status.targets.is_empty() {
                h2 { "Targets" }
                (targets_table(&status.targets))
                (targets_chart(&status.targets))
            }
            @if let Some(r) = &status.results {
                h2 { "Results" }
                (results_table(&[("all".to_owned(), r)]))
            }
            @if !status.segments.is_empty() {
                h2 { "Segments" }
                (segments_table(&status.segments))
            }
            h2 #report { "Report" }
            @match report {
                Some(data) => (report_html(data)),
                None => p.muted { "No report yet: it is written when the test finishes." },
            }
        },
    )
}

fn results_table(rows: &[(String, &LoadTestResults)]) -> Markup {
    html! {
        table.results {
            tr {
                th { "" } th { "Requests" } th { "Failed" } th { "Dropped" } th { "Achieved req/s" }
                th { "min ms" } th { "med ms" } th { "p90 ms" } th { "p95 ms" } th { "p99 ms" } th { "max ms" }
            }
            @for (name, r) in rows {
                tr {
                    td { (name) }
                    (num(r.requests as f64, 0)) (num(r.failures as f64, 0)) (num(r.dropped_iterations as f64, 0))
                    (num(r.achieved_rate, 1))
                    @for v in [r.latency_ms.min, r.latency_ms.med, r.latency_ms.p90, r.latency_ms.p95, r.latency_ms.p99, r.latency_ms.max] {
                        (num(v, 2))
                    }
                }
            }
        }
    }
}

fn targets_table(targets: &[TargetStatus]) -> Markup {
    html! {
        table #targets-table {
            tr { th { "Target" } th { "URL" } th { "Phase" } th { "Passed" } th { "Gateway CPU" } th { "Message" } }
            @for t in targets {
                tr {
                    td { (t.name) }
                    td { code { (t.url) } }
                    td { (format!("{:?}", t.phase)) }
                    td { @match t.passed { Some(true) => span.ok { "yes" }, Some(false) => span.bad { "no" }, None => span.muted { "–" } } }
                    td { @match &t.gateway_cpu { Some(cpu) => (crate::report::cpu_words(cpu)), None => span.muted { "–" } } }
                    td { (t.message.as_deref().unwrap_or("")) }
                }
            }
        }
        @let with_results: Vec<(String, &LoadTestResults)> = targets.iter()
            .filter_map(|t| t.results.as_ref().map(|r| (t.name.clone(), r))).collect();
        @if !with_results.is_empty() { (results_table(&with_results)) }
    }
}

/// Achieved rate, p99, failures and (where measured) requests per CPU second of each
/// target side by side (SVG from the benchmark's charts).
fn targets_chart(targets: &[TargetStatus]) -> Markup {
    let done: Vec<(&str, &LoadTestResults)> = targets
        .iter()
        .filter_map(|t| t.results.as_ref().map(|r| (t.name.as_str(), r)))
        .collect();
    if done.is_empty() {
        return html! {};
    }
    let panel = |title: &str, y: &str, value: fn(&LoadTestResults) -> f64| Bars {
        title: title.to_owned(),
        y_desc: y.to_owned(),
        categories: vec![String::new()],
        series: done
            .iter()
            .map(|(name, r)| ((*name).to_owned(), vec![value(r)]))
            .collect(),
    };
    let mut panels = vec![
        panel("achieved rate", "req/s", |r| r.achieved_rate),
        panel("p99 latency", "ms", |r| r.latency_ms.p99),
        panel("failed requests", "requests", |r| r.failures as f64),
    ];
    // Efficiency: only the targets whose gateway pods' CPU was read (GraphGateways).
    let efficiency: Vec<(String, Vec<f64>)> = targets
        .iter()
        .filter_map(|t| {
            let r = t.gateway_cpu.as_ref()?.requests_per_core_second?;
            Some((t.name.clone(), vec![r]))
        })
        .collect();
    if !efficiency.is_empty() {
        panels.push(Bars {
            title: "requests per CPU second".to_owned(),
            y_desc: "req / CPU s".to_owned(),
            categories: vec![String::new()],
            series: efficiency,
        });
    }
    let width = 350 * u32::try_from(panels.len()).unwrap_or(4);
    match charts::bars(&panels, (width, 320)) {
        Ok(svg) => html! { div.chart #targets-chart { (svg_image(&svg, "targets side by side")) } },
        Err(e) => html! { p.error { (e) } },
    }
}

fn segments_table(segments: &[SegmentStatus]) -> Markup {
    html! {
        table #segments-table {
            tr { th { "Segment" } th { "Job" } th { "Phase" } th { "Requests" } th { "Failed" } th { "p99 ms" } th { "Message" } }
            @for s in segments {
                tr {
                    td { code { (s.segment) } }
                    td { (s.job) }
                    td { (format!("{:?}", s.phase)) }
                    @match &s.results {
                        Some(r) => { (num(r.requests as f64, 0)) (num(r.failures as f64, 0)) (num(r.latency_ms.p99, 2)) }
                        None => { td {} td {} td {} }
                    }
                    td { (s.message.as_deref().unwrap_or("")) }
                }
            }
        }
    }
}

/// An SVG as an `<img>`: a picture only, so nothing in it can run as part of the page.
fn svg_image(svg: &str, alt: &str) -> Markup {
    let data = base64::engine::general_purpose::STANDARD.encode(svg);
    html! { img alt=(alt) src=(format!("data:image/svg+xml;base64,{data}")); }
}

/// The report's markdown as HTML. Raw HTML in it is shown as text (the ConfigMap is data,
/// not markup); the chart it links is the ConfigMap's own SVG, inlined as an image where
/// the markdown places it; any other image is dropped with its alt text.
fn report_html(data: &BTreeMap<String, String>) -> Markup {
    let Some(markdown) = data.get(REPORT_KEY) else {
        return html! { p.error { "The report ConfigMap has no " code { (REPORT_KEY) } "." } };
    };
    let chart = data.get(CHART_KEY).map(
        |svg| html! { span.chart #latency-chart { (svg_image(svg, "latency by percentile")) } },
    );
    let mut in_image = false;
    let events =
        Parser::new_ext(markdown, Options::ENABLE_TABLES).filter_map(|event| match event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                in_image = true;
                let ours = dest_url.as_ref() == CHART_KEY;
                let img = chart.as_ref().filter(|_| ours)?;
                Some(Event::InlineHtml(img.clone().into_string().into()))
            }
            Event::End(pulldown_cmark::TagEnd::Image) => {
                in_image = false;
                None
            }
            _ if in_image => None,
            Event::Html(text) | Event::InlineHtml(text) => Some(Event::Text(text)),
            other => Some(other),
        });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    html! { div.report { (PreEscaped(out)) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_markdown_tables_become_html_tables_and_raw_html_stays_text() {
        let data = BTreeMap::from([
            (
                REPORT_KEY.to_owned(),
                "# t\n\n| a | b |\n|---|--:|\n| x | 1 |\n\n<script>alert(1)</script>\n\n![latency by percentile](latency.svg)\n".to_owned(),
            ),
            (CHART_KEY.to_owned(), "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".to_owned()),
        ]);
        let html = report_html(&data).into_string();
        assert!(html.contains("<table>"), "{html}");
        assert!(
            html.contains("<td style=\"text-align: right\">1</td>"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert_eq!(
            html.matches("src=\"data:image/svg+xml;base64,").count(),
            1,
            "{html}"
        );
        assert!(!html.contains("src=\"latency.svg\""), "{html}");
        // In place of the link, without its alt text as a stray paragraph.
        assert!(
            html.contains("<p><span class=\"chart\" id=\"latency-chart\"><img"),
            "{html}"
        );
    }
}
