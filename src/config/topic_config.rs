//! Topic-level configuration as Apache Kafka 4.0 defines it: the table of every topic config
//! (name, broker-level synonym, default, type, validator), value parsing and validation with
//! Kafka's own error text, the broker-level values that topics inherit ([`BrokerDefaults`]), a
//! topic's overrides ([`TopicConfigs`]), and the DescribeConfigs entries for a topic.
//!
//! Lives on: any core. The tables are `static` and every function is pure; a [`TopicConfigs`]
//! is a plain value that its owner copies to whichever core needs it. It is a broker-wide view:
//! one broker's defaults plus one topic's overrides.
//!
//! Sources, so the numbers can be checked again: the defaults, types, valid values and server
//! default properties are those of the generated "Topic-Level Configs" page of the Kafka 4.0
//! documentation; the full synonym chains (`log.retention.ms` → `.minutes` → `.hours` and so on)
//! come from `ServerTopicConfigSynonyms` and `DynamicBrokerConfig.brokerConfigSynonyms`; parsing
//! and error text follow `ConfigDef.parseType`, `ConfigDef.Range`, `ValidString`, `ValidList`,
//! `ThrottledReplicaListValidator` and the gzip level validator; the DescribeConfigs rules follow
//! `ConfigHelper.createTopicConfigEntry` and `configSynonyms`. The documentation strings are our
//! own one-sentence summaries, not Kafka's text.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsSynonym,
};
use kafka_protocol::protocol::StrBytes;

use crate::protocol::ErrorCode;

/// DescribeConfigs v3+ `config_type` codes (`DescribeConfigsResponse.ConfigType`).
pub mod config_type {
    /// `ConfigDef.Type.BOOLEAN`.
    pub const BOOLEAN: i8 = 1;
    /// `ConfigDef.Type.STRING`.
    pub const STRING: i8 = 2;
    /// `ConfigDef.Type.INT` (32-bit).
    pub const INT: i8 = 3;
    /// `ConfigDef.Type.SHORT` (16-bit).
    pub const SHORT: i8 = 4;
    /// `ConfigDef.Type.LONG` (64-bit).
    pub const LONG: i8 = 5;
    /// `ConfigDef.Type.DOUBLE`.
    pub const DOUBLE: i8 = 6;
    /// `ConfigDef.Type.LIST` (comma-separated).
    pub const LIST: i8 = 7;
    /// `ConfigDef.Type.CLASS` (a Java class name).
    pub const CLASS: i8 = 8;
    /// `ConfigDef.Type.PASSWORD`: sensitive, never returned to clients.
    pub const PASSWORD: i8 = 9;
}

/// DescribeConfigs `config_source` codes (`DescribeConfigsResponse.ConfigSource`).
pub mod config_source {
    /// A per-topic override (Kafka's `TOPIC_CONFIG`, shown as `DYNAMIC_TOPIC_CONFIG` by tools).
    pub const TOPIC_CONFIG: i8 = 1;
    /// A broker config set dynamically for one broker (`config::dynamic`).
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    /// A broker config set dynamically as the cluster-wide default.
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    /// A broker config given at start-up (Kafka's `server.properties`; our command line).
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    /// Kafka's built-in default.
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// The check applied to a value once it has parsed as its type, one per Kafka validator class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    /// No validator: any value that parses as the type.
    Any,
    /// `ConfigDef.Range.atLeast(min)`.
    AtLeast(i64),
    /// `ConfigDef.Range.between(min, max)`, both ends included.
    Between(i64, i64),
    /// The gzip level validator: 1 to 9, or -1 for the codec's own default.
    GzipLevel,
    /// `ConfigDef.ValidString.in(..)`: one of these strings, case-sensitive.
    OneOf(&'static [&'static str]),
    /// `ConfigDef.ValidList.in(..)`: every list element is one of these. An empty list passes.
    ListOf(&'static [&'static str]),
    /// `ThrottledReplicaListValidator`: `*`, or a list of `partition:broker` pairs.
    ThrottledReplicas,
}

/// One topic-level config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopicConfigDef {
    /// The topic config name, e.g. `segment.bytes`.
    pub name: &'static str,
    /// The broker config whose value a topic inherits when it has no override (Kafka's "Server
    /// Default Property"); `None` for the five configs that have none. Some have further,
    /// lower-priority broker synonyms: see [`broker_synonym_group`].
    pub broker_synonym: Option<&'static str>,
    /// Kafka's default as DescribeConfigs shows it when neither the topic nor the broker sets it.
    pub default: &'static str,
    /// One of the [`config_type`] codes.
    pub config_type: i8,
    /// A one-sentence description (ours, not Kafka's wording).
    pub documentation: &'static str,
    /// The check Kafka applies to a parsed value.
    pub validator: Validator,
}

/// Kafka's `CompressionType` names accepted as `compression.type`, in Kafka's order (the order
/// shows in the error text).
pub const COMPRESSION_TYPES: &[&str] =
    &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
/// The two retention policies `cleanup.policy` accepts, in Kafka's order.
pub const CLEANUP_POLICIES: &[&str] = &["compact", "delete"];
/// The two values `message.timestamp.type` accepts.
pub const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

/// Bytes of config names and values one topic may hold, so that the
/// metadata record carrying them stays small (Kafka has no such bound; real
/// configs take a few hundred bytes).
const TOPIC_CONFIGS_BYTES_MAX: usize = 1 << 20;
/// `LegacyRecord.RECORD_OVERHEAD_V0`: Kafka 4.0's lower bound for `segment.bytes`.
const SEGMENT_BYTES_MIN: i64 = 14;
/// Kafka 4.0's lower bound for the broker-level `log.segment.bytes` (1 MiB), stricter than the
/// topic-level bound.
const LOG_SEGMENT_BYTES_MIN: i64 = 1024 * 1024;
/// `Zstd.minCompressionLevel()` and `Zstd.maxCompressionLevel()` as Kafka 4.0 reports them.
const ZSTD_LEVEL_MIN: i64 = -131_072;
const ZSTD_LEVEL_MAX: i64 = 22;

const MS_PER_MINUTE: i64 = 60 * 1000;
const MS_PER_HOUR: i64 = 60 * MS_PER_MINUTE;

