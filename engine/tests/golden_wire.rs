//! The wire as released peers and recorded replays speak it: one message of
//! every peer-message variant, built from a generated level and a real run
//! of the raycaster, written as JSON and (for the messages the `compact`
//! feature covers) in the compact form, plus the world hash of fixed seeds
//! at fixed ticks. Every line must stay byte for byte what
//! `tests/golden/wire.txt` holds, and every line there must decode to the
//! message it was written from.
//!
//! This guards the game-boundary work (issue 47): the peer envelope and the
//! raycaster's wire types move between crates and become generic, and none
//! of that may change a byte on the wire or a hash. A deliberate change of
//! the wire rewrites the file with `CAMPFIRE_BLESS_GOLDEN=1 cargo test -p
//! engine --test golden_wire` and shows up in review as a diff of it.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use engine::Game;
use engine::level_gen::generate;
use engine::wire::TickInput;
use engine::wire::difficulty::Difficulty;
use engine::wire::input::InputSnapshot;
use engine::wire::raycaster::{CampaignSeed, LevelSeed, Settings};
use engine::wire::{
    GuestMessage, HostMessage, JoinPayload, RelayLevel, SessionInit, TickInputBundle, TickInputs,
    TransitionPayload,
};
use game_api::PlayerId;
use protocol::chunk::split;
use protocol::peer::{
    EndReason, GuestHello, JoinPoint, LinkHealth, RefusalReason, RosterAdd, ScoreRow,
};
use protocol::tick::FIXED_DT;
use protocol::wire::WireFormat;

use common::{bots, engine, noisy_inputs};

fn id(name: &str) -> PlayerId {
    PlayerId::new(name)
}

/// Every feature name a host offers today, in the order it offers them.
fn features() -> Vec<String> {
    [
        "ping",
        "input-delay",
        "redundant-inputs",
        "compact",
        "spectators",
        "waiting-room",
        "relay",
        "resync",
    ]
    .map(String::from)
    .to_vec()
}

fn delays(roster: &[PlayerId]) -> BTreeMap<PlayerId, u64> {
    roster
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), 2 + i as u64))
        .collect()
}

fn names(roster: &[PlayerId]) -> BTreeMap<PlayerId, String> {
    roster
        .iter()
        .map(|p| (p.clone(), format!("Name of {}", p.as_str())))
        .collect()
}

/// A sanitized input with every field the shared stream carries set.
fn busy_input() -> InputSnapshot {
    InputSnapshot {
        move_forward: true,
        strafe_right: true,
        mouse_delta_x: -12.375,
        fire: true,
        use_: true,
        weapon_select: Some(2),
        ..InputSnapshot::NEUTRAL
    }
}

/// What a three-player level looks like after `ticks` ticks of bots with
/// scripted noise: the engine, and the last tick's inputs.
fn run(ticks: u64) -> (engine::RaycasterEngine, BTreeMap<PlayerId, InputSnapshot>) {
    let mut e = engine(7, 1, 3, 99);
    let b = bots(&e);
    let mut last = BTreeMap::new();
    for _ in 0..ticks {
        last = noisy_inputs(&e, &b);
        e.advance(&last, &[]);
    }
    (e, last)
}

/// The second level of campaign 7 for `e`'s players, with `input_delays`.
fn second_level(
    e: &engine::RaycasterEngine,
    input_delays: BTreeMap<PlayerId, u64>,
) -> TransitionPayload {
    TransitionPayload {
        level_index: 1,
        head: LevelSeed {
            gameplay_seed: 4_000_000_007,
        },
        roster: e.roster(),
        player_count: 3,
        carryovers: e.carryovers(),
        body: generate(7, 2, 3),
        input_delays,
    }
}

