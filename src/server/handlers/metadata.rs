//! Metadata (key 3): brokers, the controller, and topics with their
//! partitions. Unknown topics are created when the client allows it and
//! `auto.create.topics.enable` is on, as Kafka does. With an authorizer, a
//! topic takes DESCRIBE to be seen (left out of "every topic", refused by
//! name) and CREATE (cluster or topic) to be created.

use std::rc::Rc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{ApiKey, BrokerId, MetadataRequest, MetadataResponse, TopicName};

use super::authorized_operations::AUTHORIZED_OPERATIONS_OMITTED;
use super::{encode_response, ready, str_bytes};
use crate::cluster::controller::validate_topic_name;
use crate::cluster::image::is_internal_topic;
use crate::cluster::{MetadataImage, TopicImage};
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, ResourceType};
use crate::server::access::Access;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{ControllerReply, ControllerRequest, CreateTopicSpec};
use crate::shard::Shard;

/// Creates `names` through the controller; returns when every shard knows them.
pub async fn auto_create(
    shard: &Rc<Shard>,
    client: &crate::quota::sensors::RequestClient,
    names: Vec<String>,
) {
    if names.is_empty() {
        return;
    }
    let defaults = &*shard.broker_defaults();
    let topics = names
        .into_iter()
        .map(|name| CreateTopicSpec {
            name,
            num_partitions: defaults.num_partitions,
            replication_factor: defaults.default_replication_factor as i16,
            configs: Vec::new(),
        })
        .collect();
    let request = ControllerRequest::CreateTopics {
        topics,
        validate_only: false,
        // Kafka 4.1 forwards an auto-creation to its controller as a
        // CreateTopics of the client's, strict: past its quota nothing is
        // created.
        quota: client.mutation_quota(shard, true),
    };
    match shard.call_controller(request).await.await {
        Some(ControllerReply::CreateTopics(outcomes, _)) => {
            for o in outcomes.iter().filter(|o| o.error_code != 0) {
                tracing::debug!(error_code = o.error_code, message = ?o.error_message, "auto-create refused");
            }
        }
        other => tracing::warn!(?other, "auto-create failed"),
    }
}

fn describe_topic(
    shard: &Shard,
    access: &Access,
    topic: &TopicImage,
    version: i16,
    include_operations: bool,
) -> MetadataResponseTopic {
    let node = BrokerId(shard.config.node_id);
    let mut t = MetadataResponseTopic::default();
    t.error_code = 0;
    t.name = Some(TopicName(str_bytes(&topic.name)));
    if version >= 10 {
        t.topic_id = topic.topic_id;
    }
    t.is_internal = version >= 1 && topic.is_internal();
    t.partitions = (0..topic.partition_shards.len() as i32)
        .map(|index| {
            let mut p = MetadataResponsePartition::default();
            p.error_code = 0;
            p.partition_index = index;
            p.leader_id = node;
            if version >= 7 {
                p.leader_epoch = topic.leader_epoch(index);
            }
            p.replica_nodes = vec![node];
            p.isr_nodes = vec![node];
            p.offline_replicas = Vec::new();
            p
        })
        .collect();
    t.topic_authorized_operations = if include_operations && version >= 8 {
        access.operations(ResourceType::Topic, &topic.name)
    } else {
        AUTHORIZED_OPERATIONS_OMITTED
    };
    t
}

fn error_topic(
    name: Option<&str>,
    topic_id: uuid::Uuid,
    error: ErrorCode,
) -> MetadataResponseTopic {
    // Only v10+ requests can name topics by id, so topic_id is nil otherwise.
    let mut t = MetadataResponseTopic::default();
    t.error_code = error.code();
    t.name = name.map(|n| TopicName(str_bytes(n)));
    t.topic_id = topic_id;
    t.topic_authorized_operations = AUTHORIZED_OPERATIONS_OMITTED;
    t
}

