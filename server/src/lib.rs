//! campfire's lobby and signaling server.
//!
//! Hosts publish a session with a short code and one SDP offer per join
//! round; joiners read the offer and post an answer; the host long-polls for
//! it; a public lobby lists open sessions; everything expires by TTL. The
//! HTTP contract is in `docs/api.md`, and `/openapi.json` serves it.
//!
//! # Layout
//!
//! - [`startup`]: `Application`: open the store, load the lobby, bind, serve
//!   (with the expiry sweeper, the lobby feed's pacing and, on PostgreSQL,
//!   the follower of other replicas' changes), shut down gracefully.
//! - [`config`]: the clap configuration (every flag is also a `LOBBY_*` env
//!   var), and the `StoreSettings` derived from it.
//! - [`state`]: `AppState`, what every handler shares (configuration, store,
//!   clock, lobby index, long-poll waiters, rate limits, metrics, shutdown),
//!   and the live counters the lobby's caps read.
//! - [`serve`]: the front door: connection caps (total and per address,
//!   or per forwarded client behind a trusted proxy), the header read and
//!   write stall timeouts, the bounded shutdown drain.
//! - [`shedding`]: near the connection cap, which open connection is asked
//!   to close (the oldest of the client holding the most).
//! - [`client_addr`]: who the client is (the peer, or what a trusted
//!   proxy's `X-Forwarded-For` says), for the front door and the handlers,
//!   and the key its budgets are kept under (the address; IPv6 by /56).
//! - [`descriptors`]: the file-descriptor limit raised for the connection
//!   cap, or the cap lowered to fit it.
//! - [`app`]: the router and the generated OpenAPI document.
//! - [`routes`]: handlers: `session` (create/update, offers, answers,
//!   long-poll), `lobby` (listing and SSE feed), `ops` (health, readiness, metrics).
//! - [`web`]: the lobby page (`/`), the browser guest (`/play`), the
//!   browser host (`/host`) and their
//!   JavaScript modules, embedded from `web/`.
//! - [`store`]: session persistence behind one type, opened with
//!   `StoreSettings`: `sqlite` (embedded, one process: sessions in memory,
//!   group commit to a file) or `postgres` (one database shared by several
//!   replicas, which learn of each other's changes by `LISTEN`/`NOTIFY`);
//!   `row` is the row codec both share; `journal` is SQLite's group-commit
//!   bookkeeping (staged changes, busy sessions, what each creator holds).
//! - [`sessions`]: the session service: every change to a session (a
//!   client's create, update, delete, claim or refresh; a moderator's end;
//!   the expiry sweep; the lobby's load at start) moves the store, the
//!   lobby index, the waiters, the counters and the metrics together.
//! - [`replica`]: what this replica does with another replica's change
//!   (long-polls woken, the index kept current, decisions reloaded).
//! - [`moderation`]: what a replica holds of the moderators' decisions
//!   (admin tokens, blocks, ended sessions, refused words), and
//!   [`moderating`]: their actions and the checks requests go through
//!   (tables in `store::moderation`, routes in `routes::admin`).
//! - [`lobby_index`]: the in-memory lobby read model, split by concept: a
//!   listed session, filters and word-prefix search, the listings, pages
//!   and their cache, the cursor, and the change feed.
//! - [`coalesce`]: host updates paced per session on that feed (one per
//!   interval, the latest state winning).
//! - [`waiters`]: in-process wake-ups for answer long-polls.
//! - [`slots`]: counted places per key (connections, event streams and
//!   long-polls a client may hold open).
//! - [`fields`]: sanitizing and validating `PUT /session` bodies.
//! - [`extract`]: extractors that answer with the API's JSON errors; client address; bearer token.
//! - [`error`]: `AppError`, the JSON error response.
//! - [`rate_limit`]: per-address limits on creates, answers and code misses,
//!   per-session limits on host updates.
//! - [`token`]: host tokens (hashed at rest, constant-time comparison).
//! - [`ice`]: ICE servers and TURN REST credentials.
//! - [`metrics`]: Prometheus registry and per-route request tracking.
//! - [`clock`]: injectable wall clock.
//! - [`telemetry`]: log subscriber setup.
#![forbid(unsafe_code)]

pub mod app;
pub mod client_addr;
pub mod clock;
pub mod coalesce;
pub mod config;
pub mod descriptors;
pub mod error;
pub mod extract;
pub mod fields;
pub mod ice;
pub mod lobby_index;
pub mod metrics;
pub mod moderating;
pub mod moderation;
pub mod rate_limit;
pub mod replica;
pub mod routes;
pub mod serve;
pub mod sessions;
pub mod shedding;
pub mod slots;
pub mod startup;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod token;
pub mod waiters;
pub mod web;

pub use config::Config;
pub use startup::Application;
