//! The benchmark's SVG charts, the one drawing path of both reports: latency by percentile
//! from merged histograms (the operator's LoadTest report ConfigMap) and the bar and line
//! charts of graphfleet-bench's scenarios. Drawn with plotters' SVG backend into a string:
//! without its `ttf`/`ab_glyph` features plotters sizes text by its own estimate and writes
//! it as SVG `<text>`, so no font is loaded and the same input gives the same bytes.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::latency_histogram::Histogram;

/// Why a chart could not be drawn (plotters' own error, as text: its type names the backend).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("drawing the chart: {0}")]
pub struct ChartError(String);

fn err(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// One panel of grouped bars: a group per category, a bar per series (non-finite values are
/// left out, not drawn as zero).
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub title: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    /// `(name, one value per category)`.
    pub series: Vec<(String, Vec<f64>)>,
}

/// A named line: `(name, (x, y) points in drawing order)`.
pub type Line = (String, Vec<(f64, f64)>);

/// Lines through points, a marker on each point (non-finite points are left out).
#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub series: Vec<Line>,
}

/// Draws `panels` side by side on one `size` (width, height) canvas.
pub fn bars(panels: &[Bars], size: (u32, u32)) -> Result<String, ChartError> {
    svg(size, |root| {
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (panel, area) in panels.iter().zip(&areas) {
            draw_bars(area, panel)?;
        }
        Ok(())
    })
}

/// Draws `chart` on a `size` (width, height) canvas.
pub fn lines(chart: &Lines, size: (u32, u32)) -> Result<String, ChartError> {
    svg(size, |root| {
        let (xmax, ymax) = chart
            .series
            .iter()
            .flat_map(|(_, pts)| finite(pts))
            .fold((1.0f64, 1.0f64), |(x, y), (a, b)| (x.max(a), y.max(b)));
        let layout = Layout {
            x: 0.0..xmax * 1.1,
            y: 0.0..ymax * 1.1,
            x_labels: None,
            markers: true,
            legend: !chart.series.is_empty(),
        };
        let series: Vec<Line> = chart
            .series
            .iter()
            .map(|(name, pts)| (name.clone(), finite(pts).collect()))
            .collect();
        draw_lines(root, chart, &layout, &series)
    })
}

/// Where the latency-by-percentile chart's x axis ends: 99.99%.
const NINES: f64 = 4.0;
/// Points per nine of each line.
const STEPS_PER_NINE: u32 = 20;

/// Latency (ms, linear) by percentile on a "nines" axis (0, 90, 99, 99.9, 99.99%), the way
/// HDR histograms are plotted: the tail gets as much room as the body. One line per
/// `(label, histogram)` of `NINES · STEPS_PER_NINE + 1` points, with a legend when there
/// are several; `None` when there is no series or one is empty.
pub fn latency_by_percentile(series: &[(&str, &Histogram)]) -> Result<Option<String>, ChartError> {
    if series.is_empty() {
        return Ok(None);
    }
    let steps = NINES as u32 * STEPS_PER_NINE;
    let points: Option<Vec<Line>> = series
        .iter()
        .map(|(label, h)| {
            let line = (0..=steps)
                .map(|i| f64::from(i) / f64::from(STEPS_PER_NINE))
                .map(|x| h.quantile(1.0 - 10f64.powf(-x)).map(|ms| (x, ms)))
                .collect::<Option<Vec<_>>>()?;
            Some((format!("{label} ({} requests)", h.total()), line))
        })
        .collect();
    let Some(points) = points else {
        return Ok(None);
    };
    let top = points
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1e-3);
    let x_desc = match series {
        [(_, h)] => format!("percentile (all {} requests, merged histogram)", h.total()),
        _ => "percentile (each target's requests, merged histogram)".to_owned(),
    };
    let chart = Lines {
        title: "latency by percentile".to_owned(),
        x_desc,
        y_desc: "latency, ms".to_owned(),
        series: points,
    };
    let layout = Layout {
        x: 0.0..NINES,
        y: 0.0..top * 1.05,
        x_labels: Some((NINES as usize + 1, &|x| percentile_label(*x))),
        markers: false,
        // One series is named by the axis caption.
        legend: series.len() > 1,
    };
    svg((640, 320), |root| {
        draw_lines(root, &chart, &layout, &chart.series)
    })
    .map(Some)
}

