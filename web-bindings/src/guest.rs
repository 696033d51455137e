//! [`WebGuest`]: `netcode`'s guest session over the reference engine, with
//! the plain-data interface the browser drives: text messages and time in,
//! messages to send, a status and a render [`View`] out.
//!
//! The page's driver loop is the daemon's: feed every data-channel message
//! and connection change with the current time, poll while a backlog is
//! waiting, send what [`WebGuest::output`] returns, and wake up at its
//! `wakeAtMs`. Bundles are applied as they arrive (never on a render
//! timer), so a hidden tab keeps pace.

use std::time::Duration;

use engine::wire::input::InputSnapshot;
use engine::{Engine, Game, RaycasterEngine};
use netcode::guest::{GuestConfig, GuestEnd, GuestEvent, GuestPhase, GuestSession};
use netcode::link::{ConnectionState, Payload, PeerEvent};
use netcode::netgraph::GuestNetgraph;
use protocol::BUILD_VERSION;
use protocol::peer::{Channel, ScoreRow};
use serde::{Deserialize, Serialize};

use crate::view::View;

/// How the page configures a guest.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebGuestConfig {
    /// Build identifier for the handshake (default: this module's build).
    #[serde(default)]
    pub build_version: Option<String>,
    /// Display name as typed.
    #[serde(default)]
    pub display_name: String,
    /// Let the engine's bot drive this player (tests, testers).
    #[serde(default)]
    pub bot: bool,
    /// Watch instead of play: no seat, no input.
    #[serde(default)]
    pub spectate: bool,
    /// A rejoin token from an earlier connection to this session
    /// ([`Status::rejoin_token`]): the hello asks to resume that player.
    #[serde(default)]
    pub resume_token: Option<String>,
}

/// One message to send to the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outgoing {
    /// Data channel label (`input`, `reconciliation`, `input-unreliable`).
    pub channel: &'static str,
    /// The message: a string, or a binary message's bytes as a list of
    /// numbers (`web/lib/wasm.js` makes it a `Uint8Array`).
    pub data: Payload,
}

/// What the page must do after feeding the session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    /// Messages to send, in order.
    pub send: Vec<Outgoing>,
    /// Diagnostics since the last call (for the console).
    pub events: Vec<String>,
    /// When to poll next without an event, in the caller's milliseconds.
    pub wake_at_ms: Option<f64>,
    /// Bundles are waiting: poll again at once (after yielding).
    pub backlog: bool,
}

/// How a session ended, as the page shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum EndView {
    /// The host ended it, or it was lost.
    Ended {
        /// The spec's end reason (`completed`, `host-disconnected`, …).
        reason: String,
        /// The host's end table ("" names as sent).
        scores: Vec<ScoreRow>,
        /// The table is this guest's last knowledge, not the host's final word.
        provisional: bool,
    },
    /// The host refused the join.
    Refused {
        /// The refusal reason (`version-mismatch`, `session-started`, …).
        reason: String,
        /// The host's explanation.
        detail: String,
        /// The host's build, when it said (a version mismatch).
        host_build: Option<String>,
    },
    /// Setup failed on this side.
    SetupFailed {
        /// What went wrong.
        detail: String,
    },
    /// This side could no longer follow the running session.
    Failed {
        /// What went wrong.
        detail: String,
    },
}

/// The session's state for the page's status line and HUD.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `await-hello`, `await-init`, `receiving-map`, `running` or `ended`.
    pub phase: &'static str,
    /// This player's id, once assigned.
    pub me: Option<String>,
    /// Level epoch (1 for the first level).
    pub level_epoch: u32,
    /// Engine tick (0 before setup).
    pub tick: u64,
    /// The tick the view shows: ahead of `tick` while this player's
    /// inputs are pending (the predicted view).
    pub view_tick: u64,
    /// The frozen difficulty, once set up.
    pub difficulty: Option<&'static str>,
    /// Roster ids of the level, sorted.
    pub roster: Vec<String>,
    /// Every player's name as the host sent it.
    pub names: std::collections::BTreeMap<String, String>,
    /// The connection to the host is lost; the grace is running.
    pub host_lost: bool,
    /// Tick of the last reconciliation snapshot applied.
    pub last_snapshot_tick: Option<u64>,
    /// Counters.
    pub stats: StatsView,
    /// How it ended, once it has.
    pub end: Option<EndView>,
    /// Receiving a running game's state (a late joiner, before it plays).
    pub joining: bool,
    /// For a late joiner: the tick it entered the running level at.
    pub joined_at_tick: Option<u64>,
    /// The host admitted this guest to watch: `me` is its spectator id.
    pub spectator: bool,
    /// Who watches the session, by display name (as the host last said).
    pub spectators: Vec<String>,
    /// Before the start: who is in and what the start waits for (as the
    /// host last said; `None` until it did).
    pub waiting_room: Option<WaitingRoomView>,
    /// The token that resumes this player on a fresh connection within the
    /// host's disconnect grace (`resumeToken` of a new guest).
    pub rejoin_token: Option<String>,
    /// This connection resumed a player with its `resumeToken`.
    pub resumed: bool,
}

