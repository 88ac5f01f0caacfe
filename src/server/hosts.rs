//! Host names in IP-based limits, resolved as Kafka resolves them. An IP
//! client quota entity (`connection_creation_rate` of `ip=<host>`) and the
//! hosts of `max.connections.per.ip.overrides` may name a host, which
//! applies to the one address Java's `InetAddress.getByName` gives for it.
//! Kafka resolves a name when the quota or config naming it is applied
//! (and so again at start-up), never per connection; so does each shard
//! here, off the executor, before the change is answered.
//!
//! Kafka's `ConnectionQuotas` keeps one rate per address, so two quota
//! entities naming the same address share it: the one applied last sets
//! it and removing either removes it ([`IpRates`]). An override naming a
//! host that does not resolve when applied leaves the overrides in force
//! before it ([`refresh_overrides`]).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::rc::Rc;

use crate::cluster::image::MetadataRecord;
use crate::quota::{EntityName, QuotaKey};
use crate::shard::Shard;

/// The address `host` names, as Java's `InetAddress.getByName` gives it:
/// an IP literal as it is (an IPv6 one may be in brackets, an IPv4 one
/// have one to four decimal parts, as Java reads them); the empty name the
/// loopback address; any other name through the system's resolver, its
/// first IPv4 address if it has one (Java's default
/// `java.net.preferIPv6Addresses=false`), else its first IPv6 one.
/// Blocking: call off the executor unless `host` is a literal.
pub fn resolve(host: &str) -> Option<IpAddr> {
    if host.is_empty() {
        return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    if let Some(ip) = literal(host) {
        return Some(ip);
    }
    // A numeric form Java does not read as an address (`999.1.1.1`,
    // `0x7f.0.0.1`) is no host name either; nor are scoped or bracketed
    // forms that are not literals, or names with spaces.
    let numeric = host.split('.').all(|part| {
        !part.is_empty()
            && (part.bytes().all(|b| b.is_ascii_digit())
                || part.starts_with("0x")
                || part.starts_with("0X"))
    });
    if numeric || host.contains(['[', ']', '%']) || host.contains(char::is_whitespace) {
        return None;
    }
    let addresses: Vec<IpAddr> = (host, 0)
        .to_socket_addrs()
        .ok()?
        .map(|a| a.ip().to_canonical())
        .collect();
    addresses
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addresses.first())
        .copied()
}

/// `host` as an IP literal Java reads without a lookup, if it is one: an
/// IPv6 address (in brackets or not), or an IPv4 one in one to four
/// decimal parts, the last filling the remaining bytes (`127.1`,
/// `2130706433`). An IPv4-mapped IPv6 address is its IPv4 one.
pub fn literal(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|ip| IpAddr::V6(ip).to_canonical());
    }
    if host.contains(':') {
        return host
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|ip| IpAddr::V6(ip).to_canonical());
    }
    java_ipv4(host).map(IpAddr::V4)
}

/// Java's `IPAddressUtil.textToNumericFormatV4`: one to four parts of
/// decimal digits; each part but the last is one byte, the last fills the
/// bytes left.
fn java_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 || parts.iter().any(|p| p.is_empty() || p.len() > 10) {
        return None;
    }
    if !parts.iter().all(|p| p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let values: Vec<u64> = parts
        .iter()
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let (last, leading) = values.split_last()?;
    if leading.iter().any(|v| *v > 0xff) {
        return None;
    }
    let last_bytes = 4 - leading.len();
    if *last >= 1u64 << (8 * last_bytes) {
        return None;
    }
    let mut address = 0u64;
    for v in leading {
        address = (address << 8) | v;
    }
    address = (address << (8 * last_bytes)) | last;
    u32::try_from(address).ok().map(Ipv4Addr::from)
}

/// Resolves `hosts` off the executor (literals need no thread).
pub async fn resolve_all(hosts: Vec<String>) -> HashMap<String, Option<IpAddr>> {
    let (literals, names): (Vec<String>, Vec<String>) = hosts
        .into_iter()
        .partition(|host| host.is_empty() || literal(host).is_some());
    let mut found: HashMap<String, Option<IpAddr>> = literals
        .into_iter()
        .map(|host| {
            let ip = resolve(&host);
            (host, ip)
        })
        .collect();
    if !names.is_empty() {
        let resolved: Vec<(String, Option<IpAddr>)> = glommio::executor()
            .spawn_blocking(move || {
                names
                    .into_iter()
                    .map(|name| {
                        let ip = resolve(&name);
                        (name, ip)
                    })
                    .collect()
            })
            .await;
        found.extend(resolved);
    }
    found
}

/// The `connection_creation_rate` of each address named by an IP client
/// quota, kept as Kafka's `ConnectionQuotas` keeps them: applying a quota
/// sets its address's rate, removing one removes its address's rate (even
/// while another entity naming that address keeps its quota).
#[derive(Default)]
pub struct IpRates {
    rates: RefCell<HashMap<IpAddr, f64>>,
}

impl IpRates {
    /// The rate of connections from `ip` its own quota allows.
    pub fn rate(&self, ip: IpAddr) -> Option<f64> {
        self.rates.borrow().get(&ip.to_canonical()).copied()
    }

