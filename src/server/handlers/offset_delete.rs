//! OffsetDelete (key 47), v0: deletes a group's committed offsets of topics
//! the group does not consume. The answer waits until the tombstones are
//! durable.
//!
//! As in Kafka's `KafkaApis.handleOffsetDeleteRequest`, topics that do not
//! exist are answered UNKNOWN_TOPIC_OR_PARTITION here and only the others
//! go to the coordinator (which is always asked, so group errors show). A
//! group-level error from the coordinator replaces the whole answer (Kafka's
//! `OffsetDeleteResponse.Builder.merge`).
//!
//! Authorization, as in Kafka: DELETE on the group, else a top-level
//! GROUP_AUTHORIZATION_FAILED alone; then READ on each topic, else its
//! partitions are TOPIC_AUTHORIZATION_FAILED, whether the topic exists or
//! not.

use std::rc::Rc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse};

use super::encode_response;
use super::groups::{string, topic_exists, unexpected, TopicErrors};
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request, keeping only topics `readable` and `exists`
/// accept; the others' partitions are added to `errors` as
/// TOPIC_AUTHORIZATION_FAILED (checked first) or UNKNOWN_TOPIC_OR_PARTITION.
pub fn to_coordinator(
    request: &OffsetDeleteRequest,
    readable: impl Fn(&str) -> bool,
    exists: impl Fn(&str) -> bool,
    errors: &mut TopicErrors,
) -> group::OffsetDeleteRequest {
    let mut topics = Vec::new();
    for topic in &request.topics {
        let name = string(&topic.name);
        let partition_indexes: Vec<i32> =
            topic.partitions.iter().map(|p| p.partition_index).collect();
        let error = if !readable(&name) {
            ErrorCode::TopicAuthorizationFailed
        } else if !exists(&name) {
            ErrorCode::UnknownTopicOrPartition
        } else {
            topics.push(group::OffsetFetchTopic {
                name,
                partition_indexes,
            });
            continue;
        };
        for index in partition_indexes {
            errors.add(&name, index, error.code());
        }
    }
    group::OffsetDeleteRequest {
        group_id: string(&request.group_id),
        topics,
    }
}

/// The wire answer: the coordinator's group-level error alone, or the
/// handler's partition errors merged with the coordinator's.
pub fn to_wire(
    mut errors: TopicErrors,
    response: group::OffsetDeleteResponse,
) -> OffsetDeleteResponse {
    let mut wire = OffsetDeleteResponse::default();
    if let Some(error) = response.error {
        wire.error_code = error.code();
        return wire;
    }
    for topic in response.topics {
        for (index, error) in topic.partitions {
            errors.add(&topic.name, index, group::error_code(error));
        }
    }
    wire.topics = errors.into_wire(
        |name, partitions| {
            let mut topic = OffsetDeleteResponseTopic::default();
            topic.name = name;
            topic.partitions = partitions;
            topic
        },
        |index, error_code| {
            let mut partition = OffsetDeleteResponsePartition::default();
            partition.partition_index = index;
            partition.error_code = error_code;
            partition
        },
    );
    wire
}

/// Answers OffsetDelete.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: OffsetDeleteRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let mut errors = TopicErrors::default();
        let failed = |error: ErrorCode| group::OffsetDeleteResponse {
            error: Some(error),
            topics: Vec::new(),
        };
        let response = if !access.group(AclOperation::Delete, &request.group_id) {
            failed(ErrorCode::GroupAuthorizationFailed)
        } else {
            let call = to_coordinator(
                &request,
                |t| access.topic(AclOperation::Read, t),
                |t| topic_exists(&shard, t),
                &mut errors,
            );
            let group_id = call.group_id.clone();
            match call_group(&shard, &group_id, GroupCall::OffsetDelete(call)).await {
                GroupReply::OffsetDelete(response) => response,
                GroupReply::Unavailable(error) => failed(error),
                other => failed(unexpected("OffsetDelete", &other)),
            }
        };
        encode_response(
            ApiKey::OffsetDelete,
            version,
            correlation_id,
            &to_wire(errors, response),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::server::handlers::groups::topic_name;
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };

    use super::*;

    #[test]
    fn unknown_topics_are_answered_here_and_a_group_error_replaces_everything() {
        let mut request = OffsetDeleteRequest::default();
        request.group_id = super::super::groups::group_id("g");
        for name in ["known", "missing"] {
            let mut topic = OffsetDeleteRequestTopic::default();
            topic.name = topic_name(name);
            let mut partition = OffsetDeleteRequestPartition::default();
            partition.partition_index = 0;
            topic.partitions.push(partition);
            request.topics.push(topic);
        }
        let mut errors = TopicErrors::default();
        let call = to_coordinator(&request, |_| true, |t| t == "known", &mut errors);
        assert_eq!(call.topics.len(), 1);
        let ok = to_wire(
            errors.clone(),
            group::OffsetDeleteResponse {
                error: None,
                topics: vec![group::OffsetDeleteTopicResponse {
                    name: "known".into(),
                    partitions: vec![(0, None)],
                }],
            },
        );
        assert_eq!(ok.error_code, 0);
        assert_eq!(ok.topics[0].name.as_str(), "missing");
        assert_eq!(
            ok.topics[0].partitions[0].error_code,
            ErrorCode::UnknownTopicOrPartition.code()
        );
        assert_eq!(ok.topics[1].name.as_str(), "known");
        let failed = to_wire(
            errors,
            group::OffsetDeleteResponse {
                error: Some(ErrorCode::GroupIdNotFound),
                topics: Vec::new(),
            },
        );
        assert_eq!(failed.error_code, ErrorCode::GroupIdNotFound.code());
        assert!(failed.topics.is_empty());
        let mut errors = TopicErrors::default();
        let call = to_coordinator(&request, |t| t == "known", |_| false, &mut errors);
        assert!(call.topics.is_empty());
        assert_eq!(
            errors.topics,
            vec![
                (
                    "known".to_string(),
                    vec![(0, ErrorCode::UnknownTopicOrPartition.code())]
                ),
                (
                    "missing".to_string(),
                    vec![(0, ErrorCode::TopicAuthorizationFailed.code())]
                ),
            ],
            "an unreadable topic is refused whether it exists or not"
        );
    }
}
