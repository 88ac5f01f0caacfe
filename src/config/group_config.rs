//! Group configs as Apache Kafka 4.1 defines them (`GroupConfig`, KIP-848):
//! per-group overrides of the coordinator's settings, set with
//! IncrementalAlterConfigs or AlterConfigs on a GROUP resource
//! (`kafka-configs --entity-type groups`), kept in the metadata log and shown
//! by DescribeConfigs.
//!
//! `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` act on
//! consumer groups (KIP-848 protocol) at the members' next heartbeat. The
//! `share.*` and `streams.*` configs are accepted, checked and shown as Kafka
//! does, and act on nothing: this broker has no share or streams groups.
//!
//! A group's configs are checked together with the broker's
//! `group.consumer.session.timeout.ms` and `.heartbeat.interval.ms` for the
//! ones it does not set (Kafka's `GroupConfigManager.validate`): first the
//! names, then each value's type and validator in Kafka's definition order,
//! then the bounds. Share and streams bounds are Kafka's defaults: this
//! broker has no settings for groups it does not run.
//!
//! Lives on: any core. Tables and pure functions.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsSynonym,
};
use kafka_protocol::protocol::StrBytes;

use super::topic_config::{
    altered_values, canonical_value, config_source, config_type, described_entry, is_requested,
    java_trim, ConfigAlteration, Validator,
};
use crate::protocol::ErrorCode;

/// `consumer.session.timeout.ms`.
pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
/// `consumer.heartbeat.interval.ms`.
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";

/// DescribeConfigs' `GROUP_CONFIG` source.
pub const GROUP_CONFIG_SOURCE: i8 = 8;

/// The broker settings group configs are checked against and default to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupBounds {
    /// `group.consumer.session.timeout.ms`: the default.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`.
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`.
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`: the default.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub consumer_max_heartbeat_interval_ms: i32,
}

impl Default for GroupBounds {
    /// Kafka's defaults.
    fn default() -> Self {
        GroupBounds {
            consumer_session_timeout_ms: 45_000,
            consumer_min_session_timeout_ms: 45_000,
            consumer_max_session_timeout_ms: 60_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_min_heartbeat_interval_ms: 5_000,
            consumer_max_heartbeat_interval_ms: 15_000,
        }
    }
}

/// How a group config's value is checked once typed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Check {
    /// A `ConfigDef` validator.
    Def(Validator),
    /// `ShareGroupAutoOffsetResetStrategy.Validator`.
    ShareAutoOffsetReset,
}

/// One group config.
struct GroupConfigDef {
    name: &'static str,
    config_type: i8,
    check: Check,
    /// Our one-sentence description.
    documentation: &'static str,
}

const fn int(name: &'static str, at_least: i64, documentation: &'static str) -> GroupConfigDef {
    GroupConfigDef {
        name,
        config_type: config_type::INT,
        check: Check::Def(Validator::AtLeast(at_least)),
        documentation,
    }
}

/// `share.isolation.level`'s values.
const ISOLATION_LEVELS: &[&str] = &["read_committed", "read_uncommitted"];

/// Every group config, in Kafka's definition order (the order values are
/// parsed and checked in).
const GROUP_CONFIG_DEFS: [GroupConfigDef; 10] = [
    int(
        CONSUMER_SESSION_TIMEOUT_MS,
        1,
        "A consumer-group member that sends no heartbeat for this long leaves the group.",
    ),
    int(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        1,
        "How often consumer-group members are told to send a heartbeat.",
    ),
    int(
        "share.session.timeout.ms",
        1,
        "A share-group member that sends no heartbeat for this long leaves the group.",
    ),
    int(
        "share.heartbeat.interval.ms",
        1,
        "How often share-group members are told to send a heartbeat.",
    ),
    int(
        "share.record.lock.duration.ms",
        1000,
        "How long a share-group member holds the records it acquired.",
    ),
    GroupConfigDef {
        name: "share.auto.offset.reset",
        config_type: config_type::STRING,
        check: Check::ShareAutoOffsetReset,
        documentation: "Where a share group starts reading a partition: earliest, latest, or \
                        by_duration:<ISO-8601 duration> before now.",
    },
    GroupConfigDef {
        name: "share.isolation.level",
        config_type: config_type::STRING,
        check: Check::Def(Validator::OneOf(ISOLATION_LEVELS)),
        documentation: "Whether a share group reads only committed transactional records \
                        (read_committed) or every record (read_uncommitted).",
    },
    int(
        "streams.session.timeout.ms",
        1,
        "A streams-group member that sends no heartbeat for this long leaves the group.",
    ),
    int(
        "streams.heartbeat.interval.ms",
        1,
        "How often streams-group members are told to send a heartbeat.",
    ),
    int(
        "streams.num.standby.replicas",
        0,
        "Standby replicas a streams group keeps of each task.",
    ),
];

