//! DescribeTopicPartitions (key 75, v0, flexible; KIP-966), which the Java
//! admin client's `describeTopics` (and so `kafka-topics --describe`) uses
//! instead of Metadata when a broker offers it: topics in name order,
//! repeats merged, every topic when none is named, with their partitions,
//! at most `response_partition_limit` partitions (1 to Kafka's default
//! limit of 2000) per answer and a cursor where the next answer goes on.
//! As Kafka 4.1 answers: a cursor starts at its partition of its topic and
//! skips topics named before it; a cursor whose topic was not asked for or
//! whose partition is negative makes every topic asked for (in request
//! order) INVALID_REQUEST; unknown topics are UNKNOWN_TOPIC_OR_PARTITION (invalid
//! names INVALID_TOPIC_EXCEPTION) and use no partition budget; when the
//! budget runs out exactly at the end of a topic, the cursor names the next
//! topic at partition 0. On one node the broker leads every partition at
//! leader epoch 0, alone in its ISR, with no eligible leader replicas.

use std::ops::Bound;
use std::rc::Rc;

use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};

use super::authorized_operations::AUTHORIZED_OPERATIONS_OMITTED;
use super::{encode_response, str_bytes};
use crate::cluster::controller::validate_topic_name;
use crate::cluster::image::is_internal_topic;
use crate::config::limits::DESCRIBE_TOPIC_PARTITIONS_MAX;
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, ResourceType};
use crate::server::connection::Response;
use crate::shard::Shard;

fn topic_entry(
    name: &str,
    error_code: i16,
    operations: i32,
) -> DescribeTopicPartitionsResponseTopic {
    let mut topic = DescribeTopicPartitionsResponseTopic::default();
    topic.error_code = error_code;
    topic.name = Some(TopicName(str_bytes(name)));
    topic.topic_authorized_operations = operations;
    topic
}

/// The cursor where the next answer starts.
fn cursor_at(topic: &str, partition: i32) -> Cursor {
    let mut cursor = Cursor::default();
    cursor.topic_name = TopicName(str_bytes(topic));
    cursor.partition_index = partition;
    cursor
}

/// Answers DescribeTopicPartitions.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeTopicPartitionsRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let image = shard.image();
    let node = BrokerId(shard.config.node_id);
    let every_topic = request.topics.is_empty();
    let mut response = DescribeTopicPartitionsResponse::default();
    let cursor = request
        .cursor
        .map(|c| (c.topic_name.to_string(), c.partition_index));
    let mut asked: Vec<String> = request.topics.iter().map(|t| t.name.to_string()).collect();
    if let Some((cursor_topic, cursor_partition)) = &cursor {
        if *cursor_partition < 0 || !(every_topic || asked.contains(cursor_topic)) {
            // Kafka's error answer: every topic asked for, in request order.
            response.topics = asked
                .iter()
                .map(|name| {
                    topic_entry(
                        name,
                        ErrorCode::InvalidRequest.code(),
                        AUTHORIZED_OPERATIONS_OMITTED,
                    )
                })
                .collect();
            return encode_response(
                ApiKey::DescribeTopicPartitions,
                version,
                correlation_id,
                &response,
            );
        }
    }
    let first = cursor.as_ref().map_or("", |(topic, _)| topic.as_str());
    // Topics in name order from the cursor's on; every topic is walked
    // lazily, so an answer costs its partition budget, not the topic count.
    let names: Box<dyn Iterator<Item = String>> = if every_topic {
        Box::new(
            image
                .topics
                .range::<str, _>((Bound::Included(first), Bound::Unbounded))
                .map(|(name, _)| name.clone()),
        )
    } else {
        asked.sort_unstable();
        asked.dedup();
        asked.retain(|name| name.as_str() >= first);
        Box::new(asked.into_iter())
    };
    let mut denied = Vec::new();
    let mut remaining = request
        .response_partition_limit
        .clamp(1, DESCRIBE_TOPIC_PARTITIONS_MAX);
    for name in names {
        // DESCRIBE, asked before the topic is looked for (and before the
        // budget, so a cursor never names a topic the caller may not see):
        // left out of every topic, refused at the end when named.
        if !access.topic(AclOperation::Describe, &name) {
            if !every_topic {
                denied.push(topic_entry(
                    &name,
                    ErrorCode::TopicAuthorizationFailed.code(),
                    AUTHORIZED_OPERATIONS_OMITTED,
                ));
            }
            continue;
        }
        if remaining == 0 {
            response.next_cursor = Some(cursor_at(&name, 0));
            break;
        }
        let operations = access.operations(ResourceType::Topic, &name);
        let Some(topic) = image.topic(&name) else {
            let error = if validate_topic_name(&name).is_err() {
                ErrorCode::InvalidTopicException
            } else {
                ErrorCode::UnknownTopicOrPartition
            };
            let mut unknown = topic_entry(&name, error.code(), operations);
            unknown.is_internal = is_internal_topic(&name);
            response.topics.push(unknown);
            continue;
        };
        let count = i32::try_from(topic.partition_shards.len()).unwrap_or(i32::MAX);
        let start = match &cursor {
            Some((cursor_topic, partition)) if *cursor_topic == name => (*partition).min(count),
            _ => 0,
        };
        let end = count.min(start.saturating_add(remaining));
        remaining -= end - start;
        let mut described = topic_entry(&name, 0, operations);
        described.topic_id = topic.topic_id;
        described.is_internal = topic.is_internal();
        described.partitions = (start..end)
            .map(|index| {
                let mut partition = DescribeTopicPartitionsResponsePartition::default();
                partition.partition_index = index;
                partition.leader_id = node;
                partition.leader_epoch = topic.leader_epoch(index);
                partition.replica_nodes = vec![node];
                partition.isr_nodes = vec![node];
                partition.eligible_leader_replicas = Some(Vec::new());
                partition.last_known_elr = Some(Vec::new());
                partition
            })
            .collect();
        response.topics.push(described);
        if end < count {
            response.next_cursor = Some(cursor_at(&name, end));
            break;
        }
    }
    response.topics.extend(denied);
    encode_response(
        ApiKey::DescribeTopicPartitions,
        version,
        correlation_id,
        &response,
    )
}
