// SPDX-License-Identifier: Apache-2.0
//! Small hand-written SVG plots for the HTML report: horizontal bars and line series.

use super::escape::esc;

/// Series colours.
const COLOURS: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// A colour for series `i`.
pub fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// Horizontal bars: one per (label, value), scaled to the largest value.
pub fn bars(title: &str, unit: &str, items: &[(String, f64)]) -> String {
    let w = 640.0;
    let left = 220.0;
    let row = 24.0;
    let h = 40.0 + row * items.len() as f64 + 10.0;
    let max = items
        .iter()
        .map(|(_, v)| *v)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"4\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
        esc(title)
    );
    for (i, (label, v)) in items.iter().enumerate() {
        let y = 32.0 + row * i as f64;
        let len = (w - left - 90.0) * v / max;
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\n\
             <rect x=\"{left}\" y=\"{y:.0}\" width=\"{len:.1}\" height=\"{:.0}\" fill=\"{}\"/>\n\
             <text x=\"{:.1}\" y=\"{:.0}\">{} {}</text>\n",
            left - 6.0,
            y + 15.0,
            esc(label),
            row - 6.0,
            colour(i),
            left + len + 4.0,
            y + 15.0,
            super::compare::fmt_num(*v),
            esc(unit)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// Line series on a linear x axis and a log10 y axis (for latency histograms).
pub fn log_lines(title: &str, x_label: &str, series: &[(String, Vec<(f64, f64)>)]) -> String {
    let (w, h) = (640.0, 300.0);
    let (l, r, t, b) = (60.0, 130.0, 30.0, 40.0);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let xmax = pts.clone().map(|p| p.0).fold(1.0_f64, f64::max);
    let ymax = pts
        .map(|p| p.1)
        .fold(1.0_f64, f64::max)
        .log10()
        .ceil()
        .max(1.0);
    let sx = |x: f64| l + (w - l - r) * x / xmax;
    let sy = |y: f64| h - b - (h - t - b) * (y.max(1.0).log10() / ymax);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"4\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>\n\
         <line x1=\"{l}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000\"/>\n\
         <line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"#000\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        esc(title),
        h - b,
        w - r,
        h - b,
        h - b,
        (l + w - r) / 2.0,
        h - 6.0,
        esc(x_label)
    );
    for e in 0..=(ymax as i32) {
        let y = sy(10f64.powi(e));
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{:.0}\" text-anchor=\"end\">1e{e}</text>\n<line x1=\"{l}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n",
            l - 4.0,
            y + 4.0,
            w - r
        ));
    }
    for i in 0..=4 {
        let x = xmax * f64::from(i) / 4.0;
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{}\" text-anchor=\"middle\">{:.0}</text>\n",
            sx(x),
            h - b + 14.0,
            x
        ));
    }
    for (i, (name, p)) in series.iter().enumerate() {
        let path: Vec<String> = p
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
            .collect();
        s.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n",
            colour(i),
            path.join(" "),
            w - r + 8.0,
            t + 14.0 * (i as f64 + 1.0),
            colour(i),
            esc(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// Per-round dots: one row per series (A, B), one dot per value on a shared linear axis,
/// a vertical bar at each row's median.
pub fn dots(title: &str, series: &[(String, Vec<f64>)]) -> String {
    let (w, left, right, row) = (640.0, 60.0, 20.0, 28.0);
    let h = 50.0 + row * series.len() as f64;
    let all = series.iter().flat_map(|(_, v)| v.iter().copied());
    let lo = all.clone().fold(f64::INFINITY, f64::min);
    let hi = all.fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-3).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let sx = |x: f64| left + (w - left - right) * (x - lo) / (hi - lo);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"4\" y=\"18\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
        esc(title)
    );
    for (i, (name, vals)) in series.iter().enumerate() {
        let y = 40.0 + row * i as f64;
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\n<line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ddd\"/>\n",
            left - 6.0,
            y + 4.0,
            esc(name),
            w - right
        ));
        for v in vals {
            s.push_str(&format!(
                "<circle cx=\"{:.1}\" cy=\"{y}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.7\"><title>{}</title></circle>\n",
                sx(*v),
                colour(i),
                super::compare::fmt_num(*v)
            ));
        }
        if let Some(m) = crate::stats::describe::median(vals) {
            s.push_str(&format!(
                "<line x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{:.0}\" stroke=\"#000\" stroke-width=\"2\"/>\n",
                y - 9.0,
                y + 9.0,
                x = sx(m)
            ));
        }
    }
    let yb = h - 8.0;
    for (x, anchor) in [(lo + pad, "start"), (hi - pad, "end")] {
        s.push_str(&format!(
            "<text x=\"{:.0}\" y=\"{yb}\" text-anchor=\"{anchor}\">{}</text>\n",
            sx(x),
            super::compare::fmt_num(x)
        ));
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_escaped_labels() {
        let b = bars(
            "netperf <TCP>",
            "Mbit/s",
            &[("sid / igb".into(), 600.0), ("x".into(), 0.0)],
        );
        assert!(b.starts_with("<svg") && b.trim_end().ends_with("</svg>"));
        assert!(b.contains("netperf &lt;TCP&gt;"));
        assert_eq!(b.matches("<rect").count(), 2);
        let l = log_lines(
            "hist",
            "µs",
            &[("CPU0".into(), vec![(5.0, 10.0), (20.0, 1000.0)])],
        );
        assert!(l.contains("<polyline") && l.contains("1e3"));
    }

    #[test]
    fn dots_one_circle_per_round_and_a_median_bar_per_side() {
        let d = dots(
            "UDP <msg/s>",
            &[
                ("A".into(), vec![1.0, 2.0, 3.0]),
                ("B".into(), vec![4.0, 5.0]),
            ],
        );
        assert!(d.starts_with("<svg") && d.contains("UDP &lt;msg/s&gt;"));
        assert_eq!(d.matches("<circle").count(), 5);
        assert_eq!(d.matches("stroke-width=\"2\"").count(), 2);
    }
}