/// The order Kafka 4.1's DescribeConfigs lists group configs in (its
/// `HashMap`'s iteration order).
const DESCRIBE_ORDER: [&str; 10] = [
    CONSUMER_SESSION_TIMEOUT_MS,
    "streams.heartbeat.interval.ms",
    "share.auto.offset.reset",
    "share.record.lock.duration.ms",
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    "share.session.timeout.ms",
    "share.isolation.level",
    "streams.session.timeout.ms",
    "share.heartbeat.interval.ms",
    "streams.num.standby.replicas",
];

fn find(name: &str) -> Option<&'static GroupConfigDef> {
    GROUP_CONFIG_DEFS.iter().find(|def| def.name == name)
}

/// A group config's default: the broker's setting for the consumer ones,
/// Kafka's default for the others.
fn default_string(name: &str, bounds: &GroupBounds) -> String {
    match name {
        CONSUMER_SESSION_TIMEOUT_MS => bounds.consumer_session_timeout_ms.to_string(),
        CONSUMER_HEARTBEAT_INTERVAL_MS => bounds.consumer_heartbeat_interval_ms.to_string(),
        "share.record.lock.duration.ms" => "30000".into(),
        "share.auto.offset.reset" => "latest".into(),
        "share.isolation.level" => "read_uncommitted".into(),
        "streams.num.standby.replicas" => "0".into(),
        "share.heartbeat.interval.ms" | "streams.heartbeat.interval.ms" => "5000".into(),
        _ => "45000".into(),
    }
}

/// `Duration.parse` of Java: `[-+]PnDTnHnMn.nS` (case-insensitive, each
/// number signed, at least one part, a `T` only before a time part);
/// whether the duration is negative, None if it does not parse or overflows.
fn java_duration_is_negative(text: &str) -> Option<bool> {
    let upper = text.to_ascii_uppercase();
    let (sign, rest) = match upper.as_bytes().first()? {
        b'-' => (-1i128, &upper[1..]),
        b'+' => (1, &upper[1..]),
        _ => (1, upper.as_str()),
    };
    let rest = rest.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) => (date, Some(time)),
        None => (rest, None),
    };
    // One signed decimal number, then the unit.
    fn number(text: &str) -> Option<i128> {
        let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i64 = text.parse().ok()?;
        Some(i128::from(value))
    }
    let mut seconds: i128 = 0;
    let mut parts = 0;
    if !date.is_empty() {
        let days = number(date.strip_suffix('D')?)?;
        seconds += days * 86_400;
        parts += 1;
    }
    let mut nanos: i128 = 0;
    if let Some(mut time) = time {
        if time.is_empty() {
            return None;
        }
        for (unit, scale) in [('H', 3600), ('M', 60)] {
            if let Some(at) = time.find(unit) {
                seconds += number(&time[..at])? * scale;
                time = &time[at + 1..];
                parts += 1;
            }
        }
        if !time.is_empty() {
            let amount = time.strip_suffix('S')?;
            let (whole, fraction) = match amount.split_once(['.', ',']) {
                Some((whole, fraction)) => (whole, Some(fraction)),
                None => (amount, None),
            };
            let whole_seconds = number(whole)?;
            seconds += whole_seconds;
            if let Some(fraction) = fraction {
                if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let padded = format!("{fraction:0<9}");
                let value: i128 = padded.parse().ok()?;
                nanos = if whole.starts_with('-') {
                    -value
                } else {
                    value
                };
            }
            parts += 1;
        }
    }
    if parts == 0 {
        return None;
    }
    let total = sign * (seconds * 1_000_000_000 + nanos);
    if sign * seconds > i128::from(i64::MAX) || sign * seconds < i128::from(i64::MIN) {
        return None;
    }
    Some(total < 0)
}

