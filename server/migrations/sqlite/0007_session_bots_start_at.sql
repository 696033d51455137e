-- Issue 46: a lobby entry says how many of its players are bots and what
-- player count the session starts at by itself (NULL: a person starts it).
ALTER TABLE sessions ADD COLUMN bots INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN start_at INTEGER;
