-- Issue 46: a lobby entry says how many of its players are bots and what
-- player count the session starts at by itself (NULL: a person starts it).
ALTER TABLE sessions ADD COLUMN bots BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN start_at BIGINT;

-- The lobby shows them, so a change of them alone is announced to the other
-- replicas like any other lobby field (the function of 0005, plus bots and
-- start_at).
CREATE OR REPLACE FUNCTION campfire_notify_session() RETURNS trigger AS $$
DECLARE
    origin TEXT := COALESCE(current_setting('campfire.origin', true), '');
    code TEXT;
    kinds TEXT[] := '{}';
    kind TEXT;
    detail TEXT;
    payload TEXT;
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
            NEW.difficulty, NEW.campaign, NEW.host_kind, NEW.meta, NEW.in_progress, NEW.bots, NEW.start_at)
           IS DISTINCT FROM
           (OLD.public, OLD.name, OLD.host_name, OLD.players, OLD.max_players, OLD.build,
            OLD.difficulty, OLD.campaign, OLD.host_kind, OLD.meta, OLD.in_progress, OLD.bots, OLD.start_at) THEN
            kinds := kinds || 's'::TEXT;
        END IF;
    END IF;
    FOREACH kind IN ARRAY kinds LOOP
        payload := kind || ':' || code || ':' || origin;
        detail := NULL;
        IF TG_OP = 'DELETE' THEN
            detail := 'gone';
        ELSIF kind = 'a' AND NEW.answer IS NOT NULL AND NEW.answer_round IS NOT NULL THEN
            detail := json_build_object(
                'round', NEW.answer_round,
                'answer', NEW.answer,
                'name', COALESCE(NEW.answer_name, '')
            )::TEXT;
        END IF;
        IF detail IS NOT NULL AND octet_length(payload) + 1 + octet_length(detail) <= 7000 THEN
            payload := payload || ':' || detail;
        END IF;
        PERFORM pg_notify('campfire_changes', payload);
        PERFORM pg_notify('campfire_sessions', kind || ':' || code);
    END LOOP;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
