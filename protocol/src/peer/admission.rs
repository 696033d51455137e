//! One admission for every peer that serves a session (a host and a
//! relay), and one hello for every guest (a player's page, a bot, a swarm's
//! guest): the version check, the features both sides take up, and the
//! rules a hello meets in a room, in one order.
//!
//! Pure functions: the serving peer keeps its own seats and tells
//! [`seat`] what it knows of its room; a relay counts its places itself
//! (per origin, too) and leaves those counts out.

use serde::{Deserialize, Serialize};

use super::{Feature, Features, PEER_PROTOCOL_VERSION, RefusalReason};
use crate::name::sanitize_display_name;

/// A guest's hello (phase A of the setup): its version, display name and
/// the offered extensions it takes up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuestHello {
    /// Build identifier (must match the serving peer's exactly).
    pub build_version: String,
    /// [`PEER_PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// The chosen display name, unsanitized ("" for none).
    pub display_name: String,
    /// The offered extensions the guest takes up (a subset of the host's
    /// `features`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// A rejoin token from an earlier session init of this session: the
    /// guest asks to resume that player (campfire's extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// The guest asks to watch, not to play: it takes no seat, sends no
    /// input and gets the running level's state like a late joiner
    /// (campfire's extension).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spectate: bool,
}

impl GuestHello {
    /// The hello of a guest of build `build` called `name` to a peer that
    /// offered `offered`: it takes up the features it `wants` that were
    /// offered, and nothing else. Returns them with the hello.
    pub fn taking(
        build: &str,
        name: &str,
        offered: &[String],
        wants: &[String],
    ) -> (Features, GuestHello) {
        let taken = Features::agreed(offered, wants);
        let hello = GuestHello {
            build_version: build.to_owned(),
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: name.to_owned(),
            features: taken.names().to_vec(),
            resume: None,
            spectate: false,
        };
        (taken, hello)
    }
}

/// What a serving peer offers every hello.
#[derive(Clone, Copy, Debug)]
pub struct Offer<'a> {
    /// Its build identifier.
    pub build: &'a str,
    /// The extensions it offers.
    pub features: &'a [String],
    /// Its input delay is not the spec's fixed one (a relay run with
    /// `--input-delay`), so a guest that does not take up
    /// [`Feature::InputDelay`] could not play in step with it.
    pub delay_needs_feature: bool,
}

/// What a hello asks to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    /// A new player.
    Play,
    /// A spectator.
    Spectate,
    /// The player this rejoin token was given to.
    Resume(String),
}

/// A hello that passed the checks every serving peer makes.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// The features both sides named: only what was offered counts.
    pub features: Features,
    /// The display name, sanitized (not yet made distinct in its room).
    pub name: String,
    /// What it asks to be.
    pub ask: Ask,
}

impl Admission {
    /// It took up fitted input delays.
    pub fn fitted(&self) -> bool {
        self.features.has(Feature::InputDelay)
    }
}

/// Why a hello is refused, as the `join-refused` message says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The reason's code.
    pub reason: RefusalReason,
    /// A sentence for the player.
    pub detail: String,
}

impl Refusal {
    fn new(reason: RefusalReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }
}

/// The checks every serving peer makes of a hello, whatever its room: the
/// same build and protocol, and input delays it can play with.
///
/// # Errors
///
/// The refusal to send: `version-mismatch`, or `bad-handshake` when the
/// peer's fixed delay needs a feature the guest did not take up.
pub fn check_hello(offer: &Offer<'_>, hello: GuestHello) -> Result<Admission, Refusal> {
    if hello.build_version != offer.build || hello.protocol_version != PEER_PROTOCOL_VERSION {
        return Err(Refusal::new(
            RefusalReason::VersionMismatch,
            format!(
                "the session runs build {} protocol {PEER_PROTOCOL_VERSION}, this guest build {} protocol {}",
                offer.build, hello.build_version, hello.protocol_version
            ),
        ));
    }
    let features = Features::agreed(&hello.features, offer.features);
    if offer.delay_needs_feature && !features.has(Feature::InputDelay) {
        return Err(Refusal::new(
            RefusalReason::BadHandshake,
            "this session's input delay needs the input-delay feature",
        ));
    }
    let ask = match (hello.spectate, hello.resume) {
        (true, _) => Ask::Spectate,
        (false, Some(token)) => Ask::Resume(token),
        (false, None) => Ask::Play,
    };
    Ok(Admission {
        features,
        name: sanitize_display_name(&hello.display_name),
        ask,
    })
}

