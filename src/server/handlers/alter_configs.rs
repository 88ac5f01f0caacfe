//! AlterConfigs (key 33, v0-v2) and IncrementalAlterConfigs (key 44,
//! v0-v1): topic config overrides, changed through the controller and
//! applied to the topic's open partitions (see `cluster::controller`).
//!
//! Broker configs: the connection limits change at runtime, for this node
//! or as the cluster-wide default (`config::dynamic`); every other broker
//! config is a command-line flag here, and a change of one is refused as
//! Kafka refuses a static config. Group configs (`config::group_config`)
//! change through the controller too. Broker loggers (IncrementalAlterConfigs
//! only, as in Kafka) change this process's log levels at once
//! (`runtime::logging`). Client-metrics subscriptions
//! (`config::client_metrics`) change through the controller.

use std::collections::HashSet;
use std::rc::Rc;

use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, ApiKey, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};

use super::config_resource_type as resource_type;
use super::{encode_response, str_bytes};
use crate::config::{ConfigAlteration, ConfigOp};
use crate::protocol::ErrorCode;
use crate::runtime::logging::LoggerChange;
use crate::security::acl::AclOperation;
use crate::server::access::refusal_message;
use crate::server::access::Access;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{AdminOutcome, ControllerReply, ControllerRequest};
use crate::shard::Shard;

/// One config change of either request: name, value, operation
/// (`AlterConfigOp.OpType`: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT; always
/// SET for AlterConfigs).
type Change = (String, Option<String>, i8);

/// One resource of either request.
struct Resource {
    resource_type: i8,
    name: String,
    changes: Vec<Change>,
}

/// What the handler decided for one resource before the controller.
enum Plan {
    Answer(AdminOutcome),
    Topic(ConfigAlteration),
    /// A change of this node's (Some) or the default's (None) dynamic
    /// configs.
    Broker(Option<i32>, ConfigAlteration),
    /// A change of a group's configs.
    Group(ConfigAlteration),
    /// A change of a client-metrics subscription's configs.
    ClientMetrics(ConfigAlteration),
    /// A change of this process's log levels (no controller: they are not
    /// kept, as in Kafka).
    Loggers(Vec<LoggerChange>),
}

impl Plan {
    /// Which of `alter`'s controller calls carries this change: topics,
    /// brokers, groups, subscriptions; None for an answer already known.
    fn call_index(&self) -> Option<usize> {
        match self {
            Plan::Answer(_) | Plan::Loggers(_) => None,
            Plan::Topic(_) => Some(0),
            Plan::Broker(..) => Some(1),
            Plan::Group(_) => Some(2),
            Plan::ClientMetrics(_) => Some(3),
        }
    }
}

fn invalid_request(message: impl Into<String>) -> Plan {
    Plan::Answer((ErrorCode::InvalidRequest.code(), Some(message.into())))
}

/// Kafka's checks before a resource's own (`ConfigAdminManager`), in its
/// order, then the resource type's.
fn plan(
    shard: &Shard,
    access: &Access,
    resource: &Resource,
    incremental: bool,
    duplicated: bool,
) -> Plan {
    if duplicated {
        return invalid_request("Each resource must appear at most once.");
    }
    let mut keys = HashSet::new();
    if !resource
        .changes
        .iter()
        .all(|(name, _, _)| keys.insert(name))
    {
        return invalid_request("Error due to duplicate config keys");
    }
    let nulls: Vec<&str> = resource
        .changes
        .iter()
        .filter(|(_, value, op)| value.is_none() && *op != 1)
        .map(|(name, _, _)| name.as_str())
        .collect();
    if !nulls.is_empty() {
        return invalid_request(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        ));
    }
    let known = match resource.resource_type {
        resource_type::TOPIC
        | resource_type::BROKER
        | resource_type::GROUP
        | resource_type::CLIENT_METRICS => true,
        resource_type::BROKER_LOGGER => incremental,
        _ => false,
    };
    if !known {
        return invalid_request(format!("Unknown resource type {}", resource.resource_type));
    }
    for (name, _, op) in &resource.changes {
        if !(0..=3).contains(op) {
            return invalid_request(format!("Unknown config operation {op} for : {name}"));
        }
    }
    // ALTER_CONFIGS on the resource (the cluster for a broker), asked after
    // the checks above and a broker's own, as Kafka's controller asks.
    let refused =
        |error: ErrorCode| Plan::Answer((error.code(), Some(refusal_message(error).to_string())));
    match resource.resource_type {
        resource_type::TOPIC if !access.topic(AclOperation::AlterConfigs, &resource.name) => {
            refused(ErrorCode::TopicAuthorizationFailed)
        }
        resource_type::TOPIC => Plan::Topic(alteration(&resource.changes, incremental)),
        resource_type::BROKER => match broker_plan(shard, resource, incremental) {
            Plan::Answer((0, _)) | Plan::Broker(..)
                if !access.cluster(AclOperation::AlterConfigs) =>
            {
                refused(ErrorCode::ClusterAuthorizationFailed)
            }
            plan => plan,
        },
        resource_type::GROUP if !access.group(AclOperation::AlterConfigs, &resource.name) => {
            refused(ErrorCode::GroupAuthorizationFailed)
        }
        resource_type::GROUP => Plan::Group(alteration(&resource.changes, incremental)),
        resource_type::BROKER_LOGGER if !access.cluster(AclOperation::AlterConfigs) => {
            refused(ErrorCode::ClusterAuthorizationFailed)
        }
        resource_type::BROKER_LOGGER => logger_plan(shard, resource),
        resource_type::CLIENT_METRICS if !access.cluster(AclOperation::AlterConfigs) => {
            refused(ErrorCode::ClusterAuthorizationFailed)
        }
        resource_type::CLIENT_METRICS => {
            Plan::ClientMetrics(alteration(&resource.changes, incremental))
        }
        other => invalid_request(format!(
            "Configs of resource type {other} are not supported by this broker."
        )),
    }
}

