//! Dynamic broker configs: the broker configs this broker changes without a
//! restart (IncrementalAlterConfigs and AlterConfigs on a BROKER resource),
//! kept in the metadata log for one node or as the cluster-wide default,
//! and checked as Kafka 4.1 checks them (`ConfigAdminManager`,
//! `DynamicBrokerConfig`, `KafkaConfig`). Today these are the connection
//! limits of Kafka's `ConnectionQuotas`.
//!
//! A config's value on a node comes from, first to last: the node's own
//! dynamic value, the cluster-wide dynamic default, the command line, and
//! Kafka's default.
//!
//! Lives on: any core. Values only; the metadata image holds the layers.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::broker_config_table::find_broker_config;
use super::topic_config::config_type;
use super::{ConfigAlteration, ConfigOp};

/// `max.connections`: connections the broker serves at once; past it new
/// connections wait to be served.
pub const MAX_CONNECTIONS: &str = "max.connections";
/// `max.connections.per.ip`: connections one address may hold; past it new
/// ones are closed.
pub const MAX_CONNECTIONS_PER_IP: &str = "max.connections.per.ip";
/// `max.connections.per.ip.overrides`: `address:count` exceptions.
pub const MAX_CONNECTIONS_PER_IP_OVERRIDES: &str = "max.connections.per.ip.overrides";
/// `max.connection.creation.rate`: new connections a second the broker
/// accepts; past it accepting waits.
pub const MAX_CONNECTION_CREATION_RATE: &str = "max.connection.creation.rate";

/// The broker configs that change here without a restart.
pub const DYNAMIC_BROKER_CONFIGS: [&str; 4] = [
    MAX_CONNECTION_CREATION_RATE,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_IP,
    MAX_CONNECTIONS_PER_IP_OVERRIDES,
];

/// Whether broker config `name` changes here without a restart.
pub fn is_dynamic(name: &str) -> bool {
    DYNAMIC_BROKER_CONFIGS.contains(&name)
}

/// The dynamic broker configs in the metadata: the cluster-wide default
/// layer and each node's own, each in the form it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicBrokerConfigs {
    /// Set for every broker (a BROKER resource named "").
    pub default: BTreeMap<String, String>,
    /// Set for one node (a BROKER resource named by its id).
    pub brokers: BTreeMap<i32, BTreeMap<String, String>>,
}

impl DynamicBrokerConfigs {
    /// The layer of `broker` (`None`: the cluster-wide default).
    pub fn layer(&self, broker: Option<i32>) -> Option<&BTreeMap<String, String>> {
        match broker {
            None => Some(&self.default),
            Some(id) => self.brokers.get(&id),
        }
    }

    /// Replaces the layer of `broker` (`None`: the default) by `configs`.
    pub fn set_layer(&mut self, broker: Option<i32>, configs: BTreeMap<String, String>) {
        match broker {
            None => self.default = configs,
            Some(id) if configs.is_empty() => {
                self.brokers.remove(&id);
            }
            Some(id) => {
                self.brokers.insert(id, configs);
            }
        }
    }

    /// Node `node`'s own dynamic value of `name`.
    pub fn broker_value(&self, node: i32, name: &str) -> Option<&str> {
        self.brokers.get(&node)?.get(name).map(String::as_str)
    }

    /// The cluster-wide dynamic value of `name`.
    pub fn default_value(&self, name: &str) -> Option<&str> {
        self.default.get(name).map(String::as_str)
    }
}

/// Kafka's answer to a refused change: error code and message.
pub type Refusal = (crate::protocol::ErrorCode, String);

