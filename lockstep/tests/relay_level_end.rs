//! What a relay session's authority may say at a level's end (issue 44):
//! its score rows count once per player of the level, without overflow,
//! and its `more` cannot run the campaign past its last level. The guests
//! are played by hand here; the relay only reads what they send.

use std::time::Duration;

use game_api::PlayerId;
use game_api::toy::{Start, Toy};
use protocol::BUILD_VERSION;
use protocol::peer::{EndReason, FEATURE_RELAY, PEER_PROTOCOL_VERSION, ScoreRow};
use protocol::tick::INPUT_DELAY_TICKS;

use lockstep::peer::{PeerEvent, PeerOutput, PeerRelay, PeerRelayConfig};
use lockstep::relay::{RelayConfig, RelayEnd, RelayPhase, Slot};

// The toy game: the relay's level-end rules are the same for any game.
type GuestMessage = protocol::peer::GuestMessage<Toy>;
type HostMessage = protocol::peer::HostMessage<Toy>;
type RelayLevel = protocol::peer::RelayLevel<Toy>;
type TransitionPayload = protocol::peer::TransitionPayload<Toy>;

/// A relay and its guests, played by hand on a virtual clock. Slot `n`
/// is `player-{n + 1}`; slot 0 is the authority.
struct Session {
    relay: PeerRelay<Toy>,
    players: usize,
    now: Duration,
}

impl Session {
    /// `players` guests in a campaign of `levels`, its first level running.
    fn running(players: usize, levels: u32) -> Session {
        let mut s = Session {
            relay: PeerRelay::new(PeerRelayConfig {
                relay: RelayConfig {
                    start_players: players,
                    ..RelayConfig::default()
                },
                levels,
                input_delay: Some(INPUT_DELAY_TICKS),
                ..PeerRelayConfig::default()
            }),
            players,
            now: Duration::ZERO,
        };
        for slot in 0..players {
            s.relay.connected(slot, None, s.now);
            s.send(
                slot,
                GuestMessage::GuestHello(protocol::peer::GuestHello {
                    build_version: BUILD_VERSION.to_owned(),
                    protocol_version: PEER_PROTOCOL_VERSION,
                    display_name: format!("guest {slot}"),
                    features: vec![FEATURE_RELAY.to_owned()],
                    resume: None,
                    spectate: false,
                }),
            );
        }
        s.relay.poll(s.now);
        assert_eq!(
            s.relay.relay().authority(),
            Some(&PlayerId::new("player-1"))
        );
        s.start_level(1, 0);
        s
    }

    fn send(&mut self, slot: Slot, msg: GuestMessage) {
        let text = msg.to_json().expect("encodes");
        self.relay.message(slot, &text.into(), self.now);
    }

    /// The authority answers the ask for level `epoch` with a level that
    /// says it is `level_index`; every guest loads it; it runs a second.
    fn start_level(&mut self, epoch: u32, level_index: u32) {
        let roster = self.relay.relay().roster();
        let payload = TransitionPayload {
            level_index,
            head: Start {
                start: u64::from(epoch),
            },
            player_count: roster.len() as u32,
            roster,
            carryovers: Default::default(),
            body: vec![],
            input_delays: Default::default(),
        };
        let level = Box::new(RelayLevel {
            payload,
            state: String::new(),
        });
        self.send(
            0,
            GuestMessage::RelayLevel {
                level_epoch: epoch,
                level,
            },
        );
        for slot in 0..self.players {
            self.send(
                slot,
                GuestMessage::LevelTransitionAck { level_epoch: epoch },
            );
        }
        self.advance(Duration::from_secs(1));
        assert_eq!(self.relay.relay().phase(), RelayPhase::Running);
    }

    fn advance(&mut self, by: Duration) {
        let until = self.now + by;
        while self.now < until {
            self.now += Duration::from_millis(10);
            self.relay.poll(self.now);
        }
    }

    /// The authority ends level `epoch` now.
    fn end_level(&mut self, epoch: u32, more: bool, scores: Vec<ScoreRow>) {
        let tick = self.relay.relay().next_tick();
        let end = GuestMessage::RelayLevelEnd {
            level_epoch: epoch,
            tick,
            more,
            scores,
            final_hash: format!("{:016x}", 0),
        };
        self.send(0, end);
    }