/// The change to a topic's overrides. Values are present: checked above.
fn alteration(changes: &[Change], incremental: bool) -> ConfigAlteration {
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    if !incremental {
        return ConfigAlteration::Replace(
            changes
                .iter()
                .map(|(name, v, _)| (name.clone(), value(v)))
                .collect(),
        );
    }
    ConfigAlteration::Incremental(
        changes
            .iter()
            .map(|(name, v, op)| {
                let op = match op {
                    0 => ConfigOp::Set(value(v)),
                    1 => ConfigOp::Delete,
                    2 => ConfigOp::Append(value(v)),
                    _ => ConfigOp::Subtract(value(v)),
                };
                (name.clone(), op)
            })
            .collect(),
    )
}

/// A BROKER_LOGGER resource names this node, and its changes pass Kafka's
/// checks (`RuntimeLoggerManager.validateResourceNameIsNodeId` and
/// `validateLogLevelConfigs`).
fn logger_plan(shard: &Shard, resource: &Resource) -> Plan {
    let node_id = shard.config.node_id;
    match resource.name.parse::<i32>() {
        Err(_) => invalid_request(format!(
            "Node id must be an integer, but it is: {}",
            resource.name
        )),
        // Kafka 4.1 prints its own id twice here; a client sees just that.
        Ok(id) if id != node_id => invalid_request(format!(
            "Unexpected node id. Expected {node_id}, but received {node_id}"
        )),
        Ok(_) => match crate::runtime::logging::check(&resource.changes) {
            Ok(changes) => Plan::Loggers(changes),
            Err((true, message)) => Plan::Answer((ErrorCode::InvalidConfig.code(), Some(message))),
            Err((false, message)) => invalid_request(message),
        },
    }
}

/// A broker resource names this node, or is "" for the cluster default.
/// Only the dynamic configs may change (`config::dynamic::check_names`);
/// an empty change succeeds, as in Kafka.
fn broker_plan(shard: &Shard, resource: &Resource, incremental: bool) -> Plan {
    let node_id = shard.config.node_id;
    if !resource.name.is_empty() && resource.name.parse::<i32>().ok() != Some(node_id) {
        return invalid_request(format!(
            "Unexpected broker id, expected {node_id}, but received {}",
            resource.name
        ));
    }
    let broker = (!resource.name.is_empty()).then_some(node_id);
    if resource.changes.is_empty() && incremental {
        return Plan::Answer((0, None));
    }
    let alteration = alteration(&resource.changes, incremental);
    match crate::config::dynamic::check_names(&alteration, broker.is_some()) {
        Ok(()) => Plan::Broker(broker, alteration),
        Err((error, message)) => Plan::Answer((error.code(), Some(message))),
    }
}

