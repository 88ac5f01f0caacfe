//! AlterPartitionReassignments (key 45, v0-1, flexible; v1 adds
//! `allow_replication_factor_change`, echoed back), as
//! `kafka-reassign-partitions --execute` and admin clients'
//! `alterPartitionReassignments` ask. A single node can only move a
//! partition onto itself, where it already is: that reassignment is
//! complete at once and answered with no error, as Kafka answers a target
//! equal to the current replicas. Everything else is refused with Kafka
//! 4.1's codes and messages: an unknown topic or partition
//! UNKNOWN_TOPIC_OR_PARTITION; an empty replica list, a broker that is not
//! this node or a broker named twice INVALID_REPLICA_ASSIGNMENT (brokers
//! checked in ascending order, as Kafka's controller does); cancelling
//! (null replicas) NO_REASSIGNMENT_IN_PROGRESS, since none ever is.
//! Partitions are answered in request order, repeats included.

use std::rc::Rc;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey, BrokerId,
};

use super::{encode_response, str_bytes};
use crate::cluster::TopicImage;
use crate::protocol::ErrorCode;
use crate::server::connection::Response;
use crate::shard::Shard;

/// Why Kafka's controller refuses moving `partition` of the existing
/// `topic` to `replicas` on a cluster whose only broker is `node`, or None
/// when the partition is already there.
fn refusal(
    shard: &Shard,
    node: i32,
    topic: &TopicImage,
    partition: i32,
    replicas: Option<&[BrokerId]>,
) -> Option<(ErrorCode, Option<String>)> {
    if shard.owner_of(topic, partition).is_none() {
        let topic = &topic.name;
        return Some((
            ErrorCode::UnknownTopicOrPartition,
            Some(format!("Unable to find partition {topic}:{partition}.")),
        ));
    }
    let Some(replicas) = replicas else {
        return Some((ErrorCode::NoReassignmentInProgress, None));
    };
    if replicas.is_empty() {
        return Some((
            ErrorCode::InvalidReplicaAssignment,
            Some("The manual partition assignment includes an empty replica list.".into()),
        ));
    }
    let mut sorted: Vec<i32> = replicas.iter().map(|broker| broker.0).collect();
    sorted.sort_unstable();
    let mut previous = None;
    for broker in sorted {
        if broker != node {
            return Some((
                ErrorCode::InvalidReplicaAssignment,
                Some(format!(
                    "The manual partition assignment includes broker {broker}, but no such broker is registered."
                )),
            ));
        }
        if previous == Some(broker) {
            return Some((
                ErrorCode::InvalidReplicaAssignment,
                Some(format!(
                    "The manual partition assignment includes the broker {broker} more than once."
                )),
            ));
        }
        previous = Some(broker);
    }
    None
}

/// Answers AlterPartitionReassignments.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: AlterPartitionReassignmentsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let image = shard.image();
    let node = shard.config.node_id;
    let mut response = AlterPartitionReassignmentsResponse::default();
    if version >= 1 {
        response.allow_replication_factor_change = request.allow_replication_factor_change;
    }
    // ALTER on the cluster, else the request and every partition of it are
    // refused with Kafka's message.
    let denied = (!access.cluster(crate::security::acl::AclOperation::Alter)).then(|| {
        str_bytes(&crate::server::access::cluster_refusal(
            ApiKey::AlterPartitionReassignments,
            "ALTER",
        ))
    });
    // Kafka 4.1 answers a request naming no topic with an empty message,
    // others with none.
    response.error_message = request.topics.is_empty().then(|| str_bytes(""));
    if let Some(message) = &denied {
        response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
        response.error_message = Some(message.clone());
    }
    response.responses = request
        .topics
        .iter()
        .map(|topic| {
            let image_topic = image.topic(topic.name.as_str());
            // Made once per topic and shared by its partitions: a long
            // unknown name is not copied once per partition.
            let unknown_topic = image_topic.is_none().then(|| {
                str_bytes(&format!(
                    "Unable to find a topic named {}.",
                    topic.name.as_str()
                ))
            });
            let mut answer = ReassignableTopicResponse::default();
            answer.name = topic.name.clone();
            answer.partitions = topic
                .partitions
                .iter()
                .map(|partition| {
                    let mut result = ReassignablePartitionResponse::default();
                    result.partition_index = partition.partition_index;
                    result.error_message = None;
                    if let Some(message) = &denied {
                        result.error_code = ErrorCode::ClusterAuthorizationFailed.code();
                        result.error_message = Some(message.clone());
                        return result;
                    }
                    let refused = match image_topic {
                        None => Some((ErrorCode::UnknownTopicOrPartition, None)),
                        Some(existing) => refusal(
                            shard,
                            node,
                            existing,
                            partition.partition_index,
                            partition.replicas.as_deref(),
                        ),
                    };
                    if let Some((error, message)) = refused {
                        result.error_code = error.code();
                        result.error_message = match message {
                            Some(message) => Some(str_bytes(&message)),
                            None => unknown_topic.clone(),
                        };
                    }
                    result
                })
                .collect();
            answer
        })
        .collect();
    encode_response(
        ApiKey::AlterPartitionReassignments,
        version,
        correlation_id,
        &response,
    )
}
