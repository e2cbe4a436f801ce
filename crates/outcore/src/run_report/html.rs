//! The report page: a summary table of the runs, comparison charts (two or more runs), and a
//! grid of per-iteration charts with one column per run and one row per quantity, each row on
//! one scale. All text from the stats files is escaped.

use std::fmt::Write;

use super::chart::{format_value, Chart, Scale, Series, Style, Unit};
use super::{ReportRun, RunFile};
use crate::engine::IterationStats;
use crate::runtime::format_size;

/// Colours of runs in comparison charts and headings (cycled beyond eight runs).
const RUN_COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

/// The page's own rule; a fragment (for notebooks) must not restyle the page it lands in.
const BODY_STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}";

/// The rules of the report's parts, shared by the page and the fragment (scoped there).
const PARTS_STYLE: &str = "table{border-collapse:collapse;font-size:13px;margin-bottom:12px}\
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}\
td.num{text-align:right;white-space:nowrap}th{background:#f3f3f3}\
.grid{display:grid;gap:12px 20px;align-items:start}\
figure{margin:0}figcaption{font-size:13px;margin-bottom:2px}\
svg.chart{width:100%;height:auto;display:block}\
.swatch{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}\
.note{font-size:12px;color:#666;margin:2px 0 0}h3{margin:4px 0}small{color:#555}";

/// The whole page for `runs` (at least one).
pub fn render_html(runs: &[ReportRun]) -> String {
    let mut page = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(page, "<title>outcore run report: {}</title>", escape(&title(runs)));
    let _ = write!(page, "<style>{BODY_STYLE}{PARTS_STYLE}</style></head><body>");
    let _ = write!(page, "<h1>outcore run report</h1><p>{}</p>", escape(&title(runs)));
    page.push_str(&report_parts(runs));
    page.push_str("</body></html>\n");
    page
}

/// The report as one `<div class="outcore-report">` to embed in another page (a Jupyter cell's
/// output): the page's tables and charts, with its style scoped to the div so that the host
/// page keeps its own look.
pub fn render_fragment(runs: &[ReportRun]) -> String {
    let mut div =
        format!("<div class=\"{FRAGMENT_CLASS}\"><style>{}</style>", scoped_style(FRAGMENT_CLASS, PARTS_STYLE));
    let _ = write!(div, "<p><b>outcore run report</b>: {}</p>", escape(&title(runs)));
    div.push_str(&report_parts(runs));
    div.push_str("</div>");
    div
}

const FRAGMENT_CLASS: &str = "outcore-report";

/// `rules` with every selector prefixed by `.class `, plus the page's font and colours on the
/// div itself.
fn scoped_style(class: &str, rules: &str) -> String {
    let mut out = format!(".{class}{{font-family:system-ui,sans-serif;color:#222;background:#fff;padding:4px}}");
    for rule in rules.split_inclusive('}') {
        let Some((selectors, body)) = rule.split_once('{') else { continue };
        let scoped: Vec<String> = selectors.split(',').map(|s| format!(".{class} {}", s.trim())).collect();
        let _ = write!(out, "{}{{{body}", scoped.join(","));
    }
    out
}

/// What the page and the fragment share: the summary, the engine choices, the charts.
fn report_parts(runs: &[ReportRun]) -> String {
    let mut parts = summary_table(runs);
    parts.push_str(&reasons(runs));
    if runs.len() > 1 {
        parts.push_str("<h2>Comparison</h2>");
        parts.push_str(&chart_row(&comparison_charts(runs), 2));
    }
    parts.push_str("<h2>Per iteration</h2>");
    parts.push_str(&per_run_grid(runs));
    parts
}

pub(super) fn title(runs: &[ReportRun]) -> String {
    let labels: Vec<String> = runs
        .iter()
        .map(|r| format!("{} ({} on {})", r.label, or_unknown(&r.run.algorithm), or_unknown(&r.run.engine)))
        .collect();
    labels.join(", ")
}

pub(super) fn or_unknown(s: &str) -> &str {
    if s.is_empty() {
        "?"
    } else {
        s
    }
}

