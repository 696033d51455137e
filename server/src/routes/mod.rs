//! HTTP handlers, one module per area of the API.

pub mod admin;
pub mod lobby;
pub mod ops;
pub mod report;
pub mod session;
