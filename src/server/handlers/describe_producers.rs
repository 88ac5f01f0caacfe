//! DescribeProducers (key 61, v0, flexible): per partition, the producers
//! the partition holds state for (Kafka's `activeProducerState`): id, epoch,
//! last sequence, last timestamp, coordinator epoch and the first offset of
//! the open transaction (-1 when none). A topic or partition that does not
//! exist gets UNKNOWN_TOPIC_OR_PARTITION; one whose owning shard does not
//! hold it (or cannot be reached) NOT_LEADER_OR_FOLLOWER, as Kafka answers
//! for a partition it does not lead. Runs on the connection's shard; the
//! producer state is read on the owning shards.

use std::rc::Rc;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, DescribeProducersRequest, DescribeProducersResponse, ProducerId,
};

use super::{encode_response, str_bytes, ShardGroups};
use crate::partition::ProducerDescription;
use crate::protocol::ErrorCode;
use crate::server::access::refusal_message;
use crate::server::connection::Responder;
use crate::shard::messages::{ShardReply, ShardRequest, TopicPartition};
use crate::shard::Shard;

/// Answers DescribeProducers.
pub async fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeProducersRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let image = shard.image();
    // Per requested partition, flattened: an early error or a position in
    // a shard group.
    let mut outcomes: Vec<Result<Vec<ProducerDescription>, i16>> = Vec::new();
    let mut groups: ShardGroups<TopicPartition> = ShardGroups::new();
    for topic in &request.topics {
        let name = topic.name.to_string();
        let image_topic = image.topic(&name);
        // READ on the topic, asked before it is looked for.
        let readable = access.topic(crate::security::acl::AclOperation::Read, &name);
        for &index in &topic.partition_indexes {
            let position = outcomes.len();
            match image_topic.and_then(|t| shard.owner_of(t, index)) {
                _ if !readable => outcomes.push(Err(ErrorCode::TopicAuthorizationFailed.code())),
                None => outcomes.push(Err(ErrorCode::UnknownTopicOrPartition.code())),
                Some(owner) => {
                    outcomes.push(Err(ErrorCode::NotLeaderOrFollower.code()));
                    groups.push(
                        owner,
                        position,
                        TopicPartition {
                            topic: name.clone(),
                            partition: index,
                        },
                    );
                }
            }
        }
    }
    let replies = groups.send(shard, ShardRequest::DescribeProducers).await;
    Box::pin(async move {
        for (positions, reply) in replies.await {
            if let Some(ShardReply::DescribeProducers(described)) = reply {
                for (position, outcome) in positions.into_iter().zip(described) {
                    outcomes[position] = outcome;
                }
            }
        }
        let mut outcomes = outcomes.into_iter();
        let mut response = DescribeProducersResponse::default();
        for topic in &request.topics {
            let mut topic_response = TopicResponse::default();
            topic_response.name = topic.name.clone();
            for &index in &topic.partition_indexes {
                let mut partition = PartitionResponse::default();
                partition.partition_index = index;
                match outcomes.next() {
                    Some(Ok(producers)) => {
                        partition.active_producers = producers
                            .into_iter()
                            .map(|p| {
                                let mut state = ProducerState::default();
                                state.producer_id = ProducerId(p.producer_id);
                                state.producer_epoch = i32::from(p.producer_epoch);
                                state.last_sequence = p.last_sequence;
                                state.last_timestamp = p.last_timestamp;
                                state.coordinator_epoch = p.coordinator_epoch;
                                state.current_txn_start_offset = p.current_txn_start_offset;
                                state
                            })
                            .collect();
                    }
                    Some(Err(error_code)) => {
                        partition.error_code = error_code;
                        if error_code == ErrorCode::TopicAuthorizationFailed.code() {
                            partition.error_message = Some(str_bytes(refusal_message(
                                ErrorCode::TopicAuthorizationFailed,
                            )));
                        }
                    }
                    None => partition.error_code = ErrorCode::UnknownServerError.code(),
                }
                topic_response.partitions.push(partition);
            }
            response.topics.push(topic_response);
        }
        encode_response(
            ApiKey::DescribeProducers,
            version,
            correlation_id,
            &response,
        )
    })
}
