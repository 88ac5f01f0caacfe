//! OffsetFetch (key 9), v1-v9: committed offsets, answered at once (with
//! `require_stable`, once the coordinator's appends in flight are durable).
//!
//! v1-v7 ask about one group (`topics` null = every committed offset, v2+);
//! v8+ about several groups, each coordinated by its own `__consumer_offsets`
//! partition: the groups are split by partition, each partition is asked
//! once, and the answers are put back in request order. Partitions never
//! committed answer offset -1, metadata "" and leader epoch -1.
//!
//! Group-level errors go in `error_code` from v2 (per group from v8); v1 has
//! none, so a group-level error is given on every requested partition, as
//! Kafka does (`OffsetFetchResponse.groupError`). With `require_stable`
//! (v7+, KIP-447) a partition that has pending transactional offsets answers
//! UNSTABLE_OFFSET_COMMIT at partition level (offset -1), and the client
//! retries. The v9 member id and epoch are checked for KIP-848 groups: the
//! member must be at that epoch in what is durable (in the newest state
//! with `require_stable`), as Kafka's `validateOffsetFetch` at the last
//! committed offset.
//!
//! Authorization, as in Kafka: DESCRIBE on each group, else that group is
//! answered GROUP_AUTHORIZATION_FAILED (as a coordinator's group error) and
//! its coordinator is not asked. Named topics the caller may not DESCRIBE
//! are not asked about and are answered TOPIC_AUTHORIZATION_FAILED (offset
//! -1) after the coordinator's topics, whether they exist or not; from an
//! all-topics answer they are silently left out.

use std::rc::Rc;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{ApiKey, OffsetFetchRequest, OffsetFetchResponse};

use super::encode_response;
use super::groups::{call_by_partition, group_id, string, topic_name, unexpected};
use super::str_bytes;
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::access::Access;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The groups a wire request of `version` asks about, in request order.
pub fn to_coordinator(request: &OffsetFetchRequest, version: i16) -> Vec<group::OffsetFetchGroup> {
    if version >= 8 {
        request
            .groups
            .iter()
            .map(|g| group::OffsetFetchGroup {
                group_id: string(&g.group_id),
                member: g
                    .member_id
                    .as_ref()
                    .filter(|_| version >= 9)
                    .map(|m| (m.to_string(), g.member_epoch)),
                topics: g.topics.as_ref().map(|topics| {
                    topics
                        .iter()
                        .map(|t| group::OffsetFetchTopic {
                            name: string(&t.name),
                            partition_indexes: t.partition_indexes.clone(),
                        })
                        .collect()
                }),
            })
            .collect()
    } else {
        vec![group::OffsetFetchGroup {
            group_id: string(&request.group_id),
            member: None,
            topics: request.topics.as_ref().map(|topics| {
                topics
                    .iter()
                    .map(|t| group::OffsetFetchTopic {
                        name: string(&t.name),
                        partition_indexes: t.partition_indexes.clone(),
                    })
                    .collect()
            }),
        }]
    }
}

/// A group's answer when its coordinator could not answer: `error` at group
/// level.
fn failed(wanted: &group::OffsetFetchGroup, error: ErrorCode) -> group::OffsetFetchGroupResponse {
    group::OffsetFetchGroupResponse {
        group_id: wanted.group_id.clone(),
        error: Some(error),
        topics: Vec::new(),
    }
}

/// A group's request split by what the caller may DESCRIBE: the group with
/// only the `describable` topics, to ask the coordinator, and the refused
/// topics. An all-topics request (topics null) is not split: its answer is
/// filtered instead (see [`with_topic_refusals`]).
pub fn split_topics(
    wanted: &group::OffsetFetchGroup,
    describable: impl Fn(&str) -> bool,
) -> (group::OffsetFetchGroup, Vec<group::OffsetFetchTopic>) {
    let Some(topics) = &wanted.topics else {
        return (wanted.clone(), Vec::new());
    };
    let (allowed, refused) = topics.iter().cloned().partition(|t| describable(&t.name));
    let asked = group::OffsetFetchGroup {
        group_id: wanted.group_id.clone(),
        member: wanted.member.clone(),
        topics: Some(allowed),
    };
    (asked, refused)
}

