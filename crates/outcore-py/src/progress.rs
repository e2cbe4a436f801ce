//! Progress for Python sessions: [`StderrProgress`], one self-rewriting line on stderr, and
//! [`CallbackProgress`], events handed to a Python callable (the Python layer draws them with
//! tqdm, which renders in Jupyter too). The CLI renders progress with indicatif; this crate
//! stays free of terminal libraries.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use outcore::runtime::{Progress, ProgressBar, ProgressUnit};
use pyo3::prelude::*;

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

/// Progress handed to a Python callable, called with the GIL taken from the worker thread:
/// `callback(event, bar, label, position, total, unit, message)` where `event` is `"start"`,
/// `"update"`, `"finish"` or `"note"`, `bar` an integer naming the bar (several may run at
/// once) and `total` None when unknown. Updates come at most every 100 ms per bar; an
/// exception in the callback is reported as unraisable and does not stop the work.
pub struct CallbackProgress {
    callback: Arc<Py<PyAny>>,
    bars: AtomicU64,
}

impl CallbackProgress {
    pub fn new(callback: Py<PyAny>) -> Self {
        CallbackProgress { callback: Arc::new(callback), bars: AtomicU64::new(0) }
    }
}

fn unit_name(unit: ProgressUnit) -> &'static str {
    match unit {
        ProgressUnit::Bytes => "B",
        ProgressUnit::Edges => "edges",
        ProgressUnit::Vertices => "vertices",
        ProgressUnit::Iterations => "iterations",
        ProgressUnit::Items => "items",
    }
}

#[allow(clippy::too_many_arguments)]
fn call(
    callback: &Py<PyAny>,
    event: &str,
    bar: u64,
    label: &str,
    position: u64,
    total: Option<u64>,
    unit: &str,
    message: &str,
) {
    Python::attach(|py| {
        if let Err(error) = callback.call1(py, (event, bar, label, position, total, unit, message)) {
            error.write_unraisable(py, None);
        }
    });
}

struct CallbackBar {
    callback: Arc<Py<PyAny>>,
    id: u64,
    label: String,
    total: Option<u64>,
    unit: &'static str,
    position: AtomicU64,
    last_call: Mutex<Instant>,
    message: Mutex<String>,
}

impl CallbackBar {
    fn emit(&self, event: &str, force: bool) {
        {
            let mut last = self.last_call.lock().unwrap();
            if !force && last.elapsed().as_millis() < 100 {
                return;
            }
            *last = Instant::now();
        }
        let message = self.message.lock().unwrap().clone();
        let position = self.position.load(Ordering::Relaxed);
        call(&self.callback, event, self.id, &self.label, position, self.total, self.unit, &message);
    }
}

impl ProgressBar for CallbackBar {
    fn inc(&self, delta: u64) {
        self.position.fetch_add(delta, Ordering::Relaxed);
        self.emit("update", false);
    }
    fn set_position(&self, position: u64) {
        self.position.store(position, Ordering::Relaxed);
        self.emit("update", false);
    }
    fn set_message(&self, message: &str) {
        *self.message.lock().unwrap() = message.to_string();
        self.emit("update", false);
    }
    fn finish(&self) {
        self.emit("finish", true);
    }
}

impl Progress for CallbackProgress {
    fn start(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressBar> {
        let id = self.bars.fetch_add(1, Ordering::Relaxed);
        let bar = CallbackBar {
            callback: self.callback.clone(),
            id,
            label: label.to_string(),
            total,
            unit: unit_name(unit),
            position: AtomicU64::new(0),
            last_call: Mutex::new(Instant::now()),
            message: Mutex::new(String::new()),
        };
        bar.emit("start", true);
        Box::new(bar)
    }
    fn note(&self, message: &str) {
        call(&self.callback, "note", u64::MAX, "", 0, None, "", message);
    }
}
