//! `--campaign DIR`: a campaign read from a folder of level map JSON files.
//!
//! Every `*.json` file in the folder is one level, played in file-name
//! order (name them `01-entry.json`, `02-caves.json`, ...). Each must parse
//! as a [`GameMap`] and pass its validation; the first bad file stops the
//! daemon with its name and the reason, before anything is published.

use std::path::{Path, PathBuf};

use engine::wire::map::GameMap;
use thiserror::Error;

/// Why a campaign folder cannot be used.
#[derive(Debug, Error)]
pub enum CampaignError {
    /// The folder cannot be listed.
    #[error("cannot read campaign folder {path}: {source}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The folder holds no `*.json` file.
    #[error("campaign folder {0} holds no .json map file")]
    Empty(PathBuf),
    /// A map file cannot be read.
    #[error("cannot read map {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A map file is not a map.
    #[error("map {path} is not valid map JSON: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A map file parses but breaks a map rule.
    #[error("map {path} is not playable: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The rule broken.
        reason: String,
    },
}

/// A campaign: its name (the folder's) and its levels in order.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The folder's name, shown in the lobby.
    pub name: String,
    /// The level maps in play order.
    pub maps: Vec<GameMap>,
}

impl Campaign {
    /// Reads and validates every map of `dir`.
    pub fn load(dir: &Path) -> Result<Self, CampaignError> {
        let entries = std::fs::read_dir(dir).map_err(|source| CampaignError::Folder {
            path: dir.to_owned(),
            source,
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(CampaignError::Empty(dir.to_owned()));
        }
        let mut maps = Vec::with_capacity(files.len());
        for path in files {
            let text = std::fs::read_to_string(&path).map_err(|source| CampaignError::Read {
                path: path.clone(),
                source,
            })?;
            let map: GameMap =
                serde_json::from_str(&text).map_err(|source| CampaignError::Parse {
                    path: path.clone(),
                    source,
                })?;
            map.validate().map_err(|e| CampaignError::Invalid {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            maps.push(map);
        }
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "campaign".to_owned());
        Ok(Self { name, maps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_map(dir: &Path, file: &str, seed: u32, level: u32) {
        let map = engine::level_gen::generate(seed, level, 4);
        std::fs::write(dir.join(file), serde_json::to_string(&map).unwrap()).unwrap();
    }

    #[test]
    fn maps_load_in_file_name_order() {
        let dir = tempfile::tempdir().unwrap();
        write_map(dir.path(), "02-second.json", 7, 1);
        write_map(dir.path(), "01-first.json", 7, 0);
        std::fs::write(dir.path().join("notes.txt"), "not a map").unwrap();
        let c = Campaign::load(dir.path()).unwrap();
        assert_eq!(c.maps.len(), 2);
        assert_eq!(c.maps[0], engine::level_gen::generate(7, 0, 4));
        assert_eq!(c.maps[1], engine::level_gen::generate(7, 1, 4));
    }

    #[test]
    fn bad_folders_and_files_are_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Campaign::load(dir.path()),
            Err(CampaignError::Empty(_))
        ));
        assert!(matches!(
            Campaign::load(&dir.path().join("missing")),
            Err(CampaignError::Folder { .. })
        ));
        std::fs::write(dir.path().join("01.json"), "{\"width\": 3}").unwrap();
        let err = Campaign::load(dir.path()).unwrap_err();
        assert!(err.to_string().contains("01.json"), "{err}");
        let mut map = engine::level_gen::generate(7, 0, 4);
        map.spawns.clear();
        std::fs::write(
            dir.path().join("01.json"),
            serde_json::to_string(&map).unwrap(),
        )
        .unwrap();
        let err = Campaign::load(dir.path()).unwrap_err();
        assert!(matches!(err, CampaignError::Invalid { .. }), "{err}");
    }
}
