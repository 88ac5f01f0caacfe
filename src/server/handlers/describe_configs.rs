//! DescribeConfigs (key 32): every config of a topic, of this broker, of a
//! group or of a client-metrics subscription with its value, source,
//! synonyms and documentation, and the level of each of this broker's
//! loggers, as Kafka 4.1 reports them.

use std::rc::Rc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};

use super::config_resource_type as resource_type;
use super::{encode_response, str_bytes};
use crate::config::broker_config_table::{
    describe_broker_configs, describe_default_broker_configs, unknown_broker_configs,
};
use crate::config::client_metrics::describe_client_metrics;
use crate::config::group_config::describe_group_configs;
use crate::config::topic_config::describe_topic_configs;
use crate::config::topic_config::{config_source, is_requested, ConfigLayer};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::refusal_message;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Kafka's `DYNAMIC_BROKER_LOGGER_CONFIG` config source.
const DYNAMIC_BROKER_LOGGER_CONFIG: i8 = 6;

/// A BROKER_LOGGER resource: every logger (or those asked) with the level
/// it logs at, as Kafka's `ConfigHelper` lists log4j's: no synonyms, the
/// schema's default documentation (""), type UNKNOWN.
fn describe_loggers(requested: Option<&[String]>) -> Vec<DescribeConfigsResourceResult> {
    crate::runtime::logging::describe()
        .into_iter()
        .filter(|(name, _)| is_requested(requested, name))
        .map(|(name, level)| {
            DescribeConfigsResourceResult::default()
                .with_name(str_bytes(&name))
                .with_value(Some(str_bytes(&level)))
                .with_read_only(false)
                .with_config_source(DYNAMIC_BROKER_LOGGER_CONFIG)
                .with_is_sensitive(false)
                .with_config_type(0)
        })
        .collect()
}

/// Calls `describe` with where this broker's configs are set, highest
/// first: its own dynamic configs, the cluster-wide dynamic defaults, the
/// command line (Kafka's defaults come after them).
pub(crate) fn with_broker_layers<R>(
    shard: &Shard,
    describe: impl FnOnce(&[ConfigLayer]) -> R,
) -> R {
    let image = shard.image();
    let config = &shard.config;
    let dynamic = &image.broker_configs;
    let node = config.node_id;
    let own = |n: &str| dynamic.broker_value(node, n).map(str::to_string);
    let default = |n: &str| dynamic.default_value(n).map(str::to_string);
    let command_line = |n: &str| config.static_value(n);
    describe(&[
        (config_source::DYNAMIC_BROKER_CONFIG, &own),
        (config_source::DYNAMIC_DEFAULT_BROKER_CONFIG, &default),
        (config_source::STATIC_BROKER_CONFIG, &command_line),
    ])
}

