-- Players' reports of sessions: one row per report, kept for
-- `--audit-retention-days`, so moderators see what was reported of a
-- session after it is gone too. `reporter` is the client key of the
-- reporting address (one report per session and key is stored).
CREATE TABLE reports (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    code     TEXT NOT NULL,
    at       INTEGER NOT NULL,             -- ms since the Unix epoch
    reason   TEXT NOT NULL,                -- offensive_name, spam, cheating, harassment, other
    text     TEXT NOT NULL,
    reporter TEXT NOT NULL,
    UNIQUE (code, reporter)
);

CREATE INDEX reports_at ON reports (at);