/// Plans every resource, sends the changes of each kind (topics, brokers,
/// groups, subscriptions) to the controller in one call, and answers each resource in
/// request order as (error code, message, resource type, resource name).
async fn alter(
    shard: &Rc<Shard>,
    access: &Access,
    resources: Vec<Resource>,
    incremental: bool,
    validate_only: bool,
) -> impl std::future::Future<Output = Vec<(AdminOutcome, i8, String)>> {
    let mut seen = HashSet::new();
    let duplicates: HashSet<(i8, String)> = resources
        .iter()
        .map(|r| (r.resource_type, r.name.clone()))
        .filter(|key| !seen.insert(key.clone()))
        .collect();
    let plans: Vec<Plan> = resources
        .iter()
        .map(|r| {
            let duplicated = duplicates.contains(&(r.resource_type, r.name.clone()));
            match plan(shard, access, r, incremental, duplicated) {
                Plan::Loggers(changes) => {
                    if !validate_only {
                        crate::runtime::logging::apply(changes);
                    }
                    Plan::Answer((0, None))
                }
                plan => plan,
            }
        })
        .collect();
    // One controller call per kind of change, in the order of
    // `Plan::call_index`.
    let mut topics = Vec::new();
    let mut brokers = Vec::new();
    let mut groups = Vec::new();
    let mut subscriptions = Vec::new();
    for (r, p) in resources.iter().zip(&plans) {
        match p {
            Plan::Answer(_) | Plan::Loggers(_) => {}
            Plan::Topic(alteration) => topics.push((r.name.clone(), alteration.clone())),
            Plan::Broker(broker, alteration) => brokers.push((*broker, alteration.clone())),
            Plan::Group(alteration) => groups.push((r.name.clone(), alteration.clone())),
            Plan::ClientMetrics(alteration) => {
                subscriptions.push((r.name.clone(), alteration.clone()))
            }
        }
    }
    let requests = [
        (!topics.is_empty()).then_some(ControllerRequest::AlterTopicConfigs {
            topics,
            validate_only,
        }),
        (!brokers.is_empty()).then_some(ControllerRequest::AlterBrokerConfigs {
            resources: brokers,
            validate_only,
        }),
        (!groups.is_empty()).then_some(ControllerRequest::AlterGroupConfigs {
            resources: groups,
            validate_only,
        }),
        (!subscriptions.is_empty()).then_some(ControllerRequest::AlterClientMetricsConfigs {
            resources: subscriptions,
            validate_only,
        }),
    ];
    let mut calls = Vec::with_capacity(requests.len());
    for request in requests {
        calls.push(call_controller(shard, request).await);
    }
    async move {
        let mut outcomes = Vec::with_capacity(calls.len());
        for call in calls {
            outcomes.push(call.await.into_iter());
        }
        let unanswered = || {
            (
                ErrorCode::RequestTimedOut.code(),
                Some("the controller did not answer".into()),
            )
        };
        resources
            .into_iter()
            .zip(plans)
            .map(|(r, p)| {
                let outcome = match p {
                    Plan::Answer(outcome) => outcome,
                    change => change
                        .call_index()
                        .and_then(|index| outcomes[index].next())
                        .unwrap_or_else(unanswered),
                };
                (outcome, r.resource_type, r.name)
            })
            .collect()
    }
}

/// Sends `request` (if any) to the controller; the returned future gives
/// its per-resource outcomes, none when it did not answer.
async fn call_controller(
    shard: &Rc<Shard>,
    request: Option<ControllerRequest>,
) -> impl std::future::Future<Output = Vec<AdminOutcome>> {
    let reply = match request {
        Some(request) => Some(shard.call_controller(request).await),
        None => None,
    };
    async move {
        let Some(reply) = reply else {
            return Vec::new();
        };
        match reply.await {
            Some(
                ControllerReply::AlterTopicConfigs(outcomes)
                | ControllerReply::AlterBrokerConfigs(outcomes)
                | ControllerReply::AlterGroupConfigs(outcomes)
                | ControllerReply::AlterClientMetricsConfigs(outcomes),
            ) => outcomes,
            _ => Vec::new(),
        }
    }
}

/// Answers IncrementalAlterConfigs.
pub async fn handle_incremental(
    shard: &Rc<Shard>,
    access: &Access,
    request: IncrementalAlterConfigsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let resources = request
        .resources
        .into_iter()
        .map(|r| Resource {
            resource_type: r.resource_type,
            name: r.resource_name.to_string(),
            changes: r
                .configs
                .into_iter()
                .map(|c| {
                    (
                        c.name.to_string(),
                        c.value.map(|v| v.to_string()),
                        c.config_operation,
                    )
                })
                .collect(),
        })
        .collect();
    let answers = alter(shard, access, resources, true, request.validate_only).await;
    Box::pin(async move {
        let mut response = IncrementalAlterConfigsResponse::default();
        response.responses = answers
            .await
            .into_iter()
            .map(|((error_code, message), resource_type, name)| {
                let mut r =
                    incremental_alter_configs_response::AlterConfigsResourceResponse::default();
                r.error_code = error_code;
                r.error_message = message.map(|m| str_bytes(&m));
                r.resource_type = resource_type;
                r.resource_name = str_bytes(&name);
                r
            })
            .collect();
        let response: Response = encode_response(
            ApiKey::IncrementalAlterConfigs,
            version,
            correlation_id,
            &response,
        );
        response
    })
}

/// Answers AlterConfigs: each resource's overrides become exactly those
/// listed.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    request: AlterConfigsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let resources = request
        .resources
        .into_iter()
        .map(|r| Resource {
            resource_type: r.resource_type,
            name: r.resource_name.to_string(),
            changes: r
                .configs
                .into_iter()
                .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string()), 0))
                .collect(),
        })
        .collect();
    let answers = alter(shard, access, resources, false, request.validate_only).await;
    Box::pin(async move {
        let mut response = AlterConfigsResponse::default();
        response.responses = answers
            .await
            .into_iter()
            .map(|((error_code, message), resource_type, name)| {
                let mut r = alter_configs_response::AlterConfigsResourceResponse::default();
                r.error_code = error_code;
                r.error_message = message.map(|m| str_bytes(&m));
                r.resource_type = resource_type;
                r.resource_name = str_bytes(&name);
                r
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::AlterConfigs, version, correlation_id, &response);
        response
    })
}
