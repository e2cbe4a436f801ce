//! The report's charts as one standalone SVG document: for places that take an image rather
//! than a page (a notebook's `image/svg+xml` output, a slide, a paper's figure). It draws the
//! same [`Chart`]s as the page, laid out as the page's grid is (comparison row first when there
//! are several runs, then one column per run and one row per quantity on a shared scale),
//! with the captions and legends as SVG text since a bare SVG has no HTML around it.

use std::fmt::Write;

use super::chart::{Chart, Scale, HEIGHT, WIDTH};
use super::html::{comparison_charts, escape, or_unknown, run_charts, run_color, title};
use super::ReportRun;

/// Room above each chart for its caption (title and legend).
const CAPTION: f64 = 22.0;
/// Space between cells and around the document.
const GAP: f64 = 16.0;
/// Height of the title line and of the run headings.
const HEADING: f64 = 24.0;
/// Rough width of a 12 px sans-serif character, to place legend entries one after another.
const CHAR_WIDTH: f64 = 6.6;

/// The whole document for `runs` (at least one).
pub fn render_svg(runs: &[ReportRun]) -> String {
    let per_run: Vec<Vec<Chart>> = runs.iter().map(|r| run_charts(&r.run)).collect();
    let columns = runs.len().max(2);
    let mut body = String::new();
    let mut y = GAP;
    let _ = write!(
        body,
        "<text x=\"{GAP}\" y=\"{:.1}\" font-size=\"15\" font-weight=\"bold\">outcore run report: {}</text>",
        y + 15.0,
        escape(&title(runs))
    );
    y += HEADING;
    if runs.len() > 1 {
        for (k, chart) in comparison_charts(runs).iter().enumerate() {
            body.push_str(&cell(chart, Scale::fitting([chart]), cell_x(k), y));
        }
        y += CAPTION + HEIGHT + GAP;
    }
    for (k, run) in runs.iter().enumerate() {
        body.push_str(&swatch(cell_x(k), y + 4.0, run_color(k)));
        let _ = write!(
            body,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" font-weight=\"bold\">{} ({} on {})</text>",
            cell_x(k) + 16.0,
            y + 14.0,
            escape(&run.label),
            escape(or_unknown(&run.run.algorithm)),
            escape(or_unknown(&run.run.engine))
        );
    }
    y += HEADING;
    for row in 0..per_run.first().map_or(0, Vec::len) {
        let scale = Scale::fitting(per_run.iter().map(|c| &c[row]));
        for (k, charts) in per_run.iter().enumerate() {
            body.push_str(&cell(&charts[row], scale, cell_x(k), y));
        }
        y += CAPTION + HEIGHT + GAP;
    }
    let width = cell_x(columns);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"outcore-report\" width=\"{width}\" height=\"{y}\" \
         viewBox=\"0 0 {width} {y}\" font-family=\"sans-serif\" fill=\"#222\">\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>{body}</svg>\n"
    )
}

/// The left edge of column `k` (also the document's width for `k` = the column count).
fn cell_x(k: usize) -> f64 {
    GAP + k as f64 * (WIDTH + GAP)
}

/// One chart with its caption above it: the title, then a swatch and name per series.
fn cell(chart: &Chart, scale: Scale, x: f64, y: f64) -> String {
    let mut out = format!(
        "<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"12\" font-weight=\"bold\">{}</text>",
        y + 14.0,
        escape(&chart.title)
    );
    let mut legend_x = x + (chart.title.chars().count() as f64 + 2.0) * CHAR_WIDTH;
    for s in &chart.series {
        out.push_str(&swatch(legend_x, y + 5.0, s.color));
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{}</text>",
            legend_x + 14.0,
            y + 14.0,
            escape(&s.name)
        );
        legend_x += 14.0 + (s.name.chars().count() as f64 + 2.0) * CHAR_WIDTH;
    }
    out.push_str(&chart.render_at(scale, x, y + CAPTION));
    out
}

fn swatch(x: f64, y: f64, color: &str) -> String {
    format!("<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"10\" height=\"10\" fill=\"{color}\"/>")
}
