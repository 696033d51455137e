//! Netcode tick constants (filled in by the engine work).
