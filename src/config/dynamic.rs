//! Dynamic broker configs: the broker configs this broker changes without a
//! restart (IncrementalAlterConfigs and AlterConfigs on a BROKER resource),
//! kept in the metadata log for one node or as the cluster-wide default,
//! and checked as Kafka 4.1 checks them (`ConfigAdminManager`,
//! `DynamicBrokerConfig`, `KafkaConfig`): the connection limits of Kafka's
//! `ConnectionQuotas`, and the broker values topics inherit
//! (`DynamicLogConfig`: `log.retention.ms`, `log.segment.bytes`, ...).
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
use super::topic_config::{apply_incremental, canonical_value, config_type, Validator};
use super::{BrokerDefaults, ConfigAlteration, ConfigOp};

/// `max.connections`: connections the broker serves at once; past it new
/// connections wait to be served.
pub const MAX_CONNECTIONS: &str = "max.connections";
/// `max.connections.per.ip`: connections one address may hold; past it new
/// ones are closed.
pub const MAX_CONNECTIONS_PER_IP: &str = "max.connections.per.ip";
/// `max.connections.per.ip.overrides`: `host:count` exceptions.
pub const MAX_CONNECTIONS_PER_IP_OVERRIDES: &str = "max.connections.per.ip.overrides";
/// `max.connection.creation.rate`: new connections a second the broker
/// accepts; past it accepting waits.
pub const MAX_CONNECTION_CREATION_RATE: &str = "max.connection.creation.rate";

/// `producer.id.expiration.ms`: how long after its last batch's
/// timestamp a partition forgets an idempotent producer.
pub const PRODUCER_ID_EXPIRATION_MS: &str = "producer.id.expiration.ms";
/// `transaction.partition.verification.enable`: whether transactional
/// writes are checked against the coordinator's open transaction first.
pub const TRANSACTION_PARTITION_VERIFICATION_ENABLE: &str =
    "transaction.partition.verification.enable";
/// `log.cleaner.backoff.ms`: the pause between compaction passes.
pub const LOG_CLEANER_BACKOFF_MS: &str = "log.cleaner.backoff.ms";
/// `log.cleaner.dedupe.buffer.size`: key-map memory of all cleaners.
pub const LOG_CLEANER_DEDUPE_BUFFER_SIZE: &str = "log.cleaner.dedupe.buffer.size";
/// `log.cleaner.io.buffer.load.factor`: how full a key map gets.
pub const LOG_CLEANER_IO_BUFFER_LOAD_FACTOR: &str = "log.cleaner.io.buffer.load.factor";
/// `log.cleaner.io.max.bytes.per.second`: the cleaners' I/O bound.
pub const LOG_CLEANER_IO_MAX_BYTES_PER_SECOND: &str = "log.cleaner.io.max.bytes.per.second";
/// `log.cleaner.threads`: compactions that run at once.
pub const LOG_CLEANER_THREADS: &str = "log.cleaner.threads";
/// `log.cleaner.io.buffer.size`: read and write buffers of all cleaners.
pub const LOG_CLEANER_IO_BUFFER_SIZE: &str = "log.cleaner.io.buffer.size";

/// The broker configs that change at runtime here and are read where they
/// act (neither topics' defaults nor connection limits), each with its
/// type and Kafka's `ConfigDef` check.
const DYNAMIC_SETTINGS: [(&str, i8, Validator); 8] = [
    (
        LOG_CLEANER_BACKOFF_MS,
        config_type::LONG,
        Validator::AtLeast(0),
    ),
    (
        LOG_CLEANER_DEDUPE_BUFFER_SIZE,
        config_type::LONG,
        Validator::Any,
    ),
    (
        LOG_CLEANER_IO_BUFFER_LOAD_FACTOR,
        config_type::DOUBLE,
        Validator::Any,
    ),
    (
        LOG_CLEANER_IO_MAX_BYTES_PER_SECOND,
        config_type::DOUBLE,
        Validator::Any,
    ),
    (LOG_CLEANER_THREADS, config_type::INT, Validator::AtLeast(0)),
    (
        LOG_CLEANER_IO_BUFFER_SIZE,
        config_type::INT,
        Validator::AtLeast(0),
    ),
    (
        PRODUCER_ID_EXPIRATION_MS,
        config_type::INT,
        Validator::AtLeast(1),
    ),
    (
        TRANSACTION_PARTITION_VERIFICATION_ENABLE,
        config_type::BOOLEAN,
        Validator::Any,
    ),
];

/// Whether broker config `name` changes here without a restart.
pub fn is_dynamic(name: &str) -> bool {
    [
        MAX_CONNECTION_CREATION_RATE,
        MAX_CONNECTIONS,
        MAX_CONNECTIONS_PER_IP,
        MAX_CONNECTIONS_PER_IP_OVERRIDES,
    ]
    .contains(&name)
        || DYNAMIC_LOG_CONFIGS.contains(&name)
        || DYNAMIC_SETTINGS.iter().any(|(n, _, _)| *n == name)
}

/// A BOOLEAN config's value as Kafka's `ConfigDef` reads it: `true` or
/// `false` in any case, around spaces.
pub fn parse_boolean(text: &str) -> Option<bool> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Checks a value of one of [`DYNAMIC_SETTINGS`] as Kafka's `ConfigDef`
/// parses and validates it; `None` for another config.
fn check_setting(name: &str, text: &str) -> Option<Result<(), String>> {
    canonical_setting(name, text).map(|checked| checked.map(|_| ()))
}

