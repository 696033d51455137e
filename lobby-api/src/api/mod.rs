//! Bodies of the lobby/signaling HTTP API (v1).
//!
//! Field names are part of the contract (camelCase JSON); see
//! `docs/api.md` for the semantics of each call. Unknown fields in requests
//! are ignored, so newer clients can talk to older servers.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::code::SessionCode;

pub mod admin;
mod lobby;

pub use lobby::{LobbyEntry, LobbyEvent, LobbyPage, RemovedEntry, SessionSummary};

/// Who runs a session's host: a player's browser, `host-daemon`, or no
/// one (`host-daemon relay`: every player connects to a relay that runs no
/// game, and the session outlives any player).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum HostKind {
    /// A player's browser tab.
    Player,
    /// The headless `host-daemon`.
    Daemon,
    /// A `host-daemon relay` session.
    Relay,
}

impl HostKind {
    /// The wire spelling (`player`, `daemon` or `relay`).
    pub fn as_str(self) -> &'static str {
        match self {
            HostKind::Player => "player",
            HostKind::Daemon => "daemon",
            HostKind::Relay => "relay",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "player" => Some(HostKind::Player),
            "daemon" => Some(HostKind::Daemon),
            "relay" => Some(HostKind::Relay),
            _ => None,
        }
    }
}

/// `PUT /session`: create a session (no `code`) or update one (`code` plus
/// the host's bearer token).
///
/// On create, `name`, `hostName`, `maxPlayers`, `build` and `hostKind` are
/// required. On update every lobby field is optional and an omitted field
/// keeps its current value; `offer` publishes a new offer round, and
/// omitting it keeps the current round as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "public": true, "name": "Friday co-op", "hostName": "Ada", "maxPlayers": 4,
    "build": "v1", "hostKind": "player",
    "offer": "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"
})))]
#[serde(rename_all = "camelCase")]
pub struct PutSessionRequest {
    /// The session to update; absent to create a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^[- ]*([2-9A-HJKMNP-Za-hjkmnp-z][- ]*){8}$")
    )]
    pub code: Option<String>,
    /// A complete (non-trickle) SDP offer for the next joiner: opens a new
    /// round. Lines of printable ASCII (or tabs) of the form `x=value`,
    /// the first `v=0`, one an `m=` line; at most `--max-sdp-bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = r"^v=0[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*\nm=[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*$",
            max_length = 32768
        )
    )]
    pub offer: Option<String>,
    /// Whether the session is listed in `GET /lobby` (default on create: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    /// The session's name in the lobby.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The host player's display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// Players in the session now, host included (default on create: 1).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole::optional_u32"
    )]
    #[cfg_attr(feature = "openapi", schema(maximum = 4294967295u64))]
    pub players: Option<u32>,
    /// Most players the session admits, host included: 1 to the server's
    /// `--max-players`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "whole::optional_u32"
    )]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 64))]
    pub max_players: Option<u32>,
    /// The host's build ref; clients hide sessions of other builds. Not
    /// empty once sanitized like names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(min_length = 1))]
    pub build: Option<String>,
    /// The session's difficulty label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// The campaign played (a public repository name, `demos`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<String>,
    /// Who runs the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_kind: Option<HostKind>,
    /// The session has started and admits players into its running game
    /// (late join); default on create: false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_progress: Option<bool>,
    /// Seats held by bots the host runs, counted in `players` (at most
    /// `players`); default on create: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bots: Option<u32>,
    /// The player count the session starts at by itself, host included
    /// (1 to `maxPlayers`); absent on create: a person starts it. Once
    /// set, an update cannot clear it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<u32>,
    /// A small free-form JSON object shown with the lobby entry (at most
    /// `--max-meta-bytes` of JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub meta: Option<serde_json::Value>,
}

/// `PUT /session` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PutSessionResponse {
    /// The session's code.
    pub code: SessionCode,
    /// The host's bearer token; present only in the create response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_token: Option<String>,
    /// The open round's number, or null when no round is open.
    pub round: Option<u32>,
    /// When the session expires unless the host calls again.
    #[serde(with = "time::serde::rfc3339")]
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub expires_at: OffsetDateTime,
    /// ICE servers for the host's peer connections.
    pub ice_servers: Vec<IceServer>,
}

/// `GET /session/{code}` response: the lobby entry plus the open round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// The session's lobby fields.
    #[serde(flatten)]
    pub entry: LobbyEntry,
    /// Whether the session is listed in the public lobby.
    pub public: bool,
    /// The open round's number; null when the session is full or started.
    pub round: Option<u32>,
    /// The open round's SDP offer; null exactly when `round` is null.
    pub offer: Option<String>,
    /// ICE servers for the joiner's peer connection.
    pub ice_servers: Vec<IceServer>,
}