/// `x` nines as a percentile: 0 → "0%", 1 → "90%", 3 → "99.9%".
fn percentile_label(nines: f64) -> String {
    let decimals = (nines.ceil() as usize).saturating_sub(2);
    format!("{:.*}%", decimals, 100.0 * (1.0 - 10f64.powf(-nines)))
}

fn finite(points: &[(f64, f64)]) -> impl Iterator<Item = (f64, f64)> + '_ {
    points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
}

/// Runs `draw` on a white canvas and returns the finished document.
fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// The series colours, in turn.
fn colour(i: usize) -> RGBAColor {
    Palette99::pick(i).to_rgba()
}

fn draw_bars(area: &Area<'_>, panel: &Bars) -> Result<(), ChartError> {
    let top = panel
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    // All zero (no failures, say): a unit axis rather than ticks that all read 0.0.
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    // Room under the zero line for the category labels.
    let below = top * 0.08;
    let n = panel.categories.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .y_label_area_size(60)
        .x_label_area_size(5)
        .build_cartesian_2d(0f64..n, -below..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(&panel.y_desc)
        .y_label_formatter(&|y| {
            if *y < 0.0 {
                String::new()
            } else {
                format!("{y:.1}")
            }
        })
        .draw()
        .map_err(err)?;
    let width = 0.8 / panel.series.len().max(1) as f64;
    for (j, (name, values)) in panel.series.iter().enumerate() {
        let c = colour(j);
        chart
            .draw_series(
                values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(i, &v)| {
                        let x0 = i as f64 + 0.1 + j as f64 * width;
                        Rectangle::new([(x0, 0.0), (x0 + width * 0.95, v)], c.filled())
                    }),
            )
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], c.filled()));
    }
    chart
        .draw_series(panel.categories.iter().enumerate().map(|(i, c)| {
            Text::new(
                c.clone(),
                (i as f64 + 0.5, -below * 0.35),
                TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            )
        }))
        .map_err(err)?;
    if !panel.series.is_empty() {
        legend(&mut chart)?;
    }
    Ok(())
}

/// How an axis labels a value.
type Label<'a> = &'a dyn Fn(&f64) -> String;

/// How a line chart is laid out.
struct Layout<'a> {
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    /// How many x labels and how they read (the latency chart's are percentiles); plotters'
    /// own when `None`.
    x_labels: Option<(usize, Label<'a>)>,
    /// A dot on every point.
    markers: bool,
    legend: bool,
}

/// One polyline per series: the legend marks them with filled bars, not more lines.
fn draw_lines(
    area: &Area<'_>,
    spec: &Lines,
    layout: &Layout<'_>,
    series: &[Line],
) -> Result<(), ChartError> {
    let mut chart = ChartBuilder::on(area)
        .caption(&spec.title, ("sans-serif", 18))
        .margin(12)
        // The last x label is centred on the axis's end ("99.99%"): room for its right half.
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(layout.x.clone(), layout.y.clone())
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    if let Some((n, label)) = layout.x_labels {
        mesh.x_labels(n).x_label_formatter(label);
    }
    mesh.x_desc(&spec.x_desc)
        .y_desc(&spec.y_desc)
        .draw()
        .map_err(err)?;
    for (j, (name, pts)) in series.iter().enumerate() {
        let c = colour(j);
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 2), (x + 14, y + 2)], c.filled()));
        if layout.markers {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
    }
    if layout.legend {
        legend(&mut chart)?;
    }
    Ok(())
}

fn legend<'a>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> Result<(), ChartError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

#[cfg(test)]
mod tests;
