//! Maps to and from JSON text. The library never touches the file system;
//! callers read and write the text. Loading validates structure and
//! playability, so a bad map file is a clear error, never a panic.

use crate::wire::map::{GameMap, MapError};
use thiserror::Error;

use crate::level_check::{PlayabilityError, check_playable};

/// Why a map text was rejected.
#[derive(Debug, Error)]
pub enum MapLoadError {
    /// Not JSON of the map's shape (the message names the field and position).
    #[error("map JSON does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// Parsed, but structurally invalid.
    #[error("map is invalid: {0}")]
    Invalid(#[from] MapError),
    /// Valid, but cannot be played through.
    #[error("map is not playable: {0}")]
    Unplayable(PlayabilityError),
}

/// Parses and checks a map.
pub fn map_from_json(text: &str) -> Result<GameMap, MapLoadError> {
    let map: GameMap = serde_json::from_str(text)?;
    map.validate()?;
    check_playable(&map).map_err(MapLoadError::Unplayable)?;
    Ok(map)
}

/// The map as pretty JSON.
pub fn map_to_json(map: &GameMap) -> Result<String, MapLoadError> {
    Ok(serde_json::to_string_pretty(map)?)
}
