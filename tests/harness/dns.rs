//! A small authoritative DNS server on loopback (UDP), for reverse-DNS verification: PTR and
//! A/AAAA records from a table, NXDOMAIN for the rest, a delay for chosen names, and a count of
//! the questions it was asked; or a black hole that reads every question and answers none.

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, PTR};
use hickory_proto::rr::{Name, RData, Record};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The DNS server; it stops when dropped.
pub struct DnsServer {
    pub addr: SocketAddr,
    questions: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl DnsServer {
    /// Answers from `records`; a question about a name in `slow` is answered after its delay
    /// (from another thread, so that a slow answer does not hold the others).
    pub fn start(records: Vec<(Name, RData)>, slow: Vec<(Name, Duration)>) -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let questions = Arc::new(AtomicU64::new(0));
        let (stopped, asked) = (stop.clone(), questions.clone());
        let slow: HashMap<Name, Duration> = slow.into_iter().collect();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((len, from)) = socket.recv_from(&mut buffer) else {
                    continue;
                };
                let Ok(query) = Message::from_vec(&buffer[..len]) else {
                    continue;
                };
                let (bytes, delay) = answer(&query, &records, &slow, &asked);
                if delay.is_zero() {
                    let _ = socket.send_to(&bytes, from);
                    continue;
                }
                let socket = socket.try_clone().unwrap();
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    let _ = socket.send_to(&bytes, from);
                });
            }
        });
        DnsServer {
            addr,
            questions,
            stop,
        }
    }

    /// A name server that never answers, as a resolver behind a black hole does: it reads every
    /// query (so that the count of questions is known) and drops it.
    pub fn blackhole() -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let questions = Arc::new(AtomicU64::new(0));
        let (stopped, asked) = (stop.clone(), questions.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((len, _)) = socket.recv_from(&mut buffer) else {
                    continue;
                };
                if let Ok(query) = Message::from_vec(&buffer[..len]) {
                    asked.fetch_add(query.queries.len() as u64, Ordering::Relaxed);
                }
            }
        });
        DnsServer {
            addr,
            questions,
            stop,
        }
    }

    /// How many questions it was asked so far (a query may hold several).
    pub fn questions(&self) -> u64 {
        self.questions.load(Ordering::Relaxed)
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The response to `query`, and how long to wait before sending it.
fn answer(
    query: &Message,
    records: &[(Name, RData)],
    slow: &HashMap<Name, Duration>,
    asked: &AtomicU64,
) -> (Vec<u8>, Duration) {
    let mut response = Message::new(query.metadata.id, MessageType::Response, OpCode::Query);
    response.metadata.authoritative = true;
    response.metadata.recursion_desired = query.metadata.recursion_desired;
    let mut delay = Duration::ZERO;
    for question in &query.queries {
        asked.fetch_add(1, Ordering::Relaxed);
        response.add_query(question.clone());
        let name = question.name();
        if let Some(wait) = slow.get(name) {
            delay = delay.max(*wait);
        }
        for (owner, data) in records {
            if owner == name && data.record_type() == question.query_type() {
                response.add_answer(Record::from_rdata(owner.clone(), 60, data.clone()));
            }
        }
    }
    if response.answers.is_empty() {
        response.metadata.response_code = ResponseCode::NXDomain;
    }
    (response.to_vec().unwrap(), delay)
}

/// The reverse-lookup name of an address (`1.0.0.127.in-addr.arpa.`).
pub fn reverse(addr: &str) -> Name {
    Name::from(addr.parse::<IpAddr>().unwrap())
}

pub fn name(text: &str) -> Name {
    Name::from_ascii(text).unwrap()
}

/// A PTR record: `addr` names `to`.
pub fn ptr(addr: &str, to: &str) -> (Name, RData) {
    (reverse(addr), RData::PTR(PTR(name(to))))
}

/// An A record.
pub fn a(owner: &str, addr: &str) -> (Name, RData) {
    (name(owner), RData::A(A(addr.parse().unwrap())))
}

/// An AAAA record.
pub fn aaaa(owner: &str, addr: &str) -> (Name, RData) {
    (name(owner), RData::AAAA(AAAA(addr.parse().unwrap())))
}
