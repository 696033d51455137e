-- Sessions a moderator hid or ended (as in the SQLite schema); a change to
-- either table is announced as `m::ORIGIN`, like a change to `blocks`.
CREATE TABLE hidden_sessions (
    code      TEXT PRIMARY KEY,
    hidden_by TEXT NOT NULL,
    hidden_at BIGINT NOT NULL
);

CREATE TABLE ended_sessions (
    code      TEXT PRIMARY KEY,
    reason    TEXT NOT NULL,
    ended_by  TEXT NOT NULL,
    ended_at  BIGINT NOT NULL,
    forget_at BIGINT NOT NULL
);

CREATE TRIGGER hidden_sessions_notify
    AFTER INSERT OR UPDATE OR DELETE ON hidden_sessions
    FOR EACH ROW EXECUTE FUNCTION campfire_notify_moderation();

CREATE TRIGGER ended_sessions_notify
    AFTER INSERT OR UPDATE OR DELETE ON ended_sessions
    FOR EACH ROW EXECUTE FUNCTION campfire_notify_moderation();
