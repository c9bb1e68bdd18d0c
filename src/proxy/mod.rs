//! The reverse proxy (feature `proxy`): pingora in front of a site, enforcing its robots.txt.

pub mod config;
