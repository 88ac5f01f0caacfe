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
    if host.len() > 15 {
        return None;
    }
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

/// Longest a batch of look-ups may take; a name whose answer is later
/// resolves to nothing.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// What each of some hosts resolves to ([`resolve`]; None: nothing).
pub type Resolved = HashMap<String, Option<IpAddr>>;

/// Resolves `hosts` ([`resolve`]): literals here, names on a thread of
/// their own (not the executor, nor the blocking pool the disk work
/// shares), for at most [`RESOLVE_TIMEOUT`] in all.
pub async fn resolve_all(hosts: impl IntoIterator<Item = String>) -> Resolved {
    let mut found = Resolved::new();
    let mut names = Vec::new();
    for host in hosts {
        if found.contains_key(&host) || names.contains(&host) {
            continue;
        }
        if host.is_empty() || literal(&host).is_some() {
            let ip = resolve(&host);
            found.insert(host, ip);
        } else {
            names.push(host);
        }
    }
    if names.is_empty() {
        return found;
    }
    let (tx, rx) = futures::channel::oneshot::channel();
    let wanted = names.clone();
    let spawned = std::thread::Builder::new()
        .name("rb-resolve".into())
        .spawn(move || {
            let answers: Vec<Option<IpAddr>> = wanted.iter().map(|name| resolve(name)).collect();
            let _ = tx.send(answers);
        });
    let answers = match spawned {
        Ok(_) => {
            let timeout = glommio::timer::sleep(RESOLVE_TIMEOUT);
            match futures::future::select(rx, Box::pin(timeout)).await {
                futures::future::Either::Left((Ok(answers), _)) => answers,
                _ => {
                    tracing::error!(hosts = ?names, "host names not resolved within {RESOLVE_TIMEOUT:?}");
                    Vec::new()
                }
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot start a thread to resolve host names");
            Vec::new()
        }
    };
    let mut answers = answers.into_iter();
    for name in names {
        found.insert(name, answers.next().flatten());
    }
    found
}

/// The `connection_creation_rate` of each address named by an IP client
/// quota, kept on the owner shard (`admission::OWNER_SHARD`) as Kafka's
/// one `ConnectionQuotas` keeps them: applying a quota sets its address's
/// rate, removing one removes its address's rate (even while another
/// entity naming that address keeps its quota).
#[derive(Default)]
pub struct IpRates {
    rates: RefCell<HashMap<IpAddr, f64>>,
    /// What the controller resolved the names of a change to while
    /// checking it, used when the change is applied (not looked up twice).
    pub checked: CheckedHosts,
}

impl IpRates {
    /// The rate of connections from `ip` its own quota allows.
    pub fn rate(&self, ip: IpAddr) -> Option<f64> {
        self.rates.borrow().get(&ip.to_canonical()).copied()
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
        let found = self
            .checked
            .resolve(changes.iter().map(|(host, _)| host.clone()))
            .await;
        for (host, rate) in changes {
            match found.get(&host).copied().flatten() {
                Some(ip) => self.set(ip, rate.map(crate::quota::java_to_int)),
                None => tracing::error!(
                    host = %host,
                    "connection_creation_rate quota not applied: unable to resolve address {host}"
                ),
            }
        }
    }

    fn set(&self, ip: IpAddr, rate: Option<f64>) {
        let mut rates = self.rates.borrow_mut();
        match rate {
            Some(rate) => rates.insert(ip, rate),
            None => rates.remove(&ip),
        };
    }
}

/// Connection counts allowed, by address.
pub type CountsByAddress = HashMap<IpAddr, i32>;

/// `max.connections.per.ip.overrides` as the owner shard applies it.
#[derive(Default)]
pub struct ResolvedOverrides {
    /// The entries last tried (applied or not): tried again only once
    /// they change.
    tried: RefCell<Option<Vec<(String, i32)>>>,
    /// The counts by address of the entries last applied.
    by_address: RefCell<Rc<CountsByAddress>>,
    /// What the controller resolved the entries of a change to.
    pub checked: CheckedHosts,
}

impl ResolvedOverrides {
    /// The counts by address in force.
    pub fn by_address(&self) -> Rc<CountsByAddress> {
        self.by_address.borrow().clone()
    }
}

/// What the controller resolved the hosts of a change to while checking
/// it, kept on its shard while the change is committed, so that applying
/// it looks none up again (nor waits for a look-up where the shard's
/// requests are applied in order).
#[derive(Default)]
pub struct CheckedHosts(RefCell<Resolved>);

impl CheckedHosts {
    /// Keeps `resolved` for the change about to be committed; an empty
    /// map once it is.
    pub fn keep(&self, resolved: Resolved) {
        *self.0.borrow_mut() = resolved;
    }

    /// What `hosts` resolve to: as checked if they were, else looked up.
    async fn resolve(&self, hosts: impl IntoIterator<Item = String>) -> Resolved {
        let checked = self.0.borrow().clone();
        let unchecked = hosts.into_iter().filter(|host| !checked.contains_key(host));
        let mut found = resolve_all(unchecked).await;
        found.extend(checked);
        found
    }
}

/// Applies the `max.connections.per.ip.overrides` in force on the owner
/// shard when they changed since last tried, as Kafka's `ConnectionQuotas`
/// does on a reconfiguration: if a host does not resolve, the overrides in
/// force before stay, with an error in the log, until the overrides
/// change again. At start-up the command line's are tried next.
pub async fn refresh_overrides(shard: &Shard) {
    if shard.id != crate::server::admission::OWNER_SHARD {
        return;
    }
    let overrides = &shard.connection_counts.overrides;
    let limits = shard.connection_counts.limits(shard);
    let starting = overrides.tried.borrow().is_none();
    if overrides.tried.borrow().as_ref() == Some(&limits.overrides) {
        return;
    }
    *overrides.tried.borrow_mut() = Some(limits.overrides.clone());
    let mut candidates = vec![limits.overrides.clone()];
    let command_line = &shard.config.connection_limits.overrides;
    if starting && candidates[0] != *command_line {
        candidates.push(command_line.clone());
    }
    for entries in candidates {
        let hosts = entries.iter().map(|(host, _)| host.clone());
        let found = overrides.checked.resolve(hosts).await;
        let resolved: Result<CountsByAddress, &str> = entries
            .iter()
            .map(|(host, count)| match found.get(host).copied().flatten() {
                Some(ip) => Ok((ip, *count)),
                None => Err(host.as_str()),
            })
            .collect();
        match resolved {
            Ok(by_address) => {
                *overrides.by_address.borrow_mut() = Rc::new(by_address);
                return;
            }
            Err(host) => tracing::error!(
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
            "0000000127.0.0.1",
        ] {
            assert_eq!(resolve(refused), None, "{refused}");
        }
    }
}
