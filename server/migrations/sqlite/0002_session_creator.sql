-- The client key of the address that created each session (an IPv4 address,
-- or an IPv6 /64 such as `2001:db8:1:2::/64`): the per-address cap on live
-- sessions counts by it. Sessions created before this migration have ''.
ALTER TABLE sessions ADD COLUMN creator TEXT NOT NULL DEFAULT '';

CREATE INDEX sessions_creator ON sessions (creator, expires_at);