/// Every topic config of Kafka 4.0, in the order `LogConfig` defines them. Kafka parses a config
/// map in that order, so when several values are bad, the first one here is the one reported.
///
/// `message.format.version`, `message.timestamp.difference.max.ms` and
/// `message.downconversion.enable` were removed in Kafka 4.0 and are not here: Kafka 4.0 rejects
/// them as unknown names.
static TOPIC_CONFIG_DEFS: [TopicConfigDef; 33] = [
    TopicConfigDef {
        name: "segment.bytes",
        broker_synonym: Some("log.segment.bytes"),
        default: "1073741824",
        config_type: config_type::INT,
        documentation: "Size in bytes at which the active log segment is closed and a new one \
                        started; retention and compaction work on whole segments.",
        validator: Validator::AtLeast(SEGMENT_BYTES_MIN),
    },
    TopicConfigDef {
        name: "segment.ms",
        broker_synonym: Some("log.roll.ms"),
        default: "604800000",
        config_type: config_type::LONG,
        documentation: "Time after which the active segment is rolled even if it is not full, \
                        so that retention can act on old data.",
        validator: Validator::AtLeast(1),
    },
    TopicConfigDef {
        name: "segment.jitter.ms",
        broker_synonym: Some("log.roll.jitter.ms"),
        default: "0",
        config_type: config_type::LONG,
        documentation: "Largest random amount subtracted from the segment roll time, so that \
                        partitions do not all roll at once.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "segment.index.bytes",
        broker_synonym: Some("log.index.size.max.bytes"),
        default: "10485760",
        config_type: config_type::INT,
        documentation: "Size in bytes of the preallocated offset index of each segment, trimmed \
                        when the segment rolls.",
        validator: Validator::AtLeast(4),
    },
    TopicConfigDef {
        name: "flush.messages",
        broker_synonym: Some("log.flush.interval.messages"),
        default: "9223372036854775807",
        config_type: config_type::LONG,
        documentation: "Number of messages written to a partition after which its log is \
                        fsynced; replication is the recommended source of durability instead.",
        validator: Validator::AtLeast(1),
    },
    TopicConfigDef {
        name: "flush.ms",
        broker_synonym: Some("log.flush.interval.ms"),
        default: "9223372036854775807",
        config_type: config_type::LONG,
        documentation: "Time after which written data is fsynced; replication is the \
                        recommended source of durability instead.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "retention.bytes",
        broker_synonym: Some("log.retention.bytes"),
        default: "-1",
        config_type: config_type::LONG,
        documentation: "Largest size a partition may reach before old segments are deleted \
                        under the delete policy; -1 means no size limit.",
        validator: Validator::Any,
    },
    TopicConfigDef {
        name: "retention.ms",
        broker_synonym: Some("log.retention.ms"),
        default: "604800000",
        config_type: config_type::LONG,
        documentation: "Longest time a segment is kept before it is deleted under the delete \
                        policy; -1 means no time limit.",
        validator: Validator::AtLeast(-1),
    },
    TopicConfigDef {
        name: "max.message.bytes",
        broker_synonym: Some("message.max.bytes"),
        default: "1048588",
        config_type: config_type::INT,
        documentation: "Largest record batch, after compression, that the topic accepts.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "index.interval.bytes",
        broker_synonym: Some("log.index.interval.bytes"),
        default: "4096",
        config_type: config_type::INT,
        documentation: "Number of log bytes between two entries of the offset index.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "delete.retention.ms",
        broker_synonym: Some("log.cleaner.delete.retention.ms"),
        default: "86400000",
        config_type: config_type::LONG,
        documentation: "How long delete tombstones are kept in a compacted topic, which bounds \
                        how long a full read from offset 0 may take.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "min.compaction.lag.ms",
        broker_synonym: Some("log.cleaner.min.compaction.lag.ms"),
        default: "0",
        config_type: config_type::LONG,
        documentation: "Shortest time a message stays uncompacted in a compacted topic.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "max.compaction.lag.ms",
        broker_synonym: Some("log.cleaner.max.compaction.lag.ms"),
        default: "9223372036854775807",
        config_type: config_type::LONG,
        documentation: "Longest time a message stays ineligible for compaction in a compacted \
                        topic.",
        validator: Validator::AtLeast(1),
    },
    TopicConfigDef {
        name: "file.delete.delay.ms",
        broker_synonym: Some("log.segment.delete.delay.ms"),
        default: "60000",
        config_type: config_type::LONG,
        documentation: "Delay before a deleted segment's files are removed from the filesystem.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "min.cleanable.dirty.ratio",
        broker_synonym: Some("log.cleaner.min.cleanable.ratio"),
        default: "0.5",
        config_type: config_type::DOUBLE,
        documentation: "Share of uncompacted log above which the compactor cleans a partition, \
                        bounding the space lost to duplicate keys.",
        validator: Validator::Between(0, 1),
    },
    TopicConfigDef {
        name: "cleanup.policy",
        broker_synonym: Some("log.cleanup.policy"),
        default: "delete",
        config_type: config_type::LIST,
        documentation: "Retention policy for old segments: delete, compact, or both as a \
                        comma-separated list.",
        validator: Validator::ListOf(CLEANUP_POLICIES),
    },
    TopicConfigDef {
        name: "unclean.leader.election.enable",
        broker_synonym: Some("unclean.leader.election.enable"),
        default: "false",
        config_type: config_type::BOOLEAN,
        documentation: "Whether a replica outside the ISR may become leader as a last resort, \
                        at the risk of losing data.",
        validator: Validator::Any,
    },
    TopicConfigDef {
        name: "min.insync.replicas",
        broker_synonym: Some("min.insync.replicas"),
        default: "1",
        config_type: config_type::INT,
        documentation: "Fewest in-sync replicas that must have a write before an acks=all \
                        produce succeeds.",
        validator: Validator::AtLeast(1),
    },
    TopicConfigDef {
        name: "compression.type",
        broker_synonym: Some("compression.type"),
        default: "producer",
        config_type: config_type::STRING,
        documentation: "Codec the topic stores batches in; producer keeps the codec the \
                        producer used and uncompressed stores them uncompressed.",
        validator: Validator::OneOf(COMPRESSION_TYPES),
    },
    TopicConfigDef {
        name: "compression.gzip.level",
        broker_synonym: Some("compression.gzip.level"),
        default: "-1",
        config_type: config_type::INT,
        documentation: "Compression level used when compression.type is gzip.",
        validator: Validator::GzipLevel,
    },
    TopicConfigDef {
        name: "compression.lz4.level",
        broker_synonym: Some("compression.lz4.level"),
        default: "9",
        config_type: config_type::INT,
        documentation: "Compression level used when compression.type is lz4.",
        validator: Validator::Between(1, 17),
    },
    TopicConfigDef {
        name: "compression.zstd.level",
        broker_synonym: Some("compression.zstd.level"),
        default: "3",
        config_type: config_type::INT,
        documentation: "Compression level used when compression.type is zstd.",
        validator: Validator::Between(ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX),
    },
    TopicConfigDef {
        name: "preallocate",
        broker_synonym: Some("log.preallocate"),
        default: "false",
        config_type: config_type::BOOLEAN,
        documentation: "Whether a new segment file is preallocated on disk at its full size.",
        validator: Validator::Any,
    },
    TopicConfigDef {
        name: "message.timestamp.type",
        broker_synonym: Some("log.message.timestamp.type"),
        default: "CreateTime",
        config_type: config_type::STRING,
        documentation: "Whether record timestamps are the producer's create time or the \
                        broker's log append time.",
        validator: Validator::OneOf(TIMESTAMP_TYPES),
    },
    TopicConfigDef {
        name: "message.timestamp.before.max.ms",
        broker_synonym: Some("log.message.timestamp.before.max.ms"),
        default: "9223372036854775807",
        config_type: config_type::LONG,
        documentation: "How far a CreateTime timestamp may lie before the broker's clock \
                        before the batch is rejected.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "message.timestamp.after.max.ms",
        broker_synonym: Some("log.message.timestamp.after.max.ms"),
        default: "3600000",
        config_type: config_type::LONG,
        documentation: "How far a CreateTime timestamp may lie after the broker's clock before \
                        the batch is rejected.",
        validator: Validator::AtLeast(0),
    },
    TopicConfigDef {
        name: "leader.replication.throttled.replicas",
        broker_synonym: None,
        default: "",
        config_type: config_type::LIST,
        documentation: "Replicas, as partition:broker pairs or *, whose replication is \
                        throttled on the leader side.",
        validator: Validator::ThrottledReplicas,
    },
    TopicConfigDef {
        name: "follower.replication.throttled.replicas",
        broker_synonym: None,
        default: "",
        config_type: config_type::LIST,
        documentation: "Replicas, as partition:broker pairs or *, whose replication is \
                        throttled on the follower side.",
        validator: Validator::ThrottledReplicas,
    },
    TopicConfigDef {
        name: "remote.storage.enable",
        broker_synonym: None,
        default: "false",
        config_type: config_type::BOOLEAN,
        documentation: "Whether the topic uses tiered storage.",
        validator: Validator::Any,
    },
    TopicConfigDef {
        name: "local.retention.ms",
        broker_synonym: Some("log.local.retention.ms"),
        default: "-2",
        config_type: config_type::LONG,
        documentation: "With tiered storage, how long segments stay on local disk; -2 means \
                        use retention.ms.",
        validator: Validator::AtLeast(-2),
    },
    TopicConfigDef {
        name: "local.retention.bytes",
        broker_synonym: Some("log.local.retention.bytes"),
        default: "-2",
        config_type: config_type::LONG,
        documentation: "With tiered storage, how large a partition's local segments may grow; \
                        -2 means use retention.bytes.",
        validator: Validator::AtLeast(-2),
    },
    TopicConfigDef {
        name: "remote.log.copy.disable",
        broker_synonym: None,
        default: "false",
        config_type: config_type::BOOLEAN,
        documentation: "Whether tiered data becomes read-only, with no further uploads.",
        validator: Validator::Any,
    },
    TopicConfigDef {
        name: "remote.log.delete.on.disable",
        broker_synonym: None,
        default: "false",
        config_type: config_type::BOOLEAN,
        documentation: "Whether tiered data is deleted when tiered storage is turned off for \
                        the topic.",
        validator: Validator::Any,
    },
];

/// The broker config groups whose members feed one another, highest priority first
/// (`DynamicBrokerConfig.brokerConfigSynonyms`). A topic inherits from the first member that is
/// set, converting hours and minutes to milliseconds.
static BROKER_SYNONYM_GROUPS: [&[&str]; 4] = [
    &["log.roll.ms", "log.roll.hours"],
    &["log.roll.jitter.ms", "log.roll.jitter.hours"],
    &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    &[
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ],
];

/// Every topic config of Kafka 4.0, in Kafka's definition order.
pub fn topic_config_defs() -> &'static [TopicConfigDef] {
    &TOPIC_CONFIG_DEFS
}

/// The topic config called `name`, if Kafka 4.0 has one.
pub fn find_topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIG_DEFS.iter().find(|def| def.name == name)
}

/// The synonym group a broker config belongs to, highest priority first, or `None` when the
/// config is its own only synonym. `log.flush.interval.ms` is special: Kafka lists
/// `log.flush.scheduler.interval.ms` as its fallback, but not the other way round.
pub fn broker_synonym_group(broker_config: &str) -> Option<&'static [&'static str]> {
    if broker_config == "log.flush.scheduler.interval.ms" {
        return None;
    }
    BROKER_SYNONYM_GROUPS
        .iter()
        .copied()
        .find(|group| group.contains(&broker_config))
}

/// Checks one topic config as CreateTopics and AlterConfigs do.
///
/// # Errors
///
/// Kafka's INVALID_CONFIG message: `Unknown topic config name: X` for a name Kafka 4.0 does
/// not have, or `Invalid value V for configuration X: reason` for a bad value.
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), String> {
    canonical_topic_config_value(name, value).map(|_| ())
}

/// Checks one topic config and returns its value as Kafka displays it: parsed and printed back
/// (`" compact , delete "` → `compact,delete`, `TRUE` → `true`, `0.50` → `0.5`, `+5` → `5`).
///
/// # Errors
///
/// As [`validate_topic_config`].
pub fn canonical_topic_config_value(name: &str, value: &str) -> Result<String, String> {
    let def =
        find_topic_config(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
    canonical_value(def.name, value, def.config_type, def.validator)
}

/// Parses `raw` as `config_type`, applies `validator`, and prints the value back the way
/// Kafka's `ConfigDef.convertToString` does. `name` only appears in error text.
///
/// # Errors
///
/// Kafka's `ConfigException` text for the first check that fails.
pub(crate) fn canonical_value(
    name: &str,
    raw: &str,
    config_type: i8,
    validator: Validator,
) -> Result<String, String> {
    let parsed = parse_typed(name, raw, config_type)?;
    validate_parsed(name, &parsed, validator)?;
    Ok(parsed.to_kafka_string())
}

/// A value after `ConfigDef.parseType`.
#[derive(Debug, Clone, PartialEq)]
enum ParsedValue {
    Boolean(bool),
    /// INT, SHORT and LONG, widened; the parse already enforced the type's range.
    Integer(i64),
    Double(f64),
    /// STRING, CLASS and PASSWORD.
    Text(String),
    List(Vec<String>),
}

impl ParsedValue {
    fn to_kafka_string(&self) -> String {
        match self {
            ParsedValue::Boolean(value) => value.to_string(),
            ParsedValue::Integer(value) => value.to_string(),
            ParsedValue::Double(value) => java_double_to_string(*value),
            ParsedValue::Text(value) => value.clone(),
            ParsedValue::List(values) => values.join(","),
        }
    }
}

/// `ConfigException(name, value, message)`'s text.
fn invalid_value(name: &str, value: &str, message: &str) -> String {
    format!("Invalid value {value} for configuration {name}: {message}")
}

/// `String.trim()`: Java strips every char at or below U+0020, not only whitespace.
pub(crate) fn java_trim(value: &str) -> &str {
    value.trim_matches(|c: char| c <= ' ')
}

/// The `\s` class of Java regular expressions.
fn is_java_regex_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// `ConfigDef.parseType` for a string input.
fn parse_typed(name: &str, raw: &str, config_type: i8) -> Result<ParsedValue, String> {
    let trimmed = java_trim(raw);
    // Kafka reports a number that does not parse with the raw, untrimmed value.
    let not_a_number =
        |type_name: &str| invalid_value(name, raw, &format!("Not a number of type {type_name}"));
    match config_type {
        config_type::BOOLEAN => {
            if trimmed.eq_ignore_ascii_case("true") {
                Ok(ParsedValue::Boolean(true))
            } else if trimmed.eq_ignore_ascii_case("false") {
                Ok(ParsedValue::Boolean(false))
            } else {
                Err(invalid_value(
                    name,
                    raw,
                    "Expected value to be either true or false",
                ))
            }
        }
        config_type::INT => trimmed
            .parse::<i32>()
            .map(|value| ParsedValue::Integer(i64::from(value)))
            .map_err(|_| not_a_number("INT")),
        config_type::SHORT => trimmed
            .parse::<i16>()
            .map(|value| ParsedValue::Integer(i64::from(value)))
            .map_err(|_| not_a_number("SHORT")),
        config_type::LONG => trimmed
            .parse::<i64>()
            .map(ParsedValue::Integer)
            .map_err(|_| not_a_number("LONG")),
        config_type::DOUBLE => parse_java_double(trimmed)
            .map(ParsedValue::Double)
            .ok_or_else(|| not_a_number("DOUBLE")),
        config_type::LIST => Ok(ParsedValue::List(split_java_list(trimmed))),
        config_type::STRING | config_type::CLASS | config_type::PASSWORD => {
            Ok(ParsedValue::Text(trimmed.to_string()))
        }
        other => panic!("config {name} has unknown config type code {other}"),
    }
}

/// `Double.parseDouble` for the forms a config value plausibly takes: decimal and scientific
/// notation, an optional `d`/`f` suffix, and the exact words `NaN` and `Infinity`. Java's hex
/// floating-point literals are not accepted.
pub(crate) fn parse_java_double(trimmed: &str) -> Option<f64> {
    let unsigned = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if unsigned == "NaN" || unsigned == "Infinity" {
        return trimmed.parse::<f64>().ok();
    }
    let digits = trimmed
        .strip_suffix(['d', 'D', 'f', 'F'])
        .unwrap_or(trimmed);
    let plain_number = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'));
    if !plain_number {
        return None;
    }
    digits.parse::<f64>().ok()
}

/// A LIST value's elements, as `ConfigDef.parseType` reads them.
pub(crate) fn parse_list(raw: &str) -> Vec<String> {
    split_java_list(java_trim(raw))
}

/// `ConfigDef.parseType` for LIST: empty after trimming is the empty list, otherwise a split on
/// the regex `\s*,\s*` that keeps empty elements.
fn split_java_list(trimmed: &str) -> Vec<String> {
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split(',')
        .map(|element| element.trim_matches(is_java_regex_space).to_string())
        .collect()
}

/// Java's `Double.toString`: plain notation with at least one fractional digit between 10^-3
/// and 10^7, computerized scientific notation (`1.0E-5`) outside it.
pub(crate) fn java_double_to_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .to_string();
    }
    if (1e-3..1e7).contains(&value.abs()) {
        let plain = format!("{value}");
        return if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        };
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("Rust's {:e} output always has an exponent");
    if mantissa.contains('.') {
        format!("{mantissa}E{exponent}")
    } else {
        format!("{mantissa}.0E{exponent}")
    }
}

