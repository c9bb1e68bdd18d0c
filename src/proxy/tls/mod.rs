//! TLS listeners as an edge serves them: HTTP/2 and HTTP/1.1 offered by ALPN, certificates
//! chosen by the name a client asks for ([`certs`]), handed to handshakes by a certificate
//! callback ([`listener`]) and replaced when their files change or on SIGHUP ([`reload`]).

pub mod certs;
pub mod listener;
pub mod reload;
