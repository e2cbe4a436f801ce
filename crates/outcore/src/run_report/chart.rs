//! SVG charts of per-iteration figures: stacked bars (time split into parts) and lines (one per
//! quantity or per run). Every chart of a row on the page is drawn on a shared [`Scale`], so
//! runs compare by eye; each series is one `<g class="series">` element, which the tests (and
//! the browser test) count.

use std::fmt::Write;

use super::html::escape;

pub(super) const WIDTH: f64 = 440.0;
pub(super) const HEIGHT: f64 = 230.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 36.0;
/// Lines get a dot per point up to this many iterations (so one iteration is still visible).
const MAX_DOTS: usize = 60;

/// How a chart's values are written on its axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    Seconds,
    Bytes,
    Count,
}

/// How a chart draws its series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Style {
    /// One bar per iteration, the series stacked (parts of one whole).
    StackedBars,
    /// One line per series.
    Lines,
}

/// One named sequence of values, one per iteration.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub name: String,
    pub color: &'static str,
    pub values: Vec<f64>,
}

/// A chart before it is drawn: what it shows, not yet where.
#[derive(Debug, Clone)]
pub(crate) struct Chart {
    /// A short key of the quantity (`time`, `bytes`...), written as `data-metric`.
    pub metric: &'static str,
    pub title: String,
    pub unit: Unit,
    pub style: Style,
    pub series: Vec<Series>,
}

/// The axes' extent shared by the charts of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scale {
    pub y_max: f64,
    pub iterations: usize,
}

impl Scale {
    /// The scale that fits every one of `charts`.
    pub fn fitting<'a>(charts: impl IntoIterator<Item = &'a Chart>) -> Scale {
        charts.into_iter().fold(Scale { y_max: 0.0, iterations: 0 }, |s, c| Scale {
            y_max: s.y_max.max(c.y_needed()),
            iterations: s.iterations.max(c.iterations()),
        })
    }
}

impl Chart {
    /// The largest value the y axis must reach: the tallest stack, or the largest value.
    pub fn y_needed(&self) -> f64 {
        match self.style {
            Style::Lines => self.series.iter().flat_map(|s| s.values.iter().copied()).map(finite).fold(0.0, f64::max),
            Style::StackedBars => (0..self.iterations())
                .map(|i| self.series.iter().map(|s| finite(s.values.get(i).copied().unwrap_or(0.0))).sum::<f64>())
                .fold(0.0, f64::max),
        }
    }

    /// The longest series' length.
    pub fn iterations(&self) -> usize {
        self.series.iter().map(|s| s.values.len()).max().unwrap_or(0)
    }

    /// The chart as an `<svg>` element drawn on `scale`, sized by the page around it.
    pub fn render(&self, scale: Scale) -> String {
        self.render_with(scale, "")
    }

    /// The chart as an `<svg>` element nested in a larger SVG document, its top left corner at
    /// (`x`, `y`) and drawn at its natural size.
    pub fn render_at(&self, scale: Scale, x: f64, y: f64) -> String {
        self.render_with(scale, &format!(" x=\"{x}\" y=\"{y}\" width=\"{WIDTH}\" height=\"{HEIGHT}\""))
    }

    fn render_with(&self, scale: Scale, placement: &str) -> String {
        let frame = Frame::new(scale, self.unit);
        let mut svg = format!(
            "<svg class=\"chart\" data-metric=\"{}\"{placement} viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\">",
            self.metric,
            escape(&self.title)
        );
        let _ = write!(svg, "<title>{}</title>", escape(&self.title));
        frame.axes(&mut svg, self.unit);
        if scale.iterations == 0 {
            let _ = write!(
                svg,
                "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no per-iteration figures</text>",
                LEFT + frame.plot_w / 2.0,
                TOP + frame.plot_h / 2.0
            );
        }
        match self.style {
            Style::StackedBars => self.bars(&frame, &mut svg),
            Style::Lines => self.lines(&frame, &mut svg),
        }
        svg.push_str("</svg>");
        svg
    }

    fn bars(&self, frame: &Frame, svg: &mut String) {
        let mut base = vec![0.0; self.iterations()];
        for series in &self.series {
            let _ =
                write!(svg, "<g class=\"series\" data-series=\"{}\" fill=\"{}\">", escape(&series.name), series.color);
            for (i, &v) in series.values.iter().enumerate() {
                let v = finite(v);
                let (y_top, y_bottom) = (frame.y(base[i] + v), frame.y(base[i]));
                base[i] += v;
                if y_bottom - y_top < 0.05 {
                    continue;
                }
                let (x, w) = frame.bar(i);
                let _ = write!(
                    svg,
                    "<rect x=\"{x:.2}\" y=\"{y_top:.2}\" width=\"{w:.2}\" height=\"{:.2}\"/>",
                    y_bottom - y_top
                );
            }
            svg.push_str("</g>");
        }
    }