/// `POST /session/{code}/answer` request: a joiner claims a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "round": 1, "name": "Bo",
    "answer": "v=0\r\no=- 3 4 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"
})))]
#[serde(rename_all = "camelCase")]
pub struct PostAnswerRequest {
    /// The round the answer is for (from `GET /session/{code}`).
    #[serde(deserialize_with = "whole::u32")]
    #[cfg_attr(feature = "openapi", schema(maximum = 4294967295u64))]
    pub round: u32,
    /// The joiner's complete (non-trickle) SDP answer, in the form an offer
    /// takes (see `PutSessionRequest.offer`).
    #[cfg_attr(
        feature = "openapi",
        schema(
            pattern = r"^v=0[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*\nm=[\t\x20-\x7E]*\r?(?:\n(?:[a-z]=[\t\x20-\x7E]*)?\r?)*$",
            max_length = 32768
        )
    )]
    pub answer: String,
    /// The joiner's display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The longest wait a host may ask of `GET /session/{code}/answer`
/// (`waitMs`), in ms; more is refused (400), and a server waits at most
/// its own `--max-wait-ms` (25 s by default) of what is asked.
pub const ANSWER_WAIT_MAX_MS: u64 = 60_000;

/// `POST /session/{code}/answer` response (201) and
/// `GET /session/{code}/answer` response (200).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AnswerView {
    /// The round that was answered.
    pub round: u32,
    /// The winning SDP answer.
    pub answer: String,
    /// The joiner's sanitized display name ("" when none was given).
    pub name: String,
}

/// Whole numbers in request bodies as JSON Schema reads them: `3.0` is the
/// integer 3, so a body the schema allows is not refused for writing it so.
mod whole {
    use serde::{Deserialize, Deserializer, de::Error};

    /// A `u32`, written as an integer or as a number with no fraction.
    pub fn u32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        let n = serde_json::Number::deserialize(deserializer)?;
        let whole = match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => u32::try_from(u).ok(),
            (None, Some(f)) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => {
                Some(f as u32)
            }
            _ => None,
        };
        whole.ok_or_else(|| {
            D::Error::custom(format!("{n} is not a whole number from 0 to {}", u32::MAX))
        })
    }

    /// An optional `u32`, as [`u32`]; `null` is none.
    pub fn optional_u32<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u32>, D::Error> {
        #[derive(Deserialize)]
        struct Whole(#[serde(deserialize_with = "u32")] u32);
        Ok(Option::<Whole>::deserialize(deserializer)?.map(|Whole(n)| n))
    }
}

/// One ICE server, in the shape of the browser's `RTCIceServer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct IceServer {
    /// `stun:` or `turn:`/`turns:` URLs.
    pub urls: Vec<String>,
    /// TURN username (`expiry:tag` in the TURN REST scheme).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// TURN password (base64 HMAC-SHA1 of the username).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// Every error response: a stable code for programs, a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    /// Stable machine-readable code.
    pub error: ErrorCode,
    /// Human-readable explanation.
    pub message: String,
}

/// The stable error codes of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The body is not valid JSON or not of the expected shape (400).
    InvalidJson,
    /// A field has a value the server cannot accept (400).
    InvalidField,
    /// An offer or answer that is not plausibly SDP (400).
    InvalidSdp,
    /// The code in the path or body is not a session code (400).
    InvalidCode,
    /// A name, host name or metadata holds a word this lobby refuses; the
    /// message names the field (400).
    NameRefused,
    /// A host call with a missing or wrong bearer token, or an admin
    /// call with a missing or wrong admin token (403).
    WrongToken,
    /// The client's address is blocked by the lobby's moderators: it may
    /// not create, update or answer sessions until the block lapses (403).
    Blocked,
    /// Unknown or expired session (404).
    NoSuchSession,
    /// Unknown round for this session (404).
    NoSuchRound,
    /// No such route (404).
    NotFound,
    /// The route exists but not with this method (405).
    MethodNotAllowed,
    /// A moderator of the lobby ended this session (410): its host should
    /// not publish it again.
    SessionEnded,
    /// The round was already answered or is not the open round (409).
    RoundTaken,
    /// The body is larger than the server accepts (413).
    PayloadTooLarge,
    /// The body is not `application/json` (415).
    UnsupportedMediaType,
    /// Too many requests from this address; see `Retry-After` (429).
    RateLimited,
    /// The database is unreachable (503).
    Unavailable,
    /// The server is shutting down (503).
    ShuttingDown,
    /// The lobby holds as many sessions as it is configured for; see
    /// `Retry-After` (503).
    LobbyFull,
    /// A bug on the server (500); details are in its log.
    Internal,
}

