//! The progress bar of a long command (`convert`, `stats`, `report`): drawn on stderr when it
//! is a terminal, and only once the work has gone on for [`SHOWN_AFTER`], whatever it counts:
//! work that ends sooner draws nothing.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work goes on before its bar is drawn.
pub const SHOWN_AFTER: Duration = Duration::from_secs(1);

/// What the work counts.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Bytes (of tensors written), with the name of the tensor at work beside the bar.
    Bytes,
    /// Values (of tensors summarised).
    Values,
}

/// A progress bar over `total` units of work; nothing at all when stderr is not a terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    shown: AtomicBool,
}

impl Progress {
    /// A bar over `total` units, its clock started now, drawn once [`SHOWN_AFTER`] has passed.
    pub fn new(total: u64, unit: Unit) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
            let template = match unit {
                Unit::Bytes => "{bar:40} {bytes}/{total_bytes} ({eta}) {wide_msg}",
                Unit::Values => "{bar:40} {human_pos}/{human_len} values ({eta})",
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        Progress { bar, shown: AtomicBool::new(false) }
    }

    /// `done` units of the total done, the work now on `item` (a tensor's name, printable).
    pub fn set(&self, done: u64, item: &str) {
        if let Some(bar) = self.bar() {
            bar.set_position(done);
            bar.set_message(item.to_string());
        }
    }

    /// `n` more units done (from any thread).
    pub fn add(&self, n: u64) {
        if let Some(bar) = self.bar() {
            bar.inc(n);
        }
    }

    /// Clear the bar from the terminal: the work is over.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }

    /// The bar (when stderr is a terminal), drawn there from the first update after
    /// [`SHOWN_AFTER`].
    fn bar(&self) -> Option<&ProgressBar> {
        let bar = self.bar.as_ref()?;
        if !self.shown.load(Ordering::Relaxed)
            && bar.elapsed() >= SHOWN_AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        Some(bar)
    }
}
