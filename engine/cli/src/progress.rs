//! A progress bar on stderr for long operations (index builds, COPY loads), shown only on a
//! terminal. The operation's label names what it counts.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rowdex::{Progress, ProgressFn};

/// Redraws at most this often, so a fast build does not spend its time printing.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
const WIDTH: usize = 30;

/// A progress callback for a session, or None when stderr is not a terminal.
pub fn terminal_progress() -> Option<ProgressFn> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let last_draw: Mutex<Option<Instant>> = Mutex::new(None);
    Some(Arc::new(move |progress: &Progress<'_>| {
        let (done, total) = (progress.done, progress.total);
        let Ok(mut last) = last_draw.lock() else {
            return;
        };
        let finished = done >= total;
        if !finished && last.is_some_and(|t| t.elapsed() < REDRAW_EVERY) {
            return;
        }
        // Builds shorter than one redraw interval print nothing at all.
        if last.is_none() && finished {
            return;
        }
        *last = Some(Instant::now());
        let share = if total == 0 {
            1.0
        } else {
            done as f64 / total as f64
        };
        let filled = ((share * WIDTH as f64) as usize).min(WIDTH);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r{}: [{}{}] {done}/{total}",
            progress.label(),
            "#".repeat(filled),
            " ".repeat(WIDTH - filled)
        );
        if finished {
            let _ = writeln!(stderr);
            *last = None;
        }
        let _ = stderr.flush();
    }))
}