/// `ShareGroupAutoOffsetResetStrategy.fromString` succeeds.
fn is_share_auto_offset_reset(value: &str) -> bool {
    match value {
        "earliest" | "latest" => true,
        other => {
            other
                .strip_prefix("by_duration:")
                .and_then(java_duration_is_negative)
                == Some(false)
        }
    }
}

/// Parses and checks one value: its canonical form or Kafka's message.
fn canonical(def: &GroupConfigDef, raw: &str) -> Result<String, String> {
    match def.check {
        Check::Def(validator) => canonical_value(def.name, raw, def.config_type, validator),
        Check::ShareAutoOffsetReset => {
            let value = canonical_value(def.name, raw, def.config_type, Validator::Any)?;
            if is_share_auto_offset_reset(&value) {
                return Ok(value);
            }
            Err(format!(
                "Invalid value {value} for configuration {name}: Invalid value `{value}` for \
                 configuration {name}. The value must be either 'earliest', 'latest' or of the \
                 format 'by_duration:<PnDTnHnMn.nS>'.",
                name = def.name
            ))
        }
    }
}

/// A config's value in force for a group with `configs` (already checked).
fn int_in_force(configs: &BTreeMap<String, String>, name: &str, bounds: &GroupBounds) -> i32 {
    configs
        .get(name)
        .and_then(|v| java_trim(v).parse().ok())
        .unwrap_or_else(|| default_string(name, bounds).parse().unwrap_or(0))
}

/// Kafka's `GroupConfig.validate` of a group's whole set of configs:
/// INVALID_CONFIG with Kafka's message for the first problem.
pub fn check(configs: &BTreeMap<String, String>, bounds: &GroupBounds) -> Result<(), String> {
    if let Some(unknown) = configs.keys().find(|name| find(name).is_none()) {
        return Err(format!("Unknown group config name: {unknown}"));
    }
    for def in &GROUP_CONFIG_DEFS {
        if let Some(raw) = configs.get(def.name) {
            canonical(def, raw)?;
        }
    }
    let value = |name: &str| int_in_force(configs, name, bounds);
    let at_least = |name: &str, min: i32, bound: &str| {
        (value(name) >= min)
            .then_some(())
            .ok_or_else(|| format!("{name} must be greater than or equal to {bound}"))
    };
    let at_most = |name: &str, max: i32, bound: &str| {
        (value(name) <= max)
            .then_some(())
            .ok_or_else(|| format!("{name} must be less than or equal to {bound}"))
    };
    let b = bounds;
    at_least(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        b.consumer_min_heartbeat_interval_ms,
        "group.consumer.min.heartbeat.interval.ms",
    )?;
    at_most(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        b.consumer_max_heartbeat_interval_ms,
        "group.consumer.max.heartbeat.interval.ms",
    )?;
    at_least(
        CONSUMER_SESSION_TIMEOUT_MS,
        b.consumer_min_session_timeout_ms,
        "group.consumer.min.session.timeout.ms",
    )?;
    at_most(
        CONSUMER_SESSION_TIMEOUT_MS,
        b.consumer_max_session_timeout_ms,
        "group.consumer.max.session.timeout.ms",
    )?;
    // Share and streams groups: Kafka's default bounds.
    at_least(
        "share.heartbeat.interval.ms",
        5_000,
        "group.share.min.heartbeat.interval.ms",
    )?;
    at_most(
        "share.heartbeat.interval.ms",
        15_000,
        "group.share.max.heartbeat.interval.ms",
    )?;
    at_least(
        "share.session.timeout.ms",
        45_000,
        "group.share.min.session.timeout.ms",
    )?;
    at_most(
        "share.session.timeout.ms",
        60_000,
        "group.share.max.session.timeout.ms",
    )?;
    at_least(
        "share.record.lock.duration.ms",
        15_000,
        "group.share.min.record.lock.duration.ms",
    )?;
    at_most(
        "share.record.lock.duration.ms",
        60_000,
        "group.share.max.record.lock.duration.ms",
    )?;
    at_least(
        "streams.heartbeat.interval.ms",
        5_000,
        "group.streams.min.heartbeat.interval.ms",
    )?;
    at_most(
        "streams.heartbeat.interval.ms",
        15_000,
        "group.streams.max.heartbeat.interval.ms",
    )?;
    at_least(
        "streams.session.timeout.ms",
        45_000,
        "group.streams.min.session.timeout.ms",
    )?;
    at_most(
        "streams.session.timeout.ms",
        60_000,
        "group.streams.max.session.timeout.ms",
    )?;
    at_most(
        "streams.num.standby.replicas",
        2,
        "group.streams.max.standby.replicas",
    )?;
    for kind in ["consumer", "share", "streams"] {
        let session = format!("{kind}.session.timeout.ms");
        let heartbeat = format!("{kind}.heartbeat.interval.ms");
        if value(&session) <= value(&heartbeat) {
            return Err(format!("{session} must be greater than {heartbeat}"));
        }
    }
    Ok(())
}