/// Applies a validator to a parsed value, with the validator's own error text.
fn validate_parsed(name: &str, parsed: &ParsedValue, validator: Validator) -> Result<(), String> {
    match validator {
        Validator::Any => Ok(()),
        Validator::AtLeast(min) => validate_range(name, parsed, Some(min), None),
        Validator::Between(min, max) => validate_range(name, parsed, Some(min), Some(max)),
        Validator::GzipLevel => {
            let ParsedValue::Integer(level) = parsed else {
                panic!("config {name}: the gzip level validator needs an integer type");
            };
            let level = *level;
            if level > 9 || (level < 1 && level != -1) {
                return Err(invalid_value(
                    name,
                    &parsed.to_kafka_string(),
                    "Value must be between 1 and 9 or equal to -1",
                ));
            }
            Ok(())
        }
        Validator::OneOf(allowed) => {
            let ParsedValue::Text(value) = parsed else {
                panic!("config {name}: ValidString needs a string type");
            };
            validate_one_of(name, value, allowed)
        }
        Validator::ListOf(allowed) => {
            let ParsedValue::List(values) = parsed else {
                panic!("config {name}: ValidList needs a list type");
            };
            values
                .iter()
                .try_for_each(|value| validate_one_of(name, value, allowed))
        }
        Validator::ThrottledReplicas => {
            let ParsedValue::List(values) = parsed else {
                panic!("config {name}: the throttled replica validator needs a list type");
            };
            let wildcard = values.concat() == "*";
            let all_pairs = values.iter().all(|value| is_replica_pair_or_empty(value));
            if wildcard || all_pairs {
                return Ok(());
            }
            // Kafka prints the offending value as a Java List: `[a, b]`.
            Err(invalid_value(
                name,
                &format!("[{}]", values.join(", ")),
                &format!(
                    "{name} must be the literal '*' or a list of replicas in the following \
                     format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                ),
            ))
        }
    }
}

/// `ConfigDef.Range.ensureValid`: the bounds print as the integers they were declared as, and
/// the value prints as its parsed number (`2` for an INT, `2.0` for a DOUBLE).
fn validate_range(
    name: &str,
    parsed: &ParsedValue,
    min: Option<i64>,
    max: Option<i64>,
) -> Result<(), String> {
    // Java compares `doubleValue()`s; a NaN passes both comparisons, and so it does here.
    let value = match parsed {
        ParsedValue::Integer(value) => *value as f64,
        ParsedValue::Double(value) => *value,
        other => panic!("config {name}: a range validator needs a number, got {other:?}"),
    };
    if let Some(min) = min {
        if value < min as f64 {
            return Err(invalid_value(
                name,
                &parsed.to_kafka_string(),
                &format!("Value must be at least {min}"),
            ));
        }
    }
    if let Some(max) = max {
        if value > max as f64 {
            return Err(invalid_value(
                name,
                &parsed.to_kafka_string(),
                &format!("Value must be no more than {max}"),
            ));
        }
    }
    Ok(())
}

/// `ConfigDef.ValidString.ensureValid`.
fn validate_one_of(name: &str, value: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(invalid_value(
        name,
        value,
        &format!("String must be one of: {}", allowed.join(", ")),
    ))
}

/// Matches the Java regex `([0-9]+:[0-9]+)?` against the whole of `value`, after a trim.
fn is_replica_pair_or_empty(value: &str) -> bool {
    let value = java_trim(value);
    if value.is_empty() {
        return true;
    }
    let Some((partition, broker)) = value.split_once(':') else {
        return false;
    };
    let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    all_digits(partition) && all_digits(broker)
}

/// The broker-level values that topics inherit, plus the two that shape topic creation
/// (`num.partitions`, `default.replication.factor`). Each field is the broker config of the same
/// name, with Kafka's type; `Option` fields are the ones whose Kafka default is null, so that a
/// lower-priority synonym applies (`log.retention.ms` unset → `log.retention.minutes` →
/// `log.retention.hours`). [`Default`] is Kafka 4.0's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerDefaults {
    /// `num.partitions`: partitions of a topic created without a count.
    pub num_partitions: i32,
    /// `default.replication.factor`: replicas of a topic created without a factor.
    pub default_replication_factor: i32,
    /// `log.segment.bytes`.
    pub log_segment_bytes: i32,
    /// `log.roll.ms`; unset means `log.roll.hours`.
    pub log_roll_ms: Option<i64>,
    /// `log.roll.hours`.
    pub log_roll_hours: i32,
    /// `log.roll.jitter.ms`; unset means `log.roll.jitter.hours`.
    pub log_roll_jitter_ms: Option<i64>,
    /// `log.roll.jitter.hours`.
    pub log_roll_jitter_hours: i32,
    /// `log.index.size.max.bytes`.
    pub log_index_size_max_bytes: i32,
    /// `log.index.interval.bytes`.
    pub log_index_interval_bytes: i32,
    /// `log.flush.interval.messages`.
    pub log_flush_interval_messages: i64,
    /// `log.flush.interval.ms`; unset means `log.flush.scheduler.interval.ms`.
    pub log_flush_interval_ms: Option<i64>,
    /// `log.flush.scheduler.interval.ms`.
    pub log_flush_scheduler_interval_ms: i64,
    /// `log.retention.bytes`.
    pub log_retention_bytes: i64,
    /// `log.retention.check.interval.ms`: how often the shards look for
    /// segments past their topics' retention limits.
    pub log_retention_check_interval_ms: i64,
    /// `log.retention.ms`; unset means `log.retention.minutes`.
    pub log_retention_ms: Option<i64>,
    /// `log.retention.minutes`; unset means `log.retention.hours`.
    pub log_retention_minutes: Option<i32>,
    /// `log.retention.hours`.
    pub log_retention_hours: i32,
    /// `message.max.bytes`.
    pub message_max_bytes: i32,
    /// `log.cleaner.delete.retention.ms`.
    pub log_cleaner_delete_retention_ms: i64,
    /// `log.cleaner.min.compaction.lag.ms`.
    pub log_cleaner_min_compaction_lag_ms: i64,
    /// `log.cleaner.max.compaction.lag.ms`.
    pub log_cleaner_max_compaction_lag_ms: i64,
    /// `log.segment.delete.delay.ms`.
    pub log_segment_delete_delay_ms: i64,
    /// `log.cleaner.min.cleanable.ratio`.
    pub log_cleaner_min_cleanable_ratio: f64,
    /// `log.cleanup.policy`, in Kafka's printed form (`delete`, `compact,delete`, ...).
    pub log_cleanup_policy: String,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// `min.insync.replicas`.
    pub min_insync_replicas: i32,
    /// `compression.type`.
    pub compression_type: String,
    /// `compression.gzip.level`.
    pub compression_gzip_level: i32,
    /// `compression.lz4.level`.
    pub compression_lz4_level: i32,
    /// `compression.zstd.level`.
    pub compression_zstd_level: i32,
    /// `log.preallocate`.
    pub log_preallocate: bool,
    /// `log.message.timestamp.type`.
    pub log_message_timestamp_type: String,
    /// `log.message.timestamp.before.max.ms`.
    pub log_message_timestamp_before_max_ms: i64,
    /// `log.message.timestamp.after.max.ms`.
    pub log_message_timestamp_after_max_ms: i64,
    /// `log.local.retention.ms`.
    pub log_local_retention_ms: i64,
    /// `log.local.retention.bytes`.
    pub log_local_retention_bytes: i64,
}

