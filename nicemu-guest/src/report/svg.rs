// SPDX-License-Identifier: Apache-2.0
//! The HTML report's SVG plots, written with `maud` (it escapes every label): horizontal
//! bars, latency histograms on a log scale with the samples beyond the histogram drawn at its
//! end, and per-round dots. Axes carry round ticks (1, 2 or 5 × 10ⁿ). Each plot is an
//! `<svg class="plot KIND">`.

use maud::{html, Markup};

use super::compare::fmt_num;

/// Colours given to devices in order of appearance (a device keeps its colour in every plot).
const COLOURS: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// The colour of the `i`th device.
pub fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// The tick step for an axis from 0 to `max` with about `n` intervals: 1, 2 or 5 × 10ᵏ.
pub fn tick_step(max: f64, n: usize) -> f64 {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// Tick positions from `lo` to `hi` (inclusive) at round steps.
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let step = tick_step(hi - lo, n);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick's label: "0", "500", "1.5k", "20k", "2M", "0.05".
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    let short = |x: f64, unit: &str| {
        let s = format!("{x:.1}");
        format!("{}{unit}", s.trim_end_matches(".0"))
    };
    if a >= 1e6 {
        short(v / 1e6, "M")
    } else if a >= 1e4 {
        short(v / 1e3, "k")
    } else if v == v.trunc() {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// What it is ("sid / nicemu-igb").
    pub label: String,
    /// Its length.
    pub value: f64,
    /// Its colour (the device's).
    pub colour: &'static str,
}

/// Horizontal bars on an axis from 0 with round ticks, each labelled with its value.
pub fn bars(title: &str, unit: &str, items: &[Bar]) -> Markup {
    let (w, left, right, row) = (640.0, 220.0, 110.0, 24.0);
    let h = 40.0 + row * items.len() as f64 + 26.0;
    let max = items.iter().map(|b| b.value).fold(0.0_f64, f64::max);
    let step = tick_step(max, 4);
    let top = (max / step).ceil().max(1.0) * step;
    let sx = |v: f64| left + (w - left - right) * v / top;
    let axis_y = 34.0 + row * items.len() as f64;
    html! {
        svg.plot.bars xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={"0 0 " (w) " " (h)} font-family="sans-serif" font-size="12" {
            text x="4" y="18" font-size="14" font-weight="bold" { (title) }
            @for t in ticks(0.0, top, 4) {
                line x1=(fmt1(sx(t))) y1="28" x2=(fmt1(sx(t))) y2=(axis_y) stroke="#ddd" {}
                text.tick x=(fmt1(sx(t))) y=(axis_y + 14.0) text-anchor="middle" { (tick_label(t)) }
            }
            @for (i, b) in items.iter().enumerate() {
                @let y = 32.0 + row * i as f64;
                text x=(left - 6.0) y=(y + 15.0) text-anchor="end" { (b.label) }
                rect x=(left) y=(y) width=(fmt1(sx(b.value.max(0.0)) - left)) height=(row - 6.0) fill=(b.colour) {}
                text x=(fmt1(sx(b.value.max(0.0)) + 4.0)) y=(y + 15.0) { (fmt_num(b.value)) " " (unit) }
            }
            text x=(fmt1((left + w - right) / 2.0)) y=(h - 2.0) text-anchor="middle" fill="#555" { (unit) }
        }
    }
}

fn fmt1(v: f64) -> String {
    format!("{v:.1}")
}

/// One line of a histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend ("nicemu-igb CPU0").
    pub name: String,
    /// The device's colour.
    pub colour: &'static str,
    /// Dashed (the second and later CPUs of a device).
    pub dashed: bool,
    /// (bucket start, count) of the non-empty buckets.
    pub points: Vec<(f64, f64)>,
    /// Samples beyond the histogram's end.
    pub overflow: u64,
}