/// A value of one of [`DYNAMIC_SETTINGS`] as Kafka's `ConfigDef` parses
/// and validates it, printed as Kafka prints it; `None` for another config.
fn canonical_setting(name: &str, text: &str) -> Option<Result<String, String>> {
    let (_, config_type, validator) = DYNAMIC_SETTINGS.iter().find(|(n, _, _)| *n == name)?;
    Some(canonical_value(name, text, *config_type, *validator))
}

/// The value `text` gives one of [`DYNAMIC_SETTINGS`], read as it was
/// checked when set; `None` for a value Kafka would refuse (stored by
/// another version) or another config.
pub fn setting_value<T: std::str::FromStr>(name: &str, text: &str) -> Option<T> {
    canonical_setting(name, text)?.ok()?.parse().ok()
}

/// Kafka's check of `log.cleaner.dedupe.buffer.size`: more than 1 MiB per
/// cleaner thread (`log.cleaner.threads`), in whole bytes.
///
/// # Errors
/// Kafka's message (Java's for no threads).
pub fn check_dedupe_buffer_size(bytes: i64, threads: i32) -> Result<(), String> {
    if threads == 0 {
        return Err("/ by zero".into());
    }
    if bytes / i64::from(threads) <= 1 << 20 {
        return Err(format!(
            "requirement failed: {LOG_CLEANER_DEDUPE_BUFFER_SIZE} must be at least 1MB per cleaner thread."
        ));
    }
    Ok(())
}

/// `log.cleaner.threads` as `value` gives it (`None`: Kafka's default).
fn cleaner_threads(value: &dyn Fn(&str) -> Option<String>) -> i32 {
    value(LOG_CLEANER_THREADS)
        .and_then(|text| setting_value(LOG_CLEANER_THREADS, &text))
        .unwrap_or(super::CleanerSettings::default().log_cleaner_threads)
}

/// `KafkaConfig`'s requirement of the log cleaner over a broker's configs
/// after a runtime change, each value as `after` gives it (`None`: Kafka's
/// default): more than 1 MiB of key map a thread.
///
/// # Errors
/// Kafka's message.
pub fn check_cleaner_memory(after: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    let dedupe = after(LOG_CLEANER_DEDUPE_BUFFER_SIZE)
        .and_then(|text| setting_value(LOG_CLEANER_DEDUPE_BUFFER_SIZE, &text))
        .unwrap_or(super::CleanerSettings::default().log_cleaner_dedupe_buffer_size);
    check_dedupe_buffer_size(dedupe, cleaner_threads(after))
}

/// Kafka's `LogCleaner.validateReconfiguration`: a runtime change takes
/// `log.cleaner.threads` in force (`before`) only to within half and
/// double of it (`after`), a deletion too. Values as [`check_cleaner_memory`]
/// reads them.
///
/// # Errors
/// Kafka's message.
pub fn check_cleaner_threads(
    before: &dyn Fn(&str) -> Option<String>,
    after: &dyn Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let (current, next) = (cleaner_threads(before), cleaner_threads(after));
    let refusal = |how: &str| {
        Err(format!(
            "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be {how} the current value {current} for configuration Invalid dynamic configuration"
        ))
    };
    if next < current / 2 {
        return refusal("reduced to less than half");
    }
    if i64::from(next) > 2 * i64::from(current) {
        return refusal("increased to more than double");
    }
    Ok(())
}

