//! The reverse proxy (feature `proxy`): pingora in front of a site, enforcing its robots.txt.
//!
//! Configuration ([`config`]) becomes sites ([`site`]) whose robots.txt snapshots the reload
//! service ([`reload`], [`source`]) keeps fresh, and keeps in the [`state_dir`] across restarts;
//! the request path ([`service`]) decides with the snapshot in force and records [`metrics`] and
//! the [`access_log`]. TLS listeners serve HTTP/2 and HTTP/1.1 with certificates chosen by SNI
//! and reloaded live ([`tls`]).

pub mod access_log;
pub mod admin;
pub mod atomic;
pub mod client;
pub mod config;
pub mod connection;
pub mod decide;
pub mod demo;
pub mod forward_auth;
pub mod forwarding;
pub mod host;
pub mod ledger;
pub mod logging;
pub mod metrics;
pub mod politeness;
pub mod proxy_protocol;
pub mod reload;
pub mod server;
pub mod service;
pub mod site;
pub mod source;
pub mod state;
pub mod state_dir;
pub mod store;
pub mod tls;
pub mod ua_memo;
pub mod verify;
