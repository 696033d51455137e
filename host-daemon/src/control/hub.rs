//! [`ControlHub`]: what the control API knows of the daemon's sessions and
//! how it asks for more. The serving loop registers each session it opens,
//! feeds its figures while it plays, and files its report when it ends;
//! the API reads the registry, asks the loop to open sessions, and stops
//! them. Every change bumps a version the dashboard's event stream follows.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

use super::view::{OpenRequest, SessionFigures, SessionList, SessionState, SessionView};

/// Finished sessions kept (their views, reports and replay links); the
/// oldest is forgotten first.
pub const FINISHED_KEPT: usize = 64;

/// How long an open waits for the serving loop to create the session in
/// the lobby.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A tester's order to open a session, with where to answer: the code, or
/// why not (the request asked for what the daemon cannot do, or the lobby
/// refused).
#[derive(Debug)]
pub struct OpenOrder {
    /// What to open.
    pub request: OpenRequest,
    /// The code, or why not.
    pub reply: oneshot::Sender<Result<String, OpenRefused>>,
}

/// Why a session was not opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenRefused {
    /// The request asks for what this daemon cannot do.
    #[error("{0}")]
    Invalid(String),
    /// The daemon runs as many tester sessions as it may.
    #[error("{0} sessions opened through the control API are running; end one first")]
    TooMany(usize),
    /// The lobby refused or could not be reached.
    #[error("the lobby did not take the session: {0}")]
    Lobby(String),
    /// The daemon is shutting down.
    #[error("the daemon is shutting down")]
    ShuttingDown,
}

/// A finished session as kept: its last view and its report.
#[derive(Debug)]
struct Finished {
    view: SessionView,
    report: serde_json::Value,
}

/// A running session: its view and how to stop it.
#[derive(Debug)]
struct Live {
    view: SessionView,
    stop: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct Registry {
    live: BTreeMap<String, Live>,
    finished: VecDeque<Finished>,
}

/// The registry and the order queue; cheap to clone.
#[derive(Clone, Debug)]
pub struct ControlHub {
    registry: Arc<Mutex<Registry>>,
    orders: mpsc::Sender<OpenOrder>,
    version: watch::Sender<u64>,
    replay_dir: Option<PathBuf>,
}

impl ControlHub {
    /// A hub whose open orders go to the returned receiver (the serving
    /// loop's); replay files are looked up in `replay_dir` (`--record`).
    pub fn new(replay_dir: Option<PathBuf>) -> (Self, mpsc::Receiver<OpenOrder>) {
        let (orders, rx) = mpsc::channel(8);
        let hub = Self {
            registry: Arc::default(),
            orders,
            version: watch::channel(0).0,
            replay_dir,
        };
        (hub, rx)
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves plain data behind; keep
        // serving it.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// Follows every change (the version number is meaningless; that it
    /// changed is not).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Asks the serving loop to open a session; its code once the lobby
    /// has it.
    pub async fn open(&self, request: OpenRequest) -> Result<String, OpenRefused> {
        let (reply, answer) = oneshot::channel();
        self.orders
            .send(OpenOrder { request, reply })
            .await
            .map_err(|_| OpenRefused::ShuttingDown)?;
        match tokio::time::timeout(OPEN_TIMEOUT, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(OpenRefused::ShuttingDown),
            Err(_) => Err(OpenRefused::Lobby(format!(
                "no answer within {} s",
                OPEN_TIMEOUT.as_secs()
            ))),
        }
    }

    /// A session was opened: listed as waiting from now on; `stop` ends it.
    pub fn opened(&self, view: SessionView, stop: watch::Sender<bool>) {
        self.registry()
            .live
            .insert(view.code.clone(), Live { view, stop });
        self.bump();
    }

    /// A running session's latest figures.
    pub fn update(&self, code: &str, figures: &SessionFigures) {
        let mut registry = self.registry();
        let Some(live) = registry.live.get_mut(code) else {
            return;
        };
        let view = &mut live.view;
        let before = view.clone();
        if figures.started {
            view.state = SessionState::Running;
        }
        view.level = figures.level;
        view.ticks = figures.ticks;
        view.players.clone_from(&figures.players);
        view.spectators = figures.spectators;
        view.bytes_sent = figures.bytes_sent;
        let changed = *view != before;
        drop(registry);
        // Streams hear of a change only (a session waiting for players
        // reports the same figures every half second).
        if changed {
            self.bump();
        }
    }

    /// A session ended with `report` (the `session-report` or
    /// `relay-report` line's fields) and `end`, why.
    pub fn finished(&self, code: &str, end: Option<String>, report: serde_json::Value) {
        let mut registry = self.registry();
        let Some(live) = registry.live.remove(code) else {
            return;
        };
        let mut view = live.view;
        view.state = SessionState::Ended;
        view.end = end;
        view.replays = self.replay_levels(code);
        if registry.finished.len() >= FINISHED_KEPT {
            registry.finished.pop_front();
        }
        registry.finished.push_back(Finished { view, report });
        drop(registry);
        self.bump();
    }

    /// Every running session (by code), then the finished ones, newest
    /// first.
    pub fn list(&self) -> SessionList {
        let registry = self.registry();
        let live = registry.live.values().map(|l| l.view.clone());
        let finished = registry.finished.iter().rev().map(|f| f.view.clone());
        SessionList {
            sessions: live.chain(finished).collect(),
        }
    }

    /// One session, running or finished.
    pub fn get(&self, code: &str) -> Option<SessionView> {
        let registry = self.registry();
        registry.live.get(code).map(|l| l.view.clone()).or_else(|| {
            registry
                .finished
                .iter()
                .find(|f| f.view.code == code)
                .map(|f| f.view.clone())
        })
    }

    /// Ends running session `code` (as a shutdown ends it: its guests hear
    /// `host-shutdown`); false when no such session runs.
    pub fn end(&self, code: &str) -> bool {
        match self.registry().live.get(code) {
            Some(live) => {
                live.stop.send_replace(true);
                true
            }
            None => false,
        }
    }

    /// How many running sessions a tester opened.
    pub fn opened_by_control(&self) -> usize {
        self.registry()
            .live
            .values()
            .filter(|l| l.view.opened_by == super::view::OpenedBy::Control)
            .count()
    }

    /// A finished session's report.
    pub fn report(&self, code: &str) -> Option<serde_json::Value> {
        self.registry()
            .finished
            .iter()
            .find(|f| f.view.code == code)
            .map(|f| f.report.clone())
    }

    /// The replay file of `level` of finished session `code`, if the
    /// daemon recorded it.
    pub fn replay_path(&self, code: &str, level: u32) -> Option<PathBuf> {
        let registry = self.registry();
        let finished = registry.finished.iter().find(|f| f.view.code == code)?;
        finished
            .view
            .replays
            .contains(&level)
            .then(|| {
                self.replay_dir
                    .as_ref()
                    .map(|d| d.join(replay_name(code, level)))
            })
            .flatten()
    }

    /// The levels of session `code` whose replay file is in the replay
    /// folder.
    fn replay_levels(&self, code: &str) -> Vec<u32> {
        let Some(dir) = &self.replay_dir else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let prefix = format!("{code}-level-");
        let mut levels: Vec<u32> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_prefix(&prefix)?
                    .strip_suffix(".replay")?
                    .parse()
                    .ok()
            })
            .collect();
        levels.sort_unstable();
        levels
    }
}