/// The dynamic value of broker config `name` on node `node`, read by
/// `parse`: the node's own, else the cluster default's; `None` when
/// neither is set (the command line's value then holds). Values are
/// checked when set, so one `parse` cannot read was stored by another
/// version, and is passed over.
pub fn dynamic_value<T>(
    dynamic: &DynamicBrokerConfigs,
    node: i32,
    name: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Option<T> {
    [
        dynamic.broker_value(node, name),
        dynamic.default_value(name),
    ]
    .into_iter()
    .flatten()
    .find_map(parse)
}

/// The broker values of topic configs that change here without a restart:
/// those Kafka changes at runtime (`DynamicLogConfig`) that this broker
/// acts on, and `min.insync.replicas`, which with every partition at
/// replication factor 1 acts on nothing, here as in Kafka (its effective
/// minimum is capped at the replica count), but which Kafka 4.1 keeps at the
/// cluster level while ELR is on (see [`elr_refusal`]). Not the
/// tiered-storage ones and `unclean.leader.election.enable` (nothing to act
/// on with one node yet).
/// Topics without their own value follow a change at once (`log.preallocate`
/// from their next segment).
pub const DYNAMIC_LOG_CONFIGS: [&str; 25] = [
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleanup.policy",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.type",
    "log.preallocate",
    "log.retention.bytes",
    "log.retention.ms",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "message.max.bytes",
    MIN_INSYNC_REPLICAS,
];

/// `min.insync.replicas`.
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// Why a change of dynamic broker configs on `broker` (None: the cluster
/// default) from `current` to `next` is refused while ELR is on, as Kafka
/// 4.1's controller refuses it (INVALID_CONFIG): a node's own
/// `min.insync.replicas` cannot be set or deleted, the cluster's cannot be
/// removed.
pub fn elr_refusal(
    broker: Option<i32>,
    alteration: &ConfigAlteration,
    current: &BTreeMap<String, String>,
    next: &BTreeMap<String, String>,
) -> Option<&'static str> {
    let named = match alteration {
        ConfigAlteration::Incremental(changes) => {
            changes.iter().any(|(name, _)| name == MIN_INSYNC_REPLICAS)
        }
        ConfigAlteration::Replace(values) => {
            values.iter().any(|(name, _)| name == MIN_INSYNC_REPLICAS)
                || current.contains_key(MIN_INSYNC_REPLICAS)
        }
    };
    match broker {
        Some(_) if named => {
            Some("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
        }
        None if named && !next.contains_key(MIN_INSYNC_REPLICAS) => {
            Some("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        }
        _ => None,
    }
}

/// The layers to write so that ELR may be on, as Kafka's
/// `maybeGenerateElrSafetyRecords`: the cluster default gets
/// `min.insync.replicas` (`static_value`, the command line's) if it has
/// none, and every node's own `min.insync.replicas` goes. Empty when both
/// hold already.
pub fn elr_safety_layers(
    configs: &DynamicBrokerConfigs,
    static_value: &str,
) -> Vec<(Option<i32>, BTreeMap<String, String>)> {
    let mut layers = Vec::new();
    if !configs.default.contains_key(MIN_INSYNC_REPLICAS) {
        let mut default = configs.default.clone();
        default.insert(MIN_INSYNC_REPLICAS.to_string(), static_value.to_string());
        layers.push((None, default));
    }
    for (id, layer) in &configs.brokers {
        if layer.contains_key(MIN_INSYNC_REPLICAS) {
            let mut layer = layer.clone();
            layer.remove(MIN_INSYNC_REPLICAS);
            layers.push((Some(*id), layer));
        }
    }
    layers
}

/// The dynamic values of topic configs' broker values on node `node` (its
/// own, else the default's), each with its broker config type.
fn log_values<'a>(
    dynamic: &'a DynamicBrokerConfigs,
    node: i32,
) -> impl Iterator<Item = (&'static str, &'a str, i8)> + 'a {
    DYNAMIC_LOG_CONFIGS.into_iter().filter_map(move |name| {
        let value = dynamic.value_on(node, name)?;
        let config_type = find_broker_config(name).map_or(config_type::STRING, |d| d.config_type);
        Some((name, value, config_type))
    })
}

/// [`defaults_with`] for a node already running on them: a value that no
/// longer fits (a command line changed since it was stored) is left out,
/// with an error in the log, and the others still apply.
pub fn defaults_in_force(
    static_defaults: &BrokerDefaults,
    dynamic: &DynamicBrokerConfigs,
    node: i32,
) -> BrokerDefaults {
    let mut defaults = static_defaults.clone();
    for (name, value, config_type) in log_values(dynamic, node) {
        let mut candidate = defaults.clone();
        match candidate
            .set(name, value, config_type)
            .and_then(|()| candidate.validate())
        {
            Ok(()) => defaults = candidate,
            Err(message) => tracing::error!(name, %message, "dynamic broker config ignored"),
        }
    }
    defaults
}

/// Checks one dynamic value on its own, as Kafka parses a resource's
/// values before it merges them: its type and bounds.
///
/// # Errors
/// Kafka's message.
pub fn check_value(name: &str, value: &str) -> Result<(), String> {
    if DYNAMIC_LOG_CONFIGS.contains(&name) {
        let config_type = find_broker_config(name).map_or(config_type::STRING, |d| d.config_type);
        let mut defaults = BrokerDefaults::default();
        defaults.set(name, value, config_type)?;
        return defaults.validate();
    }
    if name == MAX_CONNECTIONS_PER_IP_OVERRIDES {
        return parse_overrides(value).map(|_| ());
    }
    if let Some(checked) = check_setting(name, value) {
        return checked;
    }
    // A listener's own limit is checked as the config it overrides, in
    // that config's words.
    if let Some(config) = listener_config(name).filter(|c| LISTENER_CONNECTION_LIMITS.contains(c)) {
        return check_value(config, value);
    }
    let text = value.to_string();
    ConnectionLimits::from_values(&|n| (n == name).then(|| text.clone()), false)
        .map(|_| ())
        // Zero per address alone needs overrides another layer may give.
        .or_else(|e| {
            if e.starts_with("requirement failed") {
                Ok(())
            } else {
                Err(e)
            }
        })
}

/// The broker values topics inherit on node `node`: the command line's
/// (`static_defaults`) with the dynamic ones over them, the node's own
/// first, checked with Kafka's bounds.
///
/// # Errors
/// Kafka's message for the first bad value.
pub fn defaults_with(
    static_defaults: &BrokerDefaults,
    dynamic: &DynamicBrokerConfigs,
    node: i32,
) -> Result<BrokerDefaults, String> {
    let mut defaults = static_defaults.clone();
    for (name, value, config_type) in log_values(dynamic, node) {
        defaults.set(name, value, config_type)?;
    }
    defaults.validate()?;
    Ok(defaults)
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

    /// The dynamic value of `name` on node `node`: its own, else the
    /// cluster default.
    pub fn value_on(&self, node: i32, name: &str) -> Option<&str> {
        self.broker_value(node, name)
            .or_else(|| self.default_value(name))
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
pub fn check_names(alteration: &ConfigAlteration, per_broker: bool) -> Result<(), Refusal> {
    use crate::protocol::ErrorCode;
    // (name, deleted) per config named.
    let names: Vec<(&str, bool)> = match alteration {
        ConfigAlteration::Replace(configs) => {
            configs.iter().map(|(n, _)| (n.as_str(), false)).collect()
        }
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
            changes
                .iter()
                .map(|(n, op)| (n.as_str(), matches!(op, ConfigOp::Delete)))
                .collect()
        }
    };
    // Kafka refuses its read-only configs with this message; the configs it
    // changes at runtime and this broker does not yet are refused the same
    // way, as they are static here, and so are the per-listener values of
    // Kafka's configs (`listener.name.<listener>.<config>`) but a
    // listener's keystore and truststore configs, which
    // `server::tls::reload` reads. Kafka checks the configs the change leaves, so
    // deleting any name is taken (it changes nothing but the stored layer).
    // A name Kafka does not know is kept, as Kafka keeps it (for plugins'
    // own configs), and changes nothing here.
    let refused: Vec<&str> = names
        .iter()
        .filter(|(name, deleted)| {
            !deleted
                && match listener_config(name) {
                    Some(config) => {
                        kafka_listener_config(config)
                            && !SSL_RECONFIGURABLE_CONFIGS.contains(&config)
                            && !LISTENER_CONNECTION_LIMITS.contains(&config)
                    }
                    None => {
                        !is_dynamic(name)
                            && find_broker_config(name).is_some()
                            && !SSL_RECONFIGURABLE_CONFIGS.contains(name)
                    }
                }
        })
        .map(|(name, _)| *name)
        .collect();
    if !refused.is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "Cannot update these configs dynamically: Set({})",
                refused.join(", ")
            ),
        ));
    }
    // Kafka reloads keystores and truststores at runtime only per listener.
    let unprefixed: Vec<&str> = names
        .iter()
        .filter(|(name, deleted)| !deleted && SSL_RECONFIGURABLE_CONFIGS.contains(name))
        .map(|(name, _)| *name)
        .collect();
    if !unprefixed.is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "These security configs can be dynamically updated only per-listener using the listener prefix: HashSet({})",
                unprefixed.join(", ")
            ),
        ));
    }
    // A listener's own configs are each broker's, but for a few Kafka
    // takes cluster-wide.
    let per_broker_only: Vec<&str> = names
        .iter()
        .filter(|(name, deleted)| {
            !deleted
                && !per_broker
                && listener_config(name).is_some_and(|config| {
                    kafka_listener_config(config)
                        && !CLUSTER_LEVEL_LISTENER_CONFIGS.contains(&config)
                })
        })
        .map(|(name, _)| *name)
        .collect();
    if !per_broker_only.is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            format!(
                "Cannot update these configs at default cluster level, broker id must be specified: Set({})",
                per_broker_only.join(", ")
            ),
        ));
    }
    Ok(())
}

