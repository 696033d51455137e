//! A child's stderr, captured line by line as it comes, and waits on it
//! that wake on each new line instead of polling.

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A child's stderr lines, ANSI colours stripped, each with the instant it
/// was read; echoed to the test's stderr. Clones share the lines.
#[derive(Clone, Default)]
pub struct LogLines(Arc<Captured>);

#[derive(Default)]
struct Captured {
    lines: Mutex<Vec<(Instant, String)>>,
    /// Notified on every new line.
    grew: Condvar,
}

impl LogLines {
    fn push(&self, line: String) {
        self.0.lines.lock().unwrap().push((Instant::now(), line));
        self.0.grew.notify_all();
    }

    /// The first line satisfying `pred` (logged before the call or after),
    /// waiting at most `within`.
    pub fn wait_for(
        &self,
        within: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> (Instant, String) {
        let deadline = Instant::now() + within;
        let mut lines = self.0.lines.lock().unwrap();
        let mut checked = 0;
        loop {
            if let Some(hit) = lines[checked..].iter().find(|(_, l)| pred(l)) {
                return hit.clone();
            }
            checked = lines.len();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                drop(lines); // not poisoned for the capturing thread
                panic!("no {what} log line within {within:?}");
            }
            lines = self.0.grew.wait_timeout(lines, left).unwrap().0;
        }
    }

    /// The lines satisfying `pred` so far.
    pub fn matching(&self, pred: impl Fn(&str) -> bool) -> Vec<(Instant, String)> {
        let lines = self.0.lines.lock().unwrap();
        lines.iter().filter(|(_, l)| pred(l)).cloned().collect()
    }

    /// How many lines satisfy `pred` so far.
    pub fn count(&self, pred: impl Fn(&str) -> bool) -> usize {
        let lines = self.0.lines.lock().unwrap();
        lines.iter().filter(|(_, l)| pred(l)).count()
    }
}

/// Captures `child`'s piped stderr into [`LogLines`], echoing with `tag`.
pub fn capture_stderr(child: &mut Child, tag: &'static str) -> LogLines {
    let err = child.stderr.take().expect("piped stderr");
    let log = LogLines::default();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let line = strip_ansi(&line);
            eprintln!("[{tag}] {line}");
            sink.push(line);
        }
    });
    log
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
