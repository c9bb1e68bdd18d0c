//! Code shared by the integration tests: a naive reference implementation of RFC 9309 matching.
// Each test crate uses a different part of this module.
#![allow(dead_code)]

pub mod reference;