/// One row per run: what ran, how long, how many bytes, how much memory, what was planned.
fn summary_table(runs: &[ReportRun]) -> String {
    let mut t = String::from(
        "<table class=\"summary\"><tr><th>run</th><th>algorithm</th><th>engine</th><th>settings</th>\
         <th>graph</th><th>iterations</th><th>total time</th><th>compute / I/O wait</th><th>bytes read</th>\
         <th>bytes written</th><th>peak RSS</th><th>budget</th><th>plan</th></tr>",
    );
    for (k, r) in runs.iter().enumerate() {
        let run = &r.run;
        let _ = write!(
            t,
            "<tr class=\"run\"><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td class=\"num\">{} V, {} E</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td>{}</td></tr>",
            run_color(k),
            escape(&r.label),
            escape(or_unknown(&run.algorithm)),
            escape(or_unknown(&run.engine)),
            escape(&run.settings()),
            format_value(run.vertices as f64, Unit::Count),
            format_value(run.edges as f64, Unit::Count),
            run.iterations().len(),
            run.wall_seconds.map(|s| format_value(s, Unit::Seconds)).unwrap_or_else(|| "?".into()),
            time_split(run),
            format_size(run.bytes_read),
            format_size(run.bytes_written),
            format_size(run.peak_rss_bytes),
            format_size(run.memory_budget_bytes),
            plan_cell(run),
        );
    }
    t.push_str("</table>");
    t
}

/// Total compute and I/O wait over the iterations, where the engine records them.
fn time_split(run: &RunFile) -> String {
    if !run.has_time_split() {
        return "not recorded".into();
    }
    let splits = run.iterations().iter().filter_map(super::time_split);
    let (compute, io_wait) = splits.fold((0.0, 0.0), |(c, w), (compute, io_wait)| (c + compute, w + io_wait));
    format!("{} / {}", format_value(compute, Unit::Seconds), format_value(io_wait, Unit::Seconds))
}

fn plan_cell(run: &RunFile) -> String {
    let Some(plan) = &run.plan else { return "none".into() };
    let memory: u64 = plan.memory.iter().map(|p| p.bytes).sum();
    let parts: Vec<String> =
        plan.memory.iter().map(|p| format!("{} {}", escape(&p.part), format_size(p.bytes))).collect();
    format!(
        "expected {}, {} read, {} written, {} memory<br><small>{}</small>",
        format_value(plan.seconds, Unit::Seconds),
        format_size(plan.bytes_read.max(0.0) as u64),
        format_size(plan.bytes_written.max(0.0) as u64),
        format_size(memory),
        parts.join(" · ")
    )
}

/// Why `auto` chose each engine, for the runs it chose.
fn reasons(runs: &[ReportRun]) -> String {
    let mut out = String::new();
    for r in runs.iter().filter(|r| !r.run.engine_reason.is_empty()) {
        let _ = write!(out, "<p class=\"note\"><b>{}</b>: {}</p>", escape(&r.label), escape(&r.run.engine_reason));
    }
    out
}

/// The four per-iteration charts of one run, in row order.
pub(super) fn run_charts(run: &RunFile) -> Vec<Chart> {
    let its = run.iterations();
    let column = |f: fn(&IterationStats) -> f64| its.iter().map(f).collect::<Vec<f64>>();
    let mut time = Vec::new();
    if run.has_time_split() {
        time.push(series("compute", "#4e79a7", column(|i| super::time_split(i).map_or(0.0, |(compute, _)| compute))));
        time.push(series("I/O wait", "#f28e2b", column(|i| super::time_split(i).map_or(0.0, |(_, io_wait)| io_wait))));
    }
    let rest = column(super::unsplit_seconds);
    if !run.has_time_split() || rest.iter().any(|&v| v > 0.0) {
        let name = if run.has_time_split() { "other" } else { "time (not split)" };
        time.push(series(name, "#9c9c9c", rest));
    }
    vec![
        chart("time", "Time per iteration", Unit::Seconds, Style::StackedBars, time),
        chart(
            "bytes",
            "Bytes per iteration",
            Unit::Bytes,
            Style::Lines,
            vec![
                series("read", "#4e79a7", column(|i| i.bytes_read as f64)),
                series("written", "#e15759", column(|i| i.bytes_written as f64)),
            ],
        ),
        chart(
            "vertices",
            "Active vertices",
            Unit::Count,
            Style::Lines,
            vec![series("active vertices", "#59a14f", column(|i| i.active_vertices as f64))],
        ),
        chart(
            "edges",
            "Edges processed",
            Unit::Count,
            Style::Lines,
            vec![series("edges processed", "#b07aa1", column(|i| i.edges_processed as f64))],
        ),
    ]
}

