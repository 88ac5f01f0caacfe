//! ConsumerGroupHeartbeat (key 68), v0-v1: the KIP-848 consumer group
//! protocol (`group.protocol=consumer`). A member joins with epoch 0,
//! heartbeats with its epoch, and leaves with -1 (-2: a static member
//! leaving for a while); each answer carries its epoch and, when it
//! changed, its assignment. Answered at once. v1 (KIP-1082): the client
//! names itself (a non-empty member id is required) and may subscribe with
//! a regular expression.
//!
//! Authorization (Kafka's `KafkaApis`): READ on the group, else
//! GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic name,
//! else TOPIC_AUTHORIZATION_FAILED; a regex matches only topics the caller
//! may DESCRIBE.

use std::rc::Rc;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};

use super::encode_response;
use super::groups::{opt_str_bytes, opt_string, string, unexpected, Client};
use crate::group;
use crate::group::assignor::Assignment as Partitions;
use crate::group::consumer::CompiledRegex;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(
    request: &ConsumerGroupHeartbeatRequest,
    version: i16,
    client: Client,
) -> group::ConsumerGroupHeartbeatRequest {
    group::ConsumerGroupHeartbeatRequest {
        group_id: string(&request.group_id),
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: opt_string(&request.instance_id),
        rack_id: opt_string(&request.rack_id),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| n.to_string()).collect()),
        subscribed_topic_regex: if version >= 1 {
            opt_string(&request.subscribed_topic_regex)
        } else {
            None
        },
        compiled_regex: None,
        server_assignor: opt_string(&request.server_assignor),
        topic_partitions: request.topic_partitions.as_ref().map(|topics| {
            let mut owned = Partitions::new();
            for t in topics {
                owned
                    .entry(t.topic_id)
                    .or_default()
                    .extend(t.partitions.iter().copied());
            }
            owned
        }),
        client_id: client.client_id,
        client_host: client.client_host,
        api_version: version,
    }
}

/// The wire answer for the coordinator's answer.
pub fn to_wire(response: group::ConsumerGroupHeartbeatResponse) -> ConsumerGroupHeartbeatResponse {
    let mut wire = ConsumerGroupHeartbeatResponse::default();
    wire.error_code = group::error_code(response.error);
    wire.error_message = opt_str_bytes(response.error_message.as_deref());
    wire.member_id = opt_str_bytes(response.member_id.as_deref());
    wire.member_epoch = response.member_epoch;
    wire.heartbeat_interval_ms = response.heartbeat_interval_ms;
    wire.assignment = response.assignment.map(|partitions| {
        let mut assignment = Assignment::default();
        assignment.topic_partitions = partitions
            .into_iter()
            .map(|(topic_id, set)| {
                let mut topic = TopicPartitions::default();
                topic.topic_id = topic_id;
                topic.partitions = set.into_iter().collect();
                topic
            })
            .collect();
        assignment
    });
    wire
}

/// Answers ConsumerGroupHeartbeat.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ConsumerGroupHeartbeatRequest,
    version: i16,
    correlation_id: i32,
    client: Client,
) -> Responder {
    let shard = shard.clone();
    let caller = access.enabled().then(|| access.caller_identity());
    let group_allowed = access.group(AclOperation::Read, &request.group_id);
    let topics_allowed = request
        .subscribed_topic_names
        .as_ref()
        .map_or(true, |names| {
            names
                .iter()
                .all(|n| access.topic(AclOperation::Describe, n))
        });
    Box::pin(async move {
        let mut call = to_coordinator(&request, version, client);
        let refused = |error: ErrorCode| group::ConsumerGroupHeartbeatResponse {
            error_message: None,
            ..group::ConsumerGroupHeartbeatResponse::error(error, "")
        };
        // As Kafka: with `group.version` 0 the protocol is off, and that is
        // answered before any ACL is asked.
        let response =
            if !crate::cluster::features::consumer_protocol_enabled(&shard.image().features) {
                refused(ErrorCode::UnsupportedVersion)
            } else if !group_allowed {
                refused(ErrorCode::GroupAuthorizationFailed)
            } else if !topics_allowed {
                refused(ErrorCode::TopicAuthorizationFailed)
            } else {
                // Compiled here, off the reactor, not by the coordinator (and
                // only for a caller the group admits): a 16 KiB pattern of
                // case-folded Unicode classes takes a fraction of a second.
                if let Some(regex) = call
                    .subscribed_topic_regex
                    .clone()
                    .filter(|r| !r.is_empty())
                {
                    call.compiled_regex = Some(CompiledRegex::off_reactor(regex).await);
                }
                let group_id = call.group_id.clone();
                match call_group(
                    &shard,
                    &group_id,
                    GroupCall::ConsumerGroupHeartbeat {
                        request: Box::new(call),
                        caller,
                    },
                )
                .await
                {
                    GroupReply::ConsumerGroupHeartbeat(response) => response,
                    GroupReply::Unavailable(error) => refused(error),
                    other => refused(unexpected("ConsumerGroupHeartbeat", &other)),
                }
            };
        encode_response(
            ApiKey::ConsumerGroupHeartbeat,
            version,
            correlation_id,
            &to_wire(response),
        )
    })
}
