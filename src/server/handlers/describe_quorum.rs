//! DescribeQuorum (key 55, v0-v2, flexible): `kafka-metadata-quorum
//! describe --status/--replication`. This node's metadata log is the whole
//! quorum: one voter, always its leader, no observers, so the answer is
//! that quorum as it is: leader this node at epoch 1 (there are no
//! elections), the high watermark and the voter's log end offset the
//! metadata offset, the voter fetched and caught up "now" (v1+, as Kafka
//! reports the leader), its directory id the zero UUID (as Kafka's static
//! quorum), and (v2) this node with its listeners: a combined node here
//! has no separate controller listener.
//!
//! As Kafka 4.1 answers: the request must name exactly
//! `__cluster_metadata` partition 0, else every partition asked for is
//! UNKNOWN_TOPIC_OR_PARTITION with Kafka's message; needs DESCRIBE on the
//! cluster, else CLUSTER_AUTHORIZATION_FAILED for the whole request.

use std::rc::Rc;

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::{cluster_refusal, Access};
use crate::server::connection::Response;
use crate::shard::Shard;

/// The metadata log's topic, as Kafka names it.
const METADATA_TOPIC: &str = "__cluster_metadata";
/// First version with error messages, directory ids and nodes.
const MESSAGES_SINCE: i16 = 2;

/// Answers DescribeQuorum.
pub fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    request: DescribeQuorumRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let mut response = DescribeQuorumResponse::default();
    response.error_message = Some(str_bytes(""));
    if !access.cluster(AclOperation::Describe) {
        response.error_code = ErrorCode::ClusterAuthorizationFailed.code();
        if version >= MESSAGES_SINCE {
            response.error_message = Some(str_bytes(&cluster_refusal(
                ApiKey::DescribeQuorum,
                "DESCRIBE",
            )));
        }
        return encode_response(ApiKey::DescribeQuorum, version, correlation_id, &response);
    }
    let valid = matches!(
        request.topics.as_slice(),
        [topic] if topic.topic_name.as_str() == METADATA_TOPIC
            && topic.partitions.len() == 1
            && topic.partitions[0].partition_index == 0
    );
    let config = &shard.config;
    let image = shard.image();
    let offset = image.applied_records as i64;
    let now_ms = crate::partition::now_ms();
    response.topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let mut answer = TopicData::default();
            answer.partitions = topic
                .partitions
                .into_iter()
                .map(|p| {
                    let mut partition = PartitionData::default();
                    partition.partition_index = p.partition_index;
                    if !valid {
                        let error = ErrorCode::UnknownTopicOrPartition;
                        partition.error_code = error.code();
                        if version >= MESSAGES_SINCE {
                            partition.error_message =
                                Some(str_bytes("This server does not host this topic-partition."));
                        }
                        return partition;
                    }
                    partition.error_message = Some(str_bytes(""));
                    partition.leader_id = BrokerId(config.node_id);
                    // The single voter elects itself at each start-up: 1
                    // at the first, one more at each since, as in Kafka.
                    partition.leader_epoch = image.restarts.saturating_add(1);
                    partition.high_watermark = offset;
                    let mut voter = ReplicaState::default();
                    voter.replica_id = BrokerId(config.node_id);
                    voter.log_end_offset = offset;
                    if version >= 1 {
                        voter.last_fetch_timestamp = now_ms;
                        voter.last_caught_up_timestamp = now_ms;
                    }
                    partition.current_voters = vec![voter];
                    partition
                })
                .collect();
            answer.topic_name = TopicName(topic.topic_name.0);
            answer
        })
        .collect();
    if valid && version >= MESSAGES_SINCE {
        let mut node = Node::default();
        node.node_id = BrokerId(config.node_id);
        node.listeners = config
            .listeners
            .iter()
            .map(|l| {
                let mut listener = Listener::default();
                listener.name = str_bytes(l.security_protocol.name());
                listener.host = str_bytes(&l.advertised_host);
                listener.port = l.advertised_port;
                listener
            })
            .collect();
        response.nodes = vec![node];
    }
    encode_response(ApiKey::DescribeQuorum, version, correlation_id, &response)
}