/// Checks an alteration of one BROKER resource before its values are
/// looked at, as Kafka's `ConfigAdminManager` does: APPEND and SUBTRACT
/// only on LIST configs (INVALID_CONFIG), then only configs that change
/// without a restart (INVALID_REQUEST).
///
/// # Errors
/// Kafka's error and message.
pub fn check_names(alteration: &ConfigAlteration) -> Result<(), Refusal> {
    use crate::protocol::ErrorCode;
    let names: Vec<&str> = match alteration {
        ConfigAlteration::Replace(configs) => configs.iter().map(|(n, _)| n.as_str()).collect(),
        ConfigAlteration::Incremental(changes) => {
            for (name, op) in changes {
                let verb = match op {
                    ConfigOp::Append(_) => "append",
                    ConfigOp::Subtract(_) => "subtract",
                    ConfigOp::Set(_) | ConfigOp::Delete => continue,
                };
                let list = find_broker_config(name)
                    .is_some_and(|def| def.config_type == config_type::LIST);
                if !list {
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!("Config value {verb} is not allowed for config key: {name}"),
                    ));
                }
            }
            changes.iter().map(|(n, _)| n.as_str()).collect()
        }
    };
    // Kafka refuses its read-only configs with this message; the configs it
    // changes at runtime and this broker does not yet are refused the same
    // way, as they are static here.
    let refused: Vec<&str> = names.into_iter().filter(|n| !is_dynamic(n)).collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err((
            ErrorCode::InvalidRequest,
            format!(
                "Cannot update these configs dynamically: Set({})",
                refused.join(", ")
            ),
        ))
    }
}

/// The layer `current` after `alteration` (names already checked by
/// [`check_names`]): AlterConfigs gives the whole layer, an incremental
/// change sets and deletes over it.
pub fn altered_layer(
    current: &BTreeMap<String, String>,
    alteration: &ConfigAlteration,
) -> BTreeMap<String, String> {
    match alteration {
        ConfigAlteration::Replace(configs) => configs.iter().cloned().collect(),
        ConfigAlteration::Incremental(changes) => {
            let mut next = current.clone();
            for (name, op) in changes {
                match op {
                    ConfigOp::Set(value) => {
                        next.insert(name.clone(), value.clone());
                    }
                    ConfigOp::Delete => {
                        next.remove(name);
                    }
                    // Refused by `check_names`: no dynamic config is a LIST.
                    ConfigOp::Append(_) | ConfigOp::Subtract(_) => {}
                }
            }
            next
        }
    }
}

/// The connection limits in force, as Kafka's `ConnectionQuotas` keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// `max.connections`.
    pub max_connections: i32,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: i32,
    /// `max.connections.per.ip.overrides`, by address.
    pub overrides: HashMap<IpAddr, i32>,
    /// `max.connection.creation.rate`.
    pub max_connection_creation_rate: i32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: i32::MAX,
            max_connections_per_ip: i32::MAX,
            overrides: HashMap::new(),
            max_connection_creation_rate: i32::MAX,
        }
    }
}

impl ConnectionLimits {
    /// The limits given by `value(name)`, each config's value in force
    /// (`None`: Kafka's default), checked as Kafka checks a broker's
    /// config; `dynamic` adds the checks of a runtime change.
    ///
    /// # Errors
    /// Kafka's message for the first bad value.
    pub fn from_values(
        value: &dyn Fn(&str) -> Option<String>,
        dynamic: bool,
    ) -> Result<Self, String> {
        let int = |name: &str| -> Result<i32, String> {
            let Some(text) = value(name) else {
                return Ok(i32::MAX);
            };
            let parsed: i32 = text.trim().parse().map_err(|_| {
                format!("Invalid value {text} for configuration {name}: Not a number of type INT")
            })?;
            if parsed < 0 {
                return Err(format!(
                    "Invalid value {text} for configuration {name}: Value must be at least 0"
                ));
            }
            Ok(parsed)
        };
        let max_connection_creation_rate = int(MAX_CONNECTION_CREATION_RATE)?;
        let max_connections = int(MAX_CONNECTIONS)?;
        let max_connections_per_ip = int(MAX_CONNECTIONS_PER_IP)?;
        let overrides =
            parse_overrides(&value(MAX_CONNECTIONS_PER_IP_OVERRIDES).unwrap_or_default())?;
        if max_connections_per_ip == 0 && overrides.is_empty() {
            return Err(format!(
                "requirement failed: {MAX_CONNECTIONS_PER_IP} can be set to zero only if {MAX_CONNECTIONS_PER_IP_OVERRIDES} property is set."
            ));
        }
        if dynamic && max_connections == 0 {
            // Kafka's `DynamicListenerConfig` message, word for word.
            return Err(format!(
                "Invalid value org.apache.kafka.common.config.ConfigException: Invalid {MAX_CONNECTIONS} 0 for configuration Invalid dynamic configuration"
            ));
        }
        Ok(ConnectionLimits {
            max_connections,
            max_connections_per_ip,
            overrides,
            max_connection_creation_rate,
        })
    }

