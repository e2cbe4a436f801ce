//! A minimal progress reporter for Python sessions: one self-rewriting line on stderr.
//! (The CLI renders progress with indicatif; this crate stays free of terminal libraries.)

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use outcore::runtime::{Progress, ProgressBar, ProgressUnit};

pub struct StderrProgress;

impl StderrProgress {
    pub fn new() -> Self {
        StderrProgress
    }
}

struct LineBar {
    label: String,
    total: Option<u64>,
    unit: ProgressUnit,
    position: AtomicU64,
    started: Instant,
    last_draw: Mutex<Instant>,
    message: Mutex<String>,
}

impl LineBar {
    fn draw(&self, force: bool) {
        let mut last = self.last_draw.lock().unwrap();
        if !force && last.elapsed().as_millis() < 200 {
            return;
        }
        *last = Instant::now();
        let pos = self.position.load(Ordering::Relaxed);
        let rate = pos as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
        let unit = match self.unit {
            ProgressUnit::Bytes => "B",
            ProgressUnit::Edges => "edges",
            ProgressUnit::Vertices => "vertices",
            ProgressUnit::Iterations => "iterations",
            ProgressUnit::Items => "",
        };
        let of = self.total.map(|t| format!("/{t}")).unwrap_or_default();
        let message = self.message.lock().unwrap();
        eprint!("\r{}: {pos}{of} {unit} ({rate:.0}/s) {message}\x1b[K", self.label);
        let _ = std::io::stderr().flush();
    }
}

impl ProgressBar for LineBar {
    fn inc(&self, delta: u64) {
        self.position.fetch_add(delta, Ordering::Relaxed);
        self.draw(false);
    }
    fn set_position(&self, position: u64) {
        self.position.store(position, Ordering::Relaxed);
        self.draw(false);
    }
    fn set_message(&self, message: &str) {
        *self.message.lock().unwrap() = message.to_string();
        self.draw(false);
    }
    fn finish(&self) {
        self.draw(true);
        eprintln!();
    }
}

impl Progress for StderrProgress {
    fn start(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressBar> {
        Box::new(LineBar {
            label: label.to_string(),
            total,
            unit,
            position: AtomicU64::new(0),
            started: Instant::now(),
            last_draw: Mutex::new(Instant::now()),
            message: Mutex::new(String::new()),
        })
    }
    fn note(&self, message: &str) {
        eprintln!("{message}");
    }
}