/// Latency histograms: counts on a log scale (1, 10, 100, …) over a linear axis from 0 to
/// `end` (the histogram's end) with round ticks, and a column past the end (labelled
/// `end_label`, "> 4 ms") where each line's samples beyond the histogram are drawn as a dot.
pub fn histogram(title: &str, x_label: &str, end: f64, end_label: &str, lines: &[Line]) -> Markup {
    let (w, h) = (780.0, 300.0);
    let (l, r, t, b) = (50.0, 240.0, 30.0, 40.0);
    let gap = 80.0;
    let plot_r = w - r - gap;
    let end = end.max(1.0);
    let ymax_count = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain([s.overflow as f64]))
        .fold(1.0_f64, f64::max);
    let decades = ymax_count.log10().ceil().max(1.0);
    let sx = |x: f64| l + (plot_r - l) * x / end;
    let sy = |y: f64| h - b - (h - t - b) * (y.max(1.0).log10() / decades);
    let over_x = plot_r + gap / 2.0;
    let decade_label = |e: i32| tick_label(10f64.powi(e));
    html! {
        svg.plot.histogram xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={"0 0 " (w) " " (h)} font-family="sans-serif" font-size="12" {
            text x="4" y="18" font-size="14" font-weight="bold" { (title) }
            line x1=(l) y1=(h - b) x2=(plot_r) y2=(h - b) stroke="#000" {}
            line x1=(l) y1=(t) x2=(l) y2=(h - b) stroke="#000" {}
            @for e in 0..=(decades as i32) {
                @let y = sy(10f64.powi(e));
                text.tick x=(l - 4.0) y=(fmt1(y + 4.0)) text-anchor="end" { (decade_label(e)) }
                line x1=(l) y1=(fmt1(y)) x2=(plot_r) y2=(fmt1(y)) stroke="#eee" {}
            }
            @for x in ticks(0.0, end, 5) {
                text.tick x=(fmt1(sx(x))) y=(h - b + 14.0) text-anchor="middle" { (tick_label(x)) }
            }
            line x1=(over_x) y1=(t) x2=(over_x) y2=(h - b) stroke="#eee" stroke-dasharray="2,2" {}
            text.tick x=(over_x) y=(h - b + 14.0) text-anchor="middle" { (end_label) }
            text x=(fmt1((l + plot_r) / 2.0)) y=(h - 6.0) text-anchor="middle" { (x_label) }
            text x="12" y=(fmt1(t + (h - t - b) / 2.0)) text-anchor="middle"
                transform={"rotate(-90 12 " (fmt1(t + (h - t - b) / 2.0)) ")"} { "samples" }
            @for (i, s) in lines.iter().enumerate() {
                @let pts: Vec<String> = s.points.iter().map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y))).collect();
                polyline fill="none" stroke=(s.colour) stroke-width="1.5"
                    stroke-dasharray=[s.dashed.then_some("5,3")] points=(pts.join(" ")) {}
                @if s.overflow > 0 {
                    circle.overflow cx=(over_x) cy=(fmt1(sy(s.overflow as f64))) r="4" fill=(s.colour) {
                        title { (s.name) ": " (s.overflow) " samples " (end_label) }
                    }
                }
                @let ly = t + 16.0 * (i as f64 + 1.0);
                line x1=(w - r + 8.0) y1=(ly - 4.0) x2=(w - r + 28.0) y2=(ly - 4.0) stroke=(s.colour)
                    stroke-width="2" stroke-dasharray=[s.dashed.then_some("5,3")] {}
                text x=(w - r + 32.0) y=(ly) fill=(s.colour) {
                    (s.name)
                    @if s.overflow > 0 { " (" (s.overflow) " beyond)" }
                }
            }
        }
    }
}

