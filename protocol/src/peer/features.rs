//! The hello features a connection took up: the ones both sides named
//! (the host offers in `host-hello`, the guest names back in
//! `guest-hello`; anything only one side named does not count), and the
//! names of every feature with the constants that come with them.

#[allow(unused_imports)] // doc links
use super::{Channel, GuestMessage, HostMessage};
use crate::wire::WireFormat;

/// A hello feature campfire knows, to ask a connection's [`Features`]
/// about without comparing names: each is one bit there. Its wire name and
/// what it means are the `FEATURE_` constant's of the same name. A new
/// feature goes at the end, here and in [`Feature::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// [`FEATURE_PING`].
    Ping,
    /// [`FEATURE_INPUT_DELAY`].
    InputDelay,
    /// [`FEATURE_REDUNDANT_INPUTS`].
    RedundantInputs,
    /// [`FEATURE_COMPACT`].
    Compact,
    /// [`FEATURE_BINARY`].
    Binary,
    /// [`FEATURE_SPECTATORS`].
    Spectators,
    /// [`FEATURE_WAITING_ROOM`].
    WaitingRoom,
    /// [`FEATURE_RELAY`].
    Relay,
    /// [`FEATURE_RESYNC`].
    Resync,
    /// [`FEATURE_DELTA_SNAPSHOTS`].
    DeltaSnapshots,
    /// [`FEATURE_PLACED_BUNDLES`].
    PlacedBundles,
    /// [`FEATURE_ROUND_TRIP`].
    RoundTrip,
    /// [`FEATURE_FOLDED_REPORTS`].
    FoldedReports,
    /// [`FEATURE_INPUT_RUNS`].
    InputRuns,
}

impl Feature {
    /// Every feature campfire knows.
    pub const ALL: [Feature; 14] = [
        Feature::Ping,
        Feature::InputDelay,
        Feature::RedundantInputs,
        Feature::Compact,
        Feature::Binary,
        Feature::Spectators,
        Feature::WaitingRoom,
        Feature::Relay,
        Feature::Resync,
        Feature::DeltaSnapshots,
        Feature::PlacedBundles,
        Feature::RoundTrip,
        Feature::FoldedReports,
        Feature::InputRuns,
    ];

    /// The name a hello lists it by.
    pub const fn name(self) -> &'static str {
        match self {
            Feature::Ping => "ping",
            Feature::InputDelay => "input-delay",
            Feature::RedundantInputs => "redundant-inputs",
            Feature::Compact => "compact",
            Feature::Binary => "binary",
            Feature::Spectators => "spectators",
            Feature::WaitingRoom => "waiting-room",
            Feature::Relay => "relay",
            Feature::Resync => "resync",
            Feature::DeltaSnapshots => "delta-snapshots",
            Feature::PlacedBundles => "placed-bundles",
            Feature::RoundTrip => "round-trip",
            Feature::FoldedReports => "folded-reports",
            Feature::InputRuns => "input-runs",
        }
    }

    /// The feature a hello names `name`, if campfire knows it.
    pub fn named(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Its bit in [`Features`] (one `u32` holds them all).
    const fn bit(self) -> u32 {
        const _: () = assert!(Feature::ALL.len() <= u32::BITS as usize);
        1 << self as u32
    }
}

/// Hello feature: the host probes the round trip with `ping`, the guest
/// answers `pong` (issue 15). Peers without it never see either message.
pub const FEATURE_PING: &str = Feature::Ping.name();

/// Hello feature: each player's input delay is fitted to its link (issue
/// 15) instead of the spec's fixed `INPUT_DELAY_TICKS`. The host uses it
/// only when every guest of the session took it up, since every peer's
/// engine must know every player's delay; `SessionInit::input_delays` and
/// `TransitionPayload::input_delays` carry them.
pub const FEATURE_INPUT_DELAY: &str = Feature::InputDelay.name();

/// Hello feature: the guest samples its input on its own estimate of the
/// host's clock (not when a bundle arrives, so a bundle held up behind a
/// retransmission does not hold its input up too) and sends each input
/// again with the next few, as [`GuestMessage::TickInputs`] on the
/// unordered, unreliable [`Channel::Unreliable`]: a lost message costs
/// nothing while the next one arrives in time (issue 15).
pub const FEATURE_REDUNDANT_INPUTS: &str = Feature::RedundantInputs.name();

