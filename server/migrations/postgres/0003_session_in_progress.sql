-- Whether the session has started and admits players into its running game
-- (late join): the lobby lists it as in progress. Sessions created before
-- this migration have not started (a started session without late join
-- leaves the lobby).
ALTER TABLE sessions ADD COLUMN in_progress BOOLEAN NOT NULL DEFAULT false;

-- The lobby shows it, so a change of it alone is announced to the other
-- replicas like any other lobby field (the trigger of 0001, plus in_progress).
CREATE OR REPLACE FUNCTION campfire_notify_session() RETURNS trigger AS $$
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
        NEW.difficulty, NEW.campaign, NEW.host_kind, NEW.meta, NEW.in_progress)
       IS DISTINCT FROM
       (OLD.public, OLD.name, OLD.host_name, OLD.players, OLD.max_players, OLD.build,
        OLD.difficulty, OLD.campaign, OLD.host_kind, OLD.meta, OLD.in_progress) THEN
        PERFORM pg_notify('campfire_sessions', 's:' || NEW.code);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
