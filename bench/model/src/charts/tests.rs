use super::*;

/// The text of every `<text>` element, as plotters writes it (escaped, on its own line).
fn texts(svg: &str) -> Vec<&str> {
    svg.split("<text ")
        .skip(1)
        .filter_map(|t| t.split_once(">\n")?.1.split_once("\n</text>"))
        .map(|(text, _)| text)
        .collect()
}

/// An attribute of each element `<tag ...>`, in document order.
fn attrs<'a>(svg: &'a str, tag: &str, attr: &str) -> Vec<&'a str> {
    let key = format!(" {attr}=\"");
    // Split before the space, so the first attribute has one in front like the others.
    svg.split(&format!("<{tag}"))
        .skip(1)
        .filter(|e| e.starts_with(' '))
        .filter_map(|e| e.split_once("/>").map(|(e, _)| e))
        .filter_map(|e| e.split_once(key.as_str())?.1.split_once('"'))
        .map(|(value, _)| value)
        .collect()
}

/// Each series line's stroke and points: the polylines drawn 2 wide (axes and ticks are
/// polylines 1 wide).
fn polylines(svg: &str) -> Vec<(&str, Vec<(i32, i32)>)> {
    let widths = attrs(svg, "polyline", "stroke-width");
    let points = attrs(svg, "polyline", "points").into_iter().map(|p| {
        p.split_whitespace()
            .map(|xy| {
                let (x, y) = xy.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect()
    });
    let strokes = attrs(svg, "polyline", "stroke").into_iter().zip(points);
    assert_eq!(widths.len(), strokes.len(), "every polyline has a width");
    widths
        .into_iter()
        .zip(strokes)
        .filter(|(w, _)| *w == "2")
        .map(|(_, line)| line)
        .collect()
}

/// The colour plotters writes for series `i`.
fn svg_colour(i: usize) -> String {
    let c = colour(i);
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

fn has_text(svg: &str, text: &str) -> bool {
    texts(svg).contains(&text)
}

#[test]
fn percentile_labels_count_nines() {
    let labels: Vec<String> = (0..=4).map(|n| percentile_label(f64::from(n))).collect();
    assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
}

#[test]
fn the_latency_chart_draws_one_rising_line_per_histogram() {
    let (mut fast, mut slow) = (Histogram::new(), Histogram::new());
    for i in 1..=1000 {
        fast.record(f64::from(i) / 100.0);
        slow.record(f64::from(i) / 10.0);
    }
    let one = latency_by_percentile(&[("a", &fast)])
        .expect("drawn")
        .expect("a chart");
    assert!(one.starts_with("<svg ") && one.trim_end().ends_with("</svg>"));
    let lines = polylines(&one);
    assert_eq!(lines.len(), 1, "{one}");
    let (stroke, points) = &lines[0];
    assert_eq!(*stroke, svg_colour(0));
    assert_eq!(points.len(), 81, "one point per 1/20 of a nine");
    // Left to right, and latency grows with the percentile (SVG's y grows downwards).
    assert!(
        points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 >= w[1].1)
    );
    assert!(points[0].1 > points[80].1, "{points:?}");
    for label in ["0%", "90%", "99%", "99.9%", "99.99%", "latency, ms"] {
        assert!(has_text(&one, label), "{label} missing: {:?}", texts(&one));
    }
    assert!(has_text(
        &one,
        "percentile (all 1000 requests, merged histogram)"
    ));
    // One series needs no legend.
    assert!(!has_text(&one, "a (1000 requests)"), "{:?}", texts(&one));

    let two = latency_by_percentile(&[("a<1>", &fast), ("b", &slow)])
        .expect("drawn")
        .expect("a chart");
    let lines = polylines(&two);
    let strokes: Vec<&str> = lines.iter().map(|l| l.0).collect();
    assert_eq!(strokes, [svg_colour(0), svg_colour(1)]);
    assert!(lines.iter().all(|l| l.1.len() == 81));
    // The slow series' tail is drawn higher (a smaller y) than the fast one's.
    assert!(lines[1].1[80].1 < lines[0].1[80].1);
    for label in [
        "a&lt;1&gt; (1000 requests)",
        "b (1000 requests)",
        "percentile (each target&apos;s requests, merged histogram)",
    ] {
        assert!(has_text(&two, label), "{label} missing: {:?}", texts(&two));
    }
    // The same histograms draw the same bytes.
    assert_eq!(
        latency_by_percentile(&[("a<1>", &fast), ("b", &slow)]).expect("drawn"),
        Some(two)
    );
    assert_eq!(latency_by_percentile(&[]), Ok(None));
    assert_eq!(
        latency_by_percentile(&[("a", &fast), ("empty", &Histogram::new())]),
        Ok(None)
    );
}

#[test]
fn bar_panels_draw_one_bar_per_finite_value_and_name_everything() {
    let categories: Vec<String> = ["Min", "P99"].map(String::from).to_vec();
    let panels = [
        Bars {
            title: "query: latency (ms)".into(),
            y_desc: "ms".into(),
            categories: categories.clone(),
            series: vec![
                ("graphfleet".into(), vec![1.0, 5.0]),
                ("other".into(), vec![2.0, f64::NAN]),
            ],
        },
        Bars {
            title: "second panel".into(),
            y_desc: "req/core.s".into(),
            categories: vec!["graphfleet".into()],
            series: vec![("requests/core.s".into(), vec![1234.0])],
        },
    ];
    let svg = bars(&panels, (900, 460)).expect("drawn");
    let fills = attrs(&svg, "rect", "fill");
    let bars_of = |i: usize| fills.iter().filter(|f| **f == svg_colour(i)).count();
    // Each value's bar plus the legend's swatch; the NaN is left out, not a zero bar. The
    // first series of both panels shares a colour: 2 + 1 bars and two swatches.
    assert_eq!((bars_of(0), bars_of(1)), (3 + 2, 1 + 1), "{fills:?}");
    for text in [
        "query: latency (ms)",
        "ms",
        "Min",
        "P99",
        "graphfleet",
        "other",
        "second panel",
        "req/core.s",
        "requests/core.s",
    ] {
        assert!(has_text(&svg, text), "{text} missing: {:?}", texts(&svg));
    }
    assert!(polylines(&svg).is_empty(), "bars, not lines");
    assert_eq!(bars(&panels, (900, 460)), Ok(svg));
}

#[test]
fn line_charts_draw_one_line_and_a_dot_per_point() {
    let chart = Lines {
        title: "query: p99 latency vs achieved throughput".into(),
        x_desc: "achieved requests/s".into(),
        y_desc: "p99 (ms)".into(),
        series: vec![
            ("graphfleet".into(), vec![(100.0, 2.0), (200.0, 3.0)]),
            (
                "other".into(),
                vec![(100.0, 4.0), (f64::INFINITY, 1.0), (150.0, 30.0)],
            ),
        ],
    };
    let svg = lines(&chart, (900, 460)).expect("drawn");
    let drawn = polylines(&svg);
    let shape: Vec<(&str, usize)> = drawn.iter().map(|(c, p)| (*c, p.len())).collect();
    assert_eq!(
        shape,
        [(svg_colour(0).as_str(), 2), (svg_colour(1).as_str(), 2)],
        "the infinite point is left out"
    );
    assert_eq!(attrs(&svg, "circle", "cx").len(), 4);
    for text in [
        "query: p99 latency vs achieved throughput",
        "achieved requests/s",
        "p99 (ms)",
        "graphfleet",
        "other",
    ] {
        assert!(has_text(&svg, text), "{text} missing: {:?}", texts(&svg));
    }
}