/// Per-round dots: one row per series (A, B), one dot per value on a shared axis with round
/// ticks, a vertical bar at each row's median.
pub fn dots(title: &str, series: &[(String, Vec<f64>, &'static str)]) -> Markup {
    let (w, left, right, row) = (640.0, 60.0, 20.0, 28.0);
    let h = 56.0 + row * series.len() as f64;
    let all = series.iter().flat_map(|(_, v, _)| v.iter().copied());
    let lo = all.clone().fold(f64::INFINITY, f64::min);
    let hi = all.fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let sx = |x: f64| left + (w - left - right) * (x - lo) / (hi - lo);
    let axis_y = 30.0 + row * series.len() as f64;
    html! {
        svg.plot.dots xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
            viewBox={"0 0 " (w) " " (h)} font-family="sans-serif" font-size="12" {
            text x="4" y="18" font-size="14" font-weight="bold" { (title) }
            @for (i, (name, vals, colour)) in series.iter().enumerate() {
                @let y = 40.0 + row * i as f64;
                text x=(left - 6.0) y=(y + 4.0) text-anchor="end" { (name) }
                line x1=(left) y1=(y) x2=(w - right) y2=(y) stroke="#ddd" {}
                @for v in vals {
                    circle.round cx=(fmt1(sx(*v))) cy=(y) r="4" fill=(colour) fill-opacity="0.7" {
                        title { (fmt_num(*v)) }
                    }
                }
                @if let Some(m) = crate::stats::describe::median(vals) {
                    line.median x1=(fmt1(sx(m))) y1=(y - 9.0) x2=(fmt1(sx(m))) y2=(y + 9.0) stroke="#000" stroke-width="2" {}
                }
            }
            line x1=(left) y1=(axis_y) x2=(w - right) y2=(axis_y) stroke="#000" {}
            @for x in ticks(lo, hi, 5) {
                line x1=(fmt1(sx(x))) y1=(axis_y) x2=(fmt1(sx(x))) y2=(axis_y + 4.0) stroke="#000" {}
                text.tick x=(fmt1(sx(x))) y=(axis_y + 17.0) text-anchor="middle" { (tick_label(x)) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 4000.0, 5), [0.0, 1000.0, 2000.0, 3000.0, 4000.0]);
        assert_eq!(ticks(0.0, 3960.0, 5), [0.0, 1000.0, 2000.0, 3000.0]);
        assert_eq!(ticks(0.0, 246.0, 4), [0.0, 100.0, 200.0]);
        assert_eq!(ticks(12.1, 16.6, 5), [13.0, 14.0, 15.0, 16.0]);
        assert_eq!(tick_label(1500.0), "1500");
        assert_eq!(tick_label(20000.0), "20k");
        assert_eq!(tick_label(15000.0), "15k");
        assert_eq!(tick_label(2e6), "2M");
        assert_eq!(tick_label(0.05), "0.05");
    }

    #[test]
    fn bars_are_svg_with_escaped_labels_and_their_colours() {
        let b = bars(
            "netperf <TCP>",
            "Mbit/s",
            &[
                Bar {
                    label: "sid / igb".into(),
                    value: 600.0,
                    colour: colour(0),
                },
                Bar {
                    label: "x".into(),
                    value: 0.0,
                    colour: colour(1),
                },
            ],
        )
        .into_string();
        assert!(b.starts_with("<svg class=\"plot bars\"") && b.ends_with("</svg>"));
        assert!(b.contains("netperf &lt;TCP&gt;"));
        assert_eq!(b.matches("<rect").count(), 2);
        assert!(b.contains("fill=\"#1f77b4\"") && b.contains("fill=\"#ff7f0e\""));
        for t in ["0", "200", "400", "600"] {
            assert!(b.contains(&format!(">{t}</text>")), "{t}: {b}");
        }
    }

    #[test]
    fn histogram_has_decades_round_ticks_and_the_overflow_at_its_end() {
        let l = histogram(
            "hist",
            "latency (µs)",
            4000.0,
            "> 4 ms",
            &[
                Line {
                    name: "nicemu-igb CPU0".into(),
                    colour: colour(0),
                    dashed: false,
                    points: vec![(0.0, 10.0), (40.0, 7123.0), (3960.0, 7.0)],
                    overflow: 910,
                },
                Line {
                    name: "nicemu-igb CPU1".into(),
                    colour: colour(0),
                    dashed: true,
                    points: vec![(0.0, 3.0)],
                    overflow: 0,
                },
            ],
        )
        .into_string();
        assert_eq!(l.matches("<polyline").count(), 2);
        for t in ["1", "10", "100", "1000", "10k", "2000", "4000", "&gt; 4 ms"] {
            assert!(l.contains(&format!(">{t}</text>")), "{t}: {l}");
        }
        assert!(!l.contains(">990<"), "{l}");
        assert_eq!(l.matches("<circle class=\"overflow\"").count(), 1);
        assert!(l.contains("nicemu-igb CPU0 (910 beyond)"), "{l}");
        assert!(l.contains("stroke-dasharray=\"5,3\""));
    }

    #[test]
    fn dots_one_circle_per_round_and_a_median_bar_per_side() {
        let d = dots(
            "UDP <msg/s>",
            &[
                ("A".into(), vec![1.0, 2.0, 3.0], colour(0)),
                ("B".into(), vec![4.0, 5.0], colour(0)),
            ],
        )
        .into_string();
        assert!(d.starts_with("<svg class=\"plot dots\"") && d.contains("UDP &lt;msg/s&gt;"));
        assert_eq!(d.matches("<circle class=\"round\"").count(), 5);
        assert_eq!(d.matches("<line class=\"median\"").count(), 2);
        assert!(d.contains(">3</text>"), "{d}");
    }
}
