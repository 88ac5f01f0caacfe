//! Client-metrics subscriptions as Apache Kafka 4.1 defines them
//! (`ClientMetricsConfigs`, KIP-714): named sets of `metrics` (metric name
//! prefixes), `interval.ms` (how often a client pushes them) and `match`
//! (which clients: `param=regex` pairs), set with IncrementalAlterConfigs on
//! a CLIENT_METRICS resource (`kafka-client-metrics`, `kafka-configs
//! --entity-type client-metrics`), kept in the metadata log, shown by
//! DescribeConfigs and listed by ListConfigResources.
//!
//! Nothing acts on them: like a Kafka broker without a client telemetry
//! receiver plugin (its default), this broker does not offer
//! GetTelemetrySubscriptions or PushTelemetry, so no client asks for them.
//!
//! A subscription's configs after a change are checked together, in
//! Kafka's order (`ClientMetricsConfigs.validate`): the name, then every
//! config name, then each value's type, then the interval's bounds, then the
//! match patterns.
//!
//! Lives on: any core. Tables and pure functions.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsSynonym,
};
use kafka_protocol::protocol::StrBytes;

use super::topic_config::{
    altered_values, canonical_value, config_source, config_type, described_entry, is_requested,
    java_trim, parse_list, ConfigAlteration, Validator,
};
use crate::protocol::ErrorCode;

/// DescribeConfigs' `CLIENT_METRICS_CONFIG` source.
pub const CLIENT_METRICS_CONFIG_SOURCE: i8 = 7;

/// `interval.ms`'s bounds, both included.
const INTERVAL_MS_MIN: i64 = 100;
const INTERVAL_MS_MAX: i64 = 3_600_000;

/// The parameters a `match` pattern may name.
const MATCH_PARAMS: [&str; 6] = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

/// One client-metrics config: name, type, default, documentation (Kafka's
/// own, which DescribeConfigs shows).
struct ClientMetricsConfigDef {
    name: &'static str,
    config_type: i8,
    default: &'static str,
    documentation: &'static str,
}

/// Every client-metrics config, in the order Kafka 4.1 describes them.
const DEFS: [ClientMetricsConfigDef; 3] = [
    ClientMetricsConfigDef {
        name: "interval.ms",
        config_type: config_type::INT,
        default: "300000",
        documentation: "Metrics push interval in milliseconds",
    },
    ClientMetricsConfigDef {
        name: "match",
        config_type: config_type::LIST,
        default: "",
        documentation: "Client match criteria",
    },
    ClientMetricsConfigDef {
        name: "metrics",
        config_type: config_type::LIST,
        default: "",
        documentation: "Telemetry metric name prefix list",
    },
];

fn find(name: &str) -> Option<&'static ClientMetricsConfigDef> {
    DEFS.iter().find(|def| def.name == name)
}

/// A value as Kafka prints it once parsed (a list trimmed and joined, a
/// number without spaces), or Kafka's INVALID_CONFIG message.
fn canonical(def: &ClientMetricsConfigDef, raw: &str) -> Result<String, String> {
    canonical_value(def.name, raw, def.config_type, Validator::Any)
}

/// One `match` element: `param=regex`, split as Java's `split("=")` splits
/// (trailing empty parts dropped; exactly two parts), a known parameter,
/// and a regular expression that parses.
fn check_pattern(element: &str) -> Result<(), String> {
    let illegal = || format!("Illegal client matching pattern: {element}");
    let mut parts: Vec<&str> = element.split('=').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    let [param, pattern] = parts[..] else {
        return Err(illegal());
    };
    if !MATCH_PARAMS.contains(&java_trim(param)) {
        return Err(illegal());
    }
    regex_syntax::Parser::new()
        .parse(java_trim(pattern))
        .map(|_| ())
        .map_err(|_| illegal())
}

