//! Broker settings (one struct, validated once), per-topic configs with
//! Kafka's names and defaults, and every fixed bound in `limits`.
//!
//! Shared read-only by all shards.

pub mod broker;
pub mod limits;

pub use broker::{BrokerConfig, FlushPolicy, TopicDefaults};

// TEMPORARY until the full Kafka config table lands: accepts a few names.
/// Checks one topic config override.
///
/// # Errors
/// Kafka's INVALID_CONFIG message.
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), String> {
    const KNOWN: &[&str] = &[
        "segment.bytes",
        "segment.ms",
        "retention.ms",
        "retention.bytes",
        "cleanup.policy",
        "max.message.bytes",
        "message.timestamp.type",
        "compression.type",
        "min.insync.replicas",
        "index.interval.bytes",
        "segment.index.bytes",
    ];
    if KNOWN.contains(&name) {
        Ok(())
    } else {
        Err(format!("Unknown topic config name: {name} (value {value})"))
    }
}

/// Every topic config with its effective value: (name, value, source, sensitive).
pub fn effective_topic_configs(
    overrides: &std::collections::BTreeMap<String, String>,
    _defaults: &TopicDefaults,
) -> Vec<(String, Option<String>, i8, bool)> {
    overrides
        .iter()
        .map(|(k, v)| (k.clone(), Some(v.clone()), 1, false))
        .collect()
}
