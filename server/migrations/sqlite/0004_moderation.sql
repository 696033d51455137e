-- Moderation: blocks a moderator placed on an address or prefix, and the
-- audit log of every admin action.
--
-- A block refuses its prefix's creates, updates and answers until
-- `lapses_at`; lifting it early deletes the row (the audit log keeps what
-- happened). Prefixes are CIDR text with host bits cleared
-- (`203.0.113.0/24`, `2001:db8::/32`, `198.51.100.7/32`).
CREATE TABLE blocks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    prefix     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_by TEXT NOT NULL,              -- the admin token's name
    created_at INTEGER NOT NULL,           -- ms since the Unix epoch
    lapses_at  INTEGER NOT NULL            -- ms since the Unix epoch
);

CREATE INDEX blocks_lapses_at ON blocks (lapses_at);

-- Every admin action: who (the token's name), when, what, to what, why.
-- Kept for `--audit-retention-days`, then swept.
CREATE TABLE audit_log (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    at     INTEGER NOT NULL,               -- ms since the Unix epoch
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,                  -- block, unblock
    target TEXT NOT NULL,                  -- a prefix, a block id
    reason TEXT NOT NULL
);

CREATE INDEX audit_log_at ON audit_log (at);