/// Checks a subscription's configs as Kafka's `ClientMetricsConfigs.validate`
/// does: the error code and message of the first failed check.
pub fn check(name: &str, configs: &BTreeMap<String, String>) -> Result<(), (ErrorCode, String)> {
    let invalid_request = |message: String| (ErrorCode::InvalidRequest, message);
    let invalid_config = |message: String| (ErrorCode::InvalidConfig, message);
    if name.is_empty() {
        return Err(invalid_request("Subscription name can't be empty".into()));
    }
    if let Some(unknown) = configs.keys().find(|key| find(key).is_none()) {
        return Err(invalid_request(format!(
            "Unknown client metrics configuration: {unknown}"
        )));
    }
    for def in &DEFS {
        if let Some(raw) = configs.get(def.name) {
            canonical(def, raw).map_err(invalid_config)?;
        }
    }
    if let Some(raw) = configs.get("interval.ms") {
        // Parses: its type was checked above.
        let interval: i64 = java_trim(raw).parse().unwrap_or_default();
        if !(INTERVAL_MS_MIN..=INTERVAL_MS_MAX).contains(&interval) {
            return Err(invalid_request(format!(
                "Invalid value {interval} for interval.ms, interval must be between 100 and \
                 3600000 (1 hour)"
            )));
        }
    }
    if let Some(raw) = configs.get("match") {
        for element in parse_list(raw) {
            check_pattern(&element).map_err(invalid_config)?;
        }
    }
    Ok(())
}

/// Subscription `name`'s configs after `alteration`, checked; or the error
/// code and message Kafka answers. None of its configs takes APPEND or
/// SUBTRACT: Kafka 4.1's controller knows no client-metrics config as a LIST.
pub fn altered(
    name: &str,
    current: &BTreeMap<String, String>,
    alteration: &ConfigAlteration,
) -> Result<BTreeMap<String, String>, (ErrorCode, String)> {
    let next = altered_values(current, alteration)?;
    check(name, &next)?;
    Ok(next)
}