impl Default for BrokerDefaults {
    fn default() -> Self {
        BrokerDefaults {
            num_partitions: 1,
            default_replication_factor: 1,
            log_segment_bytes: 1024 * 1024 * 1024,
            log_roll_ms: None,
            log_roll_hours: 168,
            log_roll_jitter_ms: None,
            log_roll_jitter_hours: 0,
            log_index_size_max_bytes: 10 * 1024 * 1024,
            log_index_interval_bytes: 4096,
            log_flush_interval_messages: i64::MAX,
            log_flush_interval_ms: None,
            log_flush_scheduler_interval_ms: i64::MAX,
            log_retention_bytes: -1,
            log_retention_check_interval_ms: 300_000,
            log_retention_ms: None,
            log_retention_minutes: None,
            log_retention_hours: 168,
            // 1 MiB plus `Records.LOG_OVERHEAD` (12 bytes).
            message_max_bytes: 1024 * 1024 + 12,
            log_cleaner_delete_retention_ms: 24 * MS_PER_HOUR,
            log_cleaner_min_compaction_lag_ms: 0,
            log_cleaner_max_compaction_lag_ms: i64::MAX,
            log_segment_delete_delay_ms: MS_PER_MINUTE,
            log_cleaner_min_cleanable_ratio: 0.5,
            log_cleanup_policy: "delete".to_string(),
            unclean_leader_election_enable: false,
            min_insync_replicas: 1,
            compression_type: "producer".to_string(),
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            log_preallocate: false,
            log_message_timestamp_type: "CreateTime".to_string(),
            log_message_timestamp_before_max_ms: i64::MAX,
            log_message_timestamp_after_max_ms: MS_PER_HOUR,
            log_local_retention_ms: -2,
            log_local_retention_bytes: -2,
        }
    }
}

impl BrokerDefaults {
    /// The value of broker config `broker_config` as Kafka prints it, or `None` when it is
    /// unset (a null-default config such as `log.retention.ms`) or not one this struct holds.
    pub fn value_of(&self, broker_config: &str) -> Option<String> {
        let value = match broker_config {
            "num.partitions" => self.num_partitions.to_string(),
            "default.replication.factor" => self.default_replication_factor.to_string(),
            "log.segment.bytes" => self.log_segment_bytes.to_string(),
            "log.roll.ms" => return self.log_roll_ms.map(|value| value.to_string()),
            "log.roll.hours" => self.log_roll_hours.to_string(),
            "log.roll.jitter.ms" => return self.log_roll_jitter_ms.map(|value| value.to_string()),
            "log.roll.jitter.hours" => self.log_roll_jitter_hours.to_string(),
            "log.index.size.max.bytes" => self.log_index_size_max_bytes.to_string(),
            "log.index.interval.bytes" => self.log_index_interval_bytes.to_string(),
            "log.flush.interval.messages" => self.log_flush_interval_messages.to_string(),
            "log.flush.interval.ms" => {
                return self.log_flush_interval_ms.map(|value| value.to_string())
            }
            "log.flush.scheduler.interval.ms" => self.log_flush_scheduler_interval_ms.to_string(),
            "log.retention.bytes" => self.log_retention_bytes.to_string(),
            "log.retention.check.interval.ms" => self.log_retention_check_interval_ms.to_string(),
            "log.retention.ms" => return self.log_retention_ms.map(|value| value.to_string()),
            "log.retention.minutes" => {
                return self.log_retention_minutes.map(|value| value.to_string())
            }
            "log.retention.hours" => self.log_retention_hours.to_string(),
            "message.max.bytes" => self.message_max_bytes.to_string(),
            "log.cleaner.delete.retention.ms" => self.log_cleaner_delete_retention_ms.to_string(),
            "log.cleaner.min.compaction.lag.ms" => {
                self.log_cleaner_min_compaction_lag_ms.to_string()
            }
            "log.cleaner.max.compaction.lag.ms" => {
                self.log_cleaner_max_compaction_lag_ms.to_string()
            }
            "log.segment.delete.delay.ms" => self.log_segment_delete_delay_ms.to_string(),
            "log.cleaner.min.cleanable.ratio" => {
                java_double_to_string(self.log_cleaner_min_cleanable_ratio)
            }
            "log.cleanup.policy" => self.log_cleanup_policy.clone(),
            "unclean.leader.election.enable" => self.unclean_leader_election_enable.to_string(),
            "min.insync.replicas" => self.min_insync_replicas.to_string(),
            "compression.type" => self.compression_type.clone(),
            "compression.gzip.level" => self.compression_gzip_level.to_string(),
            "compression.lz4.level" => self.compression_lz4_level.to_string(),
            "compression.zstd.level" => self.compression_zstd_level.to_string(),
            "log.preallocate" => self.log_preallocate.to_string(),
            "log.message.timestamp.type" => self.log_message_timestamp_type.clone(),
            "log.message.timestamp.before.max.ms" => {
                self.log_message_timestamp_before_max_ms.to_string()
            }
            "log.message.timestamp.after.max.ms" => {
                self.log_message_timestamp_after_max_ms.to_string()
            }
            "log.local.retention.ms" => self.log_local_retention_ms.to_string(),
            "log.local.retention.bytes" => self.log_local_retention_bytes.to_string(),
            _ => return None,
        };
        Some(value)
    }

    /// Sets broker config `name` (one this struct holds) to `value`, checked against its
    /// broker config type (`broker_config_type`) as Kafka parses it; the bounds are
    /// [`BrokerDefaults::validate`]'s. Values are kept in Kafka's printed form.
    ///
    /// # Errors
    ///
    /// Kafka's message for a value that does not parse, or for a name not held here.
    pub fn set(&mut self, name: &str, value: &str, broker_config_type: i8) -> Result<(), String> {
        let printed = canonical_value(name, value, broker_config_type, Validator::Any)?;
        let int = || printed.parse::<i32>().map_err(|e| e.to_string());
        let long = || printed.parse::<i64>().map_err(|e| e.to_string());
        match name {
            "log.segment.bytes" => self.log_segment_bytes = int()?,
            "log.roll.ms" => self.log_roll_ms = Some(long()?),
            "log.roll.jitter.ms" => self.log_roll_jitter_ms = Some(long()?),
            "log.index.size.max.bytes" => self.log_index_size_max_bytes = int()?,
            "log.index.interval.bytes" => self.log_index_interval_bytes = int()?,
            "log.flush.interval.messages" => self.log_flush_interval_messages = long()?,
            "log.flush.interval.ms" => self.log_flush_interval_ms = Some(long()?),
            "log.retention.bytes" => self.log_retention_bytes = long()?,
            "log.retention.ms" => self.log_retention_ms = Some(long()?),
            "message.max.bytes" => self.message_max_bytes = int()?,
            "min.insync.replicas" => self.min_insync_replicas = int()?,
            "log.cleaner.delete.retention.ms" => self.log_cleaner_delete_retention_ms = long()?,
            "log.cleaner.min.compaction.lag.ms" => self.log_cleaner_min_compaction_lag_ms = long()?,
            "log.cleaner.max.compaction.lag.ms" => self.log_cleaner_max_compaction_lag_ms = long()?,
            "log.segment.delete.delay.ms" => self.log_segment_delete_delay_ms = long()?,
            "log.cleaner.min.cleanable.ratio" => {
                self.log_cleaner_min_cleanable_ratio =
                    printed.parse::<f64>().map_err(|e| e.to_string())?
            }
            "log.cleanup.policy" => self.log_cleanup_policy = printed,
            "compression.type" => self.compression_type = printed,
            "compression.gzip.level" => self.compression_gzip_level = int()?,
            "compression.lz4.level" => self.compression_lz4_level = int()?,
            "compression.zstd.level" => self.compression_zstd_level = int()?,
            "log.preallocate" => self.log_preallocate = printed == "true",
            "log.message.timestamp.type" => self.log_message_timestamp_type = printed,
            "log.message.timestamp.before.max.ms" => {
                self.log_message_timestamp_before_max_ms = long()?
            }
            "log.message.timestamp.after.max.ms" => {
                self.log_message_timestamp_after_max_ms = long()?
            }
            other => return Err(format!("{other} is not a broker default of topic configs")),
        }
        Ok(())
    }

    /// The value a topic without an override inherits for `topic_config`, as Kafka prints it
    /// (`KafkaConfig.extractLogConfigMap`), or `None` for a config with no broker synonym.
    pub fn topic_value(&self, topic_config: &str) -> Option<String> {
        match topic_config {
            "segment.ms" => Some(self.segment_ms().to_string()),
            "segment.jitter.ms" => Some(self.segment_jitter_ms().to_string()),
            "flush.ms" => Some(self.flush_ms().to_string()),
            "retention.ms" => Some(self.retention_ms().to_string()),
            _ => self.value_of(find_topic_config(topic_config)?.broker_synonym?),
        }
    }

    /// Effective `log.roll.ms`: the milliseconds, else the hours converted.
    fn segment_ms(&self) -> i64 {
        self.log_roll_ms
            .unwrap_or(MS_PER_HOUR * i64::from(self.log_roll_hours))
    }

    /// Effective `log.roll.jitter.ms`: the milliseconds, else the hours converted.
    fn segment_jitter_ms(&self) -> i64 {
        self.log_roll_jitter_ms
            .unwrap_or(MS_PER_HOUR * i64::from(self.log_roll_jitter_hours))
    }

    /// Effective `log.flush.interval.ms`: itself, else `log.flush.scheduler.interval.ms`.
    fn flush_ms(&self) -> i64 {
        self.log_flush_interval_ms
            .unwrap_or(self.log_flush_scheduler_interval_ms)
    }

    /// Effective `log.retention.ms` (`KafkaConfig.logRetentionTimeMillis`): milliseconds, else
    /// minutes, else hours; any negative result means "no limit" and becomes -1.
    fn retention_ms(&self) -> i64 {
        let retention_ms =
            self.log_retention_ms
                .unwrap_or_else(|| match self.log_retention_minutes {
                    Some(minutes) => MS_PER_MINUTE * i64::from(minutes),
                    None => MS_PER_HOUR * i64::from(self.log_retention_hours),
                });
        if retention_ms < 0 {
            -1
        } else {
            retention_ms
        }
    }

    /// Checks every value against the bounds Kafka's broker enforces, so that every topic
    /// getter on [`TopicConfigs`] can rely on them. Start-up code calls this once after filling
    /// the struct from flags.
    ///
    /// # Errors
    ///
    /// A message naming the first broker config that is out of bounds.
    pub fn validate(&self) -> Result<(), String> {
        // Broker configs with the topic config's validator (Kafka defines both with the same
        // bound), skipping the null-default ones and the ones derived below.
        for def in &TOPIC_CONFIG_DEFS {
            let Some(broker_config) = def.broker_synonym else {
                continue;
            };
            if broker_synonym_group(broker_config).is_some() {
                continue;
            }
            let validator = if broker_config == "log.segment.bytes" {
                Validator::AtLeast(LOG_SEGMENT_BYTES_MIN)
            } else {
                def.validator
            };
            let value = self
                .value_of(broker_config)
                .expect("every non-grouped broker synonym is a held, non-null field");
            canonical_value(broker_config, &value, def.config_type, validator)?;
        }
        let at_least = |name: &str, value: i64, min: i64| {
            canonical_value(
                name,
                &value.to_string(),
                config_type::LONG,
                Validator::AtLeast(min),
            )
            .map(|_| ())
        };
        at_least("num.partitions", i64::from(self.num_partitions), 1)?;
        at_least(
            "default.replication.factor",
            i64::from(self.default_replication_factor),
            1,
        )?;
        at_least("log.roll.hours", i64::from(self.log_roll_hours), 1)?;
        at_least("log.roll.ms", self.segment_ms(), 1)?;
        at_least(
            "log.roll.jitter.hours",
            i64::from(self.log_roll_jitter_hours),
            0,
        )?;
        at_least("log.roll.jitter.ms", self.segment_jitter_ms(), 0)?;
        at_least("log.flush.interval.ms", self.flush_ms(), 0)?;
        let retention_ms = self.retention_ms();
        if retention_ms == 0 {
            return Err(invalid_value(
                "log.retention.ms",
                "0",
                "log.retention.ms must be unlimited (-1) or, greater than or equal to 1",
            ));
        }
        Ok(())
    }
}

