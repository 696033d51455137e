//! [`WebHost`]: `netcode`'s host session over the reference engine, with
//! the plain-data interface a browser host drives (the daemon's host code,
//! in the player's tab).
//!
//! The page's worker loop is the daemon's driver loop: hand the session
//! each new guest connection ([`WebHost::add_guest`]), feed every
//! data-channel message and connection change with the current time, poll,
//! send what [`WebHost::output`] returns (a message for several guests is
//! encoded once), and wake up at its `wakeAtMs`. The host's own player takes
//! its input from [`WebHost::set_input`] through the same input delay as
//! every guest's, or from the engine's bot.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engine::plan::GeneratedCampaign;
use engine::wire::input::InputSnapshot;
use engine::wire::raycaster::Settings;
use engine::{Difficulty, Game, RaycasterEngine};
use game_api::PlayerId;
use netcode::host::{HostConfig, HostOutput, HostPhase, HostSession, SessionReport};
use netcode::link::{ConnectionState, Payload, PeerEvent};
use netcode::netgraph::HostNetgraph;
use protocol::BUILD_VERSION;
use protocol::peer::{Channel, ScoreRow};
use serde::{Deserialize, Serialize};

use crate::guest::{kebab, millis};
use crate::view::View;

/// Most levels a browser-hosted campaign may have.
pub const MAX_LEVELS: u32 = 50;
/// Most guests a browser host waits for before it starts on its own.
pub const MAX_START_WHEN: usize = 15;
/// The host player's id in every roster.
pub const HOST_PLAYER_ID: &str = "host";
/// Safety stop per level, ticks (the daemon's default too).
const MAX_TICKS_PER_LEVEL: u64 = 20_000;

/// How the page configures a host.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebHostConfig {
    /// Build identifier guests must match (default: this module's build).
    #[serde(default)]
    pub build_version: Option<String>,
    /// The host player's display name as typed.
    #[serde(default)]
    pub display_name: String,
    /// Let the engine's bot drive the host's player (tests, testers).
    #[serde(default)]
    pub bot: bool,
    /// Campaign seed.
    pub seed: u32,
    /// Levels in the generated campaign (1 to [`MAX_LEVELS`]).
    pub levels: u32,
    /// Session difficulty (default normal).
    #[serde(default)]
    pub difficulty: Difficulty,
    /// Start on its own once this many guests are in; `None`: only
    /// [`WebHost::start`] starts it.
    #[serde(default)]
    pub start_when: Option<usize>,
    /// Admit players into the running game after the start (default on).
    #[serde(default = "late_join_default")]
    pub late_join: bool,
    /// Most guests at once (the lobby entry's seats); beyond it a hello is
    /// refused with `session-full`. `None`: no cap.
    #[serde(default)]
    pub max_guests: Option<usize>,
    /// Most spectators at once (default
    /// [`netcode::host::DEFAULT_MAX_SPECTATORS`]; 0: nobody may watch).
    #[serde(default = "max_spectators_default")]
    pub max_spectators: usize,
}

fn max_spectators_default() -> usize {
    netcode::host::DEFAULT_MAX_SPECTATORS
}

fn late_join_default() -> bool {
    true
}

/// One message to send.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HostOutgoing {
    /// The guest slots to send it to.
    pub slots: Vec<usize>,
    /// Data channel label: `input` or `reconciliation`.
    pub channel: &'static str,
    /// The message: a string, or a binary message's bytes as a list of
    /// numbers (`web/lib/wasm.js` makes it a `Uint8Array`).
    pub data: Payload,
}

/// What the page must do after feeding the session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostOutputView {
    /// Messages to send, in order.
    pub send: Vec<HostOutgoing>,
    /// Connections to close once what was sent before has gone out.
    pub close: Vec<usize>,
    /// Diagnostics since the last call (for the console).
    pub events: Vec<String>,
    /// When to poll next without an event, in the caller's milliseconds.
    pub wake_at_ms: Option<f64>,
}

/// How the session ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostEndView {
    /// The spec's end reason (`completed`, `team-eliminated`, `host-shutdown`).
    pub reason: String,
    /// The end table as sent to the guests.
    pub scores: Vec<ScoreRow>,
}