    fn set(&self, ip: IpAddr, rate: Option<f64>) {
        let mut rates = self.rates.borrow_mut();
        match rate {
            Some(rate) => rates.insert(ip, rate),
            None => rates.remove(&ip),
        };
    }

    /// Applies `records` in order (the metadata log at start-up, or the
    /// records of a change), resolving the hosts they name.
    pub async fn apply(&self, records: &[MetadataRecord]) {
        let named = |record: &MetadataRecord| match record {
            MetadataRecord::ClientQuota { entity, key, value }
                if *key == QuotaKey::ConnectionCreationRate =>
            {
                match &entity.ip {
                    Some(EntityName::Named(host)) => Some((host.clone(), value.map(|v| v.0))),
                    _ => None,
                }
            }
            _ => None,
        };
        let changes: Vec<(String, Option<f64>)> = records.iter().filter_map(named).collect();
        if changes.is_empty() {
            return;
        }
        let mut hosts: Vec<String> = changes.iter().map(|(host, _)| host.clone()).collect();
        hosts.sort();
        hosts.dedup();
        let found = resolve_all(hosts).await;
        for (host, rate) in changes {
            match found.get(&host).copied().flatten() {
                // Java's `toInt` of NaN is 0: every connection throttled.
                Some(ip) => self.set(ip, rate.map(|r| if r.is_nan() { 0.0 } else { r })),
                None => tracing::error!(
                    host = %host,
                    "connection_creation_rate quota not applied: unable to resolve address {host}"
                ),
            }
        }
    }
}

/// Connection counts allowed, by address.
pub type CountsByAddress = HashMap<IpAddr, i32>;
/// Override entries applied, and the counts by address they resolved to.
type AppliedOverrides = (Vec<(String, i32)>, Rc<CountsByAddress>);

/// `max.connections.per.ip.overrides` as the owner shard applies it: the
/// entries last applied, and the counts by address they resolved to.
#[derive(Default)]
pub struct ResolvedOverrides {
    applied: RefCell<Option<AppliedOverrides>>,
}

impl ResolvedOverrides {
    /// The counts by address in force.
    pub fn by_address(&self) -> Rc<CountsByAddress> {
        self.applied
            .borrow()
            .as_ref()
            .map(|(_, by_address)| by_address.clone())
            .unwrap_or_default()
    }
}

/// Resolves the `max.connections.per.ip.overrides` in force on the owner
/// shard when they changed since last applied, as Kafka's
/// `ConnectionQuotas` does on a reconfiguration: if a host does not
/// resolve, the overrides in force before stay, with an error in the log.
/// At start-up (nothing applied yet) the command line's are tried next.
pub async fn refresh_overrides(shard: &Shard) {
    if shard.id != crate::server::admission::OWNER_SHARD {
        return;
    }
    let limits =
        crate::server::admission::limits_in_force(&shard.config, &shard.image().broker_configs);
    let overrides = &shard.connection_counts.overrides;
    if overrides
        .applied
        .borrow()
        .as_ref()
        .map(|(entries, _)| entries)
        == Some(&limits.overrides)
    {
        return;
    }
    let mut candidates = vec![limits.overrides];
    if overrides.applied.borrow().is_none() {
        candidates.push(shard.config.connection_limits.overrides.clone());
        candidates.push(Vec::new());
    }
    for entries in candidates {
        let hosts = entries.iter().map(|(host, _)| host.clone()).collect();
        let found = resolve_all(hosts).await;
        let mut by_address = HashMap::with_capacity(entries.len());
        let mut unresolved = None;
        for (host, count) in &entries {
            match found.get(host).copied().flatten() {
                Some(ip) => {
                    by_address.insert(ip, *count);
                }
                None => {
                    unresolved = Some(host.clone());
                    break;
                }
            }
        }
        match unresolved {
            None => {
                *overrides.applied.borrow_mut() = Some((entries, Rc::new(by_address)));
                return;
            }
            Some(host) => tracing::error!(
                host = %host,
                "max.connections.per.ip.overrides could not be applied: {host}: Name or service not known; the overrides in force before stay"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: names resolve to the address Java's `getByName` gives, and
    /// the forms it refuses resolve to none (measured on Kafka 4.1.1).
    #[test]
    fn hosts_resolve_as_java_resolves_them() {
        let v4 = |s: &str| Some(IpAddr::V4(s.parse().unwrap()));
        assert_eq!(resolve("localhost"), v4("127.0.0.1"));
        assert_eq!(resolve("LOCALHOST"), v4("127.0.0.1"));
        assert_eq!(resolve("127.1"), v4("127.0.0.1"));
        assert_eq!(resolve("2130706433"), v4("127.0.0.1"));
        assert_eq!(resolve("1.2.3"), v4("1.2.0.3"));
        assert_eq!(resolve("::ffff:127.0.0.1"), v4("127.0.0.1"));
        assert_eq!(resolve(""), v4("127.0.0.1"));
        let one = Some(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST));
        assert_eq!(resolve("::1"), one);
        assert_eq!(resolve("[::1]"), one);
        for refused in [
            "no-such-host.invalid",
            "999.1.1.1",
            "a b",
            " 127.0.0.1",
            "0x7f.0.0.1",
            "fe80::1%lo",
            "[127.0.0.1]",
            "1.2.3.4.5",
        ] {
            assert_eq!(resolve(refused), None, "{refused}");
        }
    }
}
