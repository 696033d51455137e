-- One row per session: its lobby fields, its expiry, and its offer rounds.
--
-- `round` counts the rounds the host has published (0: none yet). The latest
-- round is open while `offer` is not NULL; the first valid answer closes it by
-- setting `offer` to NULL and filling the answer columns.
CREATE TABLE sessions (
    code         TEXT PRIMARY KEY NOT NULL,
    token_hash   BLOB NOT NULL,              -- SHA-256 of the host token; the token itself is never stored
    public       INTEGER NOT NULL,
    name         TEXT NOT NULL,
    host_name    TEXT NOT NULL,
    players      INTEGER NOT NULL,
    max_players  INTEGER NOT NULL,
    build        TEXT NOT NULL,
    difficulty   TEXT,
    campaign     TEXT,
    host_kind    TEXT NOT NULL,
    meta         TEXT,                       -- JSON object, size-capped by the server
    created_at   INTEGER NOT NULL,           -- ms since the Unix epoch
    expires_at   INTEGER NOT NULL,           -- ms since the Unix epoch
    round        INTEGER NOT NULL DEFAULT 0,
    offer        TEXT,
    answer_round INTEGER,                    -- the latest answered round
    answer       TEXT,
    answer_name  TEXT
);

-- The sweep deletes by expiry.
CREATE INDEX sessions_expires_at ON sessions (expires_at);