/// The file name `host --record DIR` gives level `level` of session
/// `code` ([`crate::replay_files`]).
pub fn replay_name(code: &str, level: u32) -> String {
    format!("{code}-level-{level}.replay")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::view::{OpenedBy, SessionKind};

    fn view(code: &str) -> SessionView {
        SessionView {
            code: code.to_owned(),
            kind: SessionKind::Host,
            state: SessionState::Waiting,
            name: "t".to_owned(),
            opened_by: OpenedBy::Control,
            opened_at_ms: 0,
            level: 0,
            levels: 1,
            difficulty: "normal".to_owned(),
            seed: 1,
            ticks: 0,
            players: Vec::new(),
            spectators: 0,
            bytes_sent: 0,
            end: None,
            replays: Vec::new(),
        }
    }

    #[test]
    fn a_session_runs_then_is_kept_finished_with_its_replays() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(replay_name("ABCD", 1)), "x").unwrap();
        std::fs::write(dir.path().join("ABCDE-level-2.replay"), "x").unwrap();
        let (hub, _orders) = ControlHub::new(Some(dir.path().to_owned()));
        let mut changes = hub.changes();
        let (stop, stopped) = watch::channel(false);
        hub.opened(view("ABCD"), stop);
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        let figures = SessionFigures {
            started: true,
            level: 1,
            ticks: 90,
            ..SessionFigures::default()
        };
        hub.update("ABCD", &figures);
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        // The same figures again: streams hear nothing new.
        hub.update("ABCD", &figures);
        assert!(!changes.has_changed().unwrap());
        let running = hub.get("ABCD").unwrap();
        assert_eq!((running.state, running.ticks), (SessionState::Running, 90));
        assert!(hub.report("ABCD").is_none(), "no report while it runs");
        assert!(hub.end("ABCD"));
        assert!(*stopped.borrow());
        assert!(!hub.end("WXYZ"));
        hub.finished(
            "ABCD",
            Some("completed".into()),
            serde_json::json!({"ticks": 90}),
        );
        let done = hub.get("ABCD").unwrap();
        assert_eq!(done.state, SessionState::Ended);
        assert_eq!(done.replays, vec![1], "only its own files");
        assert_eq!(hub.report("ABCD").unwrap()["ticks"], 90);
        assert!(hub.replay_path("ABCD", 1).is_some());
        assert!(hub.replay_path("ABCD", 2).is_none());
        assert!(!hub.end("ABCD"), "an ended session cannot be ended");
    }

    #[test]
    fn only_the_latest_finished_sessions_are_kept() {
        let (hub, _orders) = ControlHub::new(None);
        for i in 0..FINISHED_KEPT + 5 {
            let code = format!("C{i}");
            hub.opened(view(&code), watch::channel(false).0);
            hub.finished(&code, None, serde_json::Value::Null);
        }
        let list = hub.list().sessions;
        assert_eq!(list.len(), FINISHED_KEPT);
        assert_eq!(
            list[0].code,
            format!("C{}", FINISHED_KEPT + 4),
            "newest first"
        );
        assert!(hub.get("C0").is_none());
    }
}