/// Answers DescribeConfigs.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeConfigsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let image = shard.image();
    let config = &shard.config;
    let include_synonyms = request.include_synonyms;
    let include_documentation = version >= 3 && request.include_documentation;
    let mut response = DescribeConfigsResponse::default();
    response.results = request
        .resources
        .iter()
        .map(|resource| {
            let mut result = DescribeConfigsResult::default();
            result.resource_type = resource.resource_type;
            result.resource_name = resource.resource_name.clone();
            let requested: Option<Vec<String>> = resource
                .configuration_keys
                .as_ref()
                .map(|keys| keys.iter().map(|k| k.to_string()).collect());
            let name = resource.resource_name.to_string();
            let mut fail = |error: ErrorCode, message: String| {
                result.error_code = error.code();
                result.error_message = Some(str_bytes(&message));
            };
            // DESCRIBE_CONFIGS on the topic, or on the cluster for a
            // broker, asked before the resource is looked for.
            match resource.resource_type {
                resource_type::TOPIC if !access.topic(AclOperation::DescribeConfigs, &name) => {
                    let error = ErrorCode::TopicAuthorizationFailed;
                    fail(error, refusal_message(error).to_string())
                }
                resource_type::BROKER
                | resource_type::BROKER_LOGGER
                | resource_type::CLIENT_METRICS
                    if !access.cluster(AclOperation::DescribeConfigs) =>
                {
                    let error = ErrorCode::ClusterAuthorizationFailed;
                    fail(error, refusal_message(error).to_string())
                }
                resource_type::GROUP if !access.group(AclOperation::DescribeConfigs, &name) => {
                    let error = ErrorCode::GroupAuthorizationFailed;
                    fail(error, refusal_message(error).to_string())
                }
                resource_type::GROUP if name.is_empty() => fail(
                    ErrorCode::InvalidRequest,
                    "Group name must not be empty".to_string(),
                ),
                resource_type::GROUP => {
                    result.configs = describe_group_configs(
                        image.group_configs.get(&name).map(|g| &g.values),
                        &config.groups.group_bounds(),
                        requested.as_deref(),
                        include_synonyms,
                        include_documentation,
                    );
                }
                resource_type::CLIENT_METRICS if name.is_empty() => fail(
                    ErrorCode::InvalidRequest,
                    "Client metrics subscription name must not be empty".to_string(),
                ),
                resource_type::CLIENT_METRICS => {
                    result.configs = describe_client_metrics(
                        image.client_metrics.get(&name),
                        requested.as_deref(),
                        include_synonyms,
                        include_documentation,
                    );
                }
                resource_type::TOPIC => match image.topic(&name) {
                    Some(topic) => {
                        let broker = shard.broker_defaults();
                        result.configs = with_broker_layers(shard, |layers| {
                            describe_topic_configs(
                                &topic.configs,
                                &broker,
                                layers,
                                requested.as_deref(),
                                include_synonyms,
                                include_documentation,
                            )
                        });
                    }
                    None => fail(
                        ErrorCode::UnknownTopicOrPartition,
                        format!("Topic {name} does not exist."),
                    ),
                },
                resource_type::BROKER if name.is_empty() => {
                    result.configs = describe_default_broker_configs(
                        &image.broker_configs.default,
                        requested.as_deref(),
                        include_synonyms,
                        include_documentation,
                    );
                }
                resource_type::BROKER if name == config.node_id.to_string() => {
                    result.configs = with_broker_layers(shard, |layers| {
                        describe_broker_configs(
                            layers,
                            requested.as_deref(),
                            include_synonyms,
                            include_documentation,
                        )
                    });
                    let dynamic = &image.broker_configs;
                    result.configs.extend(unknown_broker_configs(
                        dynamic.layer(Some(config.node_id)),
                        dynamic.layer(None),
                        &|name| config.static_value(name),
                        requested.as_deref(),
                        include_synonyms,
                    ));
                    result
                        .configs
                        .sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
                }
                resource_type::BROKER_LOGGER if name.is_empty() => fail(
                    ErrorCode::InvalidRequest,
                    "Broker id must not be empty".to_string(),
                ),
                resource_type::BROKER_LOGGER => match name.parse::<i32>() {
                    Ok(id) if id == config.node_id => {
                        result.configs = describe_loggers(requested.as_deref());
                    }
                    Ok(_) => fail(
                        ErrorCode::InvalidRequest,
                        format!(
                            "Unexpected broker id, expected {} but received {name}",
                            config.node_id
                        ),
                    ),
                    Err(_) => fail(
                        ErrorCode::InvalidRequest,
                        format!("Broker id must be an integer, but it is: {name}"),
                    ),
                },
                resource_type::BROKER => fail(
                    ErrorCode::InvalidRequest,
                    format!(
                        "Unexpected broker id, expected {} or empty string, but received {name}",
                        config.node_id
                    ),
                ),
                other => fail(
                    ErrorCode::InvalidRequest,
                    format!("Unsupported resource type {other}"),
                ),
            }
            result
        })
        .collect();
    encode_response(ApiKey::DescribeConfigs, version, correlation_id, &response)
}
