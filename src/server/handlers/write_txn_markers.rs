//! WriteTxnMarkers (key 27, v1, flexible): writes COMMIT or ABORT markers
//! for transactions to the partitions named. In Kafka the transaction
//! coordinator sends it to partition leaders; here it is also how a client
//! (or a test) can complete a transaction by hand. Each marker's partitions
//! go to their owning shards as one [`ShardRequest::WriteTxnMarkers`] per
//! shard, in request order; the answer comes once every marker is durable.
//!
//! Per-partition codes are Kafka's: UNKNOWN_TOPIC_OR_PARTITION for a topic
//! or partition that does not exist, NOT_LEADER_OR_FOLLOWER when the owning
//! shard cannot be reached, INVALID_PRODUCER_EPOCH for a marker older than
//! the producer's epoch on the partition, TRANSACTION_COORDINATOR_FENCED for
//! one from an older coordinator, KAFKA_STORAGE_ERROR when the log failed.
//! Runs on the connection's shard.
//!
//! Authorization, as in Kafka: ALTER or CLUSTER_ACTION on the cluster, else
//! every partition is CLUSTER_AUTHORIZATION_FAILED and nothing is written.

use std::rc::Rc;

use futures::future::join_all;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{ApiKey, WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use super::encode_response;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition, TxnMarkerWrite};
use crate::shard::Shard;

/// Where one requested partition's code comes from.
#[derive(Clone, Copy)]
enum Slot {
    /// Decided here.
    Early(ErrorCode),
    /// From shard `shard`: marker `marker` of its request, partition
    /// `partition` of that marker.
    Shard {
        shard: usize,
        marker: usize,
        partition: usize,
    },
}

/// Answers WriteTxnMarkers.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: WriteTxnMarkersRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let authorized =
        access.cluster(AclOperation::Alter) || access.cluster(AclOperation::ClusterAction);
    let image = shard.image();
    // Per shard: the markers it writes, in request order.
    let mut per_shard: std::collections::BTreeMap<usize, Vec<TxnMarkerWrite>> =
        std::collections::BTreeMap::new();
    // Per request marker, per topic, per partition.
    let mut slots: Vec<Vec<Vec<Slot>>> = Vec::with_capacity(request.markers.len());
    for marker in &request.markers {
        // Index of this marker in each shard's list, created on first use.
        let mut shard_marker: std::collections::BTreeMap<usize, usize> =
            std::collections::BTreeMap::new();
        let mut marker_slots = Vec::with_capacity(marker.topics.len());
        for topic in &marker.topics {
            let name = topic.name.to_string();
            let image_topic = image.topic(&name);
            let mut topic_slots = Vec::with_capacity(topic.partition_indexes.len());
            for &index in &topic.partition_indexes {
                if !authorized {
                    topic_slots.push(Slot::Early(ErrorCode::ClusterAuthorizationFailed));
                    continue;
                }
                let Some(owner) = image_topic.and_then(|t| shard.owner_of(t, index)) else {
                    topic_slots.push(Slot::Early(ErrorCode::UnknownTopicOrPartition));
                    continue;
                };
                let writes = per_shard.entry(owner).or_default();
                let marker_index = *shard_marker.entry(owner).or_insert_with(|| {
                    writes.push(TxnMarkerWrite {
                        producer_id: marker.producer_id.0,
                        producer_epoch: marker.producer_epoch,
                        coordinator_epoch: marker.coordinator_epoch,
                        commit: marker.transaction_result,
                        partitions: Vec::new(),
                    });
                    writes.len() - 1
                });
                let partitions = &mut writes[marker_index].partitions;
                partitions.push(TopicPartition {
                    topic: name.clone(),
                    partition: index,
                });
                topic_slots.push(Slot::Shard {
                    shard: owner,
                    marker: marker_index,
                    partition: partitions.len() - 1,
                });
            }
            marker_slots.push(topic_slots);
        }
        slots.push(marker_slots);
    }
    // The ordered part: every shard gets its markers now.
    let mut calls = Vec::with_capacity(per_shard.len());
    for (target, writes) in per_shard {
        calls.push((
            target,
            shard
                .call(target, ShardRequest::WriteTxnMarkers(writes))
                .await,
        ));
    }
    Box::pin(async move {
        let replies = join_all(calls.into_iter().map(|(target, call)| async move {
            let codes = match call {
                Ok(completion) => match completion.await {
                    Ok(ShardReply::WriteTxnMarkers(codes)) => Some(codes),
                    _ => None,
                },
                Err(_) => None,
            };
            (target, codes)
        }))
        .await;
        let replies: std::collections::BTreeMap<usize, Option<Vec<Vec<i16>>>> =
            replies.into_iter().collect();
        let mut response = WriteTxnMarkersResponse::default();
        for (marker, marker_slots) in request.markers.iter().zip(slots) {
            let mut result = WritableTxnMarkerResult::default();
            result.producer_id = marker.producer_id;
            for (topic, topic_slots) in marker.topics.iter().zip(marker_slots) {
                let mut topic_result = WritableTxnMarkerTopicResult::default();
                topic_result.name = topic.name.clone();
                for (&index, slot) in topic.partition_indexes.iter().zip(topic_slots) {
                    let error_code = match slot {
                        Slot::Early(error) => error.code(),
                        Slot::Shard {
                            shard,
                            marker,
                            partition,
                        } => replies
                            .get(&shard)
                            .and_then(Option::as_ref)
                            .and_then(|codes| codes.get(marker))
                            .and_then(|codes| codes.get(partition))
                            .copied()
                            .unwrap_or(ErrorCode::NotLeaderOrFollower.code()),
                    };
                    let mut partition_result = WritableTxnMarkerPartitionResult::default();
                    partition_result.partition_index = index;
                    partition_result.error_code = error_code;
                    topic_result.partitions.push(partition_result);
                }
                result.topics.push(topic_result);
            }
            response.markers.push(result);
        }
        encode_response(ApiKey::WriteTxnMarkers, version, correlation_id, &response)
    })
}
