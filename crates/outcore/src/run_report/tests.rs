use std::path::Path;

use serde_json::json;

use super::chart::{format_value, Chart, Scale, Series, Style, Unit};
use super::*;

/// Stats JSON like the stream engine writes (compute and I/O wait per iteration).
fn stream_stats(iterations: usize) -> serde_json::Value {
    let per: Vec<_> = (0..iterations)
        .map(|i| {
            json!({"iteration": i, "active_vertices": 100 - i, "edges_processed": 1000, "bytes_read": 4096,
                   "bytes_written": 0, "seconds": 0.5, "compute_seconds": 0.375, "io_wait_seconds": 0.125,
                   "dense": true})
        })
        .collect();
    json!({"algorithm": "pr", "engine": "stream", "engine_reason": "", "memory_budget_bytes": 1u64 << 26,
           "vertices": 100, "edges": 1000, "iterations": iterations, "wall_seconds": 0.5 * iterations as f64,
           "bytes_read": 4096 * iterations, "bytes_written": 0, "peak_rss_bytes": 1u64 << 24,
           "plan": {"engine": "stream", "refusal": null, "memory": [{"part": "vertex values", "bytes": 800}],
                    "bytes_read": 40960, "bytes_written": 0, "iterations": 10.0, "iterations_known": true,
                    "builds": null, "seconds": 0.25},
           "per_iteration": per, "stream": {"schedule": "selective", "io": "auto"}, "summary": {}})
}

/// Stats JSON like inmem writes: no time split, no plan fields beyond the basics.
fn inmem_stats(iterations: usize) -> serde_json::Value {
    let per: Vec<_> = (0..iterations)
        .map(|i| {
            json!({"iteration": i, "active_vertices": 100, "edges_processed": 1000, "bytes_read": 0,
                        "bytes_written": 0, "seconds": 0.01})
        })
        .collect();
    json!({"algorithm": "pr", "engine": "inmem", "wall_seconds": 0.1, "per_iteration": per})
}

fn run(label: &str, stats: serde_json::Value) -> ReportRun {
    ReportRun { label: label.into(), run: RunFile::parse(Path::new(label), &stats.to_string()).unwrap() }
}

fn count(page: &str, needle: &str) -> usize {
    page.matches(needle).count()
}

#[test]
fn one_run_has_four_charts_and_one_row() {
    let page = render_html(&[run("a", stream_stats(5))]);
    assert_eq!(count(&page, "<svg class=\"chart\""), 4);
    assert_eq!(count(&page, "<tr class=\"run\">"), 1);
    // time: compute + I/O wait (no rest); bytes: read + written; vertices; edges.
    assert_eq!(count(&page, "<g class=\"series\""), 6);
    assert_eq!(count(&page, "data-series=\"I/O wait\""), 1);
    assert!(!page.contains("Comparison"));
    // Five stacked bars of two parts each.
    assert_eq!(count(&page, "<rect "), 10);
    assert!(page.contains("schedule selective"));
    assert!(page.contains("expected 250 ms"), "the plan's expected time is shown");
    assert!(!page.contains("<script"), "the page has no script");
}

#[test]
fn three_runs_add_comparison_charts_with_a_line_per_run() {
    let runs = [run("a", stream_stats(5)), run("b", inmem_stats(10)), run("c", stream_stats(3))];
    let page = render_html(&runs);
    assert_eq!(count(&page, "<svg class=\"chart\""), 3 * 4 + 2);
    assert_eq!(count(&page, "<tr class=\"run\">"), 3);
    assert!(page.contains("<h2>Comparison</h2>"));
    assert_eq!(count(&page, "data-metric=\"cumulative-time\""), 1);
    // Per run 6, 5 (inmem: one unsplit time series), 6; the two comparison charts 3 each.
    assert_eq!(count(&page, "<g class=\"series\""), 6 + 5 + 6 + 3 + 3);
    assert_eq!(count(&page, "data-series=\"time (not split)\""), 1);
    assert!(page.contains("The inmem engine records no compute / I/O wait split"));
    assert_eq!(count(&page, "class=\"run-heading\""), 3);
}

