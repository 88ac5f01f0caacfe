//! CreateTopics (key 19): validated and committed by the controller; answers
//! once every shard has the new partitions. With an authorizer a topic takes
//! CREATE on the cluster or on itself, and its configs are answered only
//! with DESCRIBE_CONFIGS on it.

use std::collections::HashSet;
use std::rc::Rc;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse};

use super::{encode_response, str_bytes};
use crate::config::topic_config::describe_topic_configs;
use crate::config::TopicConfigs;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::{Responder, Response};
use crate::server::handlers::describe_configs::with_broker_layers;
use crate::shard::messages::{
    ControllerReply, ControllerRequest, CreateTopicOutcome, CreateTopicSpec,
};
use crate::shard::Shard;

/// Turns one requested topic into a spec, or the error Kafka gives for it.
fn spec_of(
    shard: &Shard,
    topic: &kafka_protocol::messages::create_topics_request::CreatableTopic,
) -> Result<CreateTopicSpec, (ErrorCode, String)> {
    let defaults = &*shard.broker_defaults();
    let (num_partitions, replication_factor) = if topic.assignments.is_empty() {
        (
            if topic.num_partitions == -1 {
                defaults.num_partitions
            } else {
                topic.num_partitions
            },
            if topic.replication_factor == -1 {
                defaults.default_replication_factor as i16
            } else {
                topic.replication_factor
            },
        )
    } else {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err((
                ErrorCode::InvalidRequest,
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into(),
            ));
        }
        let mut indexes: Vec<i32> = topic
            .assignments
            .iter()
            .map(|a| a.partition_index)
            .collect();
        indexes.sort_unstable();
        if indexes.iter().enumerate().any(|(i, &p)| p != i as i32) {
            return Err((
                ErrorCode::InvalidReplicaAssignment,
                "Partitions should be a consecutive 0-based integer sequence".into(),
            ));
        }
        for assignment in &topic.assignments {
            if assignment
                .broker_ids
                .iter()
                .any(|b| b.0 != shard.config.node_id)
            {
                return Err((
                    ErrorCode::InvalidReplicaAssignment,
                    format!("The manual partition assignment includes a broker that is not registered: {:?}", assignment.broker_ids),
                ));
            }
        }
        let rf = topic.assignments[0].broker_ids.len() as i16;
        (topic.assignments.len() as i32, rf)
    };
    let mut configs = Vec::with_capacity(topic.configs.len());
    for c in &topic.configs {
        match &c.value {
            Some(value) => configs.push((c.name.to_string(), value.to_string())),
            None => {
                return Err((
                    ErrorCode::InvalidConfig,
                    format!("Null value not supported for topic configs: {}", c.name),
                ))
            }
        }
    }
    Ok(CreateTopicSpec {
        name: topic.name.to_string(),
        num_partitions,
        replication_factor,
        configs,
    })
}