/// The session's state for the host page.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostStatus {
    /// `lobby`, `setup`, `running`, `transition` or `ended`.
    pub phase: &'static str,
    /// The host player's id.
    pub me: &'static str,
    /// Level epoch (1 for the first level, 0 before setup).
    pub level_epoch: u32,
    /// Levels in the campaign.
    pub level_count: u32,
    /// Engine tick (0 before setup).
    pub tick: u64,
    /// Roster ids of the level, sorted.
    pub roster: Vec<String>,
    /// Every admitted player's name.
    pub names: BTreeMap<String, String>,
    /// Guests admitted and connected.
    pub guests_present: usize,
    /// Their display names, in arrival order.
    pub guest_names: Vec<String>,
    /// Their smoothed round trips in the same order, ms (null until measured).
    pub guest_rtt_ms: Vec<Option<f64>>,
    /// Seats taken, connections still in their handshake included.
    pub seats_taken: usize,
    /// Guest connections handed to the session so far.
    pub connections: usize,
    /// The spectators watching, by display name in arrival order.
    pub spectators: Vec<String>,
    /// Ticks simulated, all levels.
    pub ticks: u64,
    /// How it ended, once it has.
    pub end: Option<HostEndView>,
}

/// A host session for the browser.
#[derive(Debug)]
pub struct WebHost {
    session: HostSession<RaycasterEngine>,
    /// The latest time seen: time never goes backwards for the session.
    now: Duration,
}

impl WebHost {
    /// A host from the page's JSON configuration.
    pub fn new(config_json: &str) -> Result<Self, String> {
        let c: WebHostConfig =
            serde_json::from_str(config_json).map_err(|e| format!("host configuration: {e}"))?;
        if !(1..=MAX_LEVELS).contains(&c.levels) {
            return Err(format!(
                "levels must be 1 to {MAX_LEVELS}, not {}",
                c.levels
            ));
        }
        if c.start_when.is_some_and(|n| n > MAX_START_WHEN) {
            return Err(format!("startWhen must be at most {MAX_START_WHEN}"));
        }
        let config = HostConfig {
            build_version: c.build_version.unwrap_or_else(|| BUILD_VERSION.to_owned()),
            plan: Arc::new(GeneratedCampaign {
                seed: c.seed,
                levels: c.levels,
            }),
            settings: Settings {
                difficulty: c.difficulty,
            },
            host_player: Some((PlayerId::new(HOST_PLAYER_ID), c.display_name)),
            host_bot: c.bot,
            bots: 0,
            expected_guests: c.start_when.unwrap_or(usize::MAX),
            lobby_wait: None,
            max_ticks_per_level: Some(MAX_TICKS_PER_LEVEL),
            late_join: c.late_join,
            max_guests: c.max_guests,
            max_spectators: c.max_spectators,
            ..HostConfig::default()
        };
        Ok(Self {
            session: HostSession::new(config),
            now: Duration::ZERO,
        })
    }

    fn advance_clock(&mut self, now_ms: f64) -> Duration {
        self.now = self.now.max(millis(now_ms));
        self.now
    }

    /// A new guest connection (its data channels are open); returns its
    /// slot. The session sends its hello at once.
    pub fn add_guest(&mut self, now_ms: f64) -> usize {
        let now = self.advance_clock(now_ms);
        self.session.add_guest(now)
    }

    fn known(&self, slot: usize) -> Result<(), String> {
        if slot < self.session.connections() {
            Ok(())
        } else {
            Err(format!("no guest connection {slot}"))
        }
    }

    /// A message arrived from guest `slot` on data channel `channel`.
    pub fn on_message(
        &mut self,
        slot: usize,
        channel: Channel,
        payload: Payload,
        now_ms: f64,
    ) -> Result<(), String> {
        self.known(slot)?;
        let now = self.advance_clock(now_ms);
        self.session
            .on_event(slot, PeerEvent::Message(channel, payload), now);
        Ok(())
    }

    /// Guest `slot`'s connection changed state.
    pub fn on_state(
        &mut self,
        slot: usize,
        state: ConnectionState,
        now_ms: f64,
    ) -> Result<(), String> {
        self.known(slot)?;
        let now = self.advance_clock(now_ms);
        self.session.on_event(slot, PeerEvent::State(state), now);
        Ok(())
    }

    /// Runs deadlines and every due tick.
    pub fn poll(&mut self, now_ms: f64) {
        let now = self.advance_clock(now_ms);
        self.session.poll(now);
    }

    /// Starts the level now with whoever is in (the Start button).
    pub fn start(&mut self, now_ms: f64) {
        let now = self.advance_clock(now_ms);
        self.session.start_now(now);
        self.session.poll(now);
    }

    /// Ends the session now (the host leaves): guests get `host-shutdown`.
    pub fn shutdown(&mut self) {
        self.session.shutdown();
    }

    /// The host player's input from now on (JSON `InputSnapshot`;
    /// sanitized by the session, delayed like every guest's).
    pub fn set_input(&mut self, input_json: &str) -> Result<(), String> {
        let input: InputSnapshot =
            serde_json::from_str(input_json).map_err(|e| format!("input: {e}"))?;
        self.session.set_local_input(input);
        Ok(())
    }

