//! Renders the library's [`Progress`] reports as indicatif bars on stderr.
//!
//! Bars are drawn only when stderr is a terminal (indicatif hides them otherwise), so logs and
//! CI output stay clean; notes are always printed.

use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar as Bar, ProgressDrawTarget, ProgressStyle};
use outcore::runtime::{Progress, ProgressBar, ProgressUnit};

pub struct TerminalProgress {
    bars: MultiProgress,
    quiet: bool,
}

impl TerminalProgress {
    pub fn new(quiet: bool) -> Self {
        let bars = MultiProgress::with_draw_target(if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        });
        TerminalProgress { bars, quiet }
    }
}

fn style(total: Option<u64>, unit: ProgressUnit) -> ProgressStyle {
    let (pos, rate) = match unit {
        ProgressUnit::Bytes => ("{bytes}/{total_bytes}", "{bytes_per_sec}"),
        ProgressUnit::Edges => ("{human_pos}/{human_len} edges", "{per_sec}"),
        ProgressUnit::Vertices => ("{human_pos}/{human_len} vertices", "{per_sec}"),
        ProgressUnit::Iterations => ("{pos}/{len} iterations", "{per_sec}"),
        ProgressUnit::Items => ("{human_pos}/{human_len}", "{per_sec}"),
    };
    let template = match total {
        Some(_) => format!("{{prefix:>12.bold}} [{{bar:30}}] {pos} ({rate}, eta {{eta}}) {{msg}}"),
        None => {
            format!("{{prefix:>12.bold}} {{spinner}} {} ({rate}, {{elapsed}}) {{msg}}", pos.split('/').next().unwrap())
        }
    };
    ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> ")
}

struct TerminalBar(Bar);

impl ProgressBar for TerminalBar {
    fn inc(&self, delta: u64) {
        self.0.inc(delta)
    }
    fn set_position(&self, position: u64) {
        self.0.set_position(position)
    }
    fn set_message(&self, message: &str) {
        self.0.set_message(message.to_string())
    }
    fn finish(&self) {
        self.0.finish()
    }
}

impl Progress for TerminalProgress {
    fn start(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressBar> {
        let bar = match total {
            Some(t) => Bar::new(t),
            None => Bar::new_spinner(),
        };
        bar.set_style(style(total, unit));
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Box::new(TerminalBar(self.bars.add(bar)))
    }

    fn note(&self, message: &str) {
        if self.quiet {
            return;
        }
        // indicatif drops printed lines when its target is hidden (stderr not a terminal).
        if self.bars.is_hidden() {
            eprintln!("{message}");
        } else {
            let _ = self.bars.println(message);
        }
    }
}
