//! `host --record DIR`: each level's replay ([`netcode::replay`]) written
//! to its own file, `DIR/CODE-level-EPOCH.replay`, a line per record as
//! the session emits them. A file that cannot be written is logged once
//! and given up; the session plays on. A level longer than a replay may be
//! ([`MAX_REPLAY_TICKS`] bundles, what the reader takes) stops being
//! recorded there, logged once.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use game_api::GameWire;
use netcode::replay::{MAX_REPLAY_TICKS, ReplayRecord};

/// The replay files of one hosted session.
#[derive(Debug)]
pub struct ReplayFiles {
    dir: PathBuf,
    code: String,
    file: Option<(PathBuf, BufWriter<File>)>,
    /// Bundles written to the current file.
    bundles: usize,
}

impl ReplayFiles {
    /// Files for session `code` in `dir` (created when missing).
    pub fn new(dir: &Path, code: &str) -> Self {
        Self {
            dir: dir.to_owned(),
            code: code.to_owned(),
            file: None,
            bundles: 0,
        }
    }

    /// Writes one record: a header starts a new file, an end completes it.
    pub fn record<W: GameWire>(&mut self, record: &ReplayRecord<W>) {
        if let ReplayRecord::Begin(header) = record {
            self.close();
            let path = self
                .dir
                .join(format!("{}-level-{}.replay", self.code, header.level_epoch));
            match std::fs::create_dir_all(&self.dir).and_then(|()| File::create(&path)) {
                Ok(f) => {
                    self.file = Some((path, BufWriter::new(f)));
                    self.bundles = 0;
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot write the replay; not recording this level");
                    return;
                }
            }
        }
        if matches!(record, ReplayRecord::Bundle(_)) {
            self.bundles += 1;
            if self.bundles > MAX_REPLAY_TICKS {
                if let Some((path, _)) = &self.file {
                    tracing::warn!(path = %path.display(), "the level outran what a replay holds; the rest is not recorded");
                }
                self.close();
                return;
            }
        }
        let Some((path, out)) = self.file.as_mut() else {
            return;
        };
        let written = record
            .line()
            .map_err(std::io::Error::other)
            .and_then(|line| writeln!(out, "{line}"));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "writing the replay failed; not recording this level");
            self.file = None;
            return;
        }
        if matches!(record, ReplayRecord::End(_)) {
            self.close();
        }
    }

    /// Flushes and closes the file being written, if any.
    pub fn close(&mut self) {
        if let Some((path, mut out)) = self.file.take() {
            match out.flush() {
                Ok(()) => tracing::info!(path = %path.display(), "replay written"),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "writing the replay failed")
                }
            }
        }
    }
}

impl Drop for ReplayFiles {
    fn drop(&mut self) {
        self.close();
    }
}