    /// How many connections `ip` may hold.
    pub fn per_ip(&self, ip: IpAddr) -> i32 {
        self.overrides
            .get(&ip.to_canonical())
            .copied()
            .unwrap_or(self.max_connections_per_ip)
    }
}

/// Parses `max.connections.per.ip.overrides` as Kafka does
/// (`CoreUtils.parseCsvMap`: entries split at commas, each at its last
/// colon, both sides trimmed, a later entry for an address winning; the
/// count an int of any sign). Kafka also resolves host names; here an
/// override must name an IP address.
///
/// # Errors
/// Kafka's message for a missing colon or a bad count; ours for a host
/// name.
pub fn parse_overrides(text: &str) -> Result<HashMap<IpAddr, i32>, String> {
    let mut overrides = HashMap::new();
    if text.is_empty() {
        return Ok(overrides);
    }
    let mut invalid = Vec::new();
    let mut names = Vec::new();
    for entry in text.split(',') {
        let entry = entry.trim();
        let Some(colon) = entry.rfind(':') else {
            return Err(format!(
                "Error parsing configuration property '{MAX_CONNECTIONS_PER_IP_OVERRIDES}': begin 0, end -1, length {}",
                entry.chars().count()
            ));
        };
        let (host, count) = (entry[..colon].trim(), entry[colon + 1..].trim());
        let count: i32 = count
            .parse()
            .map_err(|_| format!("For input string: \"{count}\""))?;
        // Kafka's `Utils.validHostPattern`.
        let valid = host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c));
        match host.parse::<IpAddr>() {
            Ok(ip) => {
                overrides.insert(ip.to_canonical(), count);
            }
            Err(_) if valid => names.push(host.to_string()),
            Err(_) => invalid.push(host.to_string()),
        }
    }
    if !invalid.is_empty() {
        return Err(format!(
            "{MAX_CONNECTIONS_PER_IP_OVERRIDES} contains invalid addresses : {}",
            invalid.join(",")
        ));
    }
    if !names.is_empty() {
        return Err(format!(
            "{MAX_CONNECTIONS_PER_IP_OVERRIDES} names hosts this broker does not resolve (give IP addresses): {}",
            names.join(",")
        ));
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(pairs: &[(&str, &str)], dynamic: bool) -> Result<ConnectionLimits, String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConnectionLimits::from_values(&|name| map.get(name).cloned(), dynamic)
    }

    /// Goal: values are checked with Kafka 4.1.1's messages, as measured
    /// with kafka-configs against it.
    #[test]
    fn bad_values_get_kafkas_messages() {
        let cases = [
            (MAX_CONNECTIONS_PER_IP, "-1", "Invalid value -1 for configuration max.connections.per.ip: Value must be at least 0"),
            (MAX_CONNECTIONS_PER_IP, "abc", "Invalid value abc for configuration max.connections.per.ip: Not a number of type INT"),
            (MAX_CONNECTIONS_PER_IP, "2147483648", "Invalid value 2147483648 for configuration max.connections.per.ip: Not a number of type INT"),
            (MAX_CONNECTIONS_PER_IP, "0", "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."),
            (MAX_CONNECTIONS, "-1", "Invalid value -1 for configuration max.connections: Value must be at least 0"),
            (MAX_CONNECTIONS, "0", "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connections 0 for configuration Invalid dynamic configuration"),
            (MAX_CONNECTION_CREATION_RATE, "-1", "Invalid value -1 for configuration max.connection.creation.rate: Value must be at least 0"),
            (MAX_CONNECTIONS_PER_IP_OVERRIDES, "127.0.0.1:x", "For input string: \"x\""),
            (MAX_CONNECTIONS_PER_IP_OVERRIDES, "127.0.0.1", "Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 9"),
            (MAX_CONNECTIONS_PER_IP_OVERRIDES, "a b:3", "max.connections.per.ip.overrides contains invalid addresses : a b"),
        ];
        for (name, value, message) in cases {
            assert_eq!(
                limits(&[(name, value)], true),
                Err(message.to_string()),
                "{name}={value}"
            );
        }
        // Zero connections is refused only as a change at runtime.
        assert_eq!(
            limits(&[(MAX_CONNECTIONS, "0")], false)
                .unwrap()
                .max_connections,
            0
        );
        assert!(
            limits(&[(MAX_CONNECTIONS_PER_IP_OVERRIDES, "localhost:3")], true)
                .unwrap_err()
                .contains("localhost")
        );
    }

    /// Goal: overrides parse as Kafka's (spaces trimmed, the last entry for
    /// an address wins, a negative count allowed), zero per IP is allowed
    /// with overrides, and an IPv4-mapped IPv6 peer matches its IPv4 entry.
    #[test]
    fn overrides_parse_and_apply_as_kafkas() {
        let parsed = limits(
            &[
                (MAX_CONNECTIONS_PER_IP, "0"),
                (
                    MAX_CONNECTIONS_PER_IP_OVERRIDES,
                    " 127.0.0.1 : 7 , 10.0.0.1:-1,127.0.0.1:8, ::1:5",
                ),
            ],
            true,
        )
        .unwrap();
        assert_eq!(parsed.per_ip("127.0.0.1".parse().unwrap()), 8);
        assert_eq!(parsed.per_ip("::ffff:127.0.0.1".parse().unwrap()), 8);
        assert_eq!(parsed.per_ip("10.0.0.1".parse().unwrap()), -1);
        assert_eq!(parsed.per_ip("::1".parse().unwrap()), 5);
        assert_eq!(parsed.per_ip("10.0.0.2".parse().unwrap()), 0);
        assert_eq!(limits(&[], true).unwrap(), ConnectionLimits::default());
    }

    /// Goal: only the connection limits change at runtime; APPEND to a
    /// non-list config is refused first, as Kafka does.
    #[test]
    fn names_are_checked_in_kafkas_order() {
        let incremental = |name: &str, op: ConfigOp| {
            check_names(&ConfigAlteration::Incremental(vec![(name.to_string(), op)]))
        };
        assert_eq!(
            incremental(MAX_CONNECTIONS, ConfigOp::Append("5".into())),
            Err((
                crate::protocol::ErrorCode::InvalidConfig,
                "Config value append is not allowed for config key: max.connections".into()
            ))
        );
        assert_eq!(
            incremental("num.partitions", ConfigOp::Delete),
            Err((
                crate::protocol::ErrorCode::InvalidRequest,
                "Cannot update these configs dynamically: Set(num.partitions)".into()
            ))
        );
        assert_eq!(
            incremental(MAX_CONNECTIONS, ConfigOp::Set("5".into())),
            Ok(())
        );
        let mut current = BTreeMap::new();
        current.insert(MAX_CONNECTIONS.to_string(), "5".to_string());
        let next = altered_layer(
            &current,
            &ConfigAlteration::Incremental(vec![
                (MAX_CONNECTIONS.into(), ConfigOp::Delete),
                (MAX_CONNECTIONS_PER_IP.into(), ConfigOp::Set("3".into())),
            ]),
        );
        assert_eq!(next.len(), 1);
        assert_eq!(next[MAX_CONNECTIONS_PER_IP], "3");
    }
}
