//! ElectLeaders (key 43, v0-2; v1 adds the election type and a top-level
//! error, v2 is flexible), as `kafka-leader-election` and admin clients'
//! `electLeaders` ask. A single node already leads every partition as its
//! only, preferred replica, so no election is ever needed: each partition
//! named is answered ELECTION_NOT_NEEDED, for preferred and unclean
//! elections alike, and a request for every partition (null) with every
//! topic and no partitions, as Kafka 4.1 answers when none needs one. Unknown topics
//! and partitions are UNKNOWN_TOPIC_OR_PARTITION; an election type other
//! than preferred (0) or unclean (1) is INVALID_REQUEST for the request and
//! every partition. Topics and partitions are answered in request order,
//! repeats included, with Kafka's messages.

use std::rc::Rc;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ApiKey, ElectLeadersRequest, ElectLeadersResponse, TopicName};

use super::{encode_response, str_bytes};
use crate::protocol::ErrorCode;
use crate::server::connection::Response;
use crate::shard::Shard;

/// The preferred-replica election type.
const PREFERRED: i8 = 0;
/// The unclean election type.
const UNCLEAN: i8 = 1;

/// Answers ElectLeaders.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ElectLeadersRequest,
    version: i16,
    correlation_id: i32,
) -> Response {
    let election_type = if version >= 1 {
        request.election_type
    } else {
        PREFERRED
    };
    let unknown_type = !matches!(election_type, PREFERRED | UNCLEAN);
    let image = shard.image();
    let mut response = ElectLeadersResponse::default();
    // ALTER on the cluster, else the request and every partition named are
    // refused.
    if !access.cluster(crate::security::acl::AclOperation::Alter) {
        let error = ErrorCode::ClusterAuthorizationFailed.code();
        let message = str_bytes(&crate::server::access::cluster_refusal(
            ApiKey::ElectLeaders,
            "ALTER",
        ));
        response.error_code = error;
        response.replica_election_results = request
            .topic_partitions
            .unwrap_or_default()
            .into_iter()
            .map(|wanted| {
                let mut result = ReplicaElectionResult::default();
                result.partition_result = wanted
                    .partitions
                    .iter()
                    .map(|&partition| {
                        let mut answer = PartitionResult::default();
                        answer.partition_id = partition;
                        answer.error_code = error;
                        answer.error_message = Some(message.clone());
                        answer
                    })
                    .collect();
                result.topic = wanted.topic;
                result
            })
            .collect();
        return encode_response(ApiKey::ElectLeaders, version, correlation_id, &response);
    }
    if unknown_type {
        response.error_code = ErrorCode::InvalidRequest.code();
    }
    let Some(wanted) = request.topic_partitions else {
        // Every partition: one entry per topic, each without partitions,
        // since none needed an election (none at all for an unknown type).
        if !unknown_type {
            response.replica_election_results = image
                .topics
                .values()
                .map(|topic| {
                    let mut result = ReplicaElectionResult::default();
                    result.topic = TopicName(str_bytes(&topic.name));
                    result
                })
                .collect();
        }
        return encode_response(ApiKey::ElectLeaders, version, correlation_id, &response);
    };
    // Messages shared by every partition they answer (cloning a StrBytes
    // shares its bytes), so a long topic name is not copied per partition.
    let unknown_type_message = str_bytes(&format!("Unknown election type {election_type}"));
    let not_needed = str_bytes("Leader election not needed for topic partition.");
    response.replica_election_results = wanted
        .into_iter()
        .map(|wanted| {
            let name = wanted.topic.to_string();
            let topic = image.topic(&name);
            let no_such_topic = str_bytes(&format!("No such topic as {name}"));
            let mut result = ReplicaElectionResult::default();
            result.partition_result = wanted
                .partitions
                .iter()
                .map(|&partition| {
                    let (error, message) = match topic {
                        _ if unknown_type => {
                            (ErrorCode::InvalidRequest, unknown_type_message.clone())
                        }
                        None => (ErrorCode::UnknownTopicOrPartition, no_such_topic.clone()),
                        // An existing topic's name is at most 249 bytes.
                        Some(t) if shard.owner_of(t, partition).is_none() => (
                            ErrorCode::UnknownTopicOrPartition,
                            str_bytes(&format!("No such partition as {name}-{partition}")),
                        ),
                        Some(_) => (ErrorCode::ElectionNotNeeded, not_needed.clone()),
                    };
                    let mut answer = PartitionResult::default();
                    answer.partition_id = partition;
                    answer.error_code = error.code();
                    answer.error_message = Some(message);
                    answer
                })
                .collect();
            result.topic = wanted.topic;
            result
        })
        .collect();
    encode_response(ApiKey::ElectLeaders, version, correlation_id, &response)
}