    /// Every message the relay sent since the last call.
    fn sent(&mut self) -> Vec<HostMessage> {
        self.relay
            .drain_outbox()
            .into_iter()
            .filter_map(|out| match out {
                PeerOutput::Send(_, msg, _) | PeerOutput::Broadcast(_, msg, _) => Some(msg),
                PeerOutput::Close(_) => None,
            })
            .collect()
    }

    /// Why the authority's messages were bad, since the last call.
    fn bad_messages(&mut self) -> Vec<String> {
        self.relay
            .drain_events()
            .into_iter()
            .filter_map(|e| match e {
                PeerEvent::BadMessage(0, why) => Some(why),
                _ => None,
            })
            .collect()
    }
}

fn row(player: &str, kill_score: u32, kills: u32) -> ScoreRow {
    ScoreRow {
        player_id: PlayerId::new(player),
        name: String::new(),
        kill_score,
        kills,
        disconnected: false,
        link: Default::default(),
    }
}

#[test]
fn an_authoritys_score_rows_count_once_per_player_of_the_level_and_saturate() {
    let mut s = Session::running(3, 2);
    // Dropped mid-level and removed when its grace ran out: still a
    // player of the level, whose score counts.
    s.relay.closed(2, s.now);
    s.advance(RelayConfig::default().grace + Duration::from_secs(1));
    assert_eq!(s.relay.relay().roster().len(), 2);
    let mut rows = vec![
        row("player-1", u32::MAX - 1, 1),
        row("player-1", 1_000, 1_000),
        row("player-3", 7, 2),
    ];
    rows.extend((0..1_000).map(|i| row(&format!("ghost-{i}"), u32::MAX, u32::MAX)));
    s.end_level(1, true, rows);
    let bad = s.bad_messages();
    assert!(
        bad.len() == 1 && bad[0].starts_with("1001 score rows"),
        "{bad:?}"
    );

    s.start_level(2, 1);
    s.end_level(
        2,
        false,
        vec![row("player-1", u32::MAX, u32::MAX), row("player-2", 3, 0)],
    );
    assert_eq!(s.relay.relay().ended(), Some(RelayEnd::Completed));
    let table: Vec<(String, u32, u32)> = s
        .relay
        .scores()
        .into_iter()
        .map(|r| (r.player_id.as_str().to_owned(), r.kill_score, r.kills))
        .collect();
    assert_eq!(
        table,
        [
            ("player-1".to_owned(), u32::MAX, u32::MAX),
            ("player-2".to_owned(), 3, 0),
            ("player-3".to_owned(), 7, 2),
        ]
    );
}

#[test]
fn more_after_the_campaigns_last_level_ends_the_session_as_completed() {
    let mut s = Session::running(2, 2);
    s.end_level(1, true, vec![]);
    assert!(
        s.sent()
            .iter()
            .any(|m| matches!(m, HostMessage::RelayAskLevel { level_index: 1, .. })),
        "the campaign's second level is asked"
    );
    // The authority says the last level is the first again, and that
    // another follows it.
    s.start_level(2, 0);
    s.end_level(2, true, vec![row("player-2", 5, 1)]);

    let sent = s.sent();
    assert!(
        !sent
            .iter()
            .any(|m| matches!(m, HostMessage::RelayAskLevel { .. })),
        "no third level is asked: {sent:?}"
    );
    let ends: Vec<&HostMessage> = sent
        .iter()
        .filter(|m| matches!(m, HostMessage::SessionEnd { .. }))
        .collect();
    assert!(!ends.is_empty());
    for end in ends {
        assert!(
            matches!(
                end,
                HostMessage::SessionEnd {
                    reason: EndReason::Completed,
                    level_epoch: 2,
                    ..
                }
            ),
            "{end:?}"
        );
    }
    assert_eq!(s.relay.relay().ended(), Some(RelayEnd::Completed));
    assert_eq!(s.relay.relay().epoch(), 2);
    assert_eq!(s.relay.scores().len(), 1, "the last level's scores count");
    assert_eq!(
        s.bad_messages(),
        ["another level after the campaign's last"]
    );
}