/// The DescribeConfigs entries of a subscription (`configs`, None when it
/// has none), as Kafka 4.1 lists them: every config, a set one with source
/// CLIENT_METRICS_CONFIG and itself as its synonym, the others with their
/// default, source DEFAULT_CONFIG and no synonyms.
pub fn describe_client_metrics(
    configs: Option<&BTreeMap<String, String>>,
    requested: Option<&[String]>,
    include_synonyms: bool,
    include_documentation: bool,
) -> Vec<DescribeConfigsResourceResult> {
    DEFS.iter()
        .filter(|def| is_requested(requested, def.name))
        .map(|def| {
            let set = configs.and_then(|c| c.get(def.name));
            let (value, source, synonyms) = match set {
                Some(raw) => {
                    let value = canonical(def, raw).unwrap_or_else(|_| raw.clone());
                    let synonym = DescribeConfigsSynonym::default()
                        .with_name(StrBytes::from_static_str(def.name))
                        .with_value(Some(StrBytes::from_string(value.clone())))
                        .with_source(CLIENT_METRICS_CONFIG_SOURCE);
                    (value, CLIENT_METRICS_CONFIG_SOURCE, vec![synonym])
                }
                None => (
                    def.default.to_string(),
                    config_source::DEFAULT_CONFIG,
                    Vec::new(),
                ),
            };
            described_entry(
                (def.name, value, source, def.config_type),
                include_synonyms.then_some(synonyms),
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
    fn subscriptions_are_checked_with_kafkas_codes_and_messages_in_kafkas_order() {
        let refused =
            |name: &str, pairs: &[(&str, &str)]| check(name, &configs(pairs)).unwrap_err();
        let request = ErrorCode::InvalidRequest;
        let config = ErrorCode::InvalidConfig;
        // Each answer below is Kafka 4.1.1's to the same configs.
        assert_eq!(
            refused("", &[("metric", "x")]),
            (request, "Subscription name can't be empty".into())
        );
        assert_eq!(
            refused("s", &[("metric", "x"), ("interval.ms", "soon")]),
            (
                request,
                "Unknown client metrics configuration: metric".into()
            )
        );
        assert_eq!(
            refused("s", &[("interval.ms", "soon"), ("match", "host=x")]),
            (
                config,
                "Invalid value soon for configuration interval.ms: Not a number of type INT".into()
            )
        );
        for interval in ["99", "3600001", "-5"] {
            assert_eq!(
                refused("s", &[("interval.ms", interval), ("match", "host=x")]),
                (
                    request,
                    format!(
                        "Invalid value {interval} for interval.ms, interval must be between 100 \
                         and 3600000 (1 hour)"
                    )
                )
            );
        }
        for element in [
            "client_id",
            "client_id=",
            "=x",
            "client_id=a=b",
            "host=.*",
            "client_id=[",
            "client_id=(",
        ] {
            assert_eq!(
                refused(
                    "s",
                    &[("match", &format!("client_software_name=x,{element}"))]
                ),
                (
                    config,
                    format!("Illegal client matching pattern: {element}")
                )
            );
        }
        // An empty element (a trailing comma) is a pattern too.
        assert_eq!(
            refused("s", &[("match", "client_id=x,")]),
            (config, "Illegal client matching pattern: ".into())
        );
        for good in [
            &[("interval.ms", " 100 ")][..],
            &[("interval.ms", "3600000"), ("metrics", "")],
            &[
                ("match", " client_id = x.* , client_source_port=9"),
                ("metrics", "*"),
            ],
            &[("match", "client_id=x="), ("metrics", "a,,b,")],
            &[],
        ] {
            assert_eq!(check("s", &configs(good)), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn no_config_takes_append_or_subtract_and_a_change_is_checked_whole() {
        let current = configs(&[("interval.ms", "1000"), ("metrics", "a")]);
        let ops = |list: Vec<(&str, ConfigOp)>| {
            ConfigAlteration::Incremental(list.into_iter().map(|(n, op)| (n.into(), op)).collect())
        };
        assert_eq!(
            altered(
                "s",
                &current,
                &ops(vec![("metrics", ConfigOp::Append("b".into()))])
            ),
            Err((
                ErrorCode::InvalidConfig,
                "Can't APPEND to key metrics because its type is not LIST.".into()
            ))
        );
        assert_eq!(
            altered(
                "s",
                &current,
                &ops(vec![
                    ("interval.ms", ConfigOp::Set("2000".into())),
                    ("match", ConfigOp::Set("client_id=(".into())),
                ])
            ),
            Err((
                ErrorCode::InvalidConfig,
                "Illegal client matching pattern: client_id=(".into()
            ))
        );
        assert_eq!(
            altered(
                "s",
                &current,
                &ops(vec![
                    ("metrics", ConfigOp::Delete),
                    ("foo", ConfigOp::Delete),
                    ("match", ConfigOp::Set("client_id=x".into())),
                ])
            ),
            Ok(configs(&[
                ("interval.ms", "1000"),
                ("match", "client_id=x")
            ]))
        );
    }

    #[test]
    fn a_subscription_is_described_with_its_values_as_kafka_prints_them_and_defaults() {
        let set = configs(&[("interval.ms", " 700 "), ("metrics", " a , b ,")]);
        let entries = describe_client_metrics(Some(&set), None, true, true);
        let seen: Vec<(String, String, i8, usize, i8)> = entries
            .iter()
            .map(|e| {
                (
                    e.name.to_string(),
                    e.value.as_ref().unwrap().to_string(),
                    e.config_source,
                    e.synonyms.len(),
                    e.config_type,
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("interval.ms".into(), "700".into(), 7, 1, config_type::INT),
                ("match".into(), "".into(), 5, 0, config_type::LIST),
                ("metrics".into(), "a,b,".into(), 7, 1, config_type::LIST),
            ]
        );
        assert_eq!(
            entries[0].documentation.as_deref(),
            Some("Metrics push interval in milliseconds")
        );
        let requested = ["match".to_string(), "nope".to_string()];
        let only = describe_client_metrics(None, Some(&requested), false, false);
        assert_eq!(only.len(), 1);
        assert!(only[0].synonyms.is_empty() && only[0].documentation.is_none());
    }
}
