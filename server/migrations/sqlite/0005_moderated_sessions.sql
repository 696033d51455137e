-- Sessions a moderator hid or ended.
--
-- A hidden session is unlisted (the lobby and its feed leave it out) but
-- still joinable by code; the row goes once the session is gone.
CREATE TABLE hidden_sessions (
    code      TEXT PRIMARY KEY NOT NULL,
    hidden_by TEXT NOT NULL,               -- the admin token's name
    hidden_at INTEGER NOT NULL             -- ms since the Unix epoch
);

-- An ended session was deleted by a moderator; its code is remembered for a
-- day so its host's next call, its long-polls and its joiners hear why.
CREATE TABLE ended_sessions (
    code      TEXT PRIMARY KEY NOT NULL,
    reason    TEXT NOT NULL,
    ended_by  TEXT NOT NULL,
    ended_at  INTEGER NOT NULL,            -- ms since the Unix epoch
    forget_at INTEGER NOT NULL             -- ms since the Unix epoch
);
