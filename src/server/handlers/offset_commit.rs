//! OffsetCommit (key 8), v2-v9: stores consumed positions. The answer waits
//! until the offset records are durable in `__consumer_offsets`.
//!
//! As in Kafka's `KafkaApis.handleOffsetCommitRequest`, partitions of topics
//! that do not exist (or partitions a topic does not have) are answered
//! UNKNOWN_TOPIC_OR_PARTITION here and never reach the coordinator; when no
//! partition is left the coordinator is not asked at all. The answer lists
//! those partitions first, then the coordinator's, merged per topic
//! (Kafka's `OffsetCommitResponse.Builder`).
//!
//! v2-v4 carry `retention_time_ms`, v6+ `committed_leader_epoch`, v7+
//! `group_instance_id`; v9+ get GROUP_ID_NOT_FOUND for a generation-checked
//! commit to an unknown group (the coordinator decides from the version).
//!
//! Authorization, as in Kafka: READ on the group, else every requested
//! partition is GROUP_AUTHORIZATION_FAILED; then READ on each topic, else its
//! partitions are TOPIC_AUTHORIZATION_FAILED, whether the topic exists or not.

use std::rc::Rc;

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetCommitRequest, OffsetCommitResponse};

use super::encode_response;
use super::groups::{opt_string, partition_exists, string, topic_exists, unexpected, TopicErrors};
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`, keeping only
/// the partitions of topics `readable` accepts that `exists` accepts; the
/// others are added to `errors` as TOPIC_AUTHORIZATION_FAILED or
/// UNKNOWN_TOPIC_OR_PARTITION.
pub fn to_coordinator(
    request: &OffsetCommitRequest,
    version: i16,
    readable: impl Fn(&str) -> bool,
    topic_exists: impl Fn(&str) -> bool,
    partition_exists: impl Fn(&str, i32) -> bool,
    errors: &mut TopicErrors,
) -> group::OffsetCommitRequest {
    let unknown = ErrorCode::UnknownTopicOrPartition.code();
    let mut topics = Vec::new();
    for topic in &request.topics {
        let name = string(&topic.name);
        // Authorized before existence, so a refused caller cannot learn
        // which topics exist.
        if !readable(&name) {
            for partition in &topic.partitions {
                errors.add(
                    &name,
                    partition.partition_index,
                    ErrorCode::TopicAuthorizationFailed.code(),
                );
            }
            continue;
        }
        if !topic_exists(&name) {
            for partition in &topic.partitions {
                errors.add(&name, partition.partition_index, unknown);
            }
            continue;
        }
        let mut partitions = Vec::new();
        for partition in &topic.partitions {
            if !partition_exists(&name, partition.partition_index) {
                errors.add(&name, partition.partition_index, unknown);
                continue;
            }
            partitions.push(group::OffsetCommitPartition {
                partition_index: partition.partition_index,
                committed_offset: partition.committed_offset,
                committed_leader_epoch: if version >= 6 {
                    partition.committed_leader_epoch
                } else {
                    -1
                },
                committed_metadata: opt_string(&partition.committed_metadata),
            });
        }
        if !partitions.is_empty() {
            topics.push(group::OffsetCommitTopic { name, partitions });
        }
    }
    group::OffsetCommitRequest {
        group_id: string(&request.group_id),
        generation_id: request.generation_id_or_member_epoch,
        member_id: string(&request.member_id),
        group_instance_id: if version >= 7 {
            opt_string(&request.group_instance_id)
        } else {
            None
        },
        retention_time_ms: if version <= 4 {
            request.retention_time_ms
        } else {
            -1
        },
        topics,
        api_version: version,
    }
}

/// The coordinator's answer when it could not be asked: `error` for every
/// partition sent to it, given as (topic, partition indexes).
pub fn failed<'a>(
    topics: impl Iterator<Item = (&'a String, Vec<i32>)>,
    error: ErrorCode,
) -> group::OffsetCommitResponse {
    group::OffsetCommitResponse {
        topics: topics
            .map(|(name, partitions)| group::OffsetCommitTopicResponse {
                name: name.clone(),
                partitions: partitions
                    .into_iter()
                    .map(|partition_index| group::OffsetCommitPartitionResponse {
                        partition_index,
                        error: Some(error),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn partitions_of(
    request: &group::OffsetCommitRequest,
) -> impl Iterator<Item = (&String, Vec<i32>)> {
    request.topics.iter().map(|t| {
        let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
        (&t.name, partitions)
    })
}

/// Adds the coordinator's per-partition answers to the handler's own errors.
pub fn merge_coordinator_errors(errors: &mut TopicErrors, response: group::OffsetCommitResponse) {
    for topic in response.topics {
        for partition in topic.partitions {
            errors.add(
                &topic.name,
                partition.partition_index,
                group::error_code(partition.error),
            );
        }
    }
}

/// The wire answer when the whole request is refused: `error` on every
/// requested partition, topics as the request lists them (Kafka's
/// `OffsetCommitRequest.getErrorResponse`).
pub fn refused(request: &OffsetCommitRequest, error: ErrorCode) -> OffsetCommitResponse {
    let mut wire = OffsetCommitResponse::default();
    wire.topics = request
        .topics
        .iter()
        .map(|t| {
            let mut topic = OffsetCommitResponseTopic::default();
            topic.name = t.name.clone();
            topic.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut partition = OffsetCommitResponsePartition::default();
                    partition.partition_index = p.partition_index;
                    partition.error_code = error.code();
                    partition
                })
                .collect();
            topic
        })
        .collect();
    wire
}

/// The wire answer: the handler's own partition errors merged with the
/// coordinator's answer.
pub fn to_wire(
    mut errors: TopicErrors,
    response: group::OffsetCommitResponse,
) -> OffsetCommitResponse {
    merge_coordinator_errors(&mut errors, response);
    let mut wire = OffsetCommitResponse::default();
    wire.topics = errors.into_wire(
        |name, partitions| {
            let mut topic = OffsetCommitResponseTopic::default();
            topic.name = name;
            topic.partitions = partitions;
            topic
        },
        |index, error_code| {
            let mut partition = OffsetCommitResponsePartition::default();
            partition.partition_index = index;
            partition.error_code = error_code;
            partition
        },
    );
    wire
}

/// Answers OffsetCommit.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: OffsetCommitRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        if !access.group(AclOperation::Read, &request.group_id) {
            let answer = refused(&request, ErrorCode::GroupAuthorizationFailed);
            return encode_response(ApiKey::OffsetCommit, version, correlation_id, &answer);
        }
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request,
            version,
            |topic| access.topic(AclOperation::Read, topic),
            |topic| topic_exists(&shard, topic),
            |topic, partition| partition_exists(&shard, topic, partition),
            &mut errors,
        );
        let response = if call.topics.is_empty() {
            group::OffsetCommitResponse { topics: Vec::new() }
        } else {
            let group_id = call.group_id.clone();
            let sent = call.clone();
            match call_group(&shard, &group_id, GroupCall::OffsetCommit(call)).await {
                GroupReply::OffsetCommit(response) => response,
                GroupReply::Unavailable(error) => failed(partitions_of(&sent), error),
                other => failed(partitions_of(&sent), unexpected("OffsetCommit", &other)),
            }
        };
        encode_response(
            ApiKey::OffsetCommit,
            version,
            correlation_id,
            &to_wire(errors, response),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::server::handlers::groups::topic_name;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    fn request() -> OffsetCommitRequest {
        let partition = |index: i32, offset: i64| {
            let mut p = OffsetCommitRequestPartition::default();
            p.partition_index = index;
            p.committed_offset = offset;
            p.committed_leader_epoch = 4;
            p.committed_metadata = Some(StrBytes::from_static_str("meta"));
            p
        };
        let topic = |name: &str, partitions| {
            let mut t = OffsetCommitRequestTopic::default();
            t.name = topic_name(name);
            t.partitions = partitions;
            t
        };
        let mut request = OffsetCommitRequest::default();
        request.group_id = super::super::groups::group_id("g");
        request.generation_id_or_member_epoch = 2;
        request.member_id = StrBytes::from_static_str("m-1");
        request.retention_time_ms = 60_000;
        request.topics = vec![
            topic("known", vec![partition(0, 10), partition(7, 70)]),
            topic("missing", vec![partition(0, 5)]),
        ];
        request
    }

    #[test]
    fn unknown_topics_and_partitions_are_answered_before_the_coordinator_is_asked() {
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request(),
            6,
            |_| true,
            |t| t == "known",
            |t, p| t == "known" && p < 2,
            &mut errors,
        );
        assert_eq!(call.topics.len(), 1);
        assert_eq!(call.topics[0].partitions.len(), 1);
        assert_eq!(call.topics[0].partitions[0].committed_leader_epoch, 4);
        assert_eq!(call.retention_time_ms, -1, "v6 has no retention time");
        let unknown = ErrorCode::UnknownTopicOrPartition.code();
        assert_eq!(
            errors.topics,
            vec![
                ("known".to_string(), vec![(7, unknown)]),
                ("missing".to_string(), vec![(0, unknown)]),
            ]
        );
        let wire = to_wire(
            errors,
            group::OffsetCommitResponse {
                topics: vec![group::OffsetCommitTopicResponse {
                    name: "known".into(),
                    partitions: vec![group::OffsetCommitPartitionResponse {
                        partition_index: 0,
                        error: None,
                    }],
                }],
            },
        );
        assert_eq!(wire.topics.len(), 2);
        let known: Vec<(i32, i16)> = wire.topics[0]
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.error_code))
            .collect();
        assert_eq!(known, vec![(7, unknown), (0, 0)]);
    }

    #[test]
    fn old_versions_pass_the_retention_time_and_no_epoch() {
        let mut errors = TopicErrors::default();
        let call = to_coordinator(&request(), 2, |_| true, |_| true, |_, _| true, &mut errors);
        assert_eq!(call.retention_time_ms, 60_000);
        assert_eq!(call.topics[0].partitions[0].committed_leader_epoch, -1);
        assert_eq!(call.topics.len(), 2);
        assert!(errors.topics.is_empty());
    }

    #[test]
    fn unreadable_topics_are_refused_before_existence_is_checked() {
        let mut errors = TopicErrors::default();
        let call = to_coordinator(
            &request(),
            6,
            |t| t == "known",
            |t| t == "known",
            |_, _| true,
            &mut errors,
        );
        assert_eq!(call.topics.len(), 1);
        assert_eq!(
            errors.topics,
            vec![(
                "missing".to_string(),
                vec![(0, ErrorCode::TopicAuthorizationFailed.code())]
            )]
        );
    }

    #[test]
    fn a_refused_group_refuses_every_requested_partition() {
        let wire = refused(&request(), ErrorCode::GroupAuthorizationFailed);
        let flat: Vec<(String, i32, i16)> = wire
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.to_string(), p.partition_index, p.error_code))
            })
            .collect();
        let code = ErrorCode::GroupAuthorizationFailed.code();
        assert_eq!(
            flat,
            vec![
                ("known".to_string(), 0, code),
                ("known".to_string(), 7, code),
                ("missing".to_string(), 0, code),
            ]
        );
    }
}
