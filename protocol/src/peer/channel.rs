//! The data channels of a host-guest connection.

use serde::{Deserialize, Serialize};

/// The data channels of a host-guest connection, all created by the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Channel {
    /// Per-tick input: guest `TickInput`s up, host `TickInputBundle`s down.
    /// Reliable and ordered.
    Input,
    /// Setup, map transfer, reconciliation snapshots, level transitions,
    /// session end, hash reports. Reliable and ordered.
    Reconciliation,
    /// Round-trip probes and redundant inputs (issue 15): unordered, never
    /// retransmitted (`maxRetransmits: 0`), so nothing waits behind a lost
    /// message. Not in the netcode spec; unused by peers without the
    /// features that ride it. Negotiated ([`UNRELIABLE_CHANNEL_ID`]): both
    /// sides create it with the same options.
    Unreliable,
}

/// The SCTP stream id of [`Channel::Unreliable`]. Both sides create that
/// channel themselves (`negotiated: true`) rather than the host announcing
/// it in band, because an in-band channel is only as unreliable as the
/// accepting side makes it, and the `webrtc` crate's accepting side sends
/// reliably and in order whatever the announcement said. In-band channels
/// take the lowest ids (0 to 3 for the two of them), so 8 never collides.
pub const UNRELIABLE_CHANNEL_ID: u16 = 8;

impl Channel {
    /// Every channel, in the order the host creates them.
    pub const ALL: [Channel; 3] = [Channel::Input, Channel::Reconciliation, Channel::Unreliable];

    /// The data channel's label.
    pub fn label(self) -> &'static str {
        match self {
            Channel::Input => "input",
            Channel::Reconciliation => "reconciliation",
            Channel::Unreliable => "input-unreliable",
        }
    }

    /// Whether it delivers everything, in order (the spec's two channels).
    pub fn reliable(self) -> bool {
        !matches!(self, Channel::Unreliable)
    }

    /// The stream id both sides give a negotiated channel (`None`: the host
    /// opens it in band and the guest accepts it).
    pub fn negotiated_id(self) -> Option<u16> {
        match self {
            Channel::Unreliable => Some(UNRELIABLE_CHANNEL_ID),
            Channel::Input | Channel::Reconciliation => None,
        }
    }
}