/// A group's configs after `alteration`, checked, as Kafka's controller
/// builds and checks them, in its order: an APPEND or SUBTRACT (no group
/// config is a LIST) and a value over 32767 bytes are INVALID_CONFIG, the
/// empty name (no cluster-wide group default) INVALID_REQUEST, then
/// [`check`].
///
/// # Errors
/// The error code and Kafka's message.
pub fn altered(
    group: &str,
    current: &BTreeMap<String, String>,
    alteration: &ConfigAlteration,
    bounds: &GroupBounds,
) -> Result<BTreeMap<String, String>, (ErrorCode, String)> {
    // No group config is a LIST.
    let next = altered_values(current, alteration)?;
    if group.is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            "Default group resources are not allowed.".to_string(),
        ));
    }
    check(&next, bounds).map_err(|message| (ErrorCode::InvalidConfig, message))?;
    Ok(next)
}

/// What a group's configs change in how the coordinator treats it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupOverrides {
    /// `consumer.session.timeout.ms`, if the group sets it.
    pub consumer_session_timeout_ms: Option<i32>,
    /// `consumer.heartbeat.interval.ms`, if the group sets it.
    pub consumer_heartbeat_interval_ms: Option<i32>,
}

impl GroupOverrides {
    /// The overrides of a group with `configs` (checked when set).
    pub fn of(configs: &BTreeMap<String, String>) -> GroupOverrides {
        let int = |name: &str| configs.get(name).and_then(|v| java_trim(v).parse().ok());
        GroupOverrides {
            consumer_session_timeout_ms: int(CONSUMER_SESSION_TIMEOUT_MS),
            consumer_heartbeat_interval_ms: int(CONSUMER_HEARTBEAT_INTERVAL_MS),
        }
    }
}