/// Who is in before the start, and what the start waits for.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingRoomView {
    /// Display names of the players in (the host's own first; "" for none).
    pub players: Vec<String>,
    /// Most players the session takes, host included (`null`: no cap).
    pub max_players: Option<u32>,
    /// More guests the start waits for (`null`: the host's Start).
    pub guests_needed: Option<u32>,
    /// Which of `players` this guest is (`null` when the host does not
    /// say).
    pub you: Option<u32>,
}

/// The guest's counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsView {
    /// Bundles applied.
    pub bundles_applied: u64,
    /// Snapshots applied.
    pub snapshots_applied: u64,
    /// Snapshots whose state differed from this guest's at their tick.
    pub snapshot_mismatches: u64,
    /// Hard snaps of a player's position.
    pub hard_snaps: u64,
    /// Level transitions completed.
    pub transitions: u32,
    /// Bundles for another tick than the engine's (must stay 0).
    pub out_of_sequence: u64,
    /// Hash reports made (alone or folded into the inputs).
    pub hash_reports: u64,
    /// Messages from the host that were not understood.
    pub bad_messages: u64,
    /// Times a relay rebuilt this guest in place after it desynced.
    pub resyncs: u64,
}

/// A guest session for the browser.
#[derive(Debug)]
pub struct WebGuest {
    session: GuestSession<RaycasterEngine>,
    /// The latest time seen: time never goes backwards for the session.
    now: Duration,
    host_build: Option<String>,
}

/// Milliseconds from the page's clock as a session time (negative, NaN and
/// infinite values clamp to zero; one past `Duration`'s range to its
/// largest).
pub(crate) fn millis(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    }
}

/// A unit enum's wire spelling (`host-disconnected`, …).
pub(crate) fn kebab<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

impl WebGuest {
    /// A guest from the page's JSON configuration.
    pub fn new(config_json: &str) -> Result<Self, String> {
        let config: WebGuestConfig =
            serde_json::from_str(config_json).map_err(|e| format!("guest configuration: {e}"))?;
        Ok(Self {
            session: GuestSession::new(GuestConfig {
                build_version: config
                    .build_version
                    .unwrap_or_else(|| BUILD_VERSION.to_owned()),
                display_name: config.display_name,
                bot: config.bot && !config.spectate,
                spectate: config.spectate,
                resume_token: config.resume_token,
                ..GuestConfig::default()
            }),
            now: Duration::ZERO,
            host_build: None,
        })
    }

    fn advance_clock(&mut self, now_ms: f64) -> Duration {
        self.now = self.now.max(millis(now_ms));
        self.now
    }

    /// A message arrived on data channel `channel`.
    pub fn on_message(&mut self, channel: Channel, payload: Payload, now_ms: f64) {
        let now = self.advance_clock(now_ms);
        self.session
            .on_event(PeerEvent::Message(channel, payload), now);
    }

    /// The connection changed state.
    pub fn on_state(&mut self, state: ConnectionState, now_ms: f64) {
        let now = self.advance_clock(now_ms);
        self.session.on_event(PeerEvent::State(state), now);
    }

    /// Runs timers and applies what can be applied.
    pub fn poll(&mut self, now_ms: f64) {
        let now = self.advance_clock(now_ms);
        self.session.poll(now);
    }

    /// This player's input from now on (JSON `InputSnapshot`; sanitized by
    /// the session before it is sent).
    pub fn set_input(&mut self, input_json: &str) -> Result<(), String> {
        let input: InputSnapshot =
            serde_json::from_str(input_json).map_err(|e| format!("input: {e}"))?;
        self.session.set_local_input(input);
        Ok(())
    }

