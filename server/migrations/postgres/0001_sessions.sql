-- One row per session, shared by every lobby-server replica.
--
-- `round` counts the rounds the host has published (0: none yet). The latest
-- round is open while `offer` is not NULL; the first valid answer closes it
-- with one conditional UPDATE (`... AND offer IS NOT NULL`), which PostgreSQL's
-- row locks make exactly-once across replicas.
CREATE TABLE sessions (
    code         TEXT PRIMARY KEY,
    token_hash   BYTEA NOT NULL,             -- SHA-256 of the host token
    public       BOOLEAN NOT NULL,
    name         TEXT NOT NULL,
    host_name    TEXT NOT NULL,
    players      BIGINT NOT NULL,
    max_players  BIGINT NOT NULL,
    build        TEXT NOT NULL,
    difficulty   TEXT,
    campaign     TEXT,
    host_kind    TEXT NOT NULL,
    meta         TEXT,
    created_at   BIGINT NOT NULL,            -- ms since the Unix epoch
    expires_at   BIGINT NOT NULL,            -- ms since the Unix epoch
    round        BIGINT NOT NULL DEFAULT 0,
    offer        TEXT,
    answer_round BIGINT,
    answer       TEXT,
    answer_name  TEXT
);

CREATE INDEX sessions_expires_at ON sessions (expires_at);

-- Cross-replica wake-ups: every change that another replica must know about
-- is announced on the channel `campfire_sessions` when its transaction
-- commits. Payload `a:CODE`: a round of CODE was answered (wake long-polls);
-- `s:CODE`: the session was created, changed in a way the lobby shows, or
-- deleted (refresh the lobby index). Pure TTL refreshes are not announced.
CREATE FUNCTION campfire_notify_session() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('campfire_sessions', 's:' || OLD.code);
        RETURN OLD;
    END IF;
    IF TG_OP = 'INSERT' THEN
        PERFORM pg_notify('campfire_sessions', 's:' || NEW.code);
        RETURN NEW;
    END IF;
    IF NEW.answer_round IS DISTINCT FROM OLD.answer_round THEN
        PERFORM pg_notify('campfire_sessions', 'a:' || NEW.code);
    END IF;
    IF (NEW.public, NEW.name, NEW.host_name, NEW.players, NEW.max_players, NEW.build,
        NEW.difficulty, NEW.campaign, NEW.host_kind, NEW.meta)
       IS DISTINCT FROM
       (OLD.public, OLD.name, OLD.host_name, OLD.players, OLD.max_players, OLD.build,
        OLD.difficulty, OLD.campaign, OLD.host_kind, OLD.meta) THEN
        PERFORM pg_notify('campfire_sessions', 's:' || NEW.code);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER sessions_notify
    AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION campfire_notify_session();
