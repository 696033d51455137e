//! Game map wire shape (filled in by the engine work).