/// Hello feature: tick bundles, inputs and reconciliation snapshots travel
/// in the compact form of [`crate::wire`] instead of JSON, each way, once
/// both sides named it (issue 15).
pub const FEATURE_COMPACT: &str = Feature::Compact.name();

/// Hello feature, with [`FEATURE_COMPACT`]: compact records go as binary
/// data-channel messages, their bytes as they are instead of `~` and base64
/// (issue 48; [`WireFormat::Binary`]). Only for peers whose transport
/// carries binary messages both ways.
pub const FEATURE_BINARY: &str = Feature::Binary.name();

/// Hello feature: the guest hears who watches the session
/// ([`HostMessage::Spectators`]) whenever that changes (issue 25).
pub const FEATURE_SPECTATORS: &str = Feature::Spectators.name();

/// Hello feature: before the start, the guest hears who is in, how many
/// players the session takes and what the start waits for
/// ([`HostMessage::WaitingRoom`]) whenever that changes (issue 30).
pub const FEATURE_WAITING_ROOM: &str = Feature::WaitingRoom.name();

/// Hello feature: the guest can be a relay session's authority (issue
/// 26). A relay offers it; a guest that takes it up answers
/// [`HostMessage::RelayAskLevel`] and [`HostMessage::RelayAskSnapshot`]
/// and reports the level's end ([`GuestMessage::RelayLevelEnd`]) while
/// it is the authority ([`HostMessage::RelayAuthority`]). A relay sends
/// no reconciliation snapshots, so a guest in a relay session never waits
/// for one.
pub const FEATURE_RELAY: &str = Feature::Relay.name();

/// Hello feature: a desynced guest of a relay session is rebuilt in place
/// (issue 26). The relay sends [`HostMessage::Resync`] on the input
/// channel, then a session init with a join point (the latest verified
/// snapshot) and the tick bundles from there on; the guest swaps its world
/// for that state and plays on as the same player. A relay closes a
/// desynced guest without it (it may come back with its rejoin token).
pub const FEATURE_RESYNC: &str = Feature::Resync.name();

/// Hello feature: reconciliation snapshots travel as
/// [`HostMessage::SnapshotDelta`], each a delta against the newest one the
/// guest acknowledged ([`GuestMessage::SnapshotAck`]) or whole when it
/// acknowledged none; a guest that cannot read one asks for it whole
/// ([`GuestMessage::SnapshotAsk`]) (issue 48).
pub const FEATURE_DELTA_SNAPSHOTS: &str = Feature::DeltaSnapshots.name();

/// Hello feature: a tick bundle whose players are those of the last whole
/// bundle on the same connection goes as a [`HostMessage::PlacedBundle`],
/// its inputs in their order without their ids (issue 48).
pub const FEATURE_PLACED_BUNDLES: &str = Feature::PlacedBundles.name();

/// Hello feature: every [`HostMessage::Ping`] tells the guest the round
/// trip the host measures to it from the pongs (microseconds), so a
/// guest's netgraph shows the session's own figure, not only its
/// transport's (issue 48).
pub const FEATURE_ROUND_TRIP: &str = Feature::RoundTrip.name();

/// Hello feature: a guest that sends redundant inputs carries its world
/// hash reports and snapshot acknowledgements in its next few
/// [`GuestMessage::TickInputs`] instead of in messages of their own
/// (issue 48: three to four fewer messages a second each way, counting
/// the transport's acknowledgements).
pub const FEATURE_FOLDED_REPORTS: &str = Feature::FoldedReports.name();

/// Copies of a folded report or acknowledgement a guest sends, one per
/// input message: the input channel is unreliable, and the next report
/// comes [`crate::tick::HASH_REPORT_INTERVAL_TICKS`] ticks later.
pub const FOLDED_COPIES: u8 = 3;

/// Hello feature: a guest that sends redundant inputs sends its
/// [`GuestMessage::TickInputs`] only when its input changed, for
/// [`INPUT_RUN_COPIES`] ticks after a change, and as a keep-alive every
/// [`INPUT_RUN_KEEP_ALIVE_TICKS`] ticks (issue 48). Between messages the
/// host plays the player's last input, which is then the player's own,
/// not a held one; it counts a held input only when a later message shows
/// another input for a tick already played, or when its messages are
/// overdue ([`INPUT_RUN_OVERDUE_TICKS`]).
pub const FEATURE_INPUT_RUNS: &str = Feature::InputRuns.name();

/// Messages a guest on input runs sends after a change (the tick's own
/// and this many more, each carrying the ticks before it): the input
/// channel is unreliable.
pub const INPUT_RUN_COPIES: u8 = 2;