/// One change IncrementalAlterConfigs asks for (Kafka's `AlterConfigOp.OpType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    /// SET: the override becomes this value.
    Set(String),
    /// DELETE: the override goes; the topic inherits again.
    Delete,
    /// APPEND: these comma-separated elements join a LIST config.
    Append(String),
    /// SUBTRACT: these comma-separated elements leave a LIST config.
    Subtract(String),
}

/// The LIST value `current` after an APPEND (its elements not yet in it
/// join, in order) or a SUBTRACT (its elements leave), as Kafka's
/// `ConfigAdminManager` computes both: comma-separated, empty elements
/// dropped. Other operations leave it as it is.
pub(crate) fn list_changed(current: &str, op: &ConfigOp) -> String {
    let mut parts: Vec<&str> = current.split(',').filter(|p| !p.is_empty()).collect();
    match op {
        ConfigOp::Append(elements) => {
            let mut present: HashSet<&str> = parts.iter().copied().collect();
            for element in elements.split(',').filter(|e| !e.is_empty()) {
                if present.insert(element) {
                    parts.push(element);
                }
            }
        }
        ConfigOp::Subtract(elements) => {
            let removed: HashSet<&str> = elements.split(',').filter(|e| !e.is_empty()).collect();
            parts.retain(|p| !removed.contains(p));
        }
        ConfigOp::Set(_) | ConfigOp::Delete => {}
    }
    parts.join(",")
}

/// How an alter request changes a topic's overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigAlteration {
    /// IncrementalAlterConfigs: these changes, in order, over the current overrides.
    Incremental(Vec<(String, ConfigOp)>),
    /// AlterConfigs: exactly these overrides; the others go.
    Replace(Vec<(String, String)>),
}

/// `current` after incremental `changes`, in order, as Kafka's controller
/// applies them: SET and DELETE, and APPEND and SUBTRACT on the configs
/// `list_default` gives a starting value for (their value, else that
/// default); on any other config they are refused with Kafka's message.
pub(crate) fn apply_incremental(
    current: &BTreeMap<String, String>,
    changes: &[(String, ConfigOp)],
    list_default: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut next = current.clone();
    for (name, op) in changes {
        match op {
            ConfigOp::Set(value) => {
                next.insert(name.clone(), value.clone());
            }
            ConfigOp::Delete => {
                next.remove(name);
            }
            ConfigOp::Append(_) | ConfigOp::Subtract(_) => {
                let verb = if matches!(op, ConfigOp::Append(_)) {
                    "APPEND"
                } else {
                    "SUBTRACT"
                };
                let Some(default) = list_default(name) else {
                    return Err(format!(
                        "Can't {verb} to key {name} because its type is not LIST."
                    ));
                };
                let current = next.get(name).cloned().unwrap_or(default);
                next.insert(name.clone(), list_changed(&current, op));
            }
        }
    }
    Ok(next)
}

/// The configs of a resource none of whose configs is a LIST (a group, a
/// client-metrics subscription) after `alteration`: AlterConfigs' set, or
/// `current` after the incremental changes (APPEND and SUBTRACT refused);
/// INVALID_CONFIG with Kafka's message for a refused operation or a value
/// over 32767 bytes (`ConfigurationControlManager`).
pub(crate) fn altered_values(
    current: &BTreeMap<String, String>,
    alteration: &ConfigAlteration,
) -> Result<BTreeMap<String, String>, (ErrorCode, String)> {
    let invalid = |message: String| (ErrorCode::InvalidConfig, message);
    let next: BTreeMap<String, String> = match alteration {
        ConfigAlteration::Replace(configs) => configs.iter().cloned().collect(),
        ConfigAlteration::Incremental(changes) => {
            apply_incremental(current, changes, |_| None).map_err(invalid)?
        }
    };
    if next.values().any(|v| v.len() > i16::MAX as usize) {
        return Err(invalid(
            "The configuration value cannot be added because it exceeds the maximum value \
             size of 32767 bytes."
                .to_string(),
        ));
    }
    Ok(next)
}

/// One topic's config overrides, kept in Kafka's printed form. Values come from a topic's
/// CreateTopics or AlterConfigs request, after [`TopicConfigs::from_overrides`] checked them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicConfigs {
    overrides: BTreeMap<String, String>,
}

impl TopicConfigs {
    /// A topic with no overrides.
    pub fn new() -> Self {
        TopicConfigs::default()
    }

    /// Validates a topic's requested overrides the way Kafka 4.0's controller does for
    /// CreateTopics (`LogConfig.validate`) and keeps them in Kafka's printed form. A repeated
    /// name keeps its last value.
    ///
    /// The checks, in Kafka's order: every name is a topic config; every value parses and passes
    /// its validator, in definition order; `min.compaction.lag.ms` is not above
    /// `max.compaction.lag.ms` (with broker defaults filling the gaps); and tiered storage is
    /// refused, because this broker has none.
    ///
    /// # Errors
    ///
    /// Kafka's INVALID_CONFIG message for the first failed check.
    pub fn from_overrides<'a, I>(overrides: I, broker: &BrokerDefaults) -> Result<Self, String>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut requested: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, value) in overrides {
            if find_topic_config(name).is_none() {
                return Err(format!("Unknown topic config name: {name}"));
            }
            requested.insert(name, value);
        }
        let bytes: usize = requested.iter().map(|(n, v)| n.len() + v.len()).sum();
        if bytes > TOPIC_CONFIGS_BYTES_MAX {
            return Err(format!(
                "The topic's configs take {bytes} bytes; this broker keeps at most \
                 {TOPIC_CONFIGS_BYTES_MAX}."
            ));
        }
        let mut topic_configs = TopicConfigs::new();
        for def in &TOPIC_CONFIG_DEFS {
            if let Some(value) = requested.get(def.name) {
                let canonical = canonical_value(def.name, value, def.config_type, def.validator)?;
                topic_configs
                    .overrides
                    .insert(def.name.to_string(), canonical);
            }
        }
        let min_compaction_lag_ms = topic_configs.long("min.compaction.lag.ms", broker);
        let max_compaction_lag_ms = topic_configs.long("max.compaction.lag.ms", broker);
        if min_compaction_lag_ms > max_compaction_lag_ms {
            return Err(format!(
                "conflict topic config setting min.compaction.lag.ms ({min_compaction_lag_ms}) > \
                 max.compaction.lag.ms ({max_compaction_lag_ms})"
            ));
        }
        if topic_configs.get("remote.storage.enable", broker) == "true" {
            return Err(
                "Tiered Storage functionality is disabled in the broker. Topic cannot \
                        be configured with remote log storage."
                    .to_string(),
            );
        }
        Ok(topic_configs)
    }

    /// The overrides after `alteration`, checked as [`TopicConfigs::from_overrides`] checks a
    /// new topic's. APPEND and SUBTRACT work on the current value's elements (the inherited
    /// value when the topic has no override), as Kafka's controller does; DELETE of a name
    /// that is not overridden, or not a config at all, changes nothing.
    ///
    /// # Errors
    ///
    /// Kafka's INVALID_CONFIG message for the first failed check.
    pub fn altered(
        &self,
        alteration: &ConfigAlteration,
        broker: &BrokerDefaults,
    ) -> Result<TopicConfigs, String> {
        let changes = match alteration {
            ConfigAlteration::Replace(configs) => {
                return TopicConfigs::from_overrides(
                    configs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                    broker,
                )
            }
            ConfigAlteration::Incremental(changes) => changes,
        };
        // Kafka's controller starts a LIST from the config's own default,
        // not the broker's value (`getParts`).
        let next = apply_incremental(&self.overrides, changes, |name| {
            find_topic_config(name)
                .filter(|d| d.config_type == config_type::LIST)
                .map(|d| d.default.to_string())
        })?;
        TopicConfigs::from_overrides(next.iter().map(|(n, v)| (n.as_str(), v.as_str())), broker)
    }

    /// Overrides already checked by [`TopicConfigs::from_overrides`] when the
    /// topic was created, as read back from the metadata log.
    pub fn from_validated(overrides: BTreeMap<String, String>) -> Self {
        TopicConfigs { overrides }
    }

    /// The overrides, by name, in Kafka's printed form.
    pub fn overrides(&self) -> &BTreeMap<String, String> {
        &self.overrides
    }

    /// Whether the topic overrides `name`.
    pub fn is_overridden(&self, name: &str) -> bool {
        self.overrides.contains_key(name)
    }

    /// The effective value of topic config `name`: the topic's override, else the value
    /// inherited from the broker, else Kafka's default.
    ///
    /// # Panics
    ///
    /// If `name` is not a topic config: callers name configs from [`topic_config_defs`].
    pub fn get(&self, name: &str, broker: &BrokerDefaults) -> String {
        let def = find_topic_config(name).unwrap_or_else(|| panic!("{name} is not a topic config"));
        if let Some(value) = self.overrides.get(name) {
            return value.clone();
        }
        broker
            .topic_value(name)
            .unwrap_or_else(|| def.default.to_string())
    }

    /// `preallocate`.
    pub fn preallocate(&self, broker: &BrokerDefaults) -> bool {
        self.get("preallocate", broker) == "true"
    }

    /// `segment.bytes`.
    pub fn segment_bytes(&self, broker: &BrokerDefaults) -> u64 {
        self.unsigned("segment.bytes", broker)
    }

    /// `segment.ms`.
    pub fn segment_ms(&self, broker: &BrokerDefaults) -> u64 {
        self.unsigned("segment.ms", broker)
    }

    /// `segment.jitter.ms`.
    pub fn segment_jitter_ms(&self, broker: &BrokerDefaults) -> u64 {
        self.unsigned("segment.jitter.ms", broker)
    }

    /// `max.compaction.lag.ms`.
    pub fn max_compaction_lag_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("max.compaction.lag.ms", broker)
    }

    /// The age at which a segment rolls, Kafka's `LogConfig.maxSegmentMs`:
    /// `segment.ms`, and for a compacted topic no more than
    /// `max.compaction.lag.ms`, so no record waits longer than that in the
    /// active segment, which is never compacted.
    pub fn max_segment_ms(&self, broker: &BrokerDefaults) -> u64 {
        let segment_ms = self.segment_ms(broker);
        let max_lag = self.max_compaction_lag_ms(broker);
        if self.cleanup_policy_compact(broker) && max_lag > 0 {
            segment_ms.min(max_lag.unsigned_abs())
        } else {
            segment_ms
        }
    }

    /// `index.interval.bytes`.
    pub fn index_interval_bytes(&self, broker: &BrokerDefaults) -> u32 {
        self.unsigned_32("index.interval.bytes", broker)
    }

    /// `segment.index.bytes`.
    pub fn segment_index_bytes(&self, broker: &BrokerDefaults) -> u32 {
        self.unsigned_32("segment.index.bytes", broker)
    }

    /// `max.message.bytes`.
    pub fn max_message_bytes(&self, broker: &BrokerDefaults) -> i32 {
        let value = self.long("max.message.bytes", broker);
        i32::try_from(value).expect("max.message.bytes is an INT config")
    }

    /// Whether `message.timestamp.type` is `LogAppendTime`.
    pub fn message_timestamp_type_is_log_append(&self, broker: &BrokerDefaults) -> bool {
        self.get("message.timestamp.type", broker) == "LogAppendTime"
    }

    /// `message.timestamp.before.max.ms`: how far behind the broker's
    /// clock a CreateTime timestamp may be.
    pub fn message_timestamp_before_max_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("message.timestamp.before.max.ms", broker)
    }

    /// `message.timestamp.after.max.ms`: how far ahead of the broker's
    /// clock a CreateTime timestamp may be.
    pub fn message_timestamp_after_max_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("message.timestamp.after.max.ms", broker)
    }

    /// `retention.ms`; -1 means no time limit.
    pub fn retention_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("retention.ms", broker)
    }

    /// `retention.bytes`; negative means no size limit.
    pub fn retention_bytes(&self, broker: &BrokerDefaults) -> i64 {
        self.long("retention.bytes", broker)
    }

    /// `file.delete.delay.ms`: how long a deleted segment's files stay on
    /// disk (renamed `.deleted`).
    pub fn file_delete_delay_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("file.delete.delay.ms", broker)
    }

    /// Whether `cleanup.policy` includes `compact`.
    pub fn cleanup_policy_compact(&self, broker: &BrokerDefaults) -> bool {
        self.get("cleanup.policy", broker)
            .split(',')
            .any(|policy| policy == "compact")
    }

    /// Whether `cleanup.policy` includes `delete` (retention applies).
    pub fn cleanup_policy_delete(&self, broker: &BrokerDefaults) -> bool {
        self.get("cleanup.policy", broker)
            .split(',')
            .any(|policy| policy == "delete")
    }

    /// The codec `compression.type` stores batches in (0 none, 1 gzip, 2
    /// snappy, 3 lz4, 4 zstd), or None for `producer`: keep the producer's.
    pub fn compression_codec(&self, broker: &BrokerDefaults) -> Option<i16> {
        match self.get("compression.type", broker).as_str() {
            "uncompressed" => Some(0),
            "gzip" => Some(1),
            "snappy" => Some(2),
            "lz4" => Some(3),
            "zstd" => Some(4),
            _ => None,
        }
    }

    /// The level the topic's `codec` compresses at (KIP-390):
    /// `compression.gzip.level` (-1, zlib's default, is None),
    /// `compression.lz4.level` or `compression.zstd.level`; None for codecs
    /// without levels.
    pub fn compression_level(&self, codec: i16, broker: &BrokerDefaults) -> Option<i32> {
        let level = |name| i32::try_from(self.long(name, broker)).ok();
        match codec {
            1 => level("compression.gzip.level").filter(|&l| l != -1),
            3 => level("compression.lz4.level"),
            4 => level("compression.zstd.level"),
            _ => None,
        }
    }

    /// `min.insync.replicas`.
    pub fn min_insync_replicas(&self, broker: &BrokerDefaults) -> i32 {
        let value = self.long("min.insync.replicas", broker);
        i32::try_from(value).expect("min.insync.replicas is an INT config")
    }

    /// `flush.messages`.
    pub fn flush_messages(&self, broker: &BrokerDefaults) -> i64 {
        self.long("flush.messages", broker)
    }

    /// `flush.ms`.
    pub fn flush_ms(&self, broker: &BrokerDefaults) -> i64 {
        self.long("flush.ms", broker)
    }

    /// An integer config's effective value. Overrides were validated on the way in and broker
    /// values by [`BrokerDefaults::validate`], so a parse failure is a bug.
    fn long(&self, name: &str, broker: &BrokerDefaults) -> i64 {
        let value = self.get(name, broker);
        value
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("{name} holds {value}, which is not an integer"))
    }

    fn unsigned(&self, name: &str, broker: &BrokerDefaults) -> u64 {
        let value = self.long(name, broker);
        u64::try_from(value)
            .unwrap_or_else(|_| panic!("{name} is {value}; its validator allows no negatives"))
    }

    fn unsigned_32(&self, name: &str, broker: &BrokerDefaults) -> u32 {
        let value = self.long(name, broker);
        u32::try_from(value)
            .unwrap_or_else(|_| panic!("{name} is {value}; its validator allows no negatives"))
    }
}

