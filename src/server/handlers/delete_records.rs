//! DeleteRecords (key 21, v0-2; v2 flexible): moves partitions' log start
//! up to an offset (-1: the high watermark), as `kafka-delete-records` and
//! the admin clients' `deleteRecords` ask. Kafka 4.1.1's answers, measured
//! side by side: a partition named more than once is answered once, its
//! last offset applied; an unknown topic or partition is
//! UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION,
//! a topic whose `cleanup.policy` lacks `delete` POLICY_VIOLATION (before
//! the offset is looked at), an offset below 0 (other than -1) or past the
//! high watermark OFFSET_OUT_OF_RANGE, each with low watermark -1; an
//! offset at or below the log start changes nothing and answers the start.
//! With one replica the low watermark is the new log start at once, so
//! `timeout_ms` is never waited on. The start is durable when answered
//! (Kafka writes its checkpoint within a minute), and the segments wholly
//! below it are deleted then, unless a compaction or retention pass of the
//! partition is running (Kafka always waits for its next retention check).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::rc::Rc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{ApiKey, DeleteRecordsRequest, DeleteRecordsResponse};

use super::{encode_response, ShardGroups};
use crate::protocol::ErrorCode;
use crate::server::connection::Responder;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition};
use crate::shard::Shard;

/// Answers DeleteRecords.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DeleteRecordsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let image = shard.image();
    let broker = &*shard.broker_defaults();
    // Distinct topics in order of first appearance, each with its distinct
    // partitions in order of first appearance and the last offset asked.
    let mut topics: Vec<(String, Vec<(i32, i64)>)> = Vec::new();
    let mut topic_at: HashMap<String, usize> = HashMap::new();
    // (topic position, partition) -> position in that topic's list, so a
    // request naming many partitions is not searched once per partition.
    let mut partition_at: HashMap<(usize, i32), usize> = HashMap::new();
    for topic in &request.topics {
        let name = topic.name.to_string();
        let at = *topic_at.entry(name.clone()).or_insert_with(|| {
            topics.push((name, Vec::new()));
            topics.len() - 1
        });
        let partitions = &mut topics[at].1;
        for partition in &topic.partitions {
            let index = partition.partition_index;
            match partition_at.entry((at, index)) {
                Entry::Occupied(slot) => partitions[*slot.get()].1 = partition.offset,
                Entry::Vacant(slot) => {
                    slot.insert(partitions.len());
                    partitions.push((index, partition.offset));
                }
            }
        }
    }
    // Per distinct partition, flattened in that order: the low watermark or
    // an error code.
    let mut outcomes: Vec<Result<i64, i16>> = Vec::new();
    let mut groups: ShardGroups<(TopicPartition, i64)> = ShardGroups::new();
    for (name, partitions) in &topics {
        let image_topic = image.topic(name);
        // DELETE on the topic, asked before it is looked for.
        let deletable = access.topic(crate::security::acl::AclOperation::Delete, name);
        for &(index, offset) in partitions {
            let position = outcomes.len();
            let owner = image_topic.and_then(|t| shard.owner_of(t, index).map(|o| (t, o)));
            match owner {
                _ if !deletable => {
                    outcomes.push(Err(ErrorCode::TopicAuthorizationFailed.code()));
                }
                None => outcomes.push(Err(ErrorCode::UnknownTopicOrPartition.code())),
                Some((topic, _)) if topic.is_internal() => {
                    outcomes.push(Err(ErrorCode::InvalidTopicException.code()));
                }
                Some((topic, _)) if !topic.configs.cleanup_policy_delete(broker) => {
                    outcomes.push(Err(ErrorCode::PolicyViolation.code()));
                }
                Some((_, owner)) => {
                    outcomes.push(Err(ErrorCode::NotLeaderOrFollower.code()));
                    groups.push(
                        owner,
                        position,
                        (
                            TopicPartition {
                                topic: name.clone(),
                                partition: index,
                            },
                            offset,
                        ),
                    );
                }
            }
        }
    }
    let replies = groups.send(shard, ShardRequest::DeleteRecords).await;
    Box::pin(async move {
        for (positions, reply) in replies.await {
            if let Some(ShardReply::DeleteRecords(answers)) = reply {
                for (position, answer) in positions.into_iter().zip(answers) {
                    outcomes[position] = answer;
                }
            }
        }
        let mut outcomes = outcomes.into_iter();
        let mut response = DeleteRecordsResponse::default();
        for (name, partitions) in topics {
            let mut topic_result = DeleteRecordsTopicResult::default();
            topic_result.name = super::str_bytes(&name).into();
            for (index, _) in partitions {
                let mut result = DeleteRecordsPartitionResult::default();
                result.partition_index = index;
                match outcomes.next() {
                    Some(Ok(low_watermark)) => result.low_watermark = low_watermark,
                    Some(Err(error_code)) => {
                        result.error_code = error_code;
                        result.low_watermark = -1;
                    }
                    None => {
                        result.error_code = ErrorCode::UnknownServerError.code();
                        result.low_watermark = -1;
                    }
                }
                topic_result.partitions.push(result);
            }
            response.topics.push(topic_result);
        }
        encode_response(ApiKey::DeleteRecords, version, correlation_id, &response)
    })
}