use crate::security::listener_tls::RECONFIGURABLE_CONFIGS as SSL_RECONFIGURABLE_CONFIGS;

/// The listener configs Kafka takes cluster-wide
/// (`DynamicBrokerConfig.ClusterLevelListenerConfigs`).
const CLUSTER_LEVEL_LISTENER_CONFIGS: [&str; 3] = [
    "max.connections",
    "max.connection.creation.rate",
    "num.network.threads",
];

/// The connection limits Kafka's `ConnectionQuotas` also keeps per
/// listener (`listener.name.<listener>.max.connections`, ...).
pub const LISTENER_CONNECTION_LIMITS: [&str; 2] = [MAX_CONNECTIONS, MAX_CONNECTION_CREATION_RATE];

/// Kafka's `DynamicListenerConfig` refusal of a connection limit of 0,
/// word for word.
fn zero_refusal(name: &str) -> String {
    format!(
        "Invalid value org.apache.kafka.common.config.ConfigException: Invalid {name} 0 for configuration Invalid dynamic configuration"
    )
}

/// Refuses a change that sets a connection limit to 0 at runtime, as
/// Kafka's `DynamicListenerConfig` does: `max.connections` and
/// `max.connection.creation.rate`, the broker's or those of one of
/// `listeners` (this broker's, by prefix name; another listener's is not
/// checked). Only the values the change sets are checked, so a 0 given on
/// the command line or stored before stands.
///
/// # Errors
/// Kafka's message for the first.
pub fn refuse_zero_limits(
    alteration: &ConfigAlteration,
    listeners: &[String],
) -> Result<(), String> {
    let set: Vec<(&str, &str)> = match alteration {
        ConfigAlteration::Replace(configs) => configs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect(),
        ConfigAlteration::Incremental(changes) => changes
            .iter()
            .filter_map(|(n, op)| match op {
                ConfigOp::Set(v) => Some((n.as_str(), v.as_str())),
                _ => None,
            })
            .collect(),
    };
    for (name, value) in set {
        let limit = match name
            .strip_prefix("listener.name.")
            .and_then(|n| n.split_once('.'))
        {
            Some((listener, config)) if listeners.iter().any(|l| l == listener) => config,
            Some(_) => continue,
            None => name,
        };
        if LISTENER_CONNECTION_LIMITS.contains(&limit) && value.trim().parse::<i32>() == Ok(0) {
            return Err(zero_refusal(limit));
        }
    }
    Ok(())
}