/// Where a broker config's value may come from, highest first, with its
/// DescribeConfigs source: e.g. the dynamic per-broker, dynamic default,
/// static and default layers.
pub type ConfigLayer<'a> = (i8, &'a dyn Fn(&str) -> Option<String>);

/// The synonym list of one config as Kafka's `ConfigHelper.configSynonyms` builds it: for each
/// of `layers` in turn, every member of `group` set in it, then everything before the first
/// entry named `name` dropped.
///
/// That last step is a Kafka quirk worth knowing: for a config whose own default is null, such
/// as `log.retention.ms`, a value that comes only from a lower synonym (`log.retention.hours`)
/// is dropped, so `retention.ms` shows no synonyms and source DEFAULT_CONFIG even when the broker
/// sets `log.retention.hours`.
pub(crate) fn config_synonyms(
    name: &str,
    group: &[&str],
    layers: &[ConfigLayer],
    is_sensitive: bool,
) -> Vec<DescribeConfigsSynonym> {
    let synonym = |synonym_name: &str, value: String, source: i8| {
        DescribeConfigsSynonym::default()
            .with_name(StrBytes::from_string(synonym_name.to_string()))
            .with_value((!is_sensitive).then(|| StrBytes::from_string(value)))
            .with_source(source)
    };
    let mut synonyms = Vec::new();
    for (source, value_of) in layers {
        for member in group {
            if let Some(value) = value_of(member) {
                synonyms.push(synonym(member, value, *source));
            }
        }
    }
    let first_own = synonyms
        .iter()
        .position(|synonym| synonym.name.as_str() == name)
        .unwrap_or(synonyms.len());
    synonyms.split_off(first_own)
}

/// Whether DescribeConfigs should list config `name` given the request's key list: Kafka lists
/// everything for a null or empty list and otherwise only the names asked for, silently
/// skipping names it does not know.
pub(crate) fn is_requested(requested: Option<&[String]>, name: &str) -> bool {
    match requested {
        None => true,
        Some([]) => true,
        Some(names) => names.iter().any(|requested_name| requested_name == name),
    }
}

/// The DescribeConfigs entries of one topic, as a Kafka 4.0 broker builds them
/// (`ConfigHelper.createTopicConfigEntry`), sorted by name.
///
/// * `broker` holds the broker values in force (the topic's values come from them);
///   `broker_layers` where each was set, highest first, each with its source (this broker's
///   dynamic configs, the cluster-wide dynamic defaults, the command line): they give the
///   synonyms and sources, Kafka's defaults after them.
/// * `requested` is the request's `configuration_keys`: `None` or empty lists every config;
///   unknown names are omitted without error, as Kafka does.
/// * Source is TOPIC_CONFIG for an override, else that of the first synonym, else
///   DEFAULT_CONFIG. `read_only` and `is_sensitive` are always false for topic configs.
/// * Synonyms are filled only when `include_synonyms`; documentation only when
///   `include_documentation` (otherwise null, as Kafka sends).
pub fn describe_topic_configs(
    configs: &TopicConfigs,
    broker: &BrokerDefaults,
    broker_layers: &[ConfigLayer],
    requested: Option<&[String]>,
    include_synonyms: bool,
    include_documentation: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let kafka_defaults = BrokerDefaults::default();
    let default_value = |name: &str| kafka_defaults.value_of(name);
    let mut layers: Vec<ConfigLayer> = broker_layers.to_vec();
    layers.push((config_source::DEFAULT_CONFIG, &default_value));

    let mut defs: Vec<&TopicConfigDef> = TOPIC_CONFIG_DEFS
        .iter()
        .filter(|def| is_requested(requested, def.name))
        .collect();
    defs.sort_by_key(|def| def.name);

    defs.into_iter()
        .map(|def| {
            let value = configs.get(def.name, broker);
            let mut synonyms = Vec::new();
            if let Some(override_value) = configs.overrides.get(def.name) {
                synonyms.push(
                    DescribeConfigsSynonym::default()
                        .with_name(StrBytes::from_static_str(def.name))
                        .with_value(Some(StrBytes::from_string(override_value.clone())))
                        .with_source(config_source::TOPIC_CONFIG),
                );
            }
            if let Some(broker_config) = def.broker_synonym {
                let single = [broker_config];
                let group = broker_synonym_group(broker_config).unwrap_or(&single);
                synonyms.extend(config_synonyms(broker_config, group, &layers, false));
            }
            let source = synonyms
                .first()
                .map_or(config_source::DEFAULT_CONFIG, |synonym| synonym.source);
            described_entry(
                (def.name, value, source, def.config_type),
                include_synonyms.then_some(synonyms),
                include_documentation.then_some(def.documentation),
            )
        })
        .collect()
}

