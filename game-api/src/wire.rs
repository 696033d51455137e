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
