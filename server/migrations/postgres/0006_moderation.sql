-- Moderation: blocks a moderator placed on an address or prefix, and the
-- audit log of every admin action (as in the SQLite schema).
--
-- A change to `blocks` is announced on `campfire_changes` as `m::ORIGIN`
-- (no session code; one per transaction, as NOTIFY folds repeats): every
-- replica reloads its block list, so a block
-- placed on one replica is enforced by all of them within a notification.
CREATE TABLE blocks (
    id         BIGSERIAL PRIMARY KEY,
    prefix     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,            -- ms since the Unix epoch
    lapses_at  BIGINT NOT NULL             -- ms since the Unix epoch
);

CREATE INDEX blocks_lapses_at ON blocks (lapses_at);

CREATE TABLE audit_log (
    id     BIGSERIAL PRIMARY KEY,
    at     BIGINT NOT NULL,                -- ms since the Unix epoch
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    reason TEXT NOT NULL
);

CREATE INDEX audit_log_at ON audit_log (at);

CREATE OR REPLACE FUNCTION campfire_notify_moderation() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(
        'campfire_changes',
        'm::' || COALESCE(current_setting('campfire.origin', true), '')
    );
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER blocks_notify
    AFTER INSERT OR UPDATE OR DELETE ON blocks
    FOR EACH ROW EXECUTE FUNCTION campfire_notify_moderation();