    /// Takes what to send and what happened.
    pub fn output(&mut self) -> Output {
        let mut send = Vec::new();
        let mut events: Vec<String> = Vec::new();
        let format = self.session.wire_format();
        for msg in self.session.drain_outbox() {
            match msg.encode_payload(format) {
                Ok(data) => {
                    self.session.count_sent(data.len(), self.now);
                    send.push(Outgoing {
                        channel: msg.channel().label(),
                        data,
                    });
                }
                Err(e) => events.push(format!("could not encode a message: {e}")),
            }
        }
        for event in self.session.drain_events() {
            match &event {
                GuestEvent::HostBuildDiffers(build) => self.host_build = Some(build.clone()),
                // The token stays out of the page's diagnostics.
                GuestEvent::Admitted { player, .. } => {
                    events.push(format!("admitted as {player}"));
                    continue;
                }
                _ => {}
            }
            events.push(format!("{event:?}"));
        }
        Output {
            send,
            events,
            wake_at_ms: self.session.next_wakeup().map(|d| d.as_secs_f64() * 1000.0),
            backlog: self.session.has_backlog(),
        }
    }

    /// The session's state for the page.
    pub fn status(&self) -> Status {
        let s = &self.session;
        let engine = s.engine();
        let stats = s.stats();
        Status {
            phase: match s.phase() {
                GuestPhase::AwaitHello => "await-hello",
                GuestPhase::AwaitInit => "await-init",
                GuestPhase::ReceivingMap => "receiving-map",
                GuestPhase::Running => "running",
                GuestPhase::Ended => "ended",
            },
            me: s.player_id().map(|id| id.to_string()),
            level_epoch: s.level_epoch(),
            tick: engine.map_or(0, |e| e.tick()),
            view_tick: s.predicted_tick().or(engine.map(|e| e.tick())).unwrap_or(0),
            difficulty: engine.map(|e| e.difficulty().as_str()),
            roster: engine.map_or_else(Vec::new, |e| {
                e.roster().iter().map(|id| id.to_string()).collect()
            }),
            names: s
                .names()
                .iter()
                .map(|(id, n)| (id.to_string(), n.clone()))
                .collect(),
            host_lost: s.host_lost(),
            last_snapshot_tick: s.snapshot_hashes().last().map(|(_, tick, _)| *tick),
            stats: StatsView {
                bundles_applied: stats.bundles_applied,
                snapshots_applied: stats.snapshots_applied,
                snapshot_mismatches: stats.snapshot_mismatches,
                hard_snaps: stats.hard_snaps,
                transitions: stats.transitions,
                out_of_sequence: stats.out_of_sequence,
                hash_reports: stats.hash_reports,
                bad_messages: stats.bad_messages,
                resyncs: stats.resyncs,
            },
            end: s.ended().map(|end| self.end_view(end)),
            joining: s.joining(),
            joined_at_tick: s.joined_at().map(|(_, tick)| tick),
            spectator: s.is_spectator(),
            spectators: s.spectators().to_vec(),
            waiting_room: s.waiting_room().map(|w| WaitingRoomView {
                players: w.players.clone(),
                max_players: w.max_players,
                guests_needed: w.guests_needed,
                you: w.you,
            }),
            rejoin_token: s.rejoin_token().map(str::to_owned),
            resumed: s.resumed(),
        }
    }

    fn end_view(&self, end: &GuestEnd) -> EndView {
        match end {
            GuestEnd::Ended(reason) => EndView::Ended {
                reason: kebab(reason),
                scores: self.session.final_scores().to_vec(),
                provisional: self.session.final_scores().is_empty(),
            },
            GuestEnd::Refused(reason, detail) => EndView::Refused {
                reason: kebab(reason),
                detail: detail.clone(),
                host_build: self.host_build.clone(),
            },
            GuestEnd::SetupFailed(detail) => EndView::SetupFailed {
                detail: detail.clone(),
            },
            GuestEnd::Failed(detail) => EndView::Failed {
                detail: detail.clone(),
            },
        }
    }

    /// The world to draw now (`None` before setup completed): the
    /// predicted view, this player's pending inputs run ahead of the
    /// confirmed engine ([`GuestSession::predicted`]), or the confirmed
    /// engine when nothing is pending.
    /// The netgraph at `now_ms` (the page adds frames per second and the
    /// transport's round trip).
    pub fn netgraph(&self, now_ms: f64) -> GuestNetgraph {
        self.session.netgraph(self.now.max(millis(now_ms)))
    }

    /// The world to draw at `now_ms`.
    pub fn view(&self, now_ms: f64) -> Option<View> {
        let now = self.now.max(millis(now_ms));
        let confirmed = self.session.engine()?;
        let predicted = self.session.predicted();
        let mut view = View::of(
            predicted.as_ref().unwrap_or(confirmed),
            self.session.player_id(),
            self.session.names(),
            |id| self.session.render_offset(id, now),
        );
        view.confirmed_tick = confirmed.tick();
        Some(view)
    }

    /// The underlying session (native tests).
    pub fn session(&self) -> &GuestSession<RaycasterEngine> {
        &self.session
    }
}
