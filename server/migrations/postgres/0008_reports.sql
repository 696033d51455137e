-- Players' reports of sessions (as in the SQLite schema).
CREATE TABLE reports (
    id       BIGSERIAL PRIMARY KEY,
    code     TEXT NOT NULL,
    at       BIGINT NOT NULL,
    reason   TEXT NOT NULL,
    text     TEXT NOT NULL,
    reporter TEXT NOT NULL,
    UNIQUE (code, reporter)
);

CREATE INDEX reports_at ON reports (at);
