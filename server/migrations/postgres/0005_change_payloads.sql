-- Announcements that spare the other replicas a read of the row.
--
-- On the channel `campfire_changes`, `KIND:CODE:ORIGIN` may now carry a
-- fourth field:
--   a:CODE:ORIGIN:{"round":N,"answer":"...","name":"..."}  the answer itself,
--     when the payload stays well under NOTIFY's 8000 bytes; a replica
--     hands it to its long-polls instead of reading the row (without it, a
--     long-poll reads the row as before);
--   s:CODE:ORIGIN:gone  the row was deleted; a replica unlists the session
--     and ends its long-polls without reading.
-- A replica of the previous version reads everything after the second
-- colon as the origin, which then names no replica: it treats the change
-- as another replica's and reads the row, as it always did. The old
-- channel `campfire_sessions` keeps its `KIND:CODE` payloads.
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
            NEW.difficulty, NEW.campaign, NEW.host_kind, NEW.meta, NEW.in_progress)
           IS DISTINCT FROM
           (OLD.public, OLD.name, OLD.host_name, OLD.players, OLD.max_players, OLD.build,
            OLD.difficulty, OLD.campaign, OLD.host_kind, OLD.meta, OLD.in_progress) THEN
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
