//! REPORT.md: system information, then per scenario the Latencies, Resources and Requests
//! tables (the layout of the public federation benchmark reports) and SVG charts.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use graphfleet_bench_model::report::table;

use crate::results::{FanoutRow, GatewayRun, Measured, Outcome, Report, ScenarioRun};

const MIB: f64 = 1024.0 * 1024.0;

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

/// Three significant digits, like "13.0", "0.64", "203".
fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn measured(g: &GatewayRun) -> Option<&Measured> {
    match &g.outcome {
        Outcome::Measured(m) => Some(m),
        _ => None,
    }
}

/// The cell text for a gateway that produced no numbers.
fn missing(g: &GatewayRun) -> &'static str {
    match g.outcome {
        Outcome::NotInstalled { .. } => "not installed",
        Outcome::Unavailable { .. } => "not available",
        _ => "errors",
    }
}

/// ` (rounds a–b)`: the range of a gateway's requests/core.s over its rounds, when it
/// had several; empty otherwise.
fn spread(rounds: &[f64]) -> String {
    let (lo, hi) = rounds.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(*x), hi.max(*x))
    });
    if rounds.len() < 2 {
        String::new()
    } else {
        format!(" ({} rounds {}–{})", rounds.len(), f1(lo), f1(hi))
    }
}

/// One row per scenario and gateway: requests/core.s, its ratio to the first gateway's,
/// P99 and peak memory: the side-by-side view of the whole run.
fn summary_rows(report: &Report) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for s in report.scenarios.iter().filter(|s| s.fanout.is_none()) {
        let first = s.gateways.first().and_then(measured);
        let first_rate = first.and_then(Measured::per_core_second);
        for g in &s.gateways {
            let Some(m) = measured(g) else {
                let mut row = vec![s.name.clone(), g.label.clone()];
                row.extend(std::iter::repeat_n(missing(g).to_owned(), 4));
                rows.push(row);
                continue;
            };
            let rate = m.per_core_second();
            let failures = if m.summary.failures > 0 { "*" } else { "" };
            rows.push(vec![
                s.name.clone(),
                g.label.clone(),
                rate.map_or("-".into(), |r| {
                    format!("{}{failures}{}", f1(r), spread(&g.rounds))
                }),
                match (first_rate, rate) {
                    (Some(a), Some(b)) if b > 0.0 => format!("{a_over_b:.2}×", a_over_b = a / b),
                    _ => "-".into(),
                },
                m.summary.latency_ms.map_or("-".into(), |l| sig3(l.p99)),
                m.usage
                    .map_or("-".into(), |u| format!("{:.0} MiB", u.mem_max as f64 / MIB)),
            ]);
        }
    }
    rows
}

