//! Reconciliation snapshot wire shapes (filled in by the engine work).
