//! Heartbeat (key 12), v0-v4: keeps a member's session alive; answered at
//! once. REBALANCE_IN_PROGRESS tells the member to rejoin.
//!
//! Authorization (Kafka's `KafkaApis`): READ on the group, else
//! GROUP_AUTHORIZATION_FAILED without asking the coordinator.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, HeartbeatRequest, HeartbeatResponse};

use super::encode_response;
use super::groups::{opt_string, string, unexpected};
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(request: &HeartbeatRequest, version: i16) -> group::HeartbeatRequest {
    group::HeartbeatRequest {
        group_id: string(&request.group_id),
        generation_id: request.generation_id,
        member_id: string(&request.member_id),
        group_instance_id: if version >= 3 {
            opt_string(&request.group_instance_id)
        } else {
            None
        },
    }
}

/// Answers Heartbeat.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: HeartbeatRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let authorized = access.group(AclOperation::Read, &request.group_id);
    Box::pin(async move {
        let call = to_coordinator(&request, version);
        let group_id = call.group_id.clone();
        let error = if !authorized {
            Some(ErrorCode::GroupAuthorizationFailed)
        } else {
            match call_group(&shard, &group_id, GroupCall::Heartbeat(call)).await {
                GroupReply::Heartbeat(response) => response.error,
                GroupReply::Unavailable(error) => Some(error),
                other => Some(unexpected("Heartbeat", &other)),
            }
        };
        let mut response = HeartbeatResponse::default();
        response.error_code = group::error_code(error);
        encode_response(ApiKey::Heartbeat, version, correlation_id, &response)
    })
}
