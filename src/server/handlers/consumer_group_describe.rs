//! ConsumerGroupDescribe (key 69), v0-v1: KIP-848 consumer groups with
//! their epochs, assignor and members (subscriptions, current and target
//! assignments). A classic group is GROUP_ID_NOT_FOUND ("Group X is not a
//! consumer group."), which is how the admin client knows to fall back to
//! DescribeGroups. Groups are split by coordinator and put back in request
//! order.
//!
//! Authorization, as in Kafka: DESCRIBE on each group, else
//! GROUP_AUTHORIZATION_FAILED for it; a group with a topic (subscribed or
//! assigned) the caller may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED.

use std::rc::Rc;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
};

use super::encode_response;
use super::groups::{
    call_by_partition, group_id, opt_str_bytes, string, unexpected, AUTHORIZED_OPERATIONS_OMITTED,
    GROUP_AUTHORIZED_OPERATIONS,
};
use super::str_bytes;
use crate::group;
use crate::protocol::ErrorCode;
use crate::security::acl::{AclOperation, ResourceType};
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

fn assignment(partitions: Vec<group::DescribedTopicPartitions>) -> Assignment {
    let mut wire = Assignment::default();
    wire.topic_partitions = partitions
        .into_iter()
        .map(|p| {
            let mut topic = TopicPartitions::default();
            topic.topic_id = p.topic_id;
            topic.topic_name = str_bytes(&p.topic_name).into();
            topic.partitions = p.partitions;
            topic
        })
        .collect();
    wire
}

/// Kafka's answer for a group whose members subscribe to or are assigned
/// a topic the caller may not DESCRIBE: TOPIC_AUTHORIZATION_FAILED and
/// nothing else about the group.
fn hide_undescribable_topics(
    described: group::DescribedConsumerGroup,
    describable: impl Fn(&str) -> bool,
) -> group::DescribedConsumerGroup {
    let hidden = described.members.iter().any(|m| {
        m.subscribed_topic_names
            .iter()
            .chain(m.assignment.iter().map(|t| &t.topic_name))
            .chain(m.target_assignment.iter().map(|t| &t.topic_name))
            .any(|t| !describable(t))
    });
    if !hidden {
        return described;
    }
    group::DescribedConsumerGroup {
        error: Some(ErrorCode::TopicAuthorizationFailed),
        error_message: Some(
            "The group has described topic(s) that the client is not authorized to describe."
                .to_string(),
        ),
        group_id: described.group_id,
        group_state: String::new(),
        group_epoch: 0,
        assignment_epoch: 0,
        assignor_name: String::new(),
        members: Vec::new(),
    }
}

/// The wire description of one group.
pub fn to_wire(
    requested: &str,
    described: Result<group::DescribedConsumerGroup, ErrorCode>,
    authorized_operations: Option<i32>,
) -> DescribedGroup {
    let mut wire = DescribedGroup::default();
    wire.group_id = group_id(requested);
    match described {
        Ok(d) => {
            wire.error_code = group::error_code(d.error);
            wire.error_message = opt_str_bytes(d.error_message.as_deref());
            wire.group_state = str_bytes(&d.group_state);
            wire.group_epoch = d.group_epoch;
            wire.assignment_epoch = d.assignment_epoch;
            wire.assignor_name = str_bytes(&d.assignor_name);
            wire.members = d
                .members
                .into_iter()
                .map(|m| {
                    let mut member = Member::default();
                    member.member_id = str_bytes(&m.member_id);
                    member.instance_id = opt_str_bytes(m.instance_id.as_deref());
                    member.rack_id = opt_str_bytes(m.rack_id.as_deref());
                    member.member_epoch = m.member_epoch;
                    member.client_id = str_bytes(&m.client_id);
                    member.client_host = str_bytes(&m.client_host);
                    member.subscribed_topic_names = m
                        .subscribed_topic_names
                        .iter()
                        .map(|n| str_bytes(n).into())
                        .collect();
                    // "" for a member without one, as Kafka answers.
                    member.subscribed_topic_regex = Some(str_bytes(
                        m.subscribed_topic_regex.as_deref().unwrap_or_default(),
                    ));
                    member.assignment = assignment(m.assignment);
                    member.target_assignment = assignment(m.target_assignment);
                    // v1: 0 = classic protocol, 1 = consumer protocol.
                    member.member_type = if m.classic { 0 } else { 1 };
                    member
                })
                .collect();
        }
        Err(error) => {
            wire.error_code = error.code();
        }
    }
    wire.authorized_operations = match authorized_operations {
        Some(operations) if wire.error_code == 0 => operations,
        _ => AUTHORIZED_OPERATIONS_OMITTED,
    };
    wire
}

/// Answers ConsumerGroupDescribe.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ConsumerGroupDescribeRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        if !crate::cluster::features::consumer_protocol_enabled(&shard.image().features) {
            // `group.version` 0: every group UNSUPPORTED_VERSION, in request
            // order, before any ACL is asked (Kafka's `getErrorResponse`).
            let mut response = ConsumerGroupDescribeResponse::default();
            response.groups = request
                .group_ids
                .iter()
                .map(|id| to_wire(&string(id), Err(ErrorCode::UnsupportedVersion), None))
                .collect();
            return encode_response(
                ApiKey::ConsumerGroupDescribe,
                version,
                correlation_id,
                &response,
            );
        }
        let (requested, refused): (Vec<String>, Vec<String>) = request
            .group_ids
            .iter()
            .map(|g| string(g))
            .partition(|g| access.group(AclOperation::Describe, g));
        let items = requested.iter().map(|g| (g.clone(), g.clone())).collect();
        let described = call_by_partition(
            &shard,
            items,
            |group_ids| GroupCall::ConsumerGroupDescribe { group_ids },
            |reply| match reply {
                GroupReply::ConsumerGroupDescribe(described) => Ok(described),
                GroupReply::Unavailable(error) => Err(error),
                other => Err(unexpected("ConsumerGroupDescribe", &other)),
            },
        )
        .await;
        let operations = |id: &str| {
            request
                .include_authorized_operations
                .then(|| access.operations(ResourceType::Group, id) & GROUP_AUTHORIZED_OPERATIONS)
        };
        let describable = |topic: &str| access.topic(AclOperation::Describe, topic);
        let mut response = ConsumerGroupDescribeResponse::default();
        // As Kafka: the refused groups first, then the others in request
        // order.
        response.groups = refused
            .iter()
            .map(|id| to_wire(id, Err(ErrorCode::GroupAuthorizationFailed), None))
            .chain(requested.iter().zip(described).map(|(id, d)| {
                let d = d.map(|d| hide_undescribable_topics(d, describable));
                to_wire(id, d, operations(id))
            }))
            .collect();
        encode_response(
            ApiKey::ConsumerGroupDescribe,
            version,
            correlation_id,
            &response,
        )
    })
}
