//! The server's configuration: one clap struct; every flag is also an
//! environment variable (`LOBBY_*`), so flags and env vars are the same knobs.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::client_addr::ForwardedFor;
use crate::store::{SqliteSynchronous, StoreSettings};

/// Loopback and the private ranges: where a compose network's or a
/// cluster's proxy and Prometheus live (the default of `--trusted-proxies`
/// and `--metrics-allow`).
const LOCAL_NETWORKS: &str = "127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7";

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// `lobby-server` configuration.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "lobby-server",
    version,
    about = "campfire lobby and signaling server"
)]
pub struct Config {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "LOBBY_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Database URL: `sqlite://PATH` (created if missing) or
    /// `postgres://USER@HOST/DB` (may be shared by several replicas).
    #[arg(
        long,
        env = "LOBBY_DATABASE_URL",
        default_value = "sqlite://./data/lobby.db"
    )]
    pub database_url: String,

    /// Seconds a session lives after the host's last authenticated call.
    #[arg(long, env = "LOBBY_SESSION_TTL", default_value_t = 60)]
    pub session_ttl: u64,

    /// Longest answer long-poll a host may ask for, in milliseconds.
    #[arg(long, env = "LOBBY_MAX_WAIT_MS", default_value_t = 25_000)]
    pub max_wait_ms: u64,

    /// Seconds between sweeps that delete expired sessions.
    #[arg(long, env = "LOBBY_SWEEP_INTERVAL", default_value_t = 5)]
    pub sweep_interval: u64,

    /// Allowed CORS origins, comma-separated; `*` allows any origin.
    #[arg(
        long,
        env = "LOBBY_CORS_ORIGINS",
        default_value = "*",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,

    /// Log format.
    #[arg(long, env = "LOBBY_LOG_FORMAT", value_enum, default_value_t = LogFormat::Pretty)]
    pub log_format: LogFormat,

    /// Largest request body accepted, in bytes (larger: 413).
    #[arg(long, env = "LOBBY_MAX_BODY_BYTES", default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,

    /// Open connections in all; more are answered 503. At start the soft
    /// open-file limit is raised to fit them (up to the hard limit), or
    /// this is lowered, with a warning, to what the limit leaves room for.
    #[arg(long, env = "LOBBY_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,

    /// Open connections per client address (IPv6: per network of
    /// `--ipv6-prefix-len` bits); more are answered 503. Once fewer than
    /// 1/16 of `--max-connections` are free, each connection accepted asks
    /// the oldest connection of the client holding the most to close (at
    /// once when idle, after its response otherwise), so a new client is
    /// served however many addresses fill the door.
    #[arg(long, env = "LOBBY_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = 64)]
    pub max_connections_per_address: usize,

    /// IPv6 clients are grouped by networks of this many bits for every
    /// per-address bound (connections, rate limits, sessions, bytes): a
    /// subscriber usually holds a /56 (or a /48, or a /64).
    #[arg(long, env = "LOBBY_IPV6_PREFIX_LEN", default_value_t = crate::client_addr::DEFAULT_IPV6_PREFIX,
        value_parser = clap::value_parser!(u8).range(16..=128))]
    pub ipv6_prefix_len: u8,

    /// Lobby event streams (`GET /lobby/events`) open per client address;
    /// more get 429.
    #[arg(long, env = "LOBBY_MAX_EVENT_STREAMS_PER_ADDRESS", default_value_t = 8)]
    pub max_event_streams_per_address: usize,

    /// Least milliseconds between two `updated` events of one session on
    /// `GET /lobby/events`: host updates in between are held and coalesced
    /// (the latest state wins); creates and removals go out at once. 0:
    /// every update at once.
    #[arg(long, env = "LOBBY_FEED_UPDATE_INTERVAL_MS", default_value_t = 1000)]
    pub feed_update_interval_ms: u64,

    /// Most bytes of rendered lobby pages kept for reuse (their keys are
    /// client-chosen, so the cache is cleared when a page would pass this).
    #[arg(long, env = "LOBBY_PAGE_CACHE_BYTES", default_value_t = crate::lobby_index::PAGE_CACHE_BYTES)]
    pub page_cache_bytes: usize,

    /// Answer long-polls open per session (its host polls one at a time);
    /// more get 429.
    #[arg(long, env = "LOBBY_MAX_LONG_POLLS_PER_SESSION", default_value_t = 4)]
    pub max_long_polls_per_session: usize,

    /// Milliseconds a client has to send a request's headers.
    #[arg(long, env = "LOBBY_HEADER_TIMEOUT_MS", default_value_t = 10_000)]
    pub header_timeout_ms: u64,

    /// Milliseconds a response write may wait on a client that reads
    /// nothing; then the connection is closed.
    #[arg(long, env = "LOBBY_WRITE_STALL_TIMEOUT_MS", default_value_t = 10_000)]
    pub write_stall_timeout_ms: u64,

    /// Seconds a lobby event stream lasts; then it ends and the client
    /// reconnects (EventSource does by itself) and resyncs.
    #[arg(long, env = "LOBBY_EVENT_STREAM_MAX_SECS", default_value_t = 900)]
    pub event_stream_max_secs: u64,

    /// Milliseconds a client has to send a request's body.
    #[arg(long, env = "LOBBY_BODY_TIMEOUT_MS", default_value_t = 10_000)]
    pub body_timeout_ms: u64,

    /// Milliseconds requests in flight get after SIGTERM before they are
    /// dropped and the store is flushed.
    #[arg(long, env = "LOBBY_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,

    /// Largest SDP offer or answer accepted, in bytes.
    #[arg(long, env = "LOBBY_MAX_SDP_BYTES", default_value_t = 32 * 1024)]
    pub max_sdp_bytes: usize,

    /// Largest `meta` object accepted, in bytes of JSON.
    #[arg(long, env = "LOBBY_MAX_META_BYTES", default_value_t = 1024)]
    pub max_meta_bytes: usize,

    /// Largest `maxPlayers` a session may declare.
    #[arg(long, env = "LOBBY_MAX_PLAYERS", default_value_t = 64)]
    pub max_players: u32,

    /// Take the client address from the last `X-Forwarded-For` entry (only
    /// behind a reverse proxy that sets it).
    #[arg(long, env = "LOBBY_TRUST_FORWARDED_FOR", default_value_t = false)]
    pub trust_forwarded_for: bool,

    /// With `--trust-forwarded-for`: the proxies whose `X-Forwarded-For` is
    /// taken, comma-separated networks or addresses (a client connecting
    /// from elsewhere is its own address, whatever it sends). A connection
    /// from one of them is not capped as one client; each forwarded client's
    /// requests in flight are capped at `--max-connections-per-address`.
    #[arg(
        long,
        env = "LOBBY_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_parser = crate::client_addr::parse_network,
        default_value = LOCAL_NETWORKS
    )]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// Clients allowed to read `/metrics` (the client address as above),
    /// comma-separated networks or addresses; others get 404.
    #[arg(
        long,
        env = "LOBBY_METRICS_ALLOW",
        value_delimiter = ',',
        value_parser = crate::client_addr::parse_network,
        default_value = LOCAL_NETWORKS
    )]
    pub metrics_allow: Vec<ipnet::IpNet>,

    /// Switch every rate limit off (the feed's update coalescing too), and
    /// the per-address caps on connections, event streams and live
    /// sessions (for load tests from one address).
    #[arg(long, env = "LOBBY_DISABLE_RATE_LIMITS", default_value_t = false)]
    pub disable_rate_limits: bool,

    /// Session creates allowed per client address per minute.
    #[arg(long, env = "LOBBY_CREATES_PER_MINUTE", default_value_t = 30)]
    pub creates_per_minute: u32,

    /// Answers allowed per client address per minute.
    #[arg(long, env = "LOBBY_ANSWERS_PER_MINUTE", default_value_t = 60)]
    pub answers_per_minute: u32,

    /// Rounds of one session one client address may win per minute (that
    /// many at once, and the one that passes it; then its answers to the
    /// session get 429 until the budget refills): whoever polls fastest
    /// cannot take round after round (docs/decisions.md, "Round grabbing,
    /// again"). Races lost cost nothing. 0: no limit.
    #[arg(
        long,
        env = "LOBBY_ANSWERS_PER_SESSION_PER_MINUTE",
        default_value_t = 6
    )]
    pub answers_per_session_per_minute: u32,

    /// Reads of sessions (`GET /session/{code}`) allowed per client address
    /// per minute. 0: no limit.
    #[arg(long, env = "LOBBY_SESSION_READS_PER_MINUTE", default_value_t = 1200)]
    pub session_reads_per_minute: u32,

    /// How many reads a client address may make at once before the
    /// per-minute pace applies (0: as many as per minute).
    #[arg(long, env = "LOBBY_SESSION_READ_BURST", default_value_t = 40)]
    pub session_read_burst: u32,

    /// Host updates (`PUT /session` with a code) allowed per session per
    /// minute (a host refreshes every 20 s and publishes a round per joiner).
    #[arg(long, env = "LOBBY_UPDATES_PER_MINUTE", default_value_t = 60)]
    pub updates_per_minute: u32,

    /// Answer polls (`GET /session/{code}/answer`) allowed per session per
    /// minute (a host long-polls 25 s at a time; a poll refreshes the TTL).
    #[arg(long, env = "LOBBY_ANSWER_POLLS_PER_MINUTE", default_value_t = 120)]
    pub answer_polls_per_minute: u32,

    /// Sessions one client address (an IPv6 network) may hold at once: live,
    /// or expired and not yet swept. 0: no cap.
    #[arg(long, env = "LOBBY_MAX_SESSIONS_PER_ADDRESS", default_value_t = 20)]
    pub max_sessions_per_address: u32,

    /// Live sessions the whole lobby holds at most (counted at each sweep,
    /// plus this replica's creates since); creates beyond it get 503. 0: no cap.
    #[arg(long, env = "LOBBY_MAX_SESSIONS", default_value_t = 100_000)]
    pub max_sessions: u64,

    /// Bytes of offers, answers and `meta` the sessions of one client
    /// address (an IPv6 network) may hold in all; a create, update or answer
    /// that would pass it gets 429. 0: no cap.
    #[arg(long, env = "LOBBY_MAX_SESSION_BYTES_PER_ADDRESS", default_value_t = 512 * 1024)]
    pub max_session_bytes_per_address: u64,

    /// Bytes of offers, answers and `meta` the whole lobby's live sessions
    /// may hold (recounted at each sweep, plus this replica's changes
    /// since); a create, update or answer that would pass it gets 503. 0:
    /// no cap.
    #[arg(long, env = "LOBBY_MAX_SESSION_BYTES", default_value_t = 512 * 1024 * 1024)]
    pub max_session_bytes: u64,

    /// Lookups of unknown codes allowed per client address per minute.
    #[arg(long, env = "LOBBY_MISSES_PER_MINUTE", default_value_t = 30)]
    pub misses_per_minute: u32,

    /// `GET /lobby` pages rendered afresh (not served from the page cache)
    /// per client address per minute; more get 429. 0: no limit.
    #[arg(long, env = "LOBBY_LOBBY_PAGES_PER_MINUTE", default_value_t = 120)]
    pub lobby_pages_per_minute: u32,

    /// How many of those pages a client address may have rendered at once
    /// before the per-minute pace applies (0: as many as per minute).
    #[arg(long, env = "LOBBY_LOBBY_PAGE_BURST", default_value_t = 30)]
    pub lobby_page_burst: u32,

    /// STUN URLs handed to peers, comma-separated (e.g. `stun:stun.example.org:3478`).
    #[arg(long, env = "LOBBY_STUN_URLS", value_delimiter = ',')]
    pub stun_urls: Vec<String>,

    /// TURN URLs handed to peers, comma-separated (need `--turn-secret`).
    #[arg(long, env = "LOBBY_TURN_URLS", value_delimiter = ',')]
    pub turn_urls: Vec<String>,

    /// Shared secret of the TURN server (coturn `use-auth-secret`).
    #[arg(long, env = "LOBBY_TURN_SECRET", hide_env_values = true)]
    pub turn_secret: Option<String>,

    /// Seconds a TURN credential stays valid (it is only needed to set up
    /// one connection; a TURN allocation outlives it).
    #[arg(long, env = "LOBBY_TURN_CREDENTIAL_TTL", default_value_t = 300)]
    pub turn_credential_ttl: u64,

    /// Distinct rounds of one session whose joiners get a TURN user of
    /// their own per credential lifetime; later rounds in that lifetime
    /// share one user, so the TURN server's quotas bound a session however
    /// fast its host opens rounds.
    #[arg(
        long,
        env = "LOBBY_TURN_ROUND_CREDENTIALS_PER_SESSION",
        default_value_t = 16
    )]
    pub turn_round_credentials_per_session: u32,

    /// A file of admin tokens, one per line as `NAME:TOKEN` (or a bare
    /// token, named `admin`; `#` starts a comment). Each token is at least
    /// 20 characters; the server keeps only their SHA-256 hashes. Without
    /// it the admin API answers 404.
    #[arg(long, env = "LOBBY_ADMIN_TOKEN_FILE")]
    pub admin_token_file: Option<std::path::PathBuf>,

    /// A file of words and phrases refused in session names, host names
    /// and lobby-visible metadata, one per line (`#` comments; a trailing
    /// `*` matches words it begins). Reloaded on SIGHUP and by
    /// `POST /admin/words/reload`.
    #[arg(long, env = "LOBBY_WORD_LIST_FILE")]
    pub word_list_file: Option<std::path::PathBuf>,

    /// Admin requests per minute from one client address (charged before
    /// the token is checked).
    #[arg(long, env = "LOBBY_ADMIN_REQUESTS_PER_MINUTE", default_value_t = 120)]
    pub admin_requests_per_minute: u32,

    /// Reports of sessions per minute from one client address.
    #[arg(long, env = "LOBBY_REPORTS_PER_MINUTE", default_value_t = 5)]
    pub reports_per_minute: u32,

    /// Reports one session keeps (one per reporting address); later ones
    /// are refused with 429.
    #[arg(long, env = "LOBBY_MAX_REPORTS_PER_SESSION", default_value_t = 50)]
    pub max_reports_per_session: u32,

    /// Days the audit log keeps an admin action (and players' reports).
    #[arg(long, env = "LOBBY_AUDIT_RETENTION_DAYS", default_value_t = 90)]
    pub audit_retention_days: u32,

    /// Most database connections in the pool (SQLite writes through one).
    #[arg(long, env = "LOBBY_DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,

    /// Milliseconds to wait for a database connection before answering 503.
    #[arg(long, env = "LOBBY_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 3000)]
    pub db_acquire_timeout_ms: u64,

    /// PostgreSQL: milliseconds a statement may run before the database
    /// cancels it (its requests get 503), so one stuck statement cannot
    /// hold its kind's queue. Ignored on SQLite.
    #[arg(long, env = "LOBBY_DB_STATEMENT_TIMEOUT_MS", default_value_t = 5000)]
    pub db_statement_timeout_ms: u64,

    /// SQLite durability: `normal` (a commit survives the process being
    /// killed, not an OS crash or power loss) or `full` (an fsync per
    /// commit; survives both).
    #[arg(long, env = "LOBBY_SQLITE_SYNCHRONOUS", value_enum, default_value_t = SqliteSynchronous::Normal)]
    pub sqlite_synchronous: SqliteSynchronous,

    /// Threads that serve requests. 1 (the default) runs everything on one
    /// thread, the cheapest per request: no hand-offs between threads, and
    /// one core serves thousands of exchanges a second. More spread the
    /// load over that many cores (SQLite's own worker thread comes on
    /// top). See docs/decisions.md, "One request thread by default".
    #[arg(long, env = "LOBBY_WORKER_THREADS", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: u16,

    /// What the lobby page's Join buttons open: a URL template in which
    /// `{code}` becomes the session's code (default: the built-in browser
    /// guest of this server).
    #[arg(
        long,
        env = "LOBBY_GAME_URL",
        default_value = "/play?code={code}",
        value_parser = parse_game_url
    )]
    pub game_url: String,
}