    /// Takes what to send, what to close and what happened.
    pub fn output(&mut self) -> HostOutputView {
        let mut send = Vec::new();
        let mut close = Vec::new();
        let mut events: Vec<String> = Vec::new();
        for out in self.session.drain_outbox() {
            let (slots, msg, format) = match out {
                HostOutput::Send(slot, msg, format) => (vec![slot], msg, format),
                HostOutput::Broadcast(slots, msg, format) => (slots, msg, format),
                HostOutput::Close(slot) => {
                    close.push(slot);
                    continue;
                }
            };
            match msg.encode_payload(format) {
                Ok(data) => {
                    for &slot in &slots {
                        self.session.count_sent(slot, data.len(), self.now);
                    }
                    send.push(HostOutgoing {
                        slots,
                        channel: msg.channel().label(),
                        data,
                    });
                }
                Err(e) => events.push(format!("could not encode a message: {e}")),
            }
        }
        for event in self.session.drain_events() {
            // Ticks and round trips are in the status; the rest is worth a line.
            match event {
                netcode::host::HostEvent::Ticked { .. }
                | netcode::host::HostEvent::RoundTrip { .. } => {}
                netcode::host::HostEvent::OverBudget(slot) => events.push(format!(
                    "guest {slot} sent more than its budget of messages or bytes: disconnected"
                )),
                event => events.push(format!("{event:?}")),
            }
        }
        HostOutputView {
            send,
            close,
            events,
            wake_at_ms: self.session.next_wakeup().map(|d| d.as_secs_f64() * 1000.0),
        }
    }

    /// The session's state for the page.
    pub fn status(&self) -> HostStatus {
        let s = &self.session;
        let engine = s.engine();
        HostStatus {
            phase: match s.phase() {
                HostPhase::Lobby => "lobby",
                HostPhase::Setup => "setup",
                HostPhase::Running => "running",
                HostPhase::Transition => "transition",
                HostPhase::Ended => "ended",
            },
            me: HOST_PLAYER_ID,
            level_epoch: s.level_epoch(),
            level_count: s.level_count(),
            tick: engine.map_or(0, |e| e.tick()),
            roster: s.roster().iter().map(|id| id.to_string()).collect(),
            names: s
                .names()
                .iter()
                .map(|(id, n)| (id.to_string(), n.clone()))
                .collect(),
            guests_present: s.guests_present(),
            guest_names: s.guest_names(),
            guest_rtt_ms: s
                .guest_links()
                .into_iter()
                .map(|(_, rtt)| rtt.map(|d| d.as_secs_f64() * 1000.0))
                .collect(),
            seats_taken: s.seats_taken(),
            connections: s.connections(),
            spectators: s.spectator_names(),
            ticks: s.stats().ticks,
            end: s.ended().map(|reason| HostEndView {
                reason: kebab(&reason),
                scores: s.scores(),
            }),
        }
    }

    /// The netgraph at `now_ms`: every guest's link.
    pub fn netgraph(&self, now_ms: f64) -> HostNetgraph {
        self.session.netgraph(self.now.max(millis(now_ms)))
    }

    /// The operator's report: per player kind, hash reports, desyncs and
    /// held inputs (the daemon's `session-report` line).
    pub fn report(&self) -> SessionReport {
        self.session.report()
    }

    /// The world to draw, seen by the host's player (`None` before
    /// setup): the engine run ahead through the host player's delayed
    /// inputs ([`HostSession::predicted`]), so its own moves show at once.
    pub fn view(&self) -> Option<View> {
        let confirmed = self.session.engine()?;
        let predicted = self.session.predicted();
        let me = PlayerId::new(HOST_PLAYER_ID);
        let mut view = View::of(
            predicted.as_ref().unwrap_or(confirmed),
            Some(&me),
            self.session.names(),
            |_| (0.0, 0.0),
        );
        view.confirmed_tick = confirmed.tick();
        Some(view)
    }

