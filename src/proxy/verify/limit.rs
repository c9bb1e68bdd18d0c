//! How many verification lookups may run at once: in all (per instance) and per client network.
//!
//! A lookup holds a socket until its resolver answers or `dns.timeout` passes, and anybody can
//! start one by sending a crawler's name from a new address: against a resolver that never
//! answers, an unbounded number of them ran the process out of descriptors (issue 22). Over
//! either limit no lookup is started: the claim is `unverifiable` at once, and the request
//! goes on without waiting. A permit is held by the lookup's task until the lookup ends, so the
//! limit counts what holds sockets, not what waits for an answer.
//!
//! A client network is an IPv4 address or an IPv6 /64: one host is usually given a whole /64,
//! so counting IPv6 addresses one by one would let one host start as many lookups as it has
//! addresses.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Which limit a lookup was over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// `verification.dns.max_lookups`: the instance's.
    Instance,
    /// `verification.dns.max_lookups_per_client`: the client network's.
    Client,
}

impl Over {
    /// The `limit` label of `crawlgate_dns_lookups_shed_total`.
    pub fn label(self) -> &'static str {
        match self {
            Over::Instance => "instance",
            Over::Client => "client",
        }
    }
}

/// An IPv4 address or an IPv6 /64 (see the module's comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Network {
    V4(u32),
    V6(u64),
}

fn network_of(addr: IpAddr) -> Network {
    match addr.to_canonical() {
        IpAddr::V4(v4) => Network::V4(u32::from(v4)),
        IpAddr::V6(v6) => Network::V6((u128::from(v6) >> 64) as u64),
    }
}

#[derive(Debug, Default)]
struct Running {
    total: usize,
    /// Only networks with a lookup running: at most `total` entries.
    by_network: HashMap<Network, usize>,
}

/// The lookups running, and the limits they are held to.
#[derive(Debug)]
pub struct LookupLimit {
    max: usize,
    per_client: usize,
    running: Mutex<Running>,
    /// `crawlgate_dns_lookups_in_flight`.
    gauge: prometheus::IntGauge,
}

/// A running lookup's place under the limits, given back when dropped.
#[derive(Debug)]
pub struct Permit {
    limit: Arc<LookupLimit>,
    network: Network,
}

impl LookupLimit {
    /// At most `max` lookups at once, `per_client` of them for one client network; `gauge`
    /// shows how many run.
    pub fn new(max: usize, per_client: usize, gauge: prometheus::IntGauge) -> Arc<LookupLimit> {
        Arc::new(LookupLimit {
            max,
            per_client,
            running: Mutex::new(Running::default()),
            gauge,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        match self.running.lock() {
            Ok(running) => running,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A place for a lookup of `addr`, or which limit it is over.
    pub fn try_acquire(self: &Arc<Self>, addr: IpAddr) -> Result<Permit, Over> {
        let network = network_of(addr);
        let mut running = self.lock();
        if running.total >= self.max {
            return Err(Over::Instance);
        }
        if running.by_network.get(&network).copied().unwrap_or(0) >= self.per_client {
            return Err(Over::Client);
        }
        *running.by_network.entry(network).or_insert(0) += 1;
        running.total += 1;
        drop(running);
        self.gauge.inc();
        Ok(Permit {
            limit: self.clone(),
            network,
        })
    }

    /// How many lookups run now.
    pub fn running(&self) -> usize {
        self.lock().total
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut running = self.limit.lock();
        running.total = running.total.saturating_sub(1);
        if let Some(count) = running.by_network.get_mut(&self.network) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                running.by_network.remove(&self.network);
            }
        }
        drop(running);
        self.limit.gauge.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn lookups_are_limited_in_all_and_per_client_network() {
        let gauge = prometheus::IntGauge::new("g", "g").unwrap();
        let limit = LookupLimit::new(3, 2, gauge.clone());
        let a1 = limit.try_acquire(ip("192.0.2.1")).unwrap();
        let a2 = limit.try_acquire(ip("::ffff:192.0.2.1")).unwrap();
        assert_eq!(
            limit.try_acquire(ip("192.0.2.1")).unwrap_err(),
            Over::Client
        );
        // One IPv6 host's /64 is one client, whatever address of it asks.
        let b1 = limit.try_acquire(ip("2001:db8:0:1::1")).unwrap();
        assert_eq!(
            limit.try_acquire(ip("2001:db8:0:2::1")).unwrap_err(),
            Over::Instance
        );
        assert_eq!((limit.running(), gauge.get()), (3, 3));
        drop(b1);
        let b2 = limit.try_acquire(ip("2001:db8:0:1::2")).unwrap();
        assert_eq!(
            limit.try_acquire(ip("2001:db8:0:1::3")).unwrap_err(),
            Over::Instance
        );
        drop((a1, a2, b2));
        assert_eq!((limit.running(), gauge.get()), (0, 0));
        assert!(
            limit.lock().by_network.is_empty(),
            "no entry outlives its lookups"
        );
        let v6 = LookupLimit::new(10, 1, gauge);
        let _held = v6.try_acquire(ip("2001:db8:0:1::1")).unwrap();
        assert_eq!(
            v6.try_acquire(ip("2001:db8:0:1:ffff::9")).unwrap_err(),
            Over::Client
        );
        assert!(v6.try_acquire(ip("2001:db8:0:2::1")).is_ok());
    }
}