/// Every host message, named.
fn host_messages() -> Vec<(&'static str, HostMessage)> {
    let (mut e, inputs) = run(120);
    let roster = e.roster();
    let transition = second_level(&e, delays(&roster));
    let (level_chunks, level_end) = split(&serde_json::to_string(&transition).unwrap());
    let join = JoinPayload::new(generate(7, 1, 3), &e.save_exact().unwrap());
    let (join_chunks, join_end) = split(&serde_json::to_string(&join).unwrap());
    let mut removed = roster.clone();
    removed.truncate(1);
    let bundle = TickInputBundle {
        tick: e.tick(),
        dt: FIXED_DT,
        level_epoch: 3,
        inputs: inputs.clone(),
        held_input_fallback: vec![roster[1].clone()],
        roster_remove: Some(removed),
        roster_add: Some(BTreeMap::from([(
            roster[2].clone(),
            RosterAdd {
                input_delay: 4,
                name: "Late".into(),
            },
        )])),
    };
    let plain = TickInputBundle {
        held_input_fallback: vec![],
        roster_remove: None,
        roster_add: None,
        ..bundle.clone()
    };
    let snapshot = engine::wire::ReconciliationSnapshotMessage {
        level_epoch: 3,
        snapshot: e.snapshot(),
    };
    let scores = e
        .scores()
        .into_iter()
        .enumerate()
        .map(|(i, (player_id, s))| ScoreRow {
            name: format!("Name {i}"),
            player_id,
            kill_score: s.kill_score,
            kills: s.kills,
            disconnected: i == 1,
            link: LinkHealth {
                desyncs: i as u32,
                persistent_desyncs: 0,
                held_inputs: 17 * i as u64,
            },
        })
        .collect();
    vec![
        (
            "host-hello",
            HostMessage::HostHello {
                build_version: "campfire-0.1.0".into(),
                protocol_version: 1,
                features: features(),
                game: None,
            },
        ),
        (
            "host-hello-bare",
            HostMessage::HostHello {
                build_version: "campfire-0.1.0".into(),
                protocol_version: 1,
                features: vec![],
                game: None,
            },
        ),
        (
            "join-refused",
            HostMessage::JoinRefused {
                reason: RefusalReason::SessionFull,
                detail: "the session is full (8 players)".into(),
            },
        ),
        (
            "session-init",
            HostMessage::SessionInit(SessionInit {
                roster: roster.clone(),
                your_player_id: roster[1].clone(),
                tick_rate_hz: 30,
                fixed_dt: FIXED_DT,
                input_delay_ticks: 3,
                reconcile_interval_ticks: 30,
                head: LevelSeed {
                    gameplay_seed: 2_660_163_510,
                },
                settings: Settings {
                    difficulty: Difficulty::Hard,
                },
                player_count: 3,
                player_names: names(&roster),
                input_delays: delays(&roster),
                join: None,
                rejoin_token: Some("tok.en".into()),
                spectator: false,
            }),
        ),
        (
            "session-init-late",
            HostMessage::SessionInit(SessionInit {
                roster: roster.clone(),
                your_player_id: id("spectator-1"),
                tick_rate_hz: 30,
                fixed_dt: FIXED_DT,
                input_delay_ticks: 1,
                reconcile_interval_ticks: 30,
                head: LevelSeed { gameplay_seed: 5 },
                settings: Settings {
                    difficulty: Difficulty::Easy,
                },
                player_count: 3,
                player_names: names(&roster),
                input_delays: BTreeMap::new(),
                join: Some(JoinPoint {
                    level_epoch: 3,
                    level_index: 0,
                    tick: e.tick(),
                    resumed: true,
                }),
                rejoin_token: None,
                spectator: true,
            }),
        ),
        ("map-chunk", HostMessage::MapChunk(join_chunks[0].clone())),
        ("map-end", HostMessage::MapEnd(join_end)),
        ("tick-input-bundle", HostMessage::TickInputBundle(bundle)),
        (
            "tick-input-bundle-plain",
            HostMessage::TickInputBundle(plain),
        ),
        (
            "reconciliation-snapshot",
            HostMessage::ReconciliationSnapshot(snapshot),
        ),
        (
            "level-transition-init",
            HostMessage::LevelTransitionInit {
                level_epoch: 4,
                level_index: 1,
            },
        ),
        (
            "level-transition-chunk",
            HostMessage::LevelTransitionChunk {
                level_epoch: 4,
                chunk: level_chunks[0].clone(),
            },
        ),
        (
            "level-transition-end",
            HostMessage::LevelTransitionEnd {
                level_epoch: 4,
                end: level_end,
            },
        ),
        (
            "ping",
            HostMessage::Ping {
                id: 4_000_000_000,
                round_trip: None,
            },
        ),
        (
            "spectators",
            HostMessage::Spectators {
                names: vec!["Watcher".into(), String::new()],
            },
        ),
        (
            "waiting-room",
            HostMessage::WaitingRoom {
                players: vec!["Host".into(), "Ada".into()],
                max_players: Some(4),
                guests_needed: Some(1),
                you: Some(1),
            },
        ),
        (
            "waiting-room-bare",
            HostMessage::WaitingRoom {
                players: vec![],
                max_players: None,
                guests_needed: None,
                you: None,
            },
        ),
        (
            "relay-authority",
            HostMessage::RelayAuthority {
                level_epoch: 3,
                player_id: roster[0].clone(),
                from_tick: 90,
                you: true,
                levels: 2,
                snapshot_interval: 300,
            },
        ),
        (
            "relay-ask-level",
            HostMessage::RelayAskLevel {
                level_epoch: 4,
                level_index: 1,
                roster: names(&roster),
                input_delays: delays(&roster),
                campaign: CampaignSeed { campaign_seed: 11 },
                levels: 2,
                settings: Settings {
                    difficulty: Difficulty::Normal,
                },
            },
        ),
        (
            "relay-ask-snapshot",
            HostMessage::RelayAskSnapshot {
                level_epoch: 3,
                tick: 300,
            },
        ),
        (
            "resync",
            HostMessage::Resync {
                level_epoch: 3,
                tick: 300,
            },
        ),
        (
            "session-end",
            HostMessage::SessionEnd {
                reason: EndReason::TeamEliminated,
                scores,
                level_epoch: 3,
                final_tick: e.tick(),
            },
        ),
    ]
}

