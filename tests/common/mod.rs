//! Code shared by the integration tests (and the fuzz targets): a naive reference implementation
//! of RFC 9309 matching, the canonical combined log line of an access-log entry, the real,
//! labelled User-Agents of `tests/fixtures/ua`, and the User-Agent classifier's properties.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

pub mod combined;
pub mod counting;
pub mod isbot;
pub mod people;
pub mod reference;
pub mod rng;
pub mod shapes;
pub mod user_agent;