/// What a serving peer knows of its room when a hello comes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Room {
    /// The session has started: a new player joins late.
    pub started: bool,
    /// The session is over.
    pub ended: bool,
    /// It takes new players after the start.
    pub late_join: bool,
    /// The running level's input delays are fitted to links.
    pub level_fits_delays: bool,
    /// It offers [`Feature::InputDelay`]: a spectator must take it up to
    /// play the level's delays back.
    pub offers_delays: bool,
    /// Guests playing, and the most it takes (`None`: it counts its seats
    /// itself).
    pub players: (usize, Option<usize>),
    /// Spectators watching, and the most it takes (`None`: it counts them
    /// itself).
    pub spectators: (usize, Option<usize>),
}

/// Where an admitted hello goes in a room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seat {
    /// A new player's seat.
    Player,
    /// A spectator's place.
    Spectator,
    /// Back into the seat of the player its token names.
    Resume,
}

/// Where `admission` may sit in `room`. `resumable` says whether its
/// rejoin token names a player the peer can give back now (a token that
/// names none makes a new player, if one may join).
///
/// # Errors
///
/// The refusal to send: `session-started` (over, the roster frozen, or
/// fitted delays it does not take) or `session-full`.
pub fn seat(room: &Room, admission: &Admission, resumable: bool) -> Result<Seat, Refusal> {
    use RefusalReason::{SessionFull, SessionStarted};
    if admission.ask == Ask::Spectate {
        if room.ended {
            return Err(Refusal::new(SessionStarted, "the session is over"));
        }
        if let (taken, Some(max)) = room.spectators
            && taken >= max
        {
            let detail = if max == 0 {
                "this session takes no spectators".to_owned()
            } else {
                format!("all {max} spectator places are taken")
            };
            return Err(Refusal::new(SessionFull, detail));
        }
        if room.offers_delays && !admission.fitted() {
            return Err(Refusal::new(
                SessionStarted,
                "spectators must take up input-delay: the level's delays are fitted to links",
            ));
        }
        return Ok(Seat::Spectator);
    }
    if resumable && !room.ended {
        return Ok(Seat::Resume);
    }
    if room.started && (!room.late_join || room.ended) {
        return Err(Refusal::new(
            SessionStarted,
            "the session has started; the roster is frozen",
        ));
    }
    if let (taken, Some(max)) = room.players
        && taken >= max
    {
        return Err(Refusal::new(
            SessionFull,
            format!("all {max} guest seats are taken"),
        ));
    }
    if room.level_fits_delays && !admission.fitted() {
        return Err(Refusal::new(
            SessionStarted,
            "the running level fits input delays to links; this client does not take them",
        ));
    }
    Ok(Seat::Player)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILD: &str = "campfire-test";

    fn offered() -> Vec<String> {
        vec!["ping".into(), Feature::InputDelay.name().into()]
    }

    fn hello(features: &[&str]) -> GuestHello {
        GuestHello {
            build_version: BUILD.into(),
            protocol_version: PEER_PROTOCOL_VERSION,
            display_name: "Ada\u{7}".into(),
            features: features.iter().map(|f| f.to_string()).collect(),
            resume: None,
            spectate: false,
        }
    }

    fn admitted(features: &[&str], ask: Ask) -> Admission {
        let features = features.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        Admission {
            features: Features::agreed(&features, &offered()),
            name: "Ada".into(),
            ask,
        }
    }

    fn offer(features: &[String]) -> Offer<'_> {
        Offer {
            build: BUILD,
            features,
            delay_needs_feature: false,
        }
    }

    #[test]
    fn a_hello_takes_only_what_was_offered_and_its_name_is_sanitized() {
        let f = offered();
        let a = check_hello(&offer(&f), hello(&["input-delay", "compact", "ping"])).unwrap();
        assert_eq!(a.features.names(), ["input-delay", "ping"]);
        assert_eq!(a.name, "Ada");
        assert_eq!(a.ask, Ask::Play);
        let spectate = GuestHello {
            spectate: true,
            resume: Some("t".into()),
            ..hello(&[])
        };
        assert_eq!(
            check_hello(&offer(&f), spectate).unwrap().ask,
            Ask::Spectate
        );
        let resume = GuestHello {
            resume: Some("t".into()),
            ..hello(&[])
        };
        let ask = check_hello(&offer(&f), resume).unwrap().ask;
        assert_eq!(ask, Ask::Resume("t".into()));
    }

    #[test]
    fn another_build_or_protocol_is_refused_naming_both() {
        let f = offered();
        for bad in [
            GuestHello {
                build_version: "campfire-old".into(),
                ..hello(&[])
            },
            GuestHello {
                protocol_version: PEER_PROTOCOL_VERSION + 1,
                ..hello(&[])
            },
        ] {
            let r = check_hello(&offer(&f), bad).unwrap_err();
            assert_eq!(r.reason, RefusalReason::VersionMismatch);
            assert!(r.detail.contains(BUILD), "{}", r.detail);
        }
    }

    #[test]
    fn a_fixed_delay_of_its_own_needs_the_feature() {
        let f = offered();
        let needs = Offer {
            delay_needs_feature: true,
            ..offer(&f)
        };
        let r = check_hello(&needs, hello(&["ping"])).unwrap_err();
        assert_eq!(r.reason, RefusalReason::BadHandshake);
        assert!(check_hello(&needs, hello(&["input-delay"])).is_ok());
    }

    #[test]
    fn players_meet_the_rules_in_the_host_order() {
        let player = admitted(&["input-delay"], Ask::Play);
        let unfitted = admitted(&[], Ask::Play);
        let open = Room {
            late_join: true,
            players: (1, Some(2)),
            ..Room::default()
        };
        assert_eq!(seat(&open, &player, false), Ok(Seat::Player));
        let full = Room {
            players: (2, Some(2)),
            ..open
        };
        assert_eq!(
            seat(&full, &player, false).unwrap_err().reason,
            RefusalReason::SessionFull
        );
        // A rejoiner gets its seat back however full the room is...
        let started = Room {
            started: true,
            ..full
        };
        assert_eq!(seat(&started, &player, true), Ok(Seat::Resume));
        // ...but not once the session is over.
        let over = Room {
            ended: true,
            ..started
        };
        let r = seat(&over, &player, true).unwrap_err();
        assert_eq!(r.reason, RefusalReason::SessionStarted);
        let frozen = Room {
            started: true,
            late_join: false,
            ..open
        };
        let r = seat(&frozen, &player, false).unwrap_err();
        assert_eq!(r.reason, RefusalReason::SessionStarted);
        assert!(r.detail.contains("frozen"));
        let fitted = Room {
            started: true,
            level_fits_delays: true,
            ..open
        };
        assert_eq!(seat(&fitted, &player, false), Ok(Seat::Player));
        let r = seat(&fitted, &unfitted, false).unwrap_err();
        assert_eq!(r.reason, RefusalReason::SessionStarted);
        assert!(r.detail.contains("input delays"));
        // A room that counts its own seats leaves the cap out.
        let uncounted = Room {
            players: (99, None),
            ..open
        };
        assert_eq!(seat(&uncounted, &player, false), Ok(Seat::Player));
    }

    #[test]
    fn spectators_meet_their_own_rules() {
        let watcher = admitted(&["input-delay"], Ask::Spectate);
        let room = Room {
            started: true,
            offers_delays: true,
            spectators: (1, Some(2)),
            ..Room::default()
        };
        // Watching needs no late join and no free player seat.
        assert_eq!(seat(&room, &watcher, true), Ok(Seat::Spectator));
        let full = Room {
            spectators: (2, Some(2)),
            ..room
        };
        let r = seat(&full, &watcher, false).unwrap_err();
        assert_eq!(r.reason, RefusalReason::SessionFull);
        let none = Room {
            spectators: (0, Some(0)),
            ..room
        };
        assert!(
            seat(&none, &watcher, false)
                .unwrap_err()
                .detail
                .contains("no spectators")
        );
        let unfitted = admitted(&[], Ask::Spectate);
        let r = seat(&room, &unfitted, false).unwrap_err();
        assert_eq!(r.reason, RefusalReason::SessionStarted);
        let over = Room {
            ended: true,
            ..room
        };
        assert!(
            seat(&over, &watcher, false)
                .unwrap_err()
                .detail
                .contains("over")
        );
    }

    #[test]
    fn a_guest_takes_up_only_what_it_wants_of_the_offer() {
        let offered = vec!["ping".into(), "compact".into(), "relay".into()];
        let wants = vec!["compact".into(), "ping".into(), "resync".into()];
        let (taken, hello) = GuestHello::taking(BUILD, "Bot 1", &offered, &wants);
        assert_eq!(hello.features, taken.names());
        assert!(
            taken.has(Feature::Ping) && taken.has(Feature::Compact) && !taken.has(Feature::Relay)
        );
        assert!(!taken.has(Feature::Resync));
        assert_eq!(hello.display_name, "Bot 1");
        let f = offered.clone();
        assert!(check_hello(&offer(&f), hello).is_ok());
    }
}