/// Answers CreateTopics.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    client: crate::quota::sensors::RequestClient,
    request: CreateTopicsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let mut results: Vec<Option<CreateTopicOutcome>> = vec![None; request.topics.len()];
    let mut specs = Vec::new();
    let mut positions = Vec::new();
    // As Kafka's controller: a name given twice is refused, answered once.
    let mut names = HashSet::new();
    let duplicates: HashSet<&str> = request
        .topics
        .iter()
        .map(|t| t.name.as_str())
        .filter(|name| !names.insert(*name))
        .collect();
    // CREATE on the cluster allows every topic, else CREATE on each topic;
    // a refused topic is not looked at further.
    let may_create_any = access.cluster(AclOperation::Create);
    for (i, topic) in request.topics.iter().enumerate() {
        if duplicates.contains(topic.name.as_str()) {
            results[i] = Some(CreateTopicOutcome {
                error_code: ErrorCode::InvalidRequest.code(),
                error_message: Some("Duplicate topic name.".into()),
                topic_id: uuid::Uuid::nil(),
            });
            continue;
        }
        if !may_create_any && !access.topic(AclOperation::Create, topic.name.as_str()) {
            results[i] = Some(CreateTopicOutcome {
                error_code: ErrorCode::TopicAuthorizationFailed.code(),
                error_message: Some("Authorization failed.".into()),
                topic_id: uuid::Uuid::nil(),
            });
            continue;
        }
        match spec_of(shard, topic) {
            Ok(spec) => {
                specs.push(spec);
                positions.push(i);
            }
            Err((error, message)) => {
                results[i] = Some(CreateTopicOutcome {
                    error_code: error.code(),
                    error_message: Some(message),
                    topic_id: uuid::Uuid::nil(),
                });
            }
        }
    }
    // Configs are answered only to callers that may DESCRIBE_CONFIGS.
    let configs_visible: Vec<bool> = request
        .topics
        .iter()
        .map(|t| access.topic(AclOperation::DescribeConfigs, t.name.as_str()))
        .collect();
    let shard = shard.clone();
    let controller_call = if specs.is_empty() {
        None
    } else {
        let reply = shard
            .call_controller(ControllerRequest::CreateTopics {
                topics: specs.clone(),
                validate_only: request.validate_only,
                // Refused past the quota from v6 on, only throttled before.
                quota: client.mutation_quota(&shard, version >= 6),
            })
            .await;
        Some(reply)
    };
    Box::pin(async move {
        let mut throttle = 0;
        if let Some(reply) = controller_call {
            let outcomes = match reply.await {
                Some(ControllerReply::CreateTopics(outcomes, throttle_ms)) => {
                    throttle = client.throttle(throttle_ms);
                    Some(outcomes)
                }
                _ => None,
            };
            for (k, &position) in positions.iter().enumerate() {
                results[position] = Some(match outcomes.as_ref().and_then(|o| o.get(k)) {
                    Some(o) => o.clone(),
                    None => CreateTopicOutcome {
                        error_code: ErrorCode::RequestTimedOut.code(),
                        error_message: Some("the controller did not answer".into()),
                        topic_id: uuid::Uuid::nil(),
                    },
                });
            }
        }
        let image = shard.image();
        let mut response = CreateTopicsResponse::default();
        response.throttle_time_ms = throttle;
        let mut answered = HashSet::new();
        response.topics = request
            .topics
            .iter()
            .zip(results)
            .zip(specs_by_position(&positions, &specs, request.topics.len()))
            .zip(configs_visible)
            .filter(|(((topic, _), _), _)| answered.insert(topic.name.clone()))
            .map(|(((topic, outcome), spec), configs_visible)| {
                let outcome = outcome.expect("every topic has an outcome");
                let mut r = CreatableTopicResult::default();
                r.name = topic.name.clone();
                r.error_code = outcome.error_code;
                r.error_message = outcome.error_message.as_deref().map(str_bytes);
                if version >= 7 {
                    r.topic_id = outcome.topic_id;
                }
                if outcome.error_code == 0 && version >= 5 && !configs_visible {
                    // Created, but its settings are not the caller's to see.
                    r.num_partitions = -1;
                    r.replication_factor = -1;
                    r.configs = Some(Vec::new());
                    r.topic_config_error_code = ErrorCode::TopicAuthorizationFailed.code();
                } else if outcome.error_code == 0 && version >= 5 {
                    let spec = spec.expect("successful topics have a spec");
                    r.num_partitions = spec.num_partitions;
                    r.replication_factor = spec.replication_factor;
                    // validate_only topics are not in the image; their
                    // configs passed the same validation.
                    let broker = &*shard.broker_defaults();
                    let configs = image
                        .topic(&spec.name)
                        .map(|t| t.configs.clone())
                        .unwrap_or_else(|| {
                            TopicConfigs::from_overrides(
                                spec.configs.iter().map(|(n, v)| (n.as_str(), v.as_str())),
                                broker,
                            )
                            .unwrap_or_default()
                        });
                    let described = with_broker_layers(&shard, |layers| {
                        describe_topic_configs(&configs, broker, layers, None, false, false)
                    });
                    r.configs = Some(
                        described
                            .into_iter()
                            .map(|d| {
                                let mut c = CreatableTopicConfigs::default();
                                c.name = d.name;
                                c.value = d.value;
                                c.read_only = d.read_only;
                                c.config_source = d.config_source;
                                c.is_sensitive = d.is_sensitive;
                                c
                            })
                            .collect(),
                    );
                } else if version >= 5 {
                    r.num_partitions = -1;
                    r.replication_factor = -1;
                    r.configs = None;
                }
                r
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::CreateTopics, version, correlation_id, &response);
        response
    })
}

fn specs_by_position(
    positions: &[usize],
    specs: &[CreateTopicSpec],
    len: usize,
) -> Vec<Option<CreateTopicSpec>> {
    let mut out = vec![None; len];
    for (k, &p) in positions.iter().enumerate() {
        out[p] = Some(specs[k].clone());
    }
    out
}
