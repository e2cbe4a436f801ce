//! `outcore report` end to end: real stats files from three engines, the page's structure, its
//! errors, and the page rendered by a real headless browser (Debian's chromium, installed by
//! `scripts/install-deps.sh`): the charts must lay out as non-empty SVG and the screenshot must
//! show them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn outcore(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_outcore")).args(args).output().expect("outcore runs")
}

fn ok(args: &[&str]) {
    let out = outcore(args);
    assert!(out.status.success(), "outcore {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// An R-MAT store and PageRank stats files from inmem, stream and shards (in that order).
fn three_runs(dir: &Path) -> Vec<PathBuf> {
    let store = dir.join("store");
    let s = store.to_str().unwrap();
    ok(&["generate", "rmat", "--scale", "10", "--store", s, "--memory", "64MiB"]);
    ["inmem", "stream", "shards"]
        .iter()
        .map(|engine| {
            let stats = dir.join(format!("{engine}.json"));
            let out = dir.join(format!("{engine}.txt"));
            ok(&[
                "run",
                "pr",
                "--store",
                s,
                "--engine",
                engine,
                "--memory",
                "16MiB",
                "--iterations",
                "5",
                "-q",
                "--stats-json",
                stats.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ]);
            stats
        })
        .collect()
}

fn report(stats: &[PathBuf], output: &Path) -> String {
    let mut args: Vec<&str> = vec!["report"];
    args.extend(stats.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", output.to_str().unwrap()]);
    ok(&args);
    std::fs::read_to_string(output).unwrap()
}

fn count(page: &str, needle: &str) -> usize {
    page.matches(needle).count()
}

#[test]
fn one_and_three_runs_have_their_charts_rows_and_series() {
    let dir = tempfile::tempdir().unwrap();
    let stats = three_runs(dir.path());

    let one = report(&stats[1..2], &dir.path().join("one.html"));
    assert_eq!(count(&one, "<svg class=\"chart\""), 4);
    assert_eq!(count(&one, "<tr class=\"run\">"), 1);
    assert!(one.contains("data-series=\"compute\"") && one.contains("data-series=\"I/O wait\""), "stream splits time");
    assert!(!one.contains("<script") && !one.contains("http"), "self-contained: no script, nothing fetched");

    let three = report(&stats, &dir.path().join("three.html"));
    assert_eq!(count(&three, "<svg class=\"chart\""), 3 * 4 + 2);
    assert_eq!(count(&three, "<tr class=\"run\">"), 3);
    for engine in ["inmem", "stream", "shards"] {
        assert!(three.contains(&format!("<td>{engine}</td>")), "{engine} in the summary table");
    }
    // One line per run in each comparison chart.
    let comparison = &three[three.find("data-metric=\"cumulative-time\"").unwrap()..];
    let comparison = &comparison[..comparison.find("</svg>").unwrap()];
    assert_eq!(count(comparison, "<g class=\"series\""), 3);
}

#[test]
fn bad_or_missing_stats_files_are_named_with_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let missing = dir.path().join("nowhere.json");
    let result = outcore(&["report", missing.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(74), "{stderr}");
    assert!(stderr.contains("nowhere.json"), "{stderr}");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "this is not json").unwrap();
    let result = outcore(&["report", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("bad.json") && stderr.contains("not a --stats-json file"), "{stderr}");
    assert!(!out.exists(), "no page is written when a file is bad");
}

/// Chromium's command, if installed.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|name| Command::new(name).arg("--version").output().map(|o| o.status.success()).unwrap_or(false))
}

/// Runs headless chromium on `page` with `extra` arguments (a minute at most).
fn headless(browser: &str, profile: &Path, page: &Path, extra: &[&str]) -> Output {
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", profile.display());
    let mut args = vec![
        "120",
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1400,2200",
        profile.as_str(),
    ];
    args.extend(extra);
    args.push(&url);
    let out = Command::new("timeout").args(&args).output().expect("timeout runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A copy of the page with a script that measures, after layout, every chart's box and every
/// series' bounding box, and writes them into the DOM as JSON (the report itself has no script).
fn with_measuring_script(page: &str) -> String {
    let script =
        "<script>const m=[...document.querySelectorAll('svg.chart')].map(s=>{const r=s.getBoundingClientRect();\
        return {metric:s.dataset.metric,w:r.width,h:r.height,series:[...s.querySelectorAll('g.series')].map(g=>{\
        const b=g.getBBox();return [b.width,b.height];})};});const p=document.createElement('pre');p.id='measured';\
        p.textContent=JSON.stringify(m);document.body.appendChild(p);</script>";
    page.replace("</body>", &format!("{script}</body>"))
}

#[derive(serde::Deserialize)]
struct Measured {
    metric: String,
    w: f64,
    h: f64,
    series: Vec<(f64, f64)>,
}

#[test]
fn a_headless_browser_renders_every_chart() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on PATH (scripts/install-deps.sh installs Debian's chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stats = three_runs(dir.path());
    let page = report(&stats, &dir.path().join("report.html"));
    let expected_series = count(&page, "<g class=\"series\"");

    let measuring = dir.path().join("measuring.html");
    std::fs::write(&measuring, with_measuring_script(&page)).unwrap();
    let dom =
        String::from_utf8(headless(browser, &dir.path().join("profile"), &measuring, &["--dump-dom"]).stdout).unwrap();
    let json = dom.split("<pre id=\"measured\">").nth(1).and_then(|s| s.split("</pre>").next()).expect("script ran");
    let json = json.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let charts: Vec<Measured> = serde_json::from_str(&json).unwrap();
    assert_eq!(charts.len(), 14);
    assert_eq!(charts.iter().map(|c| c.series.len()).sum::<usize>(), expected_series);
    for c in &charts {
        assert!(c.w > 200.0 && c.h > 100.0, "chart {} laid out at {}x{}", c.metric, c.w, c.h);
        let drawn = c.series.iter().filter(|(w, h)| *w > 0.0 && *h > 0.0).count();
        assert!(drawn >= 1, "chart {} has no visible series: {:?}", c.metric, c.series);
    }

    let png = dir.path().join("report.png");
    let shot = format!("--screenshot={}", png.display());
    headless(browser, &dir.path().join("profile"), &dir.path().join("report.html"), &[&shot]);
    let pixels = Pixels::read(&png);
    assert!(pixels.non_white() > pixels.total() / 20, "the screenshot is nearly blank");
    // The stream run's compute bars and the inmem run's whole-iteration bars are on screen.
    assert!(pixels.of_color([0x4e, 0x79, 0xa7]) > 500, "no compute bars in the screenshot");
    assert!(pixels.of_color([0x9c, 0x9c, 0x9c]) > 500, "no inmem bars in the screenshot");
}

/// A decoded RGB(A) screenshot.
struct Pixels {
    data: Vec<u8>,
    channels: usize,
}

impl Pixels {
    fn read(path: &Path) -> Pixels {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut data = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut data).unwrap();
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        let channels = match info.color_type {
            png::ColorType::Rgb => 3,
            png::ColorType::Rgba => 4,
            other => panic!("unexpected PNG colour type {other:?}"),
        };
        data.truncate(info.buffer_size());
        Pixels { data, channels }
    }

    fn rgb(&self) -> impl Iterator<Item = &[u8]> {
        self.data.chunks_exact(self.channels).map(|p| &p[..3])
    }

    fn total(&self) -> usize {
        self.data.len() / self.channels
    }

    fn non_white(&self) -> usize {
        self.rgb().filter(|p| p.iter().any(|&c| c < 250)).count()
    }

    fn of_color(&self, color: [u8; 3]) -> usize {
        self.rgb().filter(|p| p.iter().zip(color).all(|(&a, b)| a.abs_diff(b) <= 2)).count()
    }
}
