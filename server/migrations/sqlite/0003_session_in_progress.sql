-- Whether the session has started and admits players into its running game
-- (late join): the lobby lists it as in progress. Sessions created before
-- this migration have not started (a started session without late join
-- leaves the lobby).
ALTER TABLE sessions ADD COLUMN in_progress INTEGER NOT NULL DEFAULT 0;