#[test]
fn odd_names_are_escaped() {
    let mut stats = inmem_stats(2);
    stats["algorithm"] = json!("<script>alert('x')</script>");
    stats["engine_reason"] = json!("a & b \"quoted\"");
    let page = render_html(&[run("<b>run \"1\"</b>", stats)]);
    assert!(!page.contains("<script>"));
    assert!(!page.contains("<b>run"));
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(page.contains("&lt;b&gt;run &quot;1&quot;&lt;/b&gt;"));
    assert!(page.contains("a &amp; b &quot;quoted&quot;"));
}

#[test]
fn missing_fields_take_defaults() {
    let page = render_html(&[run("bare", json!({"wall_seconds": 2.0}))]);
    assert_eq!(count(&page, "<svg class=\"chart\""), 4);
    assert_eq!(count(&page, "no per-iteration figures"), 4);
    assert!(page.contains("<td>?</td>"), "unknown algorithm and engine show as ?");
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let err = RunFile::load(&missing).unwrap_err().to_string();
    assert!(err.contains("missing.json"), "{err}");

    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"algorithm\": \"pr\",").unwrap();
    let err = RunFile::load(&broken).unwrap_err().to_string();
    assert!(err.contains("broken.json") && err.contains("not a --stats-json file"), "{err}");

    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"name\": \"not stats\"}").unwrap();
    let err = RunFile::load(&other).unwrap_err().to_string();
    assert!(err.contains("other.json") && err.contains("per_iteration"), "{err}");

    let wrong_type = dir.path().join("wrong.json");
    std::fs::write(&wrong_type, "{\"per_iteration\": 3}").unwrap();
    let err = RunFile::load(&wrong_type).unwrap_err().to_string();
    assert!(err.contains("wrong.json"), "{err}");
}

#[test]
fn write_html_replaces_the_output_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    std::fs::write(&out, "old").unwrap();
    write_html(&[run("a", inmem_stats(3))], &out).unwrap();
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    assert!(!dir.path().join("r.html.tmp").exists());
    assert!(write_html(&[], &out).is_err());
}

#[test]
fn rows_share_one_scale_and_bars_are_proportional() {
    let small = Chart {
        metric: "t",
        title: "t".into(),
        unit: Unit::Seconds,
        style: Style::StackedBars,
        series: vec![Series { name: "a".into(), color: "#000", values: vec![1.0, 3.0] }],
    };
    let mut big = small.clone();
    big.series.push(Series { name: "b".into(), color: "#111", values: vec![4.0] });
    let scale = Scale::fitting([&small, &big]);
    assert_eq!(scale, Scale { y_max: 5.0, iterations: 2 });
    // On a 0..5 axis a bar of 1 is a fifth of the height of a bar of 5 (stacked 1 + 4).
    let svg = big.render(scale);
    let heights: Vec<f64> =
        svg.split("height=\"").skip(1).map(|s| s[..s.find('"').unwrap()].parse().unwrap()).collect();
    assert_eq!(heights.len(), 3);
    let total = heights[0] + heights[2];
    assert!((heights[0] * 5.0 - total).abs() < 0.1, "{heights:?}");
}

#[test]
fn values_are_written_in_their_units() {
    assert_eq!(format_value(0.0, Unit::Seconds), "0");
    assert_eq!(format_value(0.00025, Unit::Seconds), "250 µs");
    assert_eq!(format_value(0.5, Unit::Seconds), "500 ms");
    assert_eq!(format_value(12.5, Unit::Seconds), "12.5 s");
    assert_eq!(format_value(1536.0, Unit::Bytes), "1.5 KiB");
    assert_eq!(format_value(2_500_000.0, Unit::Count), "2.5M");
}

#[test]
fn byte_axes_end_on_round_binary_sizes() {
    let chart = Chart {
        metric: "b",
        title: "b".into(),
        unit: Unit::Bytes,
        style: Style::Lines,
        series: vec![Series { name: "read".into(), color: "#000", values: vec![11.0 * 1048576.0] }],
    };
    let svg = chart.render(Scale::fitting([&chart]));
    for label in [">5 MiB<", ">10 MiB<", ">15 MiB<", ">20 MiB<"] {
        assert!(svg.contains(label), "{label} in {svg}");
    }
}

