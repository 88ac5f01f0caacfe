//! OffsetForLeaderEpoch (key 23, v2-4; v3 adds the replica id, v4 is
//! flexible): where a leader epoch ends in a partition's log, which clients
//! ask after a leader change or when resuming from a committed offset that
//! carries an epoch (KIP-320), to detect log truncation. The answer follows
//! Kafka's leader epoch cache: the current epoch ends at the log end, -1 or
//! an epoch never seen is undefined (-1, -1). A `current_leader_epoch`
//! other than -1 and the partition's is fenced (older) or unknown (newer),
//! as in ListOffsets. Topics and
//! partitions are answered in request order, repeats included, as Kafka
//! does.

use std::rc::Rc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{ApiKey, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::{encode_response, ShardGroups};
use crate::cluster::image::check_current_leader_epoch;
use crate::protocol::ErrorCode;
use crate::server::connection::Responder;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition};
use crate::shard::Shard;

fn failed(partition: i32, error: ErrorCode) -> EpochEndOffset {
    let mut answer = EpochEndOffset::default();
    answer.error_code = error.code();
    answer.partition = partition;
    answer.leader_epoch = -1;
    answer.end_offset = -1;
    answer
}

/// Answers OffsetForLeaderEpoch.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: OffsetForLeaderEpochRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let image = shard.image();
    let mut topics: Vec<OffsetForLeaderTopicResult> = Vec::with_capacity(request.topics.len());
    // (topic position, partition position) of each item sent to a shard.
    let mut sent = Vec::new();
    let mut groups: ShardGroups<(TopicPartition, i32)> = ShardGroups::new();
    // CLUSTER_ACTION (a replica's right) allows every topic, else DESCRIBE
    // on each, asked before the topic is looked for.
    let replica = access.cluster(crate::security::acl::AclOperation::ClusterAction);
    for (ti, topic) in request.topics.iter().enumerate() {
        let name = topic.topic.to_string();
        let describable =
            replica || access.topic(crate::security::acl::AclOperation::Describe, &name);
        let image_topic = image.topic(&name);
        let mut result = OffsetForLeaderTopicResult::default();
        result.topic = topic.topic.clone();
        for (pi, partition) in topic.partitions.iter().enumerate() {
            let index = partition.partition;
            let owner = image_topic.and_then(|t| shard.owner_of(t, index));
            let current = image_topic.map_or(0, |t| t.leader_epoch(index));
            match (
                owner,
                check_current_leader_epoch(partition.current_leader_epoch, current),
            ) {
                _ if !describable => result
                    .partitions
                    .push(failed(index, ErrorCode::TopicAuthorizationFailed)),
                (None, _) => result
                    .partitions
                    .push(failed(index, ErrorCode::UnknownTopicOrPartition)),
                (Some(_), Err(error)) => result.partitions.push(failed(index, error)),
                (Some(owner), Ok(())) => {
                    groups.push(
                        owner,
                        sent.len(),
                        (
                            TopicPartition {
                                topic: name.clone(),
                                partition: index,
                            },
                            partition.leader_epoch,
                        ),
                    );
                    sent.push((ti, pi));
                    result
                        .partitions
                        .push(failed(index, ErrorCode::NotLeaderOrFollower));
                }
            }
        }
        topics.push(result);
    }
    let replies = groups.send(shard, ShardRequest::EpochEndOffsets).await;
    Box::pin(async move {
        for (positions, reply) in replies.await {
            let Some(ShardReply::EpochEndOffsets(ends)) = reply else {
                continue;
            };
            for (position, end) in positions.into_iter().zip(ends) {
                let (ti, pi) = sent[position];
                let answer = &mut topics[ti].partitions[pi];
                match end {
                    Ok((epoch, end_offset)) => {
                        answer.error_code = 0;
                        answer.leader_epoch = epoch;
                        answer.end_offset = end_offset;
                    }
                    Err(error_code) => answer.error_code = error_code,
                }
            }
        }
        let mut response = OffsetForLeaderEpochResponse::default();
        response.topics = topics;
        encode_response(
            ApiKey::OffsetForLeaderEpoch,
            version,
            correlation_id,
            &response,
        )
    })
}
