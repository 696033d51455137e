//! Per-tick player input as it travels between peers (filled in by the engine work).
