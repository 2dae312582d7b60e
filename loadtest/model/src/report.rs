//! Report pieces shared by graphfleet-bench's REPORT.md and the operator's LoadTest report
//! ConfigMap: the markdown table writer and the latency-by-percentile SVG chart.

use crate::latency_histogram::Histogram;

/// A markdown table with aligned columns; `right[i]` right-aligns column i (a missing entry
/// left-aligns). Rows shorter than the header are padded with empty cells.
pub fn table(headers: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    // At least 2: an alignment rule (`:-`, `-:`) takes two characters.
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count().max(2)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let right_at = |i: usize| right.get(i).copied().unwrap_or(false);
    let line = |cells: &[String]| {
        let padded: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(i, &w)| {
                let c = cells.get(i).map_or("", String::as_str);
                if right_at(i) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let mut out = line(&header);
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let dashes = "-".repeat(w - 1);
            if right_at(i) {
                format!("{dashes}:")
            } else {
                format!(":{dashes}")
            }
        })
        .collect();
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in rows {
        out.push_str(&line(row));
    }
    out
}

/// Series colours of [`latency_by_percentile_svg`], reused in turn.
const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Characters `<`, `>`, `&` and quotes escaped for SVG text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Latency (ms, linear) by percentile on a "nines" axis (0, 90, 99, 99.9, 99.99%), the way
/// HDR histograms are plotted: the tail gets as much room as the body. One line per
/// `(label, histogram)`, with a legend when there are several; `None` when a histogram is
/// empty or there is none.
pub fn latency_by_percentile_svg(series: &[(&str, &Histogram)]) -> Option<String> {
    const W: f64 = 640.0;
    const H: f64 = 320.0;
    const LEFT: f64 = 60.0;
    const BOTTOM: f64 = 40.0;
    const TOP: f64 = 20.0;
    const RIGHT: f64 = 20.0;
    const NINES: f64 = 4.0;
    const STEPS: u32 = 80;
    if series.is_empty() {
        return None;
    }
    let quantile = |nines: f64| 1.0 - 10f64.powf(-nines);
    let lines: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(_, h)| {
            (0..=STEPS)
                .map(|i| f64::from(i) * NINES / f64::from(STEPS))
                .map(|x| h.quantile(quantile(x)).map(|ms| (x, ms)))
                .collect::<Option<Vec<_>>>()
        })
        .collect::<Option<_>>()?;
    let top = lines
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.05;
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
    for (i, points) in lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let line: Vec<String> = points
            .iter()
            .map(|(x, ms)| format!("{:.1},{:.1}", px(*x), py(*ms)))
            .collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>\n",
            line.join(" ")
        ));
    }
    if series.len() > 1 {
        for (i, (label, h)) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let y = TOP + 6.0 + 16.0 * i as f64;
            svg.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"4\" fill=\"{colour}\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\">{} ({} requests)</text>\n",
                LEFT + 10.0,
                y - 4.0,
                LEFT + 28.0,
                y + 1.0,
                escape(label),
                h.total()
            ));
        }
    }
    let total: u64 = series.iter().map(|(_, h)| h.total()).sum();
    let caption = if series.len() == 1 {
        format!("percentile (all {total} requests, merged histogram)")
    } else {
        "percentile (each target's requests, merged histogram)".to_owned()
    };
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{caption}</text>\n\
         <text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">latency, ms</text>\n</svg>\n",
        (LEFT + W - RIGHT) / 2.0,
        H - 5.0,
        (TOP + H - BOTTOM) / 2.0,
        (TOP + H - BOTTOM) / 2.0,
    ));
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_like_the_reference_reports() {
        let t = table(
            &["Gateway", "Min"],
            &[false, true],
            &[
                vec!["Hive Router".into(), "21.1".into()],
                vec!["x".into(), "125.0".into()],
            ],
        );
        assert_eq!(
            t,
            "| Gateway     |   Min |\n| :---------- | ----: |\n| Hive Router |  21.1 |\n| x           | 125.0 |\n"
        );
        // Short rows get empty cells; unlisted columns are left-aligned.
        assert_eq!(
            table(&["a", "b"], &[], &[vec!["x".into()]]),
            "| a  | b  |\n| :- | :- |\n| x  |    |\n"
        );
    }

    #[test]
    fn the_chart_draws_one_line_per_series_with_a_legend() {
        let mut fast = Histogram::new();
        let mut slow = Histogram::new();
        for i in 1..=1000 {
            fast.record(f64::from(i) / 100.0);
            slow.record(f64::from(i) / 10.0);
        }
        let one = latency_by_percentile_svg(&[("a", &fast)]).expect("a chart");
        assert_eq!(one.matches("<polyline").count(), 1);
        assert!(one.contains("all 1000 requests"), "{one}");
        let points = one
            .split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .expect("points");
        assert_eq!(
            points.split(' ').count(),
            81,
            "one point per 1/20 of a nine"
        );
        let two = latency_by_percentile_svg(&[("a<1>", &fast), ("b", &slow)]).expect("a chart");
        assert_eq!(two.matches("<polyline").count(), 2);
        assert!(two.contains("a&lt;1&gt; (1000 requests)"), "{two}");
        assert_eq!(latency_by_percentile_svg(&[]), None);
        assert_eq!(
            latency_by_percentile_svg(&[("empty", &Histogram::new())]),
            None
        );
    }
}