fn latency_rows(s: &ScenarioRun) -> Vec<Vec<String>> {
    let mut ok: Vec<(&GatewayRun, &Measured)> = s
        .gateways
        .iter()
        .filter_map(|g| measured(g).map(|m| (g, m)))
        .collect();
    let p99 = |m: &Measured| m.summary.latency_ms.map_or(f64::INFINITY, |l| l.p99);
    ok.sort_by(|a, b| p99(a.1).total_cmp(&p99(b.1)));
    let mut rows: Vec<Vec<String>> = ok
        .iter()
        .map(|(g, m)| {
            let mut row = vec![g.label.clone()];
            match (m.summary.latency_ms, m.summary.failures) {
                (Some(l), 0) => row.extend([l.min, l.med, l.p90, l.p95, l.p99, l.max].map(f1)),
                (Some(l), _) if m.summary.ok > 0 => row
                    .extend([l.min, l.med, l.p90, l.p95, l.p99, l.max].map(|x| format!("{x:.1}*"))),
                _ => row.extend(std::iter::repeat_n("errors".to_owned(), 6)),
            }
            row.push(
                m.summary
                    .scheduled_latency_ms
                    .map_or("-".into(), |l| f1(l.p99)),
            );
            row
        })
        .collect();
    for g in s.gateways.iter().filter(|g| measured(g).is_none()) {
        let mut row = vec![g.label.clone()];
        row.extend(std::iter::repeat_n(missing(g).to_owned(), 7));
        rows.push(row);
    }
    rows
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn resource_rows(s: &ScenarioRun) -> Vec<Vec<String>> {
    let mut ok: Vec<(&GatewayRun, &Measured)> = s
        .gateways
        .iter()
        .filter_map(|g| measured(g).map(|m| (g, m)))
        .collect();
    ok.sort_by(|a, b| {
        b.1.per_core_second()
            .unwrap_or(0.0)
            .total_cmp(&a.1.per_core_second().unwrap_or(0.0))
    });
    let mut rows: Vec<Vec<String>> = ok
        .iter()
        .map(|(g, m)| {
            let Some(u) = &m.usage else {
                let mut row = vec![g.label.clone()];
                row.extend(std::iter::repeat_n("not sampled".to_owned(), 6));
                return row;
            };
            let clean = m.summary.failures == 0;
            let rate = |x: Option<f64>| match x {
                Some(v) if clean => f1(v),
                Some(v) => format!("{v:.1}*"),
                None => "-".into(),
            };
            vec![
                g.label.clone(),
                format!("{} ±{}", pct(u.cpu_avg), pct(u.cpu_std)),
                pct(u.cpu_max),
                format!("{:.0} ±{:.0} MiB", u.mem_avg / MIB, u.mem_std / MIB),
                format!("{:.0} MiB", u.mem_max as f64 / MIB),
                format!("{}{}", rate(m.per_core_second()), spread(&g.rounds)),
                rate(m.per_gb_second()),
            ]
        })
        .collect();
    for g in s.gateways.iter().filter(|g| measured(g).is_none()) {
        let mut row = vec![g.label.clone()];
        row.extend(std::iter::repeat_n(missing(g).to_owned(), 6));
        rows.push(row);
    }
    rows
}

fn request_rows(s: &ScenarioRun) -> Vec<Vec<String>> {
    s.gateways
        .iter()
        .map(|g| match measured(g) {
            Some(m) => vec![
                g.label.clone(),
                m.summary.requests.to_string(),
                m.summary.failures.to_string(),
                m.summary.dropped_iterations.to_string(),
                format!("{:.1}", m.summary.achieved_rate.unwrap_or(0.0)),
                match (m.subgraph_per_request(), m.subgraph_requests) {
                    (Some(per), Some(total)) => format!("{} ({total})", sig3(per)),
                    _ => "not counted".to_owned(),
                },
            ],
            None => {
                let mut row = vec![g.label.clone()];
                row.extend(std::iter::repeat_n(missing(g).to_owned(), 5));
                row
            }
        })
        .collect()
}

fn capacity_rows(s: &ScenarioRun) -> Vec<Vec<String>> {
    s.gateways
        .iter()
        .filter_map(|g| {
            let c = measured(g)?.capacity.as_ref()?;
            let pair = |p: Option<(f64, f64)>| {
                p.map_or("-".into(), |(r, l)| format!("{r:.0} ({l:.1} ms)"))
            };
            Some(vec![
                g.label.clone(),
                c.min_p99.map_or("-".into(), f1),
                pair(c.at_150),
                pair(c.peak),
                c.steps.len().to_string(),
                c.limit.describe(),
            ])
        })
        .collect()
}

fn fanout_section(out: &mut String, s: &ScenarioRun, rows: &[FanoutRow]) {
    let _ = writeln!(
        out,
        "Set `{}`. Each subscriber is its own graphql-transport-ws connection from graphfleet-bench's client (one current-thread runtime on the non-gateway cores); the measured window is {} s, after every subscription was acknowledged and had time for an event. Latency runs from the subgraph's emission (`Review.publishedAt`) to receipt; every event is checked (a `next` with data and no errors). Memory per subscription is (RSS with N open − RSS before) / N.\n",
        s.set, s.duration_s
    );
    if let Some(e) = &s.error {
        let _ = writeln!(out, "**The scenario did not run:** {e}\n");
        return;
    }
    let mib = |b: Option<u64>| b.map_or("-".into(), |b| format!("{:.1}", b as f64 / MIB));
    let ms = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.2}"));
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = vec![
                r.label.clone(),
                r.variant.clone(),
                r.subscribers.to_string(),
            ];
            if let Some(e) = &r.error {
                let first = e.lines().next().unwrap_or_default();
                let short: String = first.chars().take(80).collect();
                row.push(format!("errors: {short}"));
                row.extend(std::iter::repeat_n("-".to_owned(), 9));
                return row;
            }
            row.extend([
                format!("{}/{}", r.opened, r.subscribers),
                format!("{:.0} / {:.0}", r.delivered_per_s, r.expected_per_s),
                ms(r.latency_p50_ms),
                ms(r.latency_p99_ms),
                format!("{} / {}", r.bad_events, r.ended_early),
                r.cpu_avg.map_or("-".into(), pct),
                mib(r.rss_before),
                mib(r.rss_open),
                r.bytes_per_subscription
                    .map_or("-".into(), |b| format!("{:.1}", b / 1024.0)),
            ]);
            row
        })
        .collect();
    out.push_str(&table(
        &[
            "Gateway",
            "Settings",
            "Subscribers",
            "Open",
            "Events/s delivered / expected",
            "P50 (ms)",
            "P99 (ms)",
            "Bad events / ended early",
            "CPU avg",
            "RSS before (MiB)",
            "RSS open (MiB)",
            "KiB per subscription",
        ],
        &[
            false, false, true, true, true, true, true, true, true, true, true, true,
        ],
        &table_rows,
    ));
    for r in rows {
        if !r.failure_samples.is_empty() {
            let _ = writeln!(
                out,
                "\n- {} ({}) × {}: {}",
                r.label,
                r.variant,
                r.subscribers,
                r.failure_samples.join("; ")
            );
        }
    }
    out.push('\n');
}