/// The DescribeConfigs entries of a group with `configs` (None: it sets
/// none), as Kafka's `ConfigHelper.createGroupConfigEntry` builds them: the
/// group's value (source GROUP_CONFIG) or the default (DEFAULT_CONFIG), each
/// its own only synonym; in Kafka's order; unknown requested names skipped.
pub fn describe_group_configs(
    configs: Option<&BTreeMap<String, String>>,
    bounds: &GroupBounds,
    requested: Option<&[String]>,
    include_synonyms: bool,
    include_documentation: bool,
) -> Vec<DescribeConfigsResourceResult> {
    DESCRIBE_ORDER
        .iter()
        .filter(|name| is_requested(requested, name))
        .filter_map(|name| find(name))
        .map(|def| {
            let set = configs.and_then(|c| c.get(def.name));
            let (value, source) = match set {
                Some(raw) => (
                    canonical(def, raw).unwrap_or_else(|_| raw.clone()),
                    GROUP_CONFIG_SOURCE,
                ),
                None => (
                    default_string(def.name, bounds),
                    config_source::DEFAULT_CONFIG,
                ),
            };
            let synonym = DescribeConfigsSynonym::default()
                .with_name(StrBytes::from_static_str(def.name))
                .with_value(Some(StrBytes::from_string(value.clone())))
                .with_source(source);
            described_entry(
                (def.name, value, source, def.config_type),
                include_synonyms.then(|| vec![synonym]),
                include_documentation.then_some(def.documentation),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigOp;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn values_are_checked_with_kafkas_messages_in_kafkas_order() {
        let bounds = GroupBounds::default();
        let refused = |pairs: &[(&str, &str)]| check(&configs(pairs), &bounds).unwrap_err();
        // Every message below is Kafka 4.1.1's answer to the same config.
        assert_eq!(refused(&[("foo", "1")]), "Unknown group config name: foo");
        assert_eq!(
            refused(&[("consumer.session.timeout.ms", "30000")]),
            "consumer.session.timeout.ms must be greater than or equal to \
             group.consumer.min.session.timeout.ms"
        );
        assert_eq!(
            refused(&[("consumer.session.timeout.ms", "90000")]),
            "consumer.session.timeout.ms must be less than or equal to \
             group.consumer.max.session.timeout.ms"
        );
        assert_eq!(
            refused(&[("consumer.heartbeat.interval.ms", "abc")]),
            "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number \
             of type INT"
        );
        assert_eq!(
            refused(&[("consumer.heartbeat.interval.ms", "0")]),
            "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at \
             least 1"
        );
        assert_eq!(
            refused(&[("share.isolation.level", "READ_COMMITTED")]),
            "Invalid value READ_COMMITTED for configuration share.isolation.level: String must \
             be one of: read_committed, read_uncommitted"
        );
        assert_eq!(
            refused(&[("share.record.lock.duration.ms", "500")]),
            "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be \
             at least 1000"
        );
        assert_eq!(
            refused(&[("streams.num.standby.replicas", "5")]),
            "streams.num.standby.replicas must be less than or equal to \
             group.streams.max.standby.replicas"
        );
        assert!(
            refused(&[("share.auto.offset.reset", "bogus")]).starts_with(
                "Invalid value bogus for configuration share.auto.offset.reset: Invalid value \
             `bogus` for configuration share.auto.offset.reset."
            )
        );
        // Types before bounds, whatever the names' order.
        assert!(refused(&[
            ("consumer.session.timeout.ms", "1"),
            ("share.isolation.level", "x")
        ])
        .starts_with("Invalid value x"));
        // The session must outlast the heartbeat, the broker's default
        // counting for the one not set.
        let wide = GroupBounds {
            consumer_min_session_timeout_ms: 1000,
            consumer_min_heartbeat_interval_ms: 1000,
            consumer_max_heartbeat_interval_ms: 60_000,
            ..GroupBounds::default()
        };
        assert_eq!(
            check(&configs(&[("consumer.session.timeout.ms", "5000")]), &wide).unwrap_err(),
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
        );
        assert!(check(
            &configs(&[("consumer.heartbeat.interval.ms", " 6000 ")]),
            &bounds
        )
        .is_ok());
    }

    #[test]
    fn share_auto_offset_reset_takes_kafkas_strategies() {
        for good in [
            "earliest",
            "latest",
            "by_duration:PT1H",
            "by_duration:P1DT2H3M4.5S",
            "by_duration:pt10m",
            "by_duration:PT0S",
            "by_duration:-PT-1S",
        ] {
            assert!(is_share_auto_offset_reset(good), "{good}");
        }
        for bad in [
            "none",
            "Earliest",
            "by_duration",
            "by_duration:",
            "by_duration:P",
            "by_duration:PT",
            "by_duration:P1DT",
            "by_duration:-PT1H",
            "by_duration:PT-1S",
            "by_duration:1H",
            "by_duration:PT1.1234567891S",
        ] {
            assert!(!is_share_auto_offset_reset(bad), "{bad}");
        }
    }

    #[test]
    fn appends_are_refused_and_deletes_fall_back_to_defaults() {
        let bounds = GroupBounds::default();
        let current = configs(&[("consumer.session.timeout.ms", "50000")]);
        let append = ConfigAlteration::Incremental(vec![(
            "consumer.session.timeout.ms".into(),
            ConfigOp::Append("1".into()),
        )]);
        assert_eq!(
            altered("g", &current, &append, &bounds).unwrap_err(),
            (
                ErrorCode::InvalidConfig,
                "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."
                    .to_string()
            )
        );
        let delete = ConfigAlteration::Incremental(vec![(
            "consumer.session.timeout.ms".into(),
            ConfigOp::Delete,
        )]);
        assert!(altered("g", &current, &delete, &bounds).unwrap().is_empty());
        let described = describe_group_configs(Some(&current), &bounds, None, true, false);
        assert_eq!(described.len(), 10);
        assert_eq!(described[0].name.as_str(), "consumer.session.timeout.ms");
        assert_eq!(described[0].value.as_deref(), Some("50000"));
        assert_eq!(described[0].config_source, GROUP_CONFIG_SOURCE);
        assert_eq!(described[4].value.as_deref(), Some("5000"));
        assert_eq!(described[4].config_source, config_source::DEFAULT_CONFIG);
    }
}
