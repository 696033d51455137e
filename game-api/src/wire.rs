//! What a game puts on the wire: the types the peer envelope carries for
//! it without looking inside (GGRS draws the same line with its `Config`
//! trait's associated types). The envelope (`protocol::peer`), its compact
//! form and the relay are generic over a [`GameWire`].

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A value that travels between peers: cloned, compared, printed,
/// serialized, shared between threads.
pub trait Wire:
    Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T> Wire for T where
    T: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// A game's wire types. Implemented by a type that is never built (an
/// empty enum): it only names the game.
pub trait GameWire: Clone + Debug + PartialEq + Send + Sync + 'static {
    /// One player's input for one tick. Its default is the neutral input
    /// (nothing pressed): held inputs, idle bots and missing players.
    type Input: Wire + Default;
    /// The periodic reconciliation snapshot, flattened into its message
    /// beside the level epoch.
    type Snapshot: Wire;
    /// An input as the `compact` feature writes it (a postcard record,
    /// which is not self-describing: its fields are the bytes).
    type CompactInput: Serialize + DeserializeOwned;
    /// Session-wide settings every level is built with, flattened into the
    /// session init and a relay's level ask.
    ///
    /// This and [`GameWire::LevelHead`] and [`GameWire::Campaign`] are
    /// flattened into the envelope's objects: each must serialize as a map
    /// (a struct with named fields; an empty struct is fine), with keys
    /// that no other part and no envelope field uses. Its default is what a
    /// session plays with unless its host chooses otherwise.
    type Settings: Wire + Default;
    /// A level's small facts beside its roster (a seed, say), flattened
    /// into the session init and the transition payload.
    type LevelHead: Wire;
    /// A level's content: `map` in the transition and join payloads, and
    /// on its own in the first level's chunks.
    type LevelBody: Wire;
    /// What one player carries from a level to the next.
    type Carryover: Wire;
    /// What a relay session's authority builds every level from,
    /// flattened into the relay's level ask.
    type Campaign: Wire;

    /// The game's name in the serving peer's hello (`game`), which a
    /// guest of another game refuses before it says a word; `None` for
    /// the game the netcode spec describes, whose hellos name no game (as
    /// the spec's do).
    const NAME: Option<&'static str>;

    /// `input` as the game plays it: whatever a peer may send (a value out
    /// of range, a key only the local client uses) made one the
    /// simulation takes. Every peer that orders inputs (a host, a relay)
    /// applies it to what guests send, so all peers play the same input.
    fn sanitize(input: &Self::Input) -> Self::Input;

    /// The tick `snapshot` was taken at (the end of that tick): a guest
    /// holds a snapshot until its own world reaches that tick.
    fn snapshot_tick(snapshot: &Self::Snapshot) -> u64;

    /// `input` in the compact form, exactly: reading it back gives the
    /// same input.
    fn compact_input(input: &Self::Input) -> Self::CompactInput;

    /// The input a compact record carries.
    ///
    /// # Errors
    ///
    /// A sentence saying why the record carries no input the JSON form
    /// could carry (both forms must read the same messages).
    fn input_from_compact(compact: Self::CompactInput) -> Result<Self::Input, String>;
}