/// The most ticks a guest on input runs lets pass between two messages.
/// One message carries [`REDUNDANT_INPUTS`] ticks, so every message still
/// covers every tick since the one before.
pub const INPUT_RUN_KEEP_ALIVE_TICKS: u64 = REDUNDANT_INPUTS as u64;

/// How many ticks past the newest one it received (plus the player's
/// input delay) a host plays the last input of a guest on input runs as
/// its own: two keep-alive intervals, so one lost keep-alive holds
/// nothing. Later ticks are held and listed as such.
pub const INPUT_RUN_OVERDUE_TICKS: u64 = 2 * INPUT_RUN_KEEP_ALIVE_TICKS;

/// Snapshots a guest keeps as bases for deltas, and a host keeps to encode
/// against (and to send again whole): a few seconds' worth.
pub const DELTA_BASES: usize = 4;

/// Inputs one [`GuestMessage::TickInputs`] carries at most: the newest and
/// the ones before it (about 270 ms at 30 Hz).
pub const REDUNDANT_INPUTS: usize = 8;

/// The features in use on one host-guest connection: their names as the
/// hellos listed them, and the ones campfire knows as bits, so asking
/// about one ([`Features::has`], on every tick's paths) compares no names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    names: Vec<String>,
    known: u32,
}

impl Features {
    /// The features in `theirs` that `ours` names too, in `theirs`' order,
    /// each once (a peer may repeat a name any number of times; the result
    /// is never longer than `ours`).
    pub fn agreed(theirs: &[String], ours: &[String]) -> Self {
        let mut names: Vec<String> = Vec::with_capacity(ours.len());
        let mut known = 0;
        for f in theirs {
            if ours.contains(f) && !names.contains(f) {
                known |= Feature::named(f).map_or(0, Feature::bit);
                names.push(f.clone());
            }
        }
        Self { names, known }
    }

    /// Whether `feature` is in use.
    pub fn has(&self, feature: Feature) -> bool {
        self.known & feature.bit() != 0
    }

    /// How messages on this connection are written.
    pub fn wire_format(&self) -> WireFormat {
        if self.has(Feature::Compact) && self.has(Feature::Binary) {
            WireFormat::Binary
        } else if self.has(Feature::Compact) {
            WireFormat::Compact
        } else {
            WireFormat::Json
        }
    }

    /// The feature names, as a hello lists them.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_both_sides_name_counts() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let f = Features::agreed(
            &names(&["ping", "compact", "telepathy"]),
            &names(&["compact", "ping", "input-delay"]),
        );
        assert_eq!(f.names(), names(&["ping", "compact"]));
        assert!(f.has(Feature::Ping) && !f.has(Feature::InputDelay));
        assert_eq!(f.wire_format(), WireFormat::Compact);
        assert_eq!(Features::default().wire_format(), WireFormat::Json);
    }

    #[test]
    fn binary_needs_compact_too() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let all = names(&["compact", "binary"]);
        let format = |theirs: &[&str]| Features::agreed(&names(theirs), &all).wire_format();
        assert_eq!(format(&["compact", "binary"]), WireFormat::Binary);
        assert_eq!(format(&["binary"]), WireFormat::Json);
        assert_eq!(format(&["compact"]), WireFormat::Compact);
    }

    #[test]
    fn every_feature_has_its_own_name_and_bit() {
        for (i, f) in Feature::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i, "ALL lists the features in their order");
            assert_eq!(Feature::named(f.name()), Some(f));
            assert!(
                Feature::ALL[..i]
                    .iter()
                    .all(|g| g.name() != f.name() && g.bit() != f.bit())
            );
            let ours = vec![f.name().to_string()];
            let taken = Features::agreed(&ours, &ours);
            assert!(taken.has(f));
            assert!(Feature::ALL.into_iter().all(|g| g == f || !taken.has(g)));
        }
        assert_eq!(Feature::named("telepathy"), None);
    }

    #[test]
    fn repeated_names_count_once() {
        let ours = vec!["ping".to_string(), "compact".to_string()];
        let mut theirs = vec!["ping".to_string(); 10_000];
        theirs.push("compact".into());
        theirs.extend(std::iter::repeat_n("compact".to_string(), 10_000));
        let f = Features::agreed(&theirs, &ours);
        assert_eq!(f.names(), ["ping", "compact"]);
        assert!(f.names().len() <= ours.len());
    }
}