/// One listener's own connection limits, as Kafka's
/// `ListenerConnectionQuota` keeps them (`i32::MAX`: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// `listener.name.<listener>.max.connections`.
    pub max_connections: i32,
    /// `listener.name.<listener>.max.connection.creation.rate`.
    pub max_connection_creation_rate: i32,
}

impl ListenerLimits {
    /// The limits of listener `listener` (its name in lower case, as
    /// Kafka's config prefix has it) given by `value(name)`, checked as
    /// Kafka checks their values, in the words of the configs they
    /// override (a 0 at runtime: [`refuse_zero_limits`]).
    ///
    /// # Errors
    /// Kafka's message for the first bad value.
    pub fn from_values(
        listener: &str,
        value: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let own = |name: &str| {
            LISTENER_CONNECTION_LIMITS
                .contains(&name)
                .then(|| value(&format!("listener.name.{listener}.{name}")))
                .flatten()
        };
        let limits = ConnectionLimits::from_values(&own, false)?;
        Ok(ListenerLimits {
            max_connections: limits.max_connections,
            max_connection_creation_rate: limits.max_connection_creation_rate,
        })
    }
}

/// The config a `listener.name.<listener>.<config>` name sets for one
/// listener, as Kafka's `ListenerConfigRegex` reads it.
pub fn listener_config(name: &str) -> Option<&str> {
    let (_listener, config) = name.strip_prefix("listener.name.")?.split_once('.')?;
    Some(config)
}

/// Whether Kafka reads `config` for a listener: one of its broker configs,
/// or a SASL config of one mechanism (`plain.sasl.jaas.config`).
fn kafka_listener_config(config: &str) -> bool {
    find_broker_config(config).is_some()
        || config.split_once('.').is_some_and(|(_mechanism, sasl)| {
            sasl.starts_with("sasl.") && find_broker_config(sasl).is_some()
        })
}