/// Every guest message, named.
fn guest_messages() -> Vec<(&'static str, GuestMessage)> {
    let (e, inputs) = run(45);
    let roster = e.roster();
    let me = roster[1].clone();
    let start = engine(7, 2, 3, 4_000_000_007);
    let level = RelayLevel::new(
        second_level(&e, BTreeMap::new()),
        &start.save_exact().unwrap(),
    );
    vec![
        (
            "guest-hello",
            GuestMessage::GuestHello(GuestHello {
                build_version: "campfire-0.1.0".into(),
                protocol_version: 1,
                display_name: "Ada \u{1F525}".into(),
                features: features(),
                resume: Some("tok.en".into()),
                spectate: true,
            }),
        ),
        (
            "guest-hello-bare",
            GuestMessage::GuestHello(GuestHello {
                build_version: "campfire-0.1.0".into(),
                protocol_version: 1,
                display_name: String::new(),
                features: vec![],
                resume: None,
                spectate: false,
            }),
        ),
        ("setup-ack", GuestMessage::SetupAck),
        ("pong", GuestMessage::Pong { id: 7 }),
        (
            "tick-input",
            GuestMessage::TickInput(TickInput {
                tick: 47,
                player_id: me.clone(),
                input: busy_input(),
            }),
        ),
        (
            "tick-input-bot",
            GuestMessage::TickInput(TickInput {
                tick: 47,
                player_id: me.clone(),
                input: inputs[&me].clone(),
            }),
        ),
        (
            "tick-inputs",
            GuestMessage::TickInputs(TickInputs {
                player_id: me.clone(),
                level_epoch: 3,
                first_tick: 44,
                inputs: vec![InputSnapshot::NEUTRAL, busy_input(), inputs[&me].clone()],
                hash_report: None,
                snapshot_ack: None,
            }),
        ),
        (
            "level-transition-ack",
            GuestMessage::LevelTransitionAck { level_epoch: 4 },
        ),
        (
            "hash-report",
            GuestMessage::HashReport {
                tick: e.tick(),
                level_epoch: 3,
                hash: protocol::peer::WorldHash(e.world_hash()).to_string(),
            },
        ),
        (
            "relay-level",
            GuestMessage::RelayLevel {
                level_epoch: 4,
                level: Box::new(level),
            },
        ),
        (
            "relay-snapshot",
            GuestMessage::RelaySnapshot {
                level_epoch: 3,
                tick: e.tick(),
                hash: protocol::peer::WorldHash(e.world_hash()).to_string(),
                state: protocol::peer::state_to_base64(&e.save_exact().unwrap()),
            },
        ),
        (
            "relay-level-end",
            GuestMessage::RelayLevelEnd {
                level_epoch: 3,
                tick: e.tick(),
                more: true,
                scores: vec![],
                final_hash: protocol::peer::WorldHash(e.world_hash()).to_string(),
            },
        ),
    ]
}