/// Deserializes an optional error code leniently: a code this build does
/// not know (a newer lobby's, or a client-side name such as
/// `unreachable`) reads as `None` instead of failing the whole value. For
/// `#[serde(default, deserialize_with = "...")]` on an `Option<ErrorCode>`.
pub fn known_code<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ErrorCode>, D::Error> {
    let raw = Option::<String>::deserialize(d)?;
    Ok(raw.and_then(|c| {
        ErrorCode::deserialize(
            serde::de::value::StrDeserializer::<serde::de::value::Error>::new(&c),
        )
        .ok()
    }))
}

impl ErrorCode {
    /// The HTTP status that goes with the code.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::InvalidJson
            | ErrorCode::InvalidField
            | ErrorCode::InvalidSdp
            | ErrorCode::InvalidCode
            | ErrorCode::NameRefused => 400,
            ErrorCode::WrongToken | ErrorCode::Blocked => 403,
            ErrorCode::NoSuchSession | ErrorCode::NoSuchRound | ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::SessionEnded => 410,
            ErrorCode::RoundTaken => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::RateLimited => 429,
            ErrorCode::Unavailable | ErrorCode::ShuttingDown | ErrorCode::LobbyFull => 503,
            ErrorCode::Internal => 500,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lobby_order::LobbyPosition;
    use proptest::prelude::*;

    fn code() -> impl Strategy<Value = SessionCode> {
        any::<[u32; 8]>().prop_map(|words| {
            let mut i = 0;
            SessionCode::generate(|| {
                i += 1;
                words[(i - 1) % 8]
            })
        })
    }