/// Answers Metadata.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    client: crate::quota::sensors::RequestClient,
    listener: &crate::config::Listener,
    request: MetadataRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    // v0: an empty list means every topic; v1+: null means every topic.
    let all_topics = request.topics.is_none()
        || (version == 0 && request.topics.as_ref().is_some_and(Vec::is_empty));
    let allow_auto_create = if version >= 4 {
        request.allow_auto_topic_creation
    } else {
        true
    };
    let include_topic_operations = request.include_topic_authorized_operations;
    let requested = request.topics.unwrap_or_default();

    // Topics the caller may DESCRIBE; without that a named topic is
    // TOPIC_AUTHORIZATION_FAILED whether it exists or not, as Kafka answers.
    let describable = |name: &str| access.topic(AclOperation::Describe, name);
    // Creating a topic takes CREATE on the cluster or on the topic.
    let may_create_any = access.cluster(AclOperation::Create);
    let creatable = |name: &str| may_create_any || access.topic(AclOperation::Create, name);
    let auto_create_on = !all_topics && allow_auto_create && shard.config.auto_create_topics_enable;
    if auto_create_on {
        let image = shard.image();
        let mut missing: Vec<String> = requested
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
            // Internal topics are created by their coordinators with their
            // own settings, never by a client's metadata request.
            .filter(|n| {
                image.topic(n).is_none()
                    && validate_topic_name(n).is_ok()
                    && !is_internal_topic(n)
                    && describable(n)
                    && creatable(n)
            })
            .collect();
        missing.sort();
        missing.dedup();
        auto_create(shard, &client, missing).await;
    }

    let image: Rc<MetadataImage> = shard.image();
    let topics = if all_topics {
        // Topics the caller may not DESCRIBE are left out.
        image
            .topics
            .values()
            .filter(|t| describable(&t.name))
            .map(|t| describe_topic(shard, access, t, version, include_topic_operations))
            .collect()
    } else {
        requested
            .iter()
            .map(|wanted| match &wanted.name {
                Some(name) if !describable(name) => error_topic(
                    Some(name),
                    uuid::Uuid::nil(),
                    ErrorCode::TopicAuthorizationFailed,
                ),
                Some(name) => match image.topic(name) {
                    Some(t) => describe_topic(shard, access, t, version, include_topic_operations),
                    None if auto_create_on
                        && !is_internal_topic(name)
                        && validate_topic_name(name).is_ok()
                        && !creatable(name) =>
                    {
                        let mut t = error_topic(
                            Some(name),
                            uuid::Uuid::nil(),
                            ErrorCode::TopicAuthorizationFailed,
                        );
                        t.is_internal = version >= 1 && is_internal_topic(name);
                        t
                    }
                    None if validate_topic_name(name).is_err() => error_topic(
                        Some(name),
                        uuid::Uuid::nil(),
                        ErrorCode::InvalidTopicException,
                    ),
                    None => error_topic(
                        Some(name),
                        uuid::Uuid::nil(),
                        ErrorCode::UnknownTopicOrPartition,
                    ),
                },
                None => match image.topic_by_id(&wanted.topic_id) {
                    // Topic ids are not secret: the id is answered, the
                    // name is not.
                    Some(t) if !describable(&t.name) => {
                        error_topic(None, wanted.topic_id, ErrorCode::TopicAuthorizationFailed)
                    }
                    Some(t) => describe_topic(shard, access, t, version, include_topic_operations),
                    None => error_topic(None, wanted.topic_id, ErrorCode::UnknownTopicId),
                },
            })
            .collect()
    };

    let mut response = MetadataResponse::default();
    let mut broker = MetadataResponseBroker::default();
    broker.node_id = BrokerId(shard.config.node_id);
    broker.host = str_bytes(&listener.advertised_host);
    broker.port = i32::from(listener.advertised_port);
    broker.rack = None;
    response.brokers = vec![broker];
    if version >= 2 {
        response.cluster_id = Some(str_bytes(&image.cluster_id));
    }
    if version >= 1 {
        response.controller_id = BrokerId(shard.config.node_id);
    }
    response.topics = topics;
    response.cluster_authorized_operations =
        if request.include_cluster_authorized_operations && (8..=10).contains(&version) {
            access.cluster_operations()
        } else {
            AUTHORIZED_OPERATIONS_OMITTED
        };
    let response: Response = encode_response(ApiKey::Metadata, version, correlation_id, &response);
    ready(response)
}
