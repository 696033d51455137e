-- Each replica names itself in the startup option `campfire.origin` of its
-- connections, and announcements carry that name, so a replica can skip
-- the echo of a change it made itself (its handler has already applied it
-- to its own lobby index and long-polls) instead of reading the row again.
--
-- The channel `campfire_changes` carries `KIND:CODE:ORIGIN` (KIND `a` or
-- `s` as before; ORIGIN empty when the writer set none). The old channel
-- `campfire_sessions` keeps its `KIND:CODE` payloads for replicas of earlier
-- versions during a rolling upgrade; a later migration can drop it.
CREATE OR REPLACE FUNCTION campfire_notify_session() RETURNS trigger AS $$
DECLARE
    origin TEXT := COALESCE(current_setting('campfire.origin', true), '');
    code TEXT;
    kinds TEXT[] := '{}';
    kind TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        code := OLD.code;
        kinds := ARRAY['s'];
    ELSIF TG_OP = 'INSERT' THEN
        code := NEW.code;
        kinds := ARRAY['s'];
    ELSE
        code := NEW.code;
        IF NEW.answer_round IS DISTINCT FROM OLD.answer_round THEN
            kinds := kinds || 'a'::TEXT;
        END IF;
        IF (NEW.public, NEW.name, NEW.host_name, NEW.players, NEW.max_players, NEW.build,
            NEW.difficulty, NEW.campaign, NEW.host_kind, NEW.meta, NEW.in_progress)
           IS DISTINCT FROM
           (OLD.public, OLD.name, OLD.host_name, OLD.players, OLD.max_players, OLD.build,
            OLD.difficulty, OLD.campaign, OLD.host_kind, OLD.meta, OLD.in_progress) THEN
            kinds := kinds || 's'::TEXT;
        END IF;
    END IF;
    FOREACH kind IN ARRAY kinds LOOP
        PERFORM pg_notify('campfire_changes', kind || ':' || code || ':' || origin);
        PERFORM pg_notify('campfire_sessions', kind || ':' || code);
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
