//! Seats: one per guest connection, kept only while something can still
//! need it.
//!
//! Slots count up and are never handed out twice, but a seat is let go
//! once it is spent (see [`GuestSeat::spent`]): a stranger who connects
//! and leaves over and over costs the host nothing that lasts, in memory
//! or in per-tick work. What the end table, the report and the stats keep
//! of a guest lives outside its seat (names, run scores, counters).

use std::collections::BTreeMap;
use std::time::Duration;

use game_api::PlayerId;
use lockstep::budget::{GuestBudget, GuestBudgetPolicy};
use protocol::peer::{Features, RoundTripReport};

use crate::stats::GuestSlot;

/// One guest connection and what the host knows of it.
#[derive(Debug)]
pub(super) struct GuestSeat {
    pub(super) player: Option<PlayerId>,
    pub(super) name: String,
    /// When the connection arrived; cleared by its hello.
    pub(super) awaiting_hello_since: Option<Duration>,
    pub(super) admitted: bool,
    pub(super) setup_acked: bool,
    pub(super) connected: bool,
    pub(super) disconnected_at: Option<Duration>,
    pub(super) removed: bool,
    /// Refused, or left before the start: its connection is being closed.
    pub(super) closed: bool,
    /// Its transport reported it failed or closed: lost for good.
    pub(super) gone: bool,
    /// Admitted after the start and not yet given the level's state: it
    /// hears nothing of the level until then.
    pub(super) joining: bool,
    /// A joining seat that resumes a player already in the roster (a
    /// rejoin, no roster add).
    pub(super) resuming: bool,
    /// A spectator: its `player` is a spectator id outside the roster, it
    /// holds no seat and its inputs are ignored.
    pub(super) spectator: bool,
    /// The guest's last hash report: `(epoch, tick, mismatched)`.
    pub(super) last_report: Option<(u32, u64, bool)>,
    /// The hello features it took up (`ping`: the host probes its round
    /// trip; `input-delay`, `redundant-inputs`, `compact`).
    pub(super) features: Features,
    /// When its hello admitted it.
    pub(super) admitted_at: Option<Duration>,
    /// The ping in flight: `(id, sent at)`.
    pub(super) ping_in_flight: Option<(u32, Duration)>,
    /// When the last ping went out.
    pub(super) last_ping_at: Option<Duration>,
    /// Ids handed out so far.
    pub(super) pings_sent: u32,
    /// The round trip its pings last told it (`round-trip`).
    pub(super) rtt_told: Option<RoundTripReport>,
    /// What it may still send.
    pub(super) budget: GuestBudget,
}

impl GuestSeat {
    /// A connection that arrived at `now` and has not said hello yet.
    pub(super) fn new(policy: &GuestBudgetPolicy, now: Duration) -> Self {
        Self {
            player: None,
            name: String::new(),
            awaiting_hello_since: Some(now),
            admitted: false,
            setup_acked: false,
            connected: true,
            disconnected_at: None,
            removed: false,
            closed: false,
            gone: false,
            joining: false,
            resuming: false,
            spectator: false,
            last_report: None,
            features: Features::default(),
            admitted_at: None,
            ping_in_flight: None,
            last_ping_at: None,
            pings_sent: 0,
            rtt_told: None,
            budget: GuestBudget::new(policy, now),
        }
    }

    /// Whether nothing can need this seat any more: nothing more will be
    /// heard from it (the host closed it, or its transport lost it for
    /// good), and it holds no player still in the roster (the grace, a
    /// rejoin and the level's delays look for those). Refused and
    /// pre-start connections, spectators that left and the seat a rejoin
    /// took over end here.
    pub(super) fn spent(&self) -> bool {
        let heard = !self.closed && !self.gone;
        let holds_player = self.player.is_some() && !self.spectator && !self.removed;
        !heard && !holds_player
    }
}

/// The seats a host keeps, by slot, in arrival order.
#[derive(Debug, Default)]
pub(super) struct SeatTable {
    seats: BTreeMap<GuestSlot, GuestSeat>,
    /// The slot the next connection gets (connections handed out so far).
    next_slot: GuestSlot,
}

impl SeatTable {
    /// Seats `seat` under a fresh slot.
    pub(super) fn add(&mut self, seat: GuestSeat) -> GuestSlot {
        let slot = self.next_slot;
        self.next_slot += 1;
        self.seats.insert(slot, seat);
        slot
    }

    /// Connections seated so far, spent or not.
    pub(super) fn connections(&self) -> usize {
        self.next_slot
    }

    /// Seats kept now.
    pub(super) fn kept(&self) -> usize {
        self.seats.len()
    }

    /// Slot `slot`'s seat, unless it was never handed out or is spent.
    pub(super) fn get(&self, slot: GuestSlot) -> Option<&GuestSeat> {
        self.seats.get(&slot)
    }

    /// Slot `slot`'s seat to change, unless it was never handed out or is
    /// spent.
    pub(super) fn get_mut(&mut self, slot: GuestSlot) -> Option<&mut GuestSeat> {
        self.seats.get_mut(&slot)
    }

    /// The seats kept, in arrival order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &GuestSeat> {
        self.seats.values()
    }

    /// The seats kept, in arrival order, to change.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut GuestSeat> {
        self.seats.values_mut()
    }

    /// The seats kept with their slots, in arrival order.
    pub(super) fn entries(&self) -> impl Iterator<Item = (GuestSlot, &GuestSeat)> {
        self.seats.iter().map(|(slot, seat)| (*slot, seat))
    }

    /// The slots of the seats kept, in arrival order.
    pub(super) fn slots(&self) -> Vec<GuestSlot> {
        self.seats.keys().copied().collect()
    }

    /// Lets go of every spent seat.
    pub(super) fn let_go_spent(&mut self) {
        self.seats.retain(|_, seat| !seat.spent());
    }
}