/// Accepts a game URL template only if it has a `{code}` to fill in.
fn parse_game_url(s: &str) -> Result<String, String> {
    if s.contains("{code}") {
        Ok(s.to_owned())
    } else {
        Err("the game URL template must contain {code}".into())
    }
}

impl Config {
    /// Session lifetime after the host's last call.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.session_ttl)
    }

    /// Whose `X-Forwarded-For` names the client.
    pub fn forwarded_for(&self) -> ForwardedFor {
        if self.trust_forwarded_for {
            ForwardedFor::trusting(self.trusted_proxies.clone())
        } else {
            ForwardedFor::ignored()
        }
    }

    /// How client addresses are grouped for per-client bounds.
    pub fn client_keys(&self) -> crate::client_addr::ClientKeys {
        crate::client_addr::ClientKeys::ipv6_prefix(self.ipv6_prefix_len)
    }

    /// How long a lobby event stream lasts.
    pub fn event_stream_max_lifetime(&self) -> Duration {
        Duration::from_secs(self.event_stream_max_secs.max(1))
    }

    /// Lobby event streams one client address may hold open (with rate
    /// limits off, as many as connections).
    pub fn event_streams_per_address(&self) -> usize {
        if self.disable_rate_limits {
            self.max_connections
        } else {
            self.max_event_streams_per_address
        }
    }

    /// Least time between two `updated` events of one session on the lobby
    /// feed (zero, coalescing nothing, with rate limits off).
    pub fn feed_update_interval(&self) -> Duration {
        if self.disable_rate_limits {
            Duration::ZERO
        } else {
            Duration::from_millis(self.feed_update_interval_ms)
        }
    }

    /// What one client address's sessions may hold (no caps with rate
    /// limits off).
    pub fn creator_limits(&self) -> crate::store::CreatorLimits {
        let on = |cap: u64| Some(cap).filter(|&c| c > 0 && !self.disable_rate_limits);
        crate::store::CreatorLimits {
            sessions: on(u64::from(self.max_sessions_per_address)).map(|c| c as u32),
            bytes: on(self.max_session_bytes_per_address),
        }
    }

    /// What the store reads: the database URL and the pool settings.
    pub fn store_settings(&self) -> StoreSettings {
        StoreSettings {
            url: self.database_url.clone(),
            max_connections: self.db_max_connections,
            acquire_timeout: Duration::from_millis(self.db_acquire_timeout_ms),
            statement_timeout: Duration::from_millis(self.db_statement_timeout_ms.max(1)),
            sqlite_synchronous: self.sqlite_synchronous,
        }
    }

    /// A configuration for tests: `sqlite` database at `database_url`,
    /// listening on an ephemeral loopback port, defaults elsewhere.
    pub fn for_tests(database_url: impl Into<String>) -> Self {
        let mut config = Config::parse_from(["lobby-server"]);
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config.database_url = database_url.into();
        config
    }
}
