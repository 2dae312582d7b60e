//! SVG charts per scenario (plotters, SVG backend only: text is emitted as SVG <text>,
//! so no system fonts are needed).

use std::path::Path;

use anyhow::{Context, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::results::{Outcome, ScenarioRun};

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plotters: {e}")
}

/// One bar group per category, one bar per series; labels drawn under the axis.
fn grouped_bars(
    area: &Area<'_>,
    title: &str,
    y_desc: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> anyhow::Result<()> {
    let top = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.15;
    let below = top * 0.08;
    let n = categories.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .y_label_area_size(60)
        .x_label_area_size(5)
        .build_cartesian_2d(0f64..n, -below..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(y_desc)
        .y_label_formatter(&|y| {
            if *y < 0.0 {
                String::new()
            } else {
                format!("{y:.1}")
            }
        })
        .draw()
        .map_err(err)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (j, (name, values)) in series.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        chart
            .draw_series(
                values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(i, &v)| {
                        let x0 = i as f64 + 0.1 + j as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], color.filled())
                    }),
            )
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .draw_series(categories.iter().enumerate().map(|(i, c)| {
            Text::new(
                c.clone(),
                (i as f64 + 0.5, -below * 0.35),
                TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )
        }))
        .map_err(err)?;
    if !series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn latency(s: &ScenarioRun, path: &Path) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let categories: Vec<String> = ["Min", "Med", "P90", "P95", "P99", "Max"]
        .map(String::from)
        .to_vec();
    let series: Vec<(String, Vec<f64>)> = s
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
    grouped_bars(
        &root,
        &format!("{}: latency (ms)", s.name),
        "ms",
        &categories,
        &series,
    )?;
    root.present().map_err(err)
}

fn efficiency(s: &ScenarioRun, path: &Path) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (left, right) = root.split_horizontally(450);
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
    let core = vec![(
        "requests/core.s".to_owned(),
        measured.iter().map(|m| m.1).collect(),
    )];
    let gb = vec![(
        "requests/GB.s".to_owned(),
        measured.iter().map(|m| m.2).collect(),
    )];
    grouped_bars(
        &left,
        &format!("{}: requests per core-second", s.name),
        "req/core.s",
        &labels,
        &core,
    )?;
    grouped_bars(
        &right,
        &format!("{}: requests per GB-second", s.name),
        "req/GB.s",
        &labels,
        &gb,
    )?;
    root.present().map_err(err)
}

fn capacity(s: &ScenarioRun, path: &Path) -> anyhow::Result<bool> {
    let curves: Vec<(String, Vec<(f64, f64)>)> = s
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
    if curves.is_empty() {
        return Ok(false);
    }
    let points = curves.iter().flat_map(|c| c.1.iter().copied());
    let (xmax, ymax) = points.fold((1.0f64, 1.0f64), |(x, y), (a, b)| (x.max(a), y.max(b)));
    let root = SVGBackend::new(path, (900, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: p99 latency vs achieved throughput", s.name),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax * 1.1, 0f64..ymax * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("achieved requests/s")
        .y_desc("p99 (ms)")
        .draw()
        .map_err(err)?;
    for (j, (name, pts)) in curves.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

/// Draws `<scenario>-latency.svg`, `-efficiency.svg` and (after a capacity search) `-capacity.svg`.
pub fn scenario(s: &ScenarioRun, dir: &Path) -> anyhow::Result<()> {
    latency(s, &dir.join(format!("{}-latency.svg", s.name))).context("latency chart")?;
    efficiency(s, &dir.join(format!("{}-efficiency.svg", s.name))).context("efficiency chart")?;
    capacity(s, &dir.join(format!("{}-capacity.svg", s.name))).context("capacity chart")?;
    Ok(())
}