#[test]
fn the_fragment_has_the_page_charts_and_scopes_its_style() {
    let runs = [run("a", stream_stats(5)), run("b", inmem_stats(1))];
    let (page, fragment) = (render_html(&runs), render_fragment(&runs));
    assert!(fragment.starts_with("<div class=\"outcore-report\">") && fragment.ends_with("</div>"));
    assert_eq!(count(&fragment, "<svg class=\"chart\""), count(&page, "<svg class=\"chart\""));
    assert_eq!(count(&fragment, "<g class=\"series\""), count(&page, "<g class=\"series\""));
    assert_eq!(count(&fragment, "<tr class=\"run\">"), 2);
    let style = &fragment[fragment.find("<style>").unwrap() + 7..fragment.find("</style>").unwrap()];
    // Every selector of every rule is under the div: nothing restyles the notebook around it.
    for rule in style.split('}').filter(|r| !r.is_empty()) {
        let selectors = &rule[..rule.find('{').unwrap()];
        for s in selectors.split(',') {
            assert!(s.starts_with(".outcore-report"), "unscoped selector {s:?} in {style}");
        }
    }
    assert!(style.contains(".outcore-report svg.chart{"), "{style}");
    assert!(!fragment.contains("<html") && !fragment.contains("<body"));
}

#[test]
fn the_svg_document_is_standalone_and_places_every_chart() {
    let one = render_svg(&[run("a", stream_stats(5))]);
    assert!(one.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", &one[..80]);
    assert_eq!(count(&one, "<svg class=\"chart\""), 4);
    assert_eq!(count(&one, "<g class=\"series\""), 6);
    let runs = [run("a", stream_stats(5)), run("<b>", inmem_stats(10)), run("c", stream_stats(1))];
    let three = render_svg(&runs);
    assert_eq!(count(&three, "<svg class=\"chart\""), 3 * 4 + 2);
    assert_eq!(count(&three, "<g class=\"series\""), 6 + 5 + 6 + 3 + 3);
    // Balanced elements (the document parses as XML) and no two charts in one place.
    for (open, close) in [("<svg", "</svg>"), ("<g ", "</g>"), ("<text", "</text>")] {
        assert_eq!(count(&three, open), count(&three, close), "{open}");
    }
    let places: std::collections::HashSet<&str> =
        three.split("<svg class=\"chart\"").skip(1).map(|s| &s[..s.find(" viewBox").unwrap()]).collect();
    assert_eq!(places.len(), 14, "{places:?}");
    assert!(three.contains("&lt;b&gt;") && !three.contains("<b>"));
}

#[test]
fn a_written_run_reads_back_as_its_typed_figures() {
    use crate::engine::{IterationFigures, IterationStats, NwsmQuery, PregelIteration, RunStats};
    let pregel = PregelIteration { messages_sent: 7, ..PregelIteration::default() };
    let query = NwsmQuery { layout: "bbp-1-4".into(), aggregate: 9, ..NwsmQuery::default() };
    let mut stats = RunStats { algorithm: "pr".into(), wall_seconds: 1.5, ..RunStats::default() };
    stats.per_iteration.push(IterationStats { figures: IterationFigures::Pregel(pregel), ..IterationStats::default() });
    stats.per_iteration.push(IterationStats::default());
    stats.figures.nwsm = Some(query);
    let text = serde_json::to_string(&stats).unwrap();
    let read = RunFile::parse(Path::new("<stats>"), &text).unwrap();
    assert_eq!(read.wall_seconds, Some(1.5));
    assert_eq!(read.iterations()[0].figures.pregel().map(|p| p.messages_sent), Some(7));
    assert!(matches!(read.iterations()[1].figures, IterationFigures::None));
    let nwsm = read.figures.nwsm.as_ref().expect("the nwsm_ keys");
    assert_eq!((nwsm.layout.as_str(), nwsm.aggregate), ("bbp-1-4", 9));
    assert_eq!(serde_json::to_string(&read.stats).unwrap(), text, "it writes back the same file");
}