    fn timestamp() -> impl Strategy<Value = OffsetDateTime> {
        // Whole milliseconds, as the server stores them.
        (0i64..4_000_000_000_000).prop_map(|ms| {
            OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).unwrap()
        })
    }

    fn host_kind() -> impl Strategy<Value = HostKind> {
        prop_oneof![Just(HostKind::Player), Just(HostKind::Daemon)]
    }

    fn meta() -> impl Strategy<Value = Option<serde_json::Value>> {
        proptest::option::of(
            proptest::collection::btree_map("[a-z]{1,8}", any::<i32>(), 0..4)
                .prop_map(|m| serde_json::json!(m)),
        )
    }

    prop_compose! {
        fn lobby_entry()(
            code in code(), name in ".{0,20}", host_name in ".{0,20}",
            players in any::<u32>(), max_players in any::<u32>(), build in "[a-z0-9.]{0,12}",
            difficulty in proptest::option::of("[a-z]{1,8}"),
            campaign in proptest::option::of("[a-z/]{1,12}"),
            host_kind in host_kind(), in_progress in any::<bool>(), created_at in timestamp(),
            expires_at in timestamp(), meta in meta(), placed in any::<bool>(),
            bots in any::<u32>(), start_at in proptest::option::of(any::<u32>()),
        ) -> LobbyEntry {
            let position = placed.then(|| {
                LobbyPosition::new(created_at.unix_timestamp() * 1000, code.clone())
            });
            let summary = SessionSummary { name, host_name, players, max_players, build,
                difficulty, campaign, host_kind, in_progress, bots, start_at };
            LobbyEntry { code, summary, created_at, expires_at, position, meta }
        }
    }

    fn round_trips<T>(value: &T) -> Result<(), TestCaseError>
    where
        T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug,
    {
        let json = serde_json::to_string(value).unwrap();
        let back: T = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&back, value, "json was {}", json);
        Ok(())
    }

    proptest! {
        #[test]
        fn lobby_entry_round_trips(entry in lobby_entry()) {
            round_trips(&entry)?;
        }

        #[test]
        fn session_view_round_trips(entry in lobby_entry(), public in any::<bool>(),
            round in proptest::option::of(any::<u32>()), offer in ".{0,40}") {
            let offer = round.map(|_| offer);
            round_trips(&SessionView { entry, public, round, offer, ice_servers: vec![IceServer {
                urls: vec!["turn:127.0.0.1:3478".into()], username: Some("1:x".into()),
                credential: Some("c2VjcmV0".into()) }] })?;
        }

        #[test]
        fn lobby_page_and_events_round_trip(entries in proptest::collection::vec(lobby_entry(), 0..4),
            cursor in proptest::option::of("[A-Za-z0-9_-]{1,30}")) {
            for e in &entries {
                round_trips(&LobbyEvent::Added(e.clone()))?;
                round_trips(&LobbyEvent::Updated(e.clone()))?;
                round_trips(&LobbyEvent::Removed(RemovedEntry { code: e.code.clone() }))?;
            }
            round_trips(&LobbyPage { sessions: entries, next_cursor: cursor, total: 3, total_capped: false })?;
        }

        #[test]
        fn put_request_round_trips(code in proptest::option::of(code()), offer in proptest::option::of(".{0,40}"),
            public in proptest::option::of(any::<bool>()), name in proptest::option::of(".{0,20}"),
            players in proptest::option::of(any::<u32>()), host_kind in proptest::option::of(host_kind()),
            in_progress in proptest::option::of(any::<bool>()), meta in meta()) {
            round_trips(&PutSessionRequest { code: code.map(|c| c.to_string()), offer, public, name,
                players, host_kind, in_progress, meta, ..Default::default() })?;
        }

        #[test]
        fn put_response_answer_and_error_round_trip(code in code(), token in proptest::option::of("[a-f0-9]{32}"),
            round in proptest::option::of(any::<u32>()), expires_at in timestamp(), answer in ".{0,40}",
            name in ".{0,10}", message in ".{0,30}") {
            round_trips(&PutSessionResponse { code, host_token: token, round, expires_at, ice_servers: vec![] })?;
            round_trips(&PostAnswerRequest { round: round.unwrap_or(1), answer: answer.clone(), name: Some(name.clone()) })?;
            round_trips(&AnswerView { round: round.unwrap_or(1), answer, name })?;
            round_trips(&ErrorBody { error: ErrorCode::RoundTaken, message })?;
        }
    }

    #[test]
    fn whole_numbers_may_be_written_with_a_zero_fraction() {
        let req: PostAnswerRequest =
            serde_json::from_str(r#"{"round":2603.0,"answer":"v=0"}"#).unwrap();
        assert_eq!(req.round, 2603);
        let req: PutSessionRequest =
            serde_json::from_str(r#"{"players":2.0,"maxPlayers":4,"code":null}"#).unwrap();
        assert_eq!((req.players, req.max_players), (Some(2), Some(4)));
        let req: PutSessionRequest = serde_json::from_str(r#"{"players":null}"#).unwrap();
        assert_eq!(req.players, None);
        for bad in [
            "2.5",
            "-1",
            "-1.0",
            "4294967296",
            "4294967296.0",
            "1e300",
            "\"3\"",
            "true",
        ] {
            let json = format!(r#"{{"round":{bad},"answer":"v=0"}}"#);
            assert!(
                serde_json::from_str::<PostAnswerRequest>(&json).is_err(),
                "{json}"
            );
            let json = format!(r#"{{"players":{bad}}}"#);
            assert!(
                serde_json::from_str::<PutSessionRequest>(&json).is_err(),
                "{json}"
            );
        }
    }

    #[test]
    fn an_entry_without_in_progress_is_not_in_progress() {
        // What servers older than the field send.
        let json = r#"{"code":"ABCDEFGH","name":"n","hostName":"h","players":1,"maxPlayers":4,
            "build":"b","difficulty":null,"campaign":null,"hostKind":"player",
            "createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:01:00Z"}"#;
        let entry: LobbyEntry = serde_json::from_str(json).unwrap();
        assert!(!entry.summary.in_progress);
        assert_eq!(entry.position, None, "older servers send no position");
        let view: SessionView = serde_json::from_str(&format!(
            "{},\"public\":true,\"round\":null,\"offer\":null,\"iceServers\":[]}}",
            json.trim_end_matches('}')
        ))
        .unwrap();
        assert!(!view.entry.summary.in_progress);
        let req: PutSessionRequest = serde_json::from_str(r#"{"players":2}"#).unwrap();
        assert_eq!(req.in_progress, None, "absent: unchanged");
        let mut entry = entry;
        entry.summary.in_progress = true;
        let json = serde_json::to_string(&entry).unwrap();
        assert!(json.contains(r#""inProgress":true"#), "{json}");
    }

    #[test]
    fn unknown_fields_are_tolerated() {
        let req: PostAnswerRequest =
            serde_json::from_str(r#"{"round":3,"answer":"v=0","future":true}"#).unwrap();
        assert_eq!(req.round, 3);
    }

    #[test]
    fn error_codes_are_snake_case() {
        let body = ErrorBody {
            error: ErrorCode::NoSuchSession,
            message: "gone".into(),
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"error":"no_such_session","message":"gone"}"#
        );
    }
}