/// The world hash of seeds at ticks, as 16 hex digits each.
fn hashes() -> String {
    let mut out = String::new();
    for seed in [1, 99, 4_000_000_007] {
        let mut e = engine(7, 1, 3, seed);
        let b = bots(&e);
        let mut at = Vec::new();
        for tick in 1..=900u64 {
            let i = noisy_inputs(&e, &b);
            e.advance(&i, &[]);
            if [1, 30, 300, 900].contains(&tick) {
                at.push(format!("{tick}={:016x}", e.world_hash()));
            }
        }
        writeln!(out, "hash\tseed {seed}\t{}", at.join(" ")).unwrap();
    }
    out
}

/// The golden text: one line per message and form, then the hashes.
fn golden() -> String {
    let mut out = String::new();
    for (name, msg) in host_messages() {
        for (form, format) in [("json", WireFormat::Json), ("compact", WireFormat::Compact)] {
            let text = msg.encode(format).unwrap();
            if form == "compact" && text.starts_with('{') {
                continue; // this message has no compact form
            }
            assert_eq!(
                HostMessage::decode(&text).unwrap(),
                msg,
                "{name} {form} decodes to what was written"
            );
            writeln!(out, "host\t{name}\t{form}\t{text}").unwrap();
        }
    }
    for (name, msg) in guest_messages() {
        for (form, format) in [("json", WireFormat::Json), ("compact", WireFormat::Compact)] {
            let text = msg.encode(format).unwrap();
            if form == "compact" && text.starts_with('{') {
                continue;
            }
            assert_eq!(
                GuestMessage::decode(&text).unwrap(),
                msg,
                "{name} {form} decodes to what was written"
            );
            writeln!(out, "guest\t{name}\t{form}\t{text}").unwrap();
        }
    }
    out.push_str(&hashes());
    out
}

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/wire.txt")
}

/// Where two texts first differ, as `line N` and a window of each.
fn first_difference(want: &str, got: &str) -> Option<String> {
    let (mut w, mut g) = (want.lines(), got.lines());
    for n in 1.. {
        match (w.next(), g.next()) {
            (None, None) => return None,
            (a, b) if a == b => continue,
            (a, b) => {
                let (a, b) = (a.unwrap_or("<none>"), b.unwrap_or("<none>"));
                let at = a
                    .bytes()
                    .zip(b.bytes())
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.len().min(b.len()));
                let window = |s: &str| {
                    let mut from = at.saturating_sub(60).min(s.len());
                    while !s.is_char_boundary(from) {
                        from -= 1;
                    }
                    let mut to = (at + 60).min(s.len());
                    while !s.is_char_boundary(to) {
                        to += 1;
                    }
                    s[from..to].to_string()
                };
                return Some(format!(
                    "line {n}, byte {at}:\n  golden: …{}…\n  now:    …{}…",
                    window(a),
                    window(b)
                ));
            }
        }
    }
    None
}

#[test]
fn the_wire_and_the_hashes_are_what_released_peers_speak() {
    let got = golden();
    let path = golden_path();
    if std::env::var_os("CAMPFIRE_BLESS_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("the golden file (bless it once)");
    if let Some(diff) = first_difference(&want, &got) {
        panic!("the wire changed at {diff}");
    }
}

#[test]
fn every_golden_line_decodes_to_a_message_that_writes_it_again() {
    let want = std::fs::read_to_string(golden_path()).expect("the golden file");
    let mut kinds = std::collections::BTreeSet::new();
    for line in want.lines().filter(|l| !l.starts_with("hash\t")) {
        let mut parts = line.splitn(4, '\t');
        let (side, name, form, text) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let format = if form == "compact" {
            WireFormat::Compact
        } else {
            WireFormat::Json
        };
        let again = match side {
            "host" => HostMessage::decode(text).unwrap().encode(format).unwrap(),
            _ => GuestMessage::decode(text).unwrap().encode(format).unwrap(),
        };
        assert_eq!(again, text, "{side} {name} {form}");
        if form == "json" {
            let tag = serde_json::from_str::<serde_json::Value>(text).unwrap()["type"].clone();
            kinds.insert(format!("{side} {}", tag.as_str().unwrap()));
        }
    }
    // One of every variant: 18 host messages, 10 guest messages.
    assert_eq!(kinds.len(), 28, "{kinds:?}");
}