    fn lines(&self, frame: &Frame, svg: &mut String) {
        for series in &self.series {
            let points: Vec<(f64, f64)> =
                series.values.iter().enumerate().map(|(i, &v)| (frame.x(i), frame.y(finite(v)))).collect();
            let _ = write!(
                svg,
                "<g class=\"series\" data-series=\"{}\" stroke=\"{}\">",
                escape(&series.name),
                series.color
            );
            let list: Vec<String> = points.iter().map(|(x, y)| format!("{x:.2},{y:.2}")).collect();
            let _ = write!(svg, "<polyline fill=\"none\" stroke-width=\"2\" points=\"{}\"/>", list.join(" "));
            if points.len() <= MAX_DOTS {
                for (x, y) in &points {
                    let _ = write!(svg, "<circle cx=\"{x:.2}\" cy=\"{y:.2}\" r=\"2.5\" fill=\"{}\"/>", series.color);
                }
            }
            svg.push_str("</g>");
        }
    }
}

/// The plot area of one chart and its mapping from (iteration, value) to pixels.
struct Frame {
    plot_w: f64,
    plot_h: f64,
    band: f64,
    y_top: f64,
    iterations: usize,
}

impl Frame {
    fn new(scale: Scale, unit: Unit) -> Frame {
        let plot_w = WIDTH - LEFT - RIGHT;
        let iterations = scale.iterations.max(1);
        Frame {
            plot_w,
            plot_h: HEIGHT - TOP - BOTTOM,
            band: plot_w / iterations as f64,
            y_top: nice_ceiling(scale.y_max, unit),
            iterations,
        }
    }

    fn x(&self, i: usize) -> f64 {
        LEFT + (i as f64 + 0.5) * self.band
    }

    fn y(&self, v: f64) -> f64 {
        TOP + self.plot_h * (1.0 - (v / self.y_top).clamp(0.0, 1.0))
    }

    /// Left edge and width of iteration `i`'s bar.
    fn bar(&self, i: usize) -> (f64, f64) {
        let w = (self.band * 0.8).max(0.5);
        (self.x(i) - w / 2.0, w)
    }

    /// Grid lines, tick labels and the axis titles.
    fn axes(&self, svg: &mut String, unit: Unit) {
        svg.push_str("<g class=\"axes\" font-size=\"11\" fill=\"#444\">");
        for k in 0..=4 {
            let v = self.y_top * k as f64 / 4.0;
            let y = self.y(v);
            let _ = write!(
                svg,
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.2}\" y2=\"{y:.2}\" stroke=\"#ddd\"/>\
                 <text x=\"{}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
                WIDTH - RIGHT,
                LEFT - 6.0,
                y + 4.0,
                format_value(v, unit)
            );
        }
        let step = tick_step(self.iterations);
        for i in (0..self.iterations).step_by(step) {
            let x = self.x(i);
            let _ =
                write!(svg, "<text x=\"{x:.2}\" y=\"{}\" text-anchor=\"middle\">{i}</text>", HEIGHT - BOTTOM + 15.0);
        }
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.2}\" y2=\"{y:.2}\" stroke=\"#888\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">iteration</text></g>",
            WIDTH - RIGHT,
            LEFT + self.plot_w / 2.0,
            HEIGHT - 4.0,
            y = TOP + self.plot_h
        );
    }
}

fn finite(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 {
        v
    } else {
        0.0
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `v` (1 for nothing to show); for bytes,
/// counted in the binary unit (KiB, MiB...) the axis labels use, so ticks read 0, 5, 10, 15, 20 MiB.
fn nice_ceiling(v: f64, unit: Unit) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let base = if unit == Unit::Bytes { 1024f64.powf(v.log(1024.0).floor().max(0.0)) } else { 1.0 };
    let v = v / base;
    let magnitude = 10f64.powf(v.log10().floor());
    let f = v / magnitude;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().find(|&n| f <= n * (1.0 + 1e-9)).unwrap_or(10.0);
    nice * magnitude * base
}

/// An x tick every 1, 2, 5, 10, 20, 50... iterations: at most eight ticks.
fn tick_step(iterations: usize) -> usize {
    let mut step = 1;
    let mut k = 0u32;
    while iterations.div_ceil(step) > 8 {
        step = [2, 5, 10][(k % 3) as usize] * 10usize.pow(k / 3);
        k += 1;
    }
    step
}

/// A tick label: seconds as µs/ms/s, bytes in binary units, counts with k/M/G.
pub(crate) fn format_value(v: f64, unit: Unit) -> String {
    if v == 0.0 {
        return "0".into();
    }
    match unit {
        Unit::Seconds if v < 1e-3 => format!("{} µs", trim(v * 1e6)),
        Unit::Seconds if v < 1.0 => format!("{} ms", trim(v * 1e3)),
        Unit::Seconds => format!("{} s", trim(v)),
        Unit::Bytes => scaled(v, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]),
        Unit::Count => scaled(v, 1000.0, &["", "k", "M", "G", "T"]),
    }
}

fn scaled(mut v: f64, base: f64, units: &[&str]) -> String {
    let mut unit = 0;
    while v >= base && unit + 1 < units.len() {
        v /= base;
        unit += 1;
    }
    let sep = if units[unit].is_empty() || base == 1000.0 { "" } else { " " };
    format!("{}{sep}{}", trim(v), units[unit])
}

/// Up to three significant digits, without trailing zeros.
fn trim(v: f64) -> String {
    let text = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}
