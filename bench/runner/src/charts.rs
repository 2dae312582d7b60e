//! A scenario's results as the model's charts (`graphfleet_bench_model::charts`, the drawing
//! the operator's LoadTest report uses too): which figures go on which chart, and the files.

use std::path::Path;

use anyhow::Context;
use graphfleet_bench_model::charts::{self, Bars, Line, Lines};

use crate::results::{Outcome, ScenarioRun};

/// The latency figures of every measured gateway, one bar group per figure.
fn latency(s: &ScenarioRun) -> Bars {
    let series = s
        .gateways
        .iter()
        .filter_map(|g| match &g.outcome {
            Outcome::Measured(m) => {
                let l = m.summary.latency_ms?;
                Some((
                    g.label.clone(),
                    vec![l.min, l.med, l.p90, l.p95, l.p99, l.max],
                ))
            }
            _ => None,
        })
        .collect();
    Bars {
        title: format!("{}: latency (ms)", s.name),
        y_desc: "ms".into(),
        categories: ["Min", "Med", "P90", "P95", "P99", "Max"]
            .map(String::from)
            .to_vec(),
        series,
    }
}

/// Requests per core-second and per GB-second, a panel each, a bar per sampled gateway.
fn efficiency(s: &ScenarioRun) -> [Bars; 2] {
    let measured: Vec<(String, f64, f64)> = s
        .gateways
        .iter()
        .filter_map(|g| match &g.outcome {
            // Gateways nobody sampled have no efficiency to draw (not a zero).
            Outcome::Measured(m) if m.usage.is_some() => Some((
                g.label.clone(),
                m.per_core_second().unwrap_or(0.0),
                m.per_gb_second().unwrap_or(0.0),
            )),
            _ => None,
        })
        .collect();
    let labels: Vec<String> = measured.iter().map(|m| m.0.clone()).collect();
    [
        Bars {
            title: format!("{}: requests per core-second", s.name),
            y_desc: "req/core.s".into(),
            categories: labels.clone(),
            series: vec![(
                "requests/core.s".into(),
                measured.iter().map(|m| m.1).collect(),
            )],
        },
        Bars {
            title: format!("{}: requests per GB-second", s.name),
            y_desc: "req/GB.s".into(),
            categories: labels,
            series: vec![(
                "requests/GB.s".into(),
                measured.iter().map(|m| m.2).collect(),
            )],
        },
    ]
}

/// p99 against achieved throughput along each gateway's capacity search; `None` without one.
fn capacity(s: &ScenarioRun) -> Option<Lines> {
    let series: Vec<Line> = s
        .gateways
        .iter()
        .filter_map(|g| match &g.outcome {
            Outcome::Measured(m) => {
                let c = m.capacity.as_ref()?;
                let mut steps = c.steps.clone();
                steps.sort_by_key(|s| s.target);
                Some((
                    g.label.clone(),
                    steps.iter().map(|s| (s.achieved, s.p99)).collect(),
                ))
            }
            _ => None,
        })
        .collect();
    (!series.is_empty()).then(|| Lines {
        title: format!("{}: p99 latency vs achieved throughput", s.name),
        x_desc: "achieved requests/s".into(),
        y_desc: "p99 (ms)".into(),
        series,
    })
}

fn write(path: &Path, svg: Result<String, charts::ChartError>) -> anyhow::Result<()> {
    std::fs::write(path, svg?).with_context(|| format!("writing {}", path.display()))
}

/// Draws `<scenario>-latency.svg`, `-efficiency.svg` and (after a capacity search) `-capacity.svg`.
pub fn scenario(s: &ScenarioRun, dir: &Path) -> anyhow::Result<()> {
    let path = |chart: &str| dir.join(format!("{}-{chart}.svg", s.name));
    write(&path("latency"), charts::bars(&[latency(s)], (900, 460))).context("latency chart")?;
    write(
        &path("efficiency"),
        charts::bars(&efficiency(s), (900, 420)),
    )
    .context("efficiency chart")?;
    if let Some(c) = capacity(s) {
        write(&path("capacity"), charts::lines(&c, (900, 460))).context("capacity chart")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::{Capacity, Limit, Step};
    use crate::results::{GatewayRun, Measured};

    fn run(label: &str, outcome: Outcome) -> GatewayRun {
        GatewayRun {
            gateway: label.to_lowercase(),
            label: label.to_owned(),
            outcome,
            rounds: Vec::new(),
        }
    }

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

    fn scenario(gateways: Vec<GatewayRun>) -> ScenarioRun {
        ScenarioRun {
            name: "query".into(),
            set: "apollo".into(),
            description: String::new(),
            rate: 100,
            duration_s: 10,
            generator: "native".into(),
            response_bytes: None,
            error: None,
            gateways,
            fanout: None,
        }
    }

    #[test]
    fn charts_take_the_measured_gateways_and_their_steps_in_rate_order() {
        let mut searched = Measured::example(1000, 1.0, 4.0);
        searched.capacity = Some(Capacity {
            steps: vec![step(400, 390.0, 9.0), step(100, 100.0, 2.0)],
            min_p99: Some(2.0),
            at_150: None,
            peak: None,
            limit: Limit::NotReached,
        });
        let failed = Outcome::Failed {
            error: "k6 exited".into(),
        };
        let s = scenario(vec![
            run("A", Outcome::Measured(Box::new(searched))),
            run("B", failed),
        ]);
        let lat = latency(&s);
        assert_eq!(lat.series.len(), 1, "the failed gateway has no bars");
        assert_eq!((lat.series[0].0.as_str(), lat.series[0].1[4]), ("A", 4.0));
        assert_eq!(lat.categories.len(), lat.series[0].1.len());
        let [core, gb] = efficiency(&s);
        assert_eq!(
            (core.categories, gb.series[0].1.len()),
            (vec!["A".into()], 1)
        );
        let cap = capacity(&s).expect("a capacity search");
        assert_eq!(
            cap.series,
            [("A".to_owned(), vec![(100.0, 2.0), (390.0, 9.0)])]
        );
        let plain = scenario(vec![run(
            "A",
            Outcome::Measured(Box::new(Measured::example(1, 1.0, 1.0))),
        )]);
        assert!(capacity(&plain).is_none(), "no search, no capacity chart");
    }
}