    /// The underlying session (native tests).
    pub fn session(&self) -> &HostSession<RaycasterEngine> {
        &self.session
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::WebGuest;

    fn host(extra: &str) -> WebHost {
        WebHost::new(&format!(
            r#"{{"displayName":"Hostess","bot":true,"seed":7,"levels":1{extra}}}"#
        ))
        .expect("host")
    }

    /// The channel with data channel label `label`.
    fn channel_of(label: &str) -> Channel {
        Channel::ALL
            .into_iter()
            .find(|c| c.label() == label)
            .expect("a known label")
    }

    /// Delivers everything each side wants sent, until both are quiet.
    fn pump(h: &mut WebHost, guests: &mut [(usize, &mut WebGuest)], now_ms: f64) {
        for _ in 0..50 {
            h.poll(now_ms);
            let out = h.output();
            let mut moved = false;
            for msg in out.send {
                for (slot, g) in guests.iter_mut() {
                    if msg.slots.contains(slot) {
                        g.on_message(channel_of(msg.channel), msg.data.clone(), now_ms);
                        moved = true;
                    }
                }
            }
            for (slot, g) in guests.iter_mut() {
                g.poll(now_ms);
                for m in g.output().send {
                    h.on_message(*slot, channel_of(m.channel), m.data, now_ms)
                        .expect("known slot");
                    moved = true;
                }
            }
            if !moved {
                return;
            }
        }
    }

    #[test]
    fn bad_configurations_are_errors_not_panics() {
        for bad in [
            "",
            "{}",
            r#"{"seed":1,"levels":0}"#,
            r#"{"seed":1,"levels":51}"#,
            r#"{"seed":1,"levels":1,"startWhen":99}"#,
            r#"{"seed":1,"levels":1,"difficulty":"impossible"}"#,
            r#"{"seed":1,"levels":1,"surprise":true}"#,
        ] {
            assert!(WebHost::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_guest_joins_plays_and_the_host_counts_its_hash_reports() {
        let mut h = host(r#","startWhen":1"#);
        let mut g = WebGuest::new(r#"{"displayName":"Guest","bot":true}"#).expect("guest");
        assert!(h.on_message(0, Channel::Input, "{}".into(), 0.0).is_err());
        let slot = h.add_guest(0.0);
        assert_eq!(h.status().phase, "lobby");
        g.on_state(ConnectionState::Connected, 0.0);
        let mut t = 0.0;
        pump(&mut h, &mut [(slot, &mut g)], t);
        assert_eq!(h.status().guests_present, 1);
        assert_eq!(h.status().guest_names, vec!["Guest"]);
        // Ten simulated seconds in 10 ms steps.
        for _ in 0..1_000 {
            t += 10.0;
            pump(&mut h, &mut [(slot, &mut g)], t);
        }
        let s = h.status();
        assert_eq!(s.phase, "running", "{s:?}");
        assert_eq!(s.roster, vec!["guest-1", "host"]);
        assert_eq!(s.names["host"], "Hostess");
        assert!(s.tick >= 290, "ticks at 30 Hz over ten seconds: {}", s.tick);
        let report = h.report();
        let guest = report
            .players
            .iter()
            .find(|p| p.player_id.as_str() == "guest-1")
            .expect("guest in the report");
        assert!(guest.hash_reports > 0, "{report:?}");
        assert_eq!(guest.desyncs, 0, "{report:?}");
        let view = h.view().expect("a view once running");
        assert_eq!(view.me.as_deref(), Some("host"));
        assert_eq!(view.players.len(), 2);
        // Both views are predicted: they run ahead of the shared simulation
        // through their player's own pending inputs.
        assert_eq!(view.confirmed_tick, s.tick);
        assert!(
            view.tick > view.confirmed_tick,
            "host view at {}",
            view.tick
        );
        let seen = g.view(t).expect("the guest's view");
        assert_eq!(seen.confirmed_tick, g.status().tick);
        assert!(
            seen.tick > seen.confirmed_tick,
            "guest view at {}",
            seen.tick
        );
        assert_eq!(g.status().view_tick, seen.tick);
    }

    #[test]
    fn start_freezes_the_roster_and_shutdown_ends_with_the_table() {
        let mut h = host("");
        h.poll(1_000.0);
        assert_eq!(h.status().phase, "lobby", "no startWhen: waits for start");
        h.start(2_000.0);
        h.poll(3_000.0);
        let s = h.status();
        assert_eq!(s.phase, "running");
        assert_eq!(s.roster, vec!["host"]);
        h.shutdown();
        let end = h.status().end.expect("ended");
        assert_eq!(end.reason, "host-shutdown");
        assert_eq!(end.scores.len(), 1);
        assert_eq!(h.output().wake_at_ms, None);
    }

    #[test]
    fn the_host_players_input_moves_it_after_the_input_delay() {
        let mut h = WebHost::new(r#"{"seed":3,"levels":1}"#).expect("host");
        h.start(0.0);
        h.poll(0.0);
        let start = h.view().expect("view").players[0].clone();
        h.set_input(r#"{"moveForward":true}"#).expect("input");
        h.poll(2_000.0);
        let moved = h.view().expect("view").players[0].clone();
        let dist = (moved.x - start.x).hypot(moved.y - start.y);
        assert!(dist > 0.5, "moved {dist} tiles");
        assert!(h.set_input("not json").is_err());
    }
}