/// One DescribeConfigs entry of a config that is neither read-only nor
/// sensitive: (name, value, source, type), the synonyms and documentation
/// when asked for (else empty and null, as Kafka sends).
pub(crate) fn described_entry(
    (name, value, source, config_type): (&'static str, String, i8, i8),
    synonyms: Option<Vec<DescribeConfigsSynonym>>,
    documentation: Option<&'static str>,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_static_str(name))
        .with_value(Some(StrBytes::from_string(value)))
        .with_read_only(false)
        .with_config_source(source)
        .with_is_sensitive(false)
        .with_synonyms(synonyms.unwrap_or_default())
        .with_config_type(config_type)
        .with_documentation(documentation.map(StrBytes::from_static_str))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn incremental_alterations_apply_in_order_and_are_checked() {
        let broker = BrokerDefaults::default();
        let start = TopicConfigs::from_overrides([("retention.ms", "1000")], &broker).unwrap();
        let ops = |list: &[(&str, ConfigOp)]| {
            ConfigAlteration::Incremental(
                list.iter()
                    .map(|(n, op)| (n.to_string(), op.clone()))
                    .collect(),
            )
        };
        // APPEND starts from the inherited value; SUBTRACT removes every
        // copy; DELETE of what is not set changes nothing.
        let altered = start
            .altered(
                &ops(&[
                    ("cleanup.policy", ConfigOp::Append("compact,delete".into())),
                    ("retention.ms", ConfigOp::Delete),
                    ("segment.ms", ConfigOp::Delete),
                    ("retention.bytes", ConfigOp::Set("+5".into())),
                ]),
                &broker,
            )
            .unwrap();
        let expected: BTreeMap<String, String> = [
            ("cleanup.policy".to_string(), "delete,compact".to_string()),
            ("retention.bytes".to_string(), "5".to_string()),
        ]
        .into();
        assert_eq!(altered.overrides(), &expected);
        let emptied = altered
            .altered(
                &ops(&[
                    ("cleanup.policy", ConfigOp::Subtract("delete".into())),
                    ("cleanup.policy", ConfigOp::Subtract("compact".into())),
                ]),
                &broker,
            )
            .unwrap();
        assert_eq!(emptied.get("cleanup.policy", &broker), "");
        assert_eq!(
            start.altered(
                &ops(&[("retention.ms", ConfigOp::Append("5".into()))]),
                &broker
            ),
            Err("Can't APPEND to key retention.ms because its type is not LIST.".into())
        );
        assert_eq!(
            start.altered(&ops(&[("nope", ConfigOp::Set("5".into()))]), &broker),
            Err("Unknown topic config name: nope".into())
        );
        // A later change of the same request still sees the check of the
        // whole set: compaction lags must stay ordered.
        assert!(start
            .altered(
                &ops(&[("min.compaction.lag.ms", ConfigOp::Set("10".into()))]),
                &broker
            )
            .is_ok());
        assert!(start
            .altered(
                &ops(&[
                    ("max.compaction.lag.ms", ConfigOp::Set("5".into())),
                    ("min.compaction.lag.ms", ConfigOp::Set("10".into())),
                ]),
                &broker
            )
            .is_err());
    }

    #[test]
    fn a_replacing_alteration_keeps_only_what_it_lists() {
        let broker = BrokerDefaults::default();
        let start = TopicConfigs::from_overrides([("retention.ms", "1000")], &broker).unwrap();
        let replaced = start
            .altered(
                &ConfigAlteration::Replace(vec![("segment.ms".into(), "100000".into())]),
                &broker,
            )
            .unwrap();
        assert!(!replaced.is_overridden("retention.ms"));
        assert_eq!(replaced.get("segment.ms", &broker), "100000");
    }

    pub(crate) fn entry<'a>(
        entries: &'a [DescribeConfigsResourceResult],
        name: &str,
    ) -> &'a DescribeConfigsResourceResult {
        entries
            .iter()
            .find(|entry| entry.name.as_str() == name)
            .unwrap_or_else(|| panic!("no entry {name}"))
    }

    pub(crate) fn synonym_triples(
        entry: &DescribeConfigsResourceResult,
    ) -> Vec<(String, Option<String>, i8)> {
        entry
            .synonyms
            .iter()
            .map(|synonym| {
                (
                    synonym.name.to_string(),
                    synonym.value.as_ref().map(|value| value.to_string()),
                    synonym.source,
                )
            })
            .collect()
    }

    fn names(entries: &[DescribeConfigsResourceResult]) -> Vec<String> {
        entries.iter().map(|entry| entry.name.to_string()).collect()
    }

    /// Goal: the table is internally consistent. Method: every default must pass its own
    /// validator and already be in Kafka's printed form; names must be unique.
    #[test]
    fn every_default_passes_its_own_validator_unchanged() {
        for def in topic_config_defs() {
            let canonical = canonical_topic_config_value(def.name, def.default)
                .unwrap_or_else(|error| panic!("default of {}: {error}", def.name));
            assert_eq!(
                canonical, def.default,
                "{} default is not canonical",
                def.name
            );
        }
        let mut names: Vec<&str> = topic_config_defs().iter().map(|def| def.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), topic_config_defs().len());
    }

    /// Goal: Kafka's broker defaults reproduce Kafka's topic defaults. Method: with
    /// `BrokerDefaults::default()`, a topic without overrides must read every default back.
    #[test]
    fn kafka_broker_defaults_reproduce_every_topic_default() {
        let broker = BrokerDefaults::default();
        let configs = TopicConfigs::new();
        for def in topic_config_defs() {
            assert_eq!(configs.get(def.name, &broker), def.default, "{}", def.name);
        }
        assert!(broker.validate().is_ok());
    }

    /// Goal: the values Kafka 4.0 removed are unknown names, as in Kafka 4.0.
    #[test]
    fn configs_removed_in_kafka_4_are_unknown() {
        for name in [
            "message.downconversion.enable",
            "message.format.version",
            "message.timestamp.difference.max.ms",
        ] {
            assert_eq!(
                validate_topic_config(name, "true"),
                Err(format!("Unknown topic config name: {name}"))
            );
        }
        assert_eq!(
            validate_topic_config("foo", "1"),
            Err("Unknown topic config name: foo".to_string())
        );
    }

    /// Goal: range violations carry Kafka's exact message. Method: one value just past each kind
    /// of bound.
    #[test]
    fn out_of_range_values_get_kafkas_message() {
        let cases = [
            ("segment.bytes", "13", "Invalid value 13 for configuration segment.bytes: Value must be at least 14"),
            ("segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
            ("retention.ms", " -2 ", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
            ("min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
            ("local.retention.ms", "-3", "Invalid value -3 for configuration local.retention.ms: Value must be at least -2"),
            ("min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
            ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
            ("min.cleanable.dirty.ratio", "-0.1", "Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0"),
            ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
            ("compression.gzip.level", "10", "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
            ("compression.lz4.level", "18", "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"),
            ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"),
            ("compression.zstd.level", "-131073", "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072"),
        ];
        for (name, value, message) in cases {
            assert_eq!(
                validate_topic_config(name, value),
                Err(message.to_string()),
                "{name}={value}"
            );
        }
        for (name, value) in [
            ("compression.gzip.level", "-1"),
            ("compression.gzip.level", "9"),
            ("compression.zstd.level", "-131072"),
            ("retention.ms", "-1"),
            ("retention.bytes", "-5"),
        ] {
            assert_eq!(validate_topic_config(name, value), Ok(()), "{name}={value}");
        }
    }

    /// Goal: values that do not parse as their type get Kafka's message, with the raw value.
    #[test]
    fn unparsable_values_get_kafkas_message() {
        let cases = [
            ("segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"),
            ("segment.bytes", "3000000000", "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT"),
            ("retention.ms", "1.5", "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"),
            ("min.cleanable.dirty.ratio", "half", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
            ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
        ];
        for (name, value, message) in cases {
            assert_eq!(
                validate_topic_config(name, value),
                Err(message.to_string()),
                "{name}={value}"
            );
        }
    }

    /// Goal: enumerated values accept exactly Kafka's set, case-sensitively.
    #[test]
    fn enumerated_values_accept_exactly_kafkas_set() {
        for codec in COMPRESSION_TYPES {
            assert_eq!(validate_topic_config("compression.type", codec), Ok(()));
        }
        assert_eq!(
            validate_topic_config("compression.type", " brotli "),
            Err("Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer".to_string())
        );
        assert_eq!(
            validate_topic_config("message.timestamp.type", "createtime"),
            Err("Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime".to_string())
        );
        for policy in ["compact", "delete", "compact,delete", "delete, compact", ""] {
            assert_eq!(
                validate_topic_config("cleanup.policy", policy),
                Ok(()),
                "{policy}"
            );
        }
        assert_eq!(
            validate_topic_config("cleanup.policy", "compact,Delete"),
            Err("Invalid value Delete for configuration cleanup.policy: String must be one of: compact, delete".to_string())
        );
        assert_eq!(
            validate_topic_config("cleanup.policy", "compact,,delete"),
            Err("Invalid value  for configuration cleanup.policy: String must be one of: compact, delete".to_string())
        );
    }

    /// Goal: the throttled-replica lists accept `*` and `partition:broker` pairs only.
    #[test]
    fn throttled_replica_lists_follow_kafkas_format() {
        for value in ["", "*", "0:1", "0:1, 1:2", " 10:20 "] {
            assert_eq!(
                validate_topic_config("leader.replication.throttled.replicas", value),
                Ok(()),
                "{value}"
            );
        }
        assert_eq!(
            validate_topic_config("follower.replication.throttled.replicas", "0:1,x"),
            Err("Invalid value [0:1, x] for configuration follower.replication.throttled.replicas: follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...".to_string())
        );
        assert!(validate_topic_config("leader.replication.throttled.replicas", "*,0:1").is_err());
    }

    /// Goal: values are stored and shown in Kafka's printed form, not as typed by the client.
    #[test]
    fn values_are_kept_in_kafkas_printed_form() {
        let cases = [
            ("cleanup.policy", " compact , delete ", "compact,delete"),
            ("preallocate", "TRUE", "true"),
            ("min.cleanable.dirty.ratio", "0.50", "0.5"),
            ("min.cleanable.dirty.ratio", "1", "1.0"),
            ("min.cleanable.dirty.ratio", "0.0001", "1.0E-4"),
            ("segment.bytes", "+1048576", "1048576"),
            ("compression.type", " zstd", "zstd"),
        ];
        for (name, value, canonical) in cases {
            assert_eq!(
                canonical_topic_config_value(name, value).as_deref(),
                Ok(canonical),
                "{name}={value}"
            );
        }
    }

    /// Goal: Java's `Double.toString` layout, which DescribeConfigs shows for DOUBLE configs.
    #[test]
    fn doubles_print_like_java() {
        let cases = [
            (0.5, "0.5"),
            (1.0, "1.0"),
            (0.0, "0.0"),
            (0.001, "0.001"),
            (0.000_1, "1.0E-4"),
            (1.5e-5, "1.5E-5"),
            (1e7, "1.0E7"),
            (1_234_567.5, "1234567.5"),
            (f64::MAX, "1.7976931348623157E308"),
        ];
        for (value, printed) in cases {
            assert_eq!(java_double_to_string(value), printed);
        }
    }

    /// Goal: the precedence override → broker value → Kafka default, and the typed getters.
    /// Method: one topic with overrides on a broker that changed some defaults.
    #[test]
    fn overrides_beat_broker_values_which_beat_kafka_defaults() {
        let broker = BrokerDefaults {
            log_segment_bytes: 64 * 1024 * 1024,
            log_retention_hours: 24,
            log_cleanup_policy: "compact".to_string(),
            ..BrokerDefaults::default()
        };
        let configs = TopicConfigs::from_overrides(
            [
                ("segment.bytes", "1048576"),
                ("message.timestamp.type", "LogAppendTime"),
            ],
            &broker,
        )
        .expect("valid overrides");

        assert_eq!(configs.segment_bytes(&broker), 1_048_576);
        assert_eq!(configs.retention_ms(&broker), 24 * 3_600_000);
        assert!(configs.cleanup_policy_compact(&broker));
        assert!(configs.message_timestamp_type_is_log_append(&broker));
        assert_eq!(configs.segment_ms(&broker), 604_800_000);
        assert_eq!(configs.index_interval_bytes(&broker), 4096);
        assert_eq!(configs.segment_index_bytes(&broker), 10_485_760);
        assert_eq!(configs.max_message_bytes(&broker), 1_048_588);
        assert_eq!(configs.retention_bytes(&broker), -1);
        assert_eq!(configs.min_insync_replicas(&broker), 1);
        assert_eq!(configs.flush_messages(&broker), i64::MAX);
        assert_eq!(configs.flush_ms(&broker), i64::MAX);
        assert_eq!(configs.get("remote.storage.enable", &broker), "false");
        assert!(configs.is_overridden("segment.bytes"));
        assert!(!configs.is_overridden("retention.ms"));
    }

    /// Goal: the retention, roll and flush synonym chains resolve as in `KafkaConfig`.
    #[test]
    fn broker_synonym_chains_resolve_in_priority_order() {
        let configs = TopicConfigs::new();
        let minutes = BrokerDefaults {
            log_retention_minutes: Some(30),
            ..BrokerDefaults::default()
        };
        assert_eq!(configs.retention_ms(&minutes), 30 * 60_000);
        let millis = BrokerDefaults {
            log_retention_ms: Some(5000),
            ..minutes.clone()
        };
        assert_eq!(configs.retention_ms(&millis), 5000);
        let unlimited = BrokerDefaults {
            log_retention_ms: Some(-7),
            ..BrokerDefaults::default()
        };
        assert_eq!(configs.retention_ms(&unlimited), -1);
        let roll = BrokerDefaults {
            log_roll_hours: 1,
            ..BrokerDefaults::default()
        };
        assert_eq!(configs.segment_ms(&roll), 3_600_000);
        let flush = BrokerDefaults {
            log_flush_scheduler_interval_ms: 2000,
            ..BrokerDefaults::default()
        };
        assert_eq!(configs.flush_ms(&flush), 2000);
        assert_eq!(
            broker_synonym_group("log.retention.hours"),
            Some(
                &[
                    "log.retention.ms",
                    "log.retention.minutes",
                    "log.retention.hours"
                ][..]
            )
        );
        assert_eq!(
            broker_synonym_group("log.flush.scheduler.interval.ms"),
            None
        );
        assert_eq!(broker_synonym_group("log.segment.bytes"), None);
    }

    /// Goal: CreateTopics validation runs Kafka's whole-map checks after the per-value ones.
    #[test]
    fn from_overrides_applies_kafkas_cross_checks() {
        let broker = BrokerDefaults::default();
        assert_eq!(
            TopicConfigs::from_overrides([("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5")], &broker),
            Err("conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)".to_string())
        );
        assert_eq!(
            TopicConfigs::from_overrides([("remote.storage.enable", "true")], &broker),
            Err("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.".to_string())
        );
        assert_eq!(
            TopicConfigs::from_overrides([("retention.ms", "1000"), ("bogus", "1")], &broker),
            Err("Unknown topic config name: bogus".to_string())
        );
        // Kafka parses in definition order, so segment.bytes is reported before retention.ms.
        assert_eq!(
            TopicConfigs::from_overrides([("retention.ms", "-9"), ("segment.bytes", "1")], &broker),
            Err(
                "Invalid value 1 for configuration segment.bytes: Value must be at least 14"
                    .to_string()
            )
        );
        let configs = TopicConfigs::from_overrides(
            [
                ("cleanup.policy", "delete ,compact"),
                ("cleanup.policy", "compact"),
            ],
            &broker,
        )
        .expect("valid");
        assert_eq!(
            configs
                .overrides()
                .get("cleanup.policy")
                .map(String::as_str),
            Some("compact")
        );
    }

    /// Goal: a describe of a requested subset lists only known requested names, sorted, with
    /// sources and no synonyms or documentation unless asked for.
    #[test]
    fn describe_lists_the_requested_known_configs_only() {
        let broker = BrokerDefaults::default();
        let configs =
            TopicConfigs::from_overrides([("retention.ms", "1000")], &broker).expect("valid");
        let requested = vec![
            "segment.bytes".to_string(),
            "no.such.config".to_string(),
            "retention.ms".to_string(),
        ];
        let entries =
            describe_topic_configs(&configs, &broker, &[], Some(&requested), false, false);

        assert_eq!(names(&entries), ["retention.ms", "segment.bytes"]);
        let retention = entry(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("1000"));
        assert_eq!(retention.config_source, config_source::TOPIC_CONFIG);
        assert_eq!(retention.config_type, config_type::LONG);
        assert!(!retention.read_only);
        assert!(!retention.is_sensitive);
        assert!(retention.synonyms.is_empty());
        assert_eq!(retention.documentation, None);
        let segment = entry(&entries, "segment.bytes");
        assert_eq!(segment.value.as_deref(), Some("1073741824"));
        assert_eq!(segment.config_source, config_source::DEFAULT_CONFIG);

        let all = describe_topic_configs(&configs, &broker, &[], Some(&[]), false, true);
        assert_eq!(all.len(), topic_config_defs().len());
        assert!(all.iter().all(|entry| entry.documentation.is_some()));
        assert_eq!(
            describe_topic_configs(&configs, &broker, &[], None, false, false).len(),
            all.len()
        );
    }

    /// Goal: synonyms in Kafka's order and shape. Method: a topic override over a static broker
    /// setting over Kafka's default; a config with only a default; the retention quirk; and a
    /// config with no broker synonym.
    #[test]
    fn describe_with_synonyms_matches_kafkas_chain() {
        let broker = BrokerDefaults {
            log_segment_bytes: 2 * 1024 * 1024,
            log_retention_hours: 24,
            ..BrokerDefaults::default()
        };
        let overridden = |name: &str| matches!(name, "log.segment.bytes" | "log.retention.hours");
        let configs =
            TopicConfigs::from_overrides([("segment.bytes", "1048576")], &broker).expect("valid");
        let set = |name: &str| overridden(name).then(|| broker.value_of(name)).flatten();
        let entries = describe_topic_configs(
            &configs,
            &broker,
            &[(config_source::STATIC_BROKER_CONFIG, &set)],
            None,
            true,
            false,
        );

        let segment = entry(&entries, "segment.bytes");
        assert_eq!(segment.config_source, config_source::TOPIC_CONFIG);
        assert_eq!(
            synonym_triples(segment),
            [
                (
                    "segment.bytes".to_string(),
                    Some("1048576".to_string()),
                    config_source::TOPIC_CONFIG
                ),
                (
                    "log.segment.bytes".to_string(),
                    Some("2097152".to_string()),
                    config_source::STATIC_BROKER_CONFIG
                ),
                (
                    "log.segment.bytes".to_string(),
                    Some("1073741824".to_string()),
                    config_source::DEFAULT_CONFIG
                ),
            ]
        );

        let index = entry(&entries, "segment.index.bytes");
        assert_eq!(index.config_source, config_source::DEFAULT_CONFIG);
        assert_eq!(
            synonym_triples(index),
            [(
                "log.index.size.max.bytes".to_string(),
                Some("10485760".to_string()),
                config_source::DEFAULT_CONFIG
            )]
        );

        // Kafka drops synonyms that precede the primary name `log.retention.ms`, which has no
        // default: the hours setting changes the value but shows no synonym.
        let retention = entry(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("86400000"));
        assert_eq!(retention.config_source, config_source::DEFAULT_CONFIG);
        assert!(retention.synonyms.is_empty());

        let remote = entry(&entries, "remote.storage.enable");
        assert_eq!(remote.config_source, config_source::DEFAULT_CONFIG);
        assert!(remote.synonyms.is_empty());

        let static_millis = BrokerDefaults {
            log_retention_ms: Some(5000),
            ..broker.clone()
        };
        let millis_set = |name: &str| name == "log.retention.ms";
        let requested = ["retention.ms".to_string()];
        let set = |name: &str| {
            millis_set(name)
                .then(|| static_millis.value_of(name))
                .flatten()
        };
        let entries = describe_topic_configs(
            &TopicConfigs::new(),
            &static_millis,
            &[(config_source::STATIC_BROKER_CONFIG, &set)],
            Some(&requested),
            true,
            false,
        );
        let retention = entry(&entries, "retention.ms");
        assert_eq!(retention.value.as_deref(), Some("5000"));
        assert_eq!(retention.config_source, config_source::STATIC_BROKER_CONFIG);
        assert_eq!(
            synonym_triples(retention),
            [
                (
                    "log.retention.ms".to_string(),
                    Some("5000".to_string()),
                    config_source::STATIC_BROKER_CONFIG
                ),
                (
                    "log.retention.hours".to_string(),
                    Some("168".to_string()),
                    config_source::DEFAULT_CONFIG
                ),
            ]
        );
    }

    /// Goal: broker values out of Kafka's broker bounds are caught at start-up.
    #[test]
    fn broker_defaults_validation_uses_broker_bounds() {
        let small_segment = BrokerDefaults {
            log_segment_bytes: 1000,
            ..BrokerDefaults::default()
        };
        assert_eq!(
            small_segment.validate(),
            Err("Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576".to_string())
        );
        let bad_codec = BrokerDefaults {
            compression_type: "brotli".to_string(),
            ..BrokerDefaults::default()
        };
        assert!(bad_codec.validate().is_err());
        let zero_roll = BrokerDefaults {
            log_roll_ms: Some(0),
            ..BrokerDefaults::default()
        };
        assert!(zero_roll.validate().is_err());
        let zero_retention = BrokerDefaults {
            log_retention_ms: Some(0),
            ..BrokerDefaults::default()
        };
        assert!(zero_retention.validate().is_err());
    }
}