/// The layer `current` after `alteration` (names already checked by
/// [`check_names`]): AlterConfigs gives the whole layer, an incremental
/// change sets, deletes, appends to and subtracts from it (a LIST starts
/// from the layer's value, else the config's default, as Kafka's
/// `ConfigAdminManager` does).
pub fn altered_layer(
    current: &BTreeMap<String, String>,
    alteration: &ConfigAlteration,
) -> BTreeMap<String, String> {
    match alteration {
        ConfigAlteration::Replace(configs) => configs.iter().cloned().collect(),
        ConfigAlteration::Incremental(changes) => {
            // Names were checked: an APPEND or SUBTRACT is on a LIST.
            apply_incremental(current, changes, |name| {
                Some(
                    find_broker_config(name)
                        .and_then(|def| def.default)
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .unwrap_or_else(|_| current.clone())
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
    /// `max.connections.per.ip.overrides`: each host (an address or a
    /// name, resolved when applied, `server::hosts`) with its count, in the
    /// order Kafka applies them (a later entry for an address wins).
    pub overrides: Vec<(String, i32)>,
    /// `max.connection.creation.rate`.
    pub max_connection_creation_rate: i32,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: i32::MAX,
            max_connections_per_ip: i32::MAX,
            overrides: Vec::new(),
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
            return Err(zero_refusal(MAX_CONNECTIONS));
        }
        Ok(ConnectionLimits {
            max_connections,
            max_connections_per_ip,
            overrides,
            max_connection_creation_rate,
        })
    }

    /// How many connections `ip` may hold, given the overrides resolved
    /// to `by_address`.
    pub fn per_ip(&self, ip: IpAddr, by_address: &HashMap<IpAddr, i32>) -> i32 {
        by_address
            .get(&ip.to_canonical())
            .copied()
            .unwrap_or(self.max_connections_per_ip)
    }
}

/// Parses `max.connections.per.ip.overrides` as Kafka does
/// (`CoreUtils.parseCsvMap`: entries split at commas, each at its last
/// colon, both sides trimmed, a later entry for an address winning; the
/// count an int of any sign). A host may be an address or a name: names
/// are resolved when the overrides are applied, not here (a name that does
/// not resolve is taken, as Kafka takes it). Returned in the order Kafka
/// applies them.
///
/// # Errors
/// Kafka's message for a missing colon, a bad count or a host of
/// characters no host name has.
pub fn parse_overrides(text: &str) -> Result<Vec<(String, i32)>, String> {
    let mut overrides = Vec::new();
    if text.is_empty() {
        return Ok(overrides);
    }
    let mut invalid = Vec::new();
    // Java's `split("\\s*,\\s*")`: spaces around commas go, trailing
    // empty entries are dropped.
    let mut entries: Vec<&str> = text.split(',').collect();
    let last = entries.len() - 1;
    for (i, entry) in entries.iter_mut().enumerate() {
        if i > 0 {
            *entry = entry.trim_start();
        }
        if i < last {
            *entry = entry.trim_end();
        }
    }
    while entries.len() > 1 && entries.last().is_some_and(|e| e.is_empty()) {
        entries.pop();
    }
    for entry in entries {
        let Some(colon) = entry.rfind(':') else {
            return Err(format!(
                "Error parsing configuration property '{MAX_CONNECTIONS_PER_IP_OVERRIDES}': begin 0, end -1, length {}",
                entry.encode_utf16().count()
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
        if valid {
            overrides.push((host.to_string(), count));
        } else {
            invalid.push(host.to_string());
        }
    }
    if !invalid.is_empty() {
        return Err(format!(
            "{MAX_CONNECTIONS_PER_IP_OVERRIDES} contains invalid addresses : {}",
            invalid.join(",")
        ));
    }
    Ok(java_hash_map_order(overrides))
}

/// The order Kafka applies the entries of `max.connections.per.ip.overrides`
/// in, which decides between two hosts naming one address: that of the
/// Java `HashMap` its parser fills (the later of two equal hosts replaces
/// the value in the first one's place), bucket by bucket of Java's
/// `String.hashCode`, in insertion order within a bucket.
fn java_hash_map_order(entries: Vec<(String, i32)>) -> Vec<(String, i32)> {
    let mut distinct: Vec<(String, i32)> = Vec::with_capacity(entries.len());
    for (host, count) in entries {
        match distinct.iter_mut().find(|(h, _)| *h == host) {
            Some(entry) => entry.1 = count,
            None => distinct.push((host, count)),
        }
    }
    // Java's table: 16 buckets, doubled whenever it holds over 3/4.
    let mut buckets = 16usize;
    while distinct.len() * 4 > buckets * 3 {
        buckets *= 2;
    }
    let bucket = |host: &str| {
        let h = host.encode_utf16().fold(0i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        });
        let spread = (h as u32) ^ ((h as u32) >> 16);
        spread as usize & (buckets - 1)
    };
    let mut ordered: Vec<(usize, usize, (String, i32))> = distinct
        .into_iter()
        .enumerate()
        .map(|(i, entry)| (bucket(&entry.0), i, entry))
        .collect();
    ordered.sort_by_key(|(b, i, _)| (*b, *i));
    ordered.into_iter().map(|(_, _, entry)| entry).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: Kafka 4.1's two ELR rules and its safety records.
    #[test]
    fn elr_keeps_the_cluster_min_insync_replicas_and_no_broker_one() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let set = |value: &str| {
            ConfigAlteration::Incremental(vec![(
                MIN_INSYNC_REPLICAS.into(),
                ConfigOp::Set(value.into()),
            )])
        };
        let delete =
            ConfigAlteration::Incremental(vec![(MIN_INSYNC_REPLICAS.into(), ConfigOp::Delete)]);
        let with = map(&[(MIN_INSYNC_REPLICAS, "1")]);
        let without = BTreeMap::new();
        let broker_refused =
            Some("Broker-level min.insync.replicas cannot be altered while ELR is enabled.");
        assert_eq!(
            elr_refusal(Some(0), &set("2"), &without, &with),
            broker_refused
        );
        assert_eq!(
            elr_refusal(Some(0), &delete, &without, &without),
            broker_refused
        );
        assert_eq!(
            elr_refusal(None, &delete, &with, &without),
            Some("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        );
        // Legacy AlterConfigs without it removes it too.
        let replace = ConfigAlteration::Replace(vec![("log.retention.ms".into(), "1".into())]);
        assert!(elr_refusal(None, &replace, &with, &map(&[("log.retention.ms", "1")])).is_some());
        assert_eq!(elr_refusal(None, &set("2"), &with, &with), None);
        let other = ConfigAlteration::Incremental(vec![(
            "log.retention.ms".into(),
            ConfigOp::Set("5".into()),
        )]);
        assert_eq!(elr_refusal(Some(0), &other, &without, &without), None);

        let mut configs = DynamicBrokerConfigs {
            default: map(&[("log.retention.ms", "9")]),
            ..DynamicBrokerConfigs::default()
        };
        configs.brokers.insert(
            0,
            map(&[(MIN_INSYNC_REPLICAS, "3"), ("message.max.bytes", "7")]),
        );
        configs
            .brokers
            .insert(1, map(&[("message.max.bytes", "7")]));
        assert_eq!(
            elr_safety_layers(&configs, "2"),
            vec![
                (
                    None,
                    map(&[("log.retention.ms", "9"), (MIN_INSYNC_REPLICAS, "2")])
                ),
                (Some(0), map(&[("message.max.bytes", "7")])),
            ]
        );
        configs
            .default
            .insert(MIN_INSYNC_REPLICAS.into(), "1".into());
        configs.brokers.remove(&0);
        assert!(elr_safety_layers(&configs, "2").is_empty());
    }

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
        // A limit of 0 is refused when a change sets it, for the broker or
        // one of its listeners; a 0 already in force stands.
        let set = |name: &str, value: &str| {
            ConfigAlteration::Incremental(vec![(name.to_string(), ConfigOp::Set(value.into()))])
        };
        let listeners = ["plaintext".to_string()];
        for (name, base) in [
            (MAX_CONNECTION_CREATION_RATE, MAX_CONNECTION_CREATION_RATE),
            (MAX_CONNECTIONS, MAX_CONNECTIONS),
            ("listener.name.plaintext.max.connections", MAX_CONNECTIONS),
            (
                "listener.name.plaintext.max.connection.creation.rate",
                MAX_CONNECTION_CREATION_RATE,
            ),
        ] {
            assert_eq!(
                refuse_zero_limits(&set(name, " 0"), &listeners),
                Err(format!("Invalid value org.apache.kafka.common.config.ConfigException: Invalid {base} 0 for configuration Invalid dynamic configuration")),
                "{name}"
            );
            assert_eq!(refuse_zero_limits(&set(name, "1"), &listeners), Ok(()));
        }
        assert_eq!(
            refuse_zero_limits(&set("listener.name.ssl.max.connections", "0"), &listeners),
            Ok(())
        );
        assert_eq!(
            refuse_zero_limits(
                &ConfigAlteration::Replace(vec![(MAX_CONNECTION_CREATION_RATE.into(), "0".into())]),
                &listeners
            ),
            Err(zero_refusal(MAX_CONNECTION_CREATION_RATE))
        );
        assert_eq!(
            limits(&[(MAX_CONNECTION_CREATION_RATE, "0")], true)
                .unwrap()
                .max_connection_creation_rate,
            0
        );
        // Zero connections is refused only as a change at runtime.
        assert_eq!(
            limits(&[(MAX_CONNECTIONS, "0")], false)
                .unwrap()
                .max_connections,
            0
        );
        // Host names are taken, resolved or not (when applied).
        assert_eq!(
            limits(
                &[(MAX_CONNECTIONS_PER_IP_OVERRIDES, "no-such-host.invalid:3")],
                true
            )
            .unwrap()
            .overrides,
            vec![("no-such-host.invalid".to_string(), 3)]
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
        let per_ip = |limits: &ConnectionLimits, ip: &str| {
            let by_address: HashMap<IpAddr, i32> = limits
                .overrides
                .iter()
                .map(|(host, count)| (crate::server::hosts::literal(host).unwrap(), *count))
                .collect();
            limits.per_ip(ip.parse().unwrap(), &by_address)
        };
        assert_eq!(per_ip(&parsed, "127.0.0.1"), 8);
        assert_eq!(per_ip(&parsed, "::ffff:127.0.0.1"), 8);
        assert_eq!(per_ip(&parsed, "10.0.0.1"), -1);
        assert_eq!(per_ip(&parsed, "::1"), 5);
        assert_eq!(per_ip(&parsed, "10.0.0.2"), 0);
        assert_eq!(limits(&[], true).unwrap(), ConnectionLimits::default());
        // A trailing comma is dropped as Java's split drops it; the length
        // in Kafka's message counts the entry untrimmed at the ends.
        let trailing = limits(&[(MAX_CONNECTIONS_PER_IP_OVERRIDES, "127.0.0.1:3,")], true);
        assert_eq!(per_ip(&trailing.unwrap(), "127.0.0.1"), 3);
        assert_eq!(
            limits(&[(MAX_CONNECTIONS_PER_IP_OVERRIDES, " 127.0.0.1")], true),
            Err("Error parsing configuration property 'max.connections.per.ip.overrides': begin 0, end -1, length 10".to_string())
        );
    }

    /// Goal: two hosts naming one address are applied in Kafka's order:
    /// the later in Java's HashMap wins, whatever order they were given in
    /// (measured: `localhost` is in bucket 0, `127.0.0.1` in bucket 14).
    #[test]
    fn overrides_are_applied_in_javas_hash_map_order() {
        let entries = |list: &[(&str, i32)]| {
            list.iter()
                .map(|(h, c)| (h.to_string(), *c))
                .collect::<Vec<_>>()
        };
        let order = |list: &[(&str, i32)]| java_hash_map_order(entries(list));
        assert_eq!(
            order(&[("127.0.0.1", 5), ("localhost", 2)]),
            entries(&[("localhost", 2), ("127.0.0.1", 5)])
        );
        assert_eq!(
            order(&[("LOCALHOST", 1), ("runsc", 2), ("vm", 3), ("localhost", 4)]),
            entries(&[("localhost", 4), ("runsc", 2), ("vm", 3), ("LOCALHOST", 1)])
        );
        // A later equal host keeps the first one's place.
        assert_eq!(
            order(&[("localhost", 2), ("vm", 1), ("localhost", 3)]),
            entries(&[("localhost", 3), ("vm", 1)])
        );
    }

    /// Goal: only the connection limits change at runtime; APPEND to a
    /// non-list config is refused first, as Kafka does.
    #[test]
    fn names_are_checked_in_kafkas_order() {
        let incremental = |name: &str, op: ConfigOp| {
            check_names(
                &ConfigAlteration::Incremental(vec![(name.to_string(), op)]),
                true,
            )
        };
        let cluster_wide = |name: &str, op: ConfigOp| {
            check_names(
                &ConfigAlteration::Incremental(vec![(name.to_string(), op)]),
                false,
            )
        };
        assert_eq!(
            incremental(MAX_CONNECTIONS, ConfigOp::Append("5".into())),
            Err((
                crate::protocol::ErrorCode::InvalidConfig,
                "Config value append is not allowed for config key: max.connections".into()
            ))
        );
        assert_eq!(
            incremental("num.partitions", ConfigOp::Set("3".into())),
            Err((
                crate::protocol::ErrorCode::InvalidRequest,
                "Cannot update these configs dynamically: Set(num.partitions)".into()
            ))
        );
        // Kafka checks what the change leaves: a deletion always passes.
        assert_eq!(incremental("num.partitions", ConfigOp::Delete), Ok(()));
        assert_eq!(
            incremental("ssl.keystore.location", ConfigOp::Delete),
            Ok(())
        );
        assert_eq!(
            incremental(MAX_CONNECTIONS, ConfigOp::Set("5".into())),
            Ok(())
        );
        // Keystores are reloaded per listener only, and per broker; other
        // per-listener values are not read here yet, so refused, but may
        // be deleted.
        assert_eq!(
            incremental("ssl.keystore.location", ConfigOp::Set("/k".into())),
            Err((
                crate::protocol::ErrorCode::InvalidRequest,
                "These security configs can be dynamically updated only per-listener using the listener prefix: HashSet(ssl.keystore.location)".into()
            ))
        );
        assert_eq!(
            incremental(
                "listener.name.ssl.ssl.keystore.location",
                ConfigOp::Set("/k".into())
            ),
            Ok(())
        );
        assert_eq!(
            cluster_wide("listener.name.ssl.ssl.keystore.location", ConfigOp::Set("/k".into())),
            Err((
                crate::protocol::ErrorCode::InvalidRequest,
                "Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.ssl.ssl.keystore.location)".into()
            ))
        );
        assert_eq!(
            cluster_wide("listener.name.ssl.ssl.keystore.location", ConfigOp::Delete),
            Ok(())
        );
        // A listener's own connection limits are taken, cluster-wide too.
        for name in [
            "listener.name.external.max.connections",
            "listener.name.ssl.max.connection.creation.rate",
        ] {
            assert_eq!(cluster_wide(name, ConfigOp::Set("5".into())), Ok(()));
        }
        for name in [
            "listener.name.ssl.ssl.allow.dn.changes",
            "listener.name.plaintext.max.connections.per.ip",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ] {
            assert_eq!(
                incremental(name, ConfigOp::Set("x".into())),
                Err((
                    crate::protocol::ErrorCode::InvalidRequest,
                    format!("Cannot update these configs dynamically: Set({name})")
                ))
            );
            assert_eq!(incremental(name, ConfigOp::Delete), Ok(()));
        }
        assert_eq!(
            incremental("listener.name.ssl.plugin.x", ConfigOp::Set("5".into())),
            Ok(())
        );
        // A name Kafka does not know is kept (a plugin's), not appended to.
        assert_eq!(incremental("plugin.x", ConfigOp::Set("5".into())), Ok(()));
        assert_eq!(incremental("plugin.x", ConfigOp::Delete), Ok(()));
        assert_eq!(
            incremental("plugin.x", ConfigOp::Append("5".into())).map_err(|e| e.0),
            Err(crate::protocol::ErrorCode::InvalidConfig)
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

    /// Goal: the broker values of topic configs layer as Kafka's (this
    /// node's over the default over the command line), a bad value is
    /// refused even where another layer hides it, and APPEND works on the
    /// one LIST among them, starting from Kafka's default.
    #[test]
    fn topic_defaults_layer_and_check_like_kafkas() {
        let mut dynamic = DynamicBrokerConfigs::default();
        dynamic
            .default
            .insert("log.retention.ms".into(), "3600000".into());
        dynamic
            .default
            .insert("log.segment.bytes".into(), "2097152".into());
        let mut mine = BTreeMap::new();
        mine.insert("log.retention.ms".to_string(), "7200000".to_string());
        dynamic.brokers.insert(0, mine);
        let statics = BrokerDefaults {
            log_retention_ms: Some(360_000_000),
            ..BrokerDefaults::default()
        };
        let defaults = defaults_with(&statics, &dynamic, 0).unwrap();
        assert_eq!(
            defaults.topic_value("retention.ms").as_deref(),
            Some("7200000")
        );
        assert_eq!(
            defaults.topic_value("segment.bytes").as_deref(),
            Some("2097152")
        );
        let other_node = defaults_with(&statics, &dynamic, 1).unwrap();
        assert_eq!(
            other_node.topic_value("retention.ms").as_deref(),
            Some("3600000")
        );

        assert_eq!(
            check_value("log.retention.ms", "abc"),
            Err(
                "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
                    .into()
            )
        );
        assert_eq!(
            check_value("log.segment.bytes", "100"),
            Err("Invalid value 100 for configuration log.segment.bytes: Value must be at least 1048576".into())
        );
        assert_eq!(check_value(MAX_CONNECTIONS_PER_IP, "0"), Ok(()));
        assert!(check_value(MAX_CONNECTIONS, "-1").is_err());

        let appended = altered_layer(
            &BTreeMap::new(),
            &ConfigAlteration::Incremental(vec![(
                "log.cleanup.policy".into(),
                ConfigOp::Append("compact,delete".into()),
            )]),
        );
        assert_eq!(appended["log.cleanup.policy"], "delete,compact");
        assert_eq!(
            check_names(
                &ConfigAlteration::Incremental(vec![(
                    "log.cleanup.policy".into(),
                    ConfigOp::Subtract("delete".into())
                )]),
                true
            ),
            Ok(())
        );
    }
}