/// Cumulative time and bytes by iteration, one line per run.
pub(super) fn comparison_charts(runs: &[ReportRun]) -> Vec<Chart> {
    let cumulative = |run: &RunFile, f: fn(&IterationStats) -> f64| {
        run.iterations()
            .iter()
            .scan(0.0, |total, i| {
                *total += f(i);
                Some(*total)
            })
            .collect::<Vec<f64>>()
    };
    let lines = |f: fn(&IterationStats) -> f64| {
        runs.iter().enumerate().map(|(k, r)| series(&r.label, run_color(k), cumulative(&r.run, f))).collect()
    };
    vec![
        chart("cumulative-time", "Elapsed time by iteration", Unit::Seconds, Style::Lines, lines(|i| i.seconds)),
        chart(
            "cumulative-bytes",
            "Bytes read + written by iteration",
            Unit::Bytes,
            Style::Lines,
            lines(|i| (i.bytes_read + i.bytes_written) as f64),
        ),
    ]
}

/// One column per run, one row per quantity; each row on the scale that fits all its charts.
fn per_run_grid(runs: &[ReportRun]) -> String {
    let charts: Vec<Vec<Chart>> = runs.iter().map(|r| run_charts(&r.run)).collect();
    let mut grid = format!("<div class=\"grid\" style=\"grid-template-columns:repeat({},minmax(0,1fr))\">", runs.len());
    for (k, r) in runs.iter().enumerate() {
        let _ = write!(
            grid,
            "<h3 class=\"run-heading\"><span class=\"swatch\" style=\"background:{}\"></span>{}</h3>",
            run_color(k),
            escape(&r.label)
        );
    }
    for row in 0..charts.first().map_or(0, Vec::len) {
        let scale = Scale::fitting(charts.iter().map(|c| &c[row]));
        for (k, run_charts) in charts.iter().enumerate() {
            let note = (row == 0 && !runs[k].run.has_time_split()).then(|| {
                format!(
                    "The {} engine records no compute / I/O wait split: bars are whole iterations.",
                    escape(or_unknown(&runs[k].run.engine))
                )
            });
            grid.push_str(&figure(&run_charts[row], scale, note));
        }
    }
    grid.push_str("</div>");
    grid
}

/// Charts side by side in `columns`, each on its own scale.
fn chart_row(charts: &[Chart], columns: usize) -> String {
    let mut row = format!(
        "<div class=\"grid\" style=\"max-width:1000px;grid-template-columns:repeat({columns},minmax(0,1fr))\">"
    );
    for c in charts {
        row.push_str(&figure(c, Scale::fitting([c]), None));
    }
    row.push_str("</div>");
    row
}

/// A chart with its title and legend.
fn figure(chart: &Chart, scale: Scale, note: Option<String>) -> String {
    let mut f = format!("<figure><figcaption><b>{}</b>", escape(&chart.title));
    for s in &chart.series {
        let _ = write!(f, "<span class=\"swatch\" style=\"background:{}\"></span>{}", s.color, escape(&s.name));
    }
    f.push_str("</figcaption>");
    f.push_str(&chart.render(scale));
    if let Some(note) = note {
        let _ = write!(f, "<p class=\"note\">{note}</p>");
    }
    f.push_str("</figure>");
    f
}

fn chart(metric: &'static str, title: &str, unit: Unit, style: Style, series: Vec<Series>) -> Chart {
    Chart { metric, title: title.to_string(), unit, style, series }
}

fn series(name: &str, color: &'static str, values: Vec<f64>) -> Series {
    Series { name: name.to_string(), color, values }
}

pub(super) fn run_color(k: usize) -> &'static str {
    RUN_COLORS[k % RUN_COLORS.len()]
}

/// Text made safe for HTML element content and quoted attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