/// The coordinator's answer for `asked` with the topics the caller may not
/// see dealt with, as Kafka's `fetchOffsetsForGroup` and
/// `fetchAllOffsetsForGroup` do: the `refused` topics appended with
/// TOPIC_AUTHORIZATION_FAILED, or for an all-topics request the topics not
/// `describable` removed. A group-level error is answered as it is.
pub fn with_topic_refusals(
    asked: &group::OffsetFetchGroup,
    mut answer: group::OffsetFetchGroupResponse,
    refused: Vec<group::OffsetFetchTopic>,
    describable: impl Fn(&str) -> bool,
) -> group::OffsetFetchGroupResponse {
    if answer.error.is_some() {
        return answer;
    }
    if asked.topics.is_none() {
        answer.topics.retain(|t| describable(&t.name));
        return answer;
    }
    answer.topics.extend(refused.into_iter().map(|t| {
        group::OffsetFetchTopicResponse {
            name: t.name,
            partitions: t
                .partition_indexes
                .into_iter()
                .map(|partition_index| group::OffsetFetchPartitionResponse {
                    partition_index,
                    committed_offset: -1,
                    committed_leader_epoch: -1,
                    metadata: String::new(),
                    error: Some(ErrorCode::TopicAuthorizationFailed),
                })
                .collect(),
        }
    }));
    answer
}

/// v1-v7 answer for the one group.
pub fn to_wire_single(
    wanted: &group::OffsetFetchGroup,
    response: group::OffsetFetchGroupResponse,
    version: i16,
) -> OffsetFetchResponse {
    let mut wire = OffsetFetchResponse::default();
    let partition = |p: group::OffsetFetchPartitionResponse| {
        let mut partition = OffsetFetchResponsePartition::default();
        partition.partition_index = p.partition_index;
        partition.committed_offset = p.committed_offset;
        if version >= 5 {
            partition.committed_leader_epoch = p.committed_leader_epoch;
        }
        partition.metadata = Some(str_bytes(&p.metadata));
        partition.error_code = group::error_code(p.error);
        partition
    };
    match response.error {
        Some(error) if version < 2 => {
            // No top-level error before v2: every requested partition
            // carries the group's error.
            wire.topics = wanted
                .topics
                .iter()
                .flatten()
                .map(|t| {
                    let mut topic = OffsetFetchResponseTopic::default();
                    topic.name = topic_name(&t.name);
                    topic.partitions = t
                        .partition_indexes
                        .iter()
                        .map(|&index| {
                            partition(group::OffsetFetchPartitionResponse {
                                partition_index: index,
                                committed_offset: -1,
                                committed_leader_epoch: -1,
                                metadata: String::new(),
                                error: Some(error),
                            })
                        })
                        .collect();
                    topic
                })
                .collect();
        }
        Some(error) => wire.error_code = error.code(),
        None => {
            wire.topics = response
                .topics
                .into_iter()
                .map(|t| {
                    let mut topic = OffsetFetchResponseTopic::default();
                    topic.name = topic_name(&t.name);
                    topic.partitions = t.partitions.into_iter().map(partition).collect();
                    topic
                })
                .collect();
        }
    }
    wire
}

/// v8+ answer for one group.
pub fn to_wire_group(response: group::OffsetFetchGroupResponse) -> OffsetFetchResponseGroup {
    let mut wire = OffsetFetchResponseGroup::default();
    wire.group_id = group_id(&response.group_id);
    wire.error_code = group::error_code(response.error);
    wire.topics = response
        .topics
        .into_iter()
        .map(|t| {
            let mut topic = OffsetFetchResponseTopics::default();
            topic.name = topic_name(&t.name);
            topic.partitions = t
                .partitions
                .into_iter()
                .map(|p| {
                    let mut partition = OffsetFetchResponsePartitions::default();
                    partition.partition_index = p.partition_index;
                    partition.committed_offset = p.committed_offset;
                    partition.committed_leader_epoch = p.committed_leader_epoch;
                    partition.metadata = Some(str_bytes(&p.metadata));
                    partition.error_code = group::error_code(p.error);
                    partition
                })
                .collect();
            topic
        })
        .collect();
    wire
}

fn take_groups(reply: GroupReply) -> Result<Vec<group::OffsetFetchGroupResponse>, ErrorCode> {
    match reply {
        GroupReply::OffsetFetch(response) => Ok(response.groups),
        GroupReply::Unavailable(error) => Err(error),
        other => Err(unexpected("OffsetFetch", &other)),
    }
}

