//! ListOffsets (key 2): earliest, latest, max timestamp, or the first offset
//! at or after a timestamp (through the time index). Without tiered
//! storage EARLIEST_LOCAL is the log start and LATEST_TIERED finds nothing.

use std::collections::HashSet;
use std::rc::Rc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse};

use super::{encode_response, ShardGroups};
use crate::cluster::image::check_current_leader_epoch;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::{Responder, Response};
use crate::shard::messages::{
    ListOffsetsItem, ListOffsetsResult, ShardReply, ShardRequest, TopicPartition,
};
use crate::shard::Shard;

/// Whether a ListOffsets request of `version` may ask for `timestamp`: the
/// special timestamps came with versions (MAX_TIMESTAMP -3 with v7,
/// EARLIEST_LOCAL -4 with v8, LATEST_TIERED -5 with v9), and Kafka 4.1
/// answers UNSUPPORTED_VERSION for one the version predates, and for
/// negative values it does not know.
fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    match timestamp {
        -2 | -1 => true,
        -3 => version >= 7,
        -4 => version >= 8,
        -5 => version >= 9,
        other => other >= 0,
    }
}

fn failed(error: ErrorCode) -> ListOffsetsResult {
    ListOffsetsResult {
        error_code: error.code(),
        timestamp: -1,
        offset: -1,
        leader_epoch: -1,
    }
}

/// Answers ListOffsets.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ListOffsetsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let image = shard.image();
        let mut results: Vec<Vec<(i32, ListOffsetsResult)>> = Vec::new();
        let mut flat = Vec::new();
        let mut groups: ShardGroups<ListOffsetsItem> = ShardGroups::new();
        let mut seen = HashSet::new();
        for (ti, topic) in request.topics.iter().enumerate() {
            let name = topic.name.to_string();
            let image_topic = image.topic(&name);
            // DESCRIBE, asked before the topic is looked for.
            let describable = access.topic(AclOperation::Describe, &name);
            let mut partitions = Vec::new();
            for (pi, partition) in topic.partitions.iter().enumerate() {
                let index = partition.partition_index;
                if !seen.insert((name.clone(), index)) {
                    partitions.push((index, failed(ErrorCode::InvalidRequest)));
                    continue;
                }
                if !describable {
                    partitions.push((index, failed(ErrorCode::TopicAuthorizationFailed)));
                    continue;
                }
                let owner = image_topic.and_then(|t| shard.owner_of(t, index));
                let current = image_topic.map_or(0, |t| t.leader_epoch(index));
                match (
                    owner,
                    check_current_leader_epoch(partition.current_leader_epoch, current),
                ) {
                    (None, _) => {
                        partitions.push((index, failed(ErrorCode::UnknownTopicOrPartition)));
                    }
                    (Some(_), Err(error)) => partitions.push((index, failed(error))),
                    (Some(_), Ok(())) if !timestamp_supported(partition.timestamp, version) => {
                        partitions.push((index, failed(ErrorCode::UnsupportedVersion)));
                    }
                    (Some(owner), Ok(())) => {
                        let position = flat.len();
                        flat.push((ti, pi));
                        groups.push(
                            owner,
                            position,
                            ListOffsetsItem {
                                topic_partition: TopicPartition {
                                    topic: name.clone(),
                                    partition: index,
                                },
                                timestamp: partition.timestamp,
                            },
                        );
                        partitions.push((index, failed(ErrorCode::RequestTimedOut)));
                    }
                }
            }
            results.push(partitions);
        }
        let isolation_level = request.isolation_level;
        let replies = groups
            .send(&shard, |items| ShardRequest::ListOffsets {
                items,
                isolation_level,
            })
            .await;
        for (positions, reply) in replies.await {
            if let Some(ShardReply::ListOffsets(shard_results)) = reply {
                for (position, result) in positions.into_iter().zip(shard_results) {
                    let (ti, pi) = flat[position];
                    results[ti][pi].1 = result;
                }
            }
        }
        let mut response = ListOffsetsResponse::default();
        response.topics = request
            .topics
            .iter()
            .zip(results)
            .map(|(topic, partitions)| {
                let mut t = ListOffsetsTopicResponse::default();
                t.name = topic.name.clone();
                t.partitions = partitions
                    .into_iter()
                    .map(|(index, r)| {
                        let mut p = ListOffsetsPartitionResponse::default();
                        p.partition_index = index;
                        p.error_code = r.error_code;
                        p.timestamp = r.timestamp;
                        p.offset = r.offset;
                        if version >= 4 {
                            p.leader_epoch = r.leader_epoch;
                        }
                        p
                    })
                    .collect();
                t
            })
            .collect();
        let response: Response =
            encode_response(ApiKey::ListOffsets, version, correlation_id, &response);
        response
    })
}