fn scenario_section(out: &mut String, s: &ScenarioRun, smoke: bool) {
    let _ = writeln!(out, "# {}\n", s.name);
    let _ = writeln!(out, "{}\n", s.description);
    if let Some(rows) = &s.fanout {
        fanout_section(out, s, rows);
        return;
    }
    let size = s.response_bytes.map_or(String::new(), |b| {
        format!(" The monolith's response is {b} bytes.")
    });
    let _ = writeln!(
        out,
        "Set `{}`. {} runs an open model (constant-arrival-rate) at {} requests/s for {} s{}.{size}\n",
        s.set,
        match s.generator.as_str() {
            "native" =>
                "The native load generator (graphfleet-bench's own client, latency from each request's scheduled time)",
            "k6" => "k6",
            other => other,
        },
        s.rate,
        s.duration_s,
        if smoke {
            " (smoke: correctness only, every response compared with the monolith)"
        } else {
            ""
        }
    );
    if let Some(e) = &s.error {
        let _ = writeln!(out, "**The scenario did not run:** {e}\n");
        return;
    }
    let _ = writeln!(
        out,
        "## Latencies (ms)\n\n![Latency Chart](charts/{}-latency.svg)\n",
        s.name
    );
    out.push_str(&table(
        &[
            "Gateway",
            "Min",
            "Med",
            "P90",
            "P95",
            "P99",
            "Max",
            "P99 from schedule",
        ],
        &[false, true, true, true, true, true, true, true],
        &latency_rows(s),
    ));
    let scheduled = s
        .gateways
        .iter()
        .any(|g| measured(g).is_some_and(|m| m.summary.scheduled_latency_ms.is_some()));
    let _ = writeln!(
        out,
        "\n{}",
        match (scheduled, s.generator.as_str()) {
            (true, "native") =>
                "The native generator counts every latency from the moment the open model scheduled the request (coordinated omission: queueing in a gateway that falls behind is not hidden), so \"P99 from schedule\" equals P99; requests it could not start because all connections were busy are dropped, not delayed. `*` marks runs with failures.\n",
            (true, _) =>
                "\"P99 from schedule\" counts from the moment the open model scheduled each request so queueing in a gateway that falls behind is not hidden (coordinated omission); it has millisecond resolution and is an upper bound when k6 dropped iterations. `*` marks runs with failures.\n",
            (false, _) => "`*` marks runs with failures.\n",
        }
    );
    let _ = writeln!(
        out,
        "## Resources\n\n![Efficiency Chart](charts/{}-efficiency.svg)\n",
        s.name
    );
    out.push_str(&table(
        &[
            "Gateway",
            "CPU avg",
            "CPU max",
            "MEM avg",
            "MEM max",
            "requests/core.s",
            "requests/GB.s",
        ],
        &[false, true, true, true, true, true, true],
        &resource_rows(s),
    ));
    let _ = writeln!(out, "\n## Requests\n");
    out.push_str(&table(
        &[
            "Gateway",
            "Requests",
            "Failures",
            "Dropped",
            "Achieved req/s",
            "Subgraph requests (total)",
        ],
        &[false, true, true, true, true, true],
        &request_rows(s),
    ));
    let capacity = capacity_rows(s);
    if !capacity.is_empty() {
        let _ = writeln!(
            out,
            "\n## Capacity\n\n![Capacity Chart](charts/{}-capacity.svg)\n",
            s.name
        );
        out.push_str(&table(
            &[
                "Gateway",
                "min p99 (ms)",
                "Throughput at 150% min p99 (req/s)",
                "Peak throughput (req/s)",
                "Steps",
                "Limited by",
            ],
            &[false, true, true, true, true, false],
            &capacity,
        ));
        let _ = writeln!(
            out,
            "\nThe arrival rate rises step by step until the achieved rate falls {} req/s short or requests fail; the throughput at 150% of the lowest p99 is interpolated linearly between steps. \"Limited by\" reads the first step that fell behind: the gateway's mean CPU against its budget, and how busy the load generator's and subgraphs' cores were; at {:.0}% or more a side counts as saturated. When the load side saturated first, the gateway's capacity is higher than shown.",
            crate::capacity::MARGIN,
            crate::capacity::SATURATED * 100.0
        );
    }
    for g in &s.gateways {
        if let Outcome::NotInstalled { error }
        | Outcome::Failed { error }
        | Outcome::Unavailable { error } = &g.outcome
        {
            let first = error.lines().next().unwrap_or_default();
            let _ = writeln!(out, "\n- {}: {}", g.label, first);
        }
    }
    out.push('\n');
}

pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# System Information\n");
    for (k, v) in &report.system {
        let _ = writeln!(out, "- {k}: {v}");
    }
    let _ = writeln!(out, "\n# Gateways\n");
    for g in &report.gateways {
        let _ = writeln!(
            out,
            "- {} ({}): {} — {}",
            g.label, g.name, g.version, g.status
        );
    }
    out.push('\n');
    let summary = summary_rows(report);
    if !summary.is_empty() {
        let first = report
            .gateways
            .first()
            .map_or("the first", |g| g.label.as_str());
        let _ = writeln!(out, "# Summary\n");
        out.push_str(&table(
            &[
                "Scenario",
                "Gateway",
                "requests/core.s",
                &format!("{first} ÷ gateway"),
                "P99 ms",
                "MEM max",
            ],
            &[false, false, true, true, true, true],
            &summary,
        ));
        let _ = writeln!(
            out,
            "\nEach gateway under the same CPU budget, one scenario after another; the ratio divides the first gateway's requests/core.s by each gateway's (above 1: the first is cheaper per request). `*` marks runs with failures.\n"
        );
    }
    for s in &report.scenarios {
        scenario_section(&mut out, s, report.smoke);
    }
    if !report.timings.is_empty() {
        let _ = writeln!(out, "# Timings\n");
        let rows: Vec<Vec<String>> = report
            .timings
            .iter()
            .map(|(what, value)| vec![what.clone(), value.clone()])
            .collect();
        out.push_str(&table(&["What", "Took"], &[false, true], &rows));
        out.push('\n');
    }
    out
}

/// Writes REPORT.md, results.json and the charts into `dir`.
pub fn write(report: &Report, dir: &Path) -> anyhow::Result<()> {
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts).with_context(|| format!("creating {}", charts.display()))?;
    for s in &report.scenarios {
        if s.error.is_none() && s.fanout.is_none() {
            crate::charts::scenario(s, &charts)
                .with_context(|| format!("drawing the charts of {}", s.name))?;
        }
    }
    std::fs::write(dir.join("REPORT.md"), markdown(report)).context("writing REPORT.md")?;
    let json = serde_json::to_string_pretty(report).context("serialising the results")?;
    std::fs::write(dir.join("results.json"), json).context("writing results.json")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured_run(label: &str, requests: u64, cpu_seconds: f64) -> GatewayRun {
        GatewayRun {
            gateway: label.to_lowercase(),
            label: label.to_owned(),
            outcome: Outcome::Measured(Box::new(Measured::example(requests, cpu_seconds, 2.5))),
            rounds: Vec::new(),
        }
    }

    #[test]
    fn the_summary_divides_the_first_gateways_rate_by_each() {
        let mut run = ScenarioRun {
            name: "small".into(),
            set: "apollo".into(),
            description: String::new(),
            rate: 200,
            duration_s: 10,
            generator: "native".into(),
            response_bytes: None,
            error: None,
            gateways: vec![measured_run("A", 3000, 1.0), measured_run("B", 2000, 1.0)],
            fanout: None,
        };
        run.gateways.push(GatewayRun {
            outcome: Outcome::NotInstalled {
                error: "no cargo".into(),
            },
            ..measured_run("C", 1, 1.0)
        });
        let report = Report {
            smoke: false,
            system: Vec::new(),
            gateways: Vec::new(),
            scenarios: vec![run],
            timings: Vec::new(),
        };
        let rows = summary_rows(&report);
        assert_eq!(rows[0][2..], ["3000.0", "1.00×", "2.50", "30 MiB"]);
        assert_eq!(rows[1][2..], ["2000.0", "1.50×", "2.50", "30 MiB"]);
        assert_eq!(rows[2][2], "not installed");
    }

    #[test]
    fn spread_shows_the_range_of_several_rounds_only() {
        assert_eq!(spread(&[]), "");
        assert_eq!(spread(&[5.0]), "");
        assert_eq!(spread(&[120.0, 80.5, 100.0]), " (3 rounds 80.5–120.0)");
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(13.0), "13.0");
        assert_eq!(sig3(0.64), "0.64");
        assert_eq!(sig3(203.4), "203");
    }
}