/// True when the caller may DESCRIBE the group, which it must to fetch its
/// offsets.
fn may_describe(access: &Access, wanted: &group::OffsetFetchGroup) -> bool {
    access.group(AclOperation::Describe, &wanted.group_id)
}

/// Answers OffsetFetch.
pub fn handle(
    shard: &Rc<Shard>,
    access: &Access,
    request: OffsetFetchRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let wanted = to_coordinator(&request, version);
        let require_stable = version >= 7 && request.require_stable;
        let describable = |topic: &str| access.topic(AclOperation::Describe, topic);
        let response = if version >= 8 {
            // Per group: None when refused, else what to ask and the
            // refused topics.
            let plans: Vec<_> = wanted
                .iter()
                .map(|g| may_describe(&access, g).then(|| split_topics(g, describable)))
                .collect();
            let items = plans
                .iter()
                .flatten()
                .map(|(asked, _)| (asked.group_id.clone(), asked.clone()))
                .collect();
            let answers = call_by_partition(
                &shard,
                items,
                |groups| {
                    GroupCall::OffsetFetch(group::OffsetFetchRequest {
                        groups,
                        require_stable,
                    })
                },
                take_groups,
            )
            .await;
            let mut answers = answers.into_iter();
            let mut response = OffsetFetchResponse::default();
            response.groups = wanted
                .iter()
                .zip(plans)
                .map(|(g, plan)| {
                    let answer = match (plan, answers.next()) {
                        (None, _) => failed(g, ErrorCode::GroupAuthorizationFailed),
                        (Some((asked, refused)), Some(answer)) => match answer {
                            Ok(answer) => with_topic_refusals(&asked, answer, refused, describable),
                            Err(error) => failed(&asked, error),
                        },
                        (Some((asked, _)), None) => {
                            failed(&asked, ErrorCode::CoordinatorNotAvailable)
                        }
                    };
                    to_wire_group(answer)
                })
                .collect();
            response
        } else {
            let Some(one) = wanted.into_iter().next() else {
                return encode_response(
                    ApiKey::OffsetFetch,
                    version,
                    correlation_id,
                    &OffsetFetchResponse::default(),
                );
            };
            if !may_describe(&access, &one) {
                let refused = failed(&one, ErrorCode::GroupAuthorizationFailed);
                return encode_response(
                    ApiKey::OffsetFetch,
                    version,
                    correlation_id,
                    &to_wire_single(&one, refused, version),
                );
            }
            let (asked, refused) = split_topics(&one, describable);
            let call = GroupCall::OffsetFetch(group::OffsetFetchRequest {
                groups: vec![asked.clone()],
                require_stable,
            });
            let answer = match take_groups(call_group(&shard, &asked.group_id, call).await) {
                Ok(groups) if groups.len() == 1 => groups.into_iter().next().expect("one group"),
                Ok(_) => failed(&asked, ErrorCode::CoordinatorNotAvailable),
                Err(error) => failed(&asked, error),
            };
            // A coordinator's group error names only the topics it was asked
            // about (v1), as in Kafka.
            let answer = with_topic_refusals(&asked, answer, refused, describable);
            to_wire_single(&asked, answer, version)
        };
        encode_response(ApiKey::OffsetFetch, version, correlation_id, &response)
    })
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    fn wanted() -> group::OffsetFetchGroup {
        group::OffsetFetchGroup {
            group_id: "g".into(),
            member: None,
            topics: Some(vec![group::OffsetFetchTopic {
                name: "t".into(),
                partition_indexes: vec![0, 1],
            }]),
        }
    }

    fn answer() -> group::OffsetFetchGroupResponse {
        group::OffsetFetchGroupResponse {
            group_id: "g".into(),
            error: None,
            topics: vec![group::OffsetFetchTopicResponse {
                name: "t".into(),
                partitions: vec![
                    group::OffsetFetchPartitionResponse {
                        partition_index: 0,
                        committed_offset: 42,
                        committed_leader_epoch: 3,
                        metadata: "m".into(),
                        error: None,
                    },
                    group::OffsetFetchPartitionResponse {
                        partition_index: 1,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        metadata: String::new(),
                        error: None,
                    },
                ],
            }],
        }
    }

    #[test]
    fn single_group_versions_encode_and_decode_back() {
        for version in 1..=7 {
            let wire = to_wire_single(&wanted(), answer(), version);
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back = OffsetFetchResponse::decode(&mut buf.freeze(), version).expect("decodes");
            let partitions = &back.topics[0].partitions;
            assert_eq!(partitions[0].committed_offset, 42);
            assert_eq!(partitions[0].metadata.as_deref(), Some("m"));
            assert_eq!(
                partitions[0].committed_leader_epoch,
                if version >= 5 { 3 } else { -1 }
            );
            assert_eq!(partitions[1].committed_offset, -1);
            assert_eq!(partitions[1].metadata.as_deref(), Some(""));
        }
    }

    #[test]
    fn a_group_error_is_top_level_from_v2_and_per_partition_in_v1() {
        let error = failed(&wanted(), ErrorCode::NotCoordinator);
        let v1 = to_wire_single(&wanted(), error.clone(), 1);
        assert_eq!(v1.error_code, 0);
        assert_eq!(v1.topics[0].partitions.len(), 2);
        assert!(v1.topics[0]
            .partitions
            .iter()
            .all(|p| p.error_code == ErrorCode::NotCoordinator.code() && p.committed_offset == -1));
        let v2 = to_wire_single(&wanted(), error, 2);
        assert_eq!(v2.error_code, ErrorCode::NotCoordinator.code());
        assert!(v2.topics.is_empty());
    }

    #[test]
    fn v8_groups_encode_and_decode_back() {
        let mut wire = OffsetFetchResponse::default();
        wire.groups = vec![
            to_wire_group(answer()),
            to_wire_group(failed(&wanted(), ErrorCode::CoordinatorLoadInProgress)),
        ];
        for version in 8..=9 {
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back = OffsetFetchResponse::decode(&mut buf.freeze(), version).expect("decodes");
            assert_eq!(back.groups.len(), 2);
            assert_eq!(back.groups[0].topics[0].partitions[0].committed_offset, 42);
            assert_eq!(
                back.groups[1].error_code,
                ErrorCode::CoordinatorLoadInProgress.code()
            );
        }
    }

    #[test]
    fn refused_topics_are_answered_after_the_coordinators() {
        let mut wanted = wanted();
        if let Some(topics) = wanted.topics.as_mut() {
            topics.push(group::OffsetFetchTopic {
                name: "secret".into(),
                partition_indexes: vec![4],
            });
        }
        let (asked, refused) = split_topics(&wanted, |t| t == "t");
        assert_eq!(asked.topics.as_ref().map(Vec::len), Some(1));
        assert_eq!(refused.len(), 1);
        let answer = with_topic_refusals(&asked, answer(), refused.clone(), |t| t == "t");
        assert_eq!(answer.topics.len(), 2);
        assert_eq!(answer.topics[1].name, "secret");
        let partition = &answer.topics[1].partitions[0];
        assert_eq!(partition.partition_index, 4);
        assert_eq!(partition.committed_offset, -1);
        assert_eq!(partition.error, Some(ErrorCode::TopicAuthorizationFailed));
        // A group error is answered as it is, with only the asked topics.
        let error = failed(&asked, ErrorCode::NotCoordinator);
        let answer = with_topic_refusals(&asked, error, refused, |t| t == "t");
        assert!(answer.topics.is_empty());
        let v1 = to_wire_single(&asked, answer, 1);
        assert_eq!(v1.topics.len(), 1);
        assert_eq!(v1.topics[0].name.as_str(), "t");
    }

    #[test]
    fn an_all_topics_answer_leaves_out_what_may_not_be_described() {
        let all = group::OffsetFetchGroup {
            group_id: "g".into(),
            member: None,
            topics: None,
        };
        let (asked, refused) = split_topics(&all, |_| false);
        assert_eq!(asked.topics, None);
        assert!(refused.is_empty());
        let answer = with_topic_refusals(&asked, answer(), refused, |t| t != "t");
        assert!(answer.topics.is_empty());
        assert_eq!(answer.error, None);
    }

    #[test]
    fn null_topics_mean_every_committed_offset() {
        let mut request = OffsetFetchRequest::default();
        request.group_id = group_id("g");
        request.topics = None;
        assert_eq!(to_coordinator(&request, 2)[0].topics, None);
        let mut topic = OffsetFetchRequestTopic::default();
        topic.name = topic_name("t");
        topic.partition_indexes = vec![3];
        request.topics = Some(vec![topic]);
        let groups = to_coordinator(&request, 7);
        assert_eq!(
            groups[0].topics.as_ref().unwrap()[0].partition_indexes,
            vec![3]
        );
    }
}
