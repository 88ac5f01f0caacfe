//! LeaveGroup (key 13), v0-v5: members leave at once, without waiting for
//! their session to expire.
//!
//! v0-v2 name one member at the top level and answer with one error: the
//! top-level error, or when there is none the member's own (Kafka's
//! `LeaveGroupResponse` constructor). v3+ name several members (by member id,
//! or an admin by group instance id) and answer per member. The v5 per-member
//! `reason` is only informational and is ignored.
//!
//! Authorization (Kafka's `KafkaApis`): READ on the group, else
//! GROUP_AUTHORIZATION_FAILED with no member results.

use std::rc::Rc;

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{ApiKey, LeaveGroupRequest, LeaveGroupResponse};

use super::encode_response;
use super::groups::{opt_str_bytes, opt_string, string, unexpected};
use super::str_bytes;
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(request: &LeaveGroupRequest, version: i16) -> group::LeaveGroupRequest {
    let members = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| group::LeaveGroupMember {
                member_id: string(&m.member_id),
                group_instance_id: opt_string(&m.group_instance_id),
            })
            .collect()
    } else {
        vec![group::LeaveGroupMember {
            member_id: string(&request.member_id),
            group_instance_id: None,
        }]
    };
    group::LeaveGroupRequest {
        group_id: string(&request.group_id),
        members,
    }
}

/// The wire answer of `version` for the coordinator's answer.
pub fn to_wire(response: group::LeaveGroupResponse, version: i16) -> LeaveGroupResponse {
    let mut wire = LeaveGroupResponse::default();
    if version >= 3 {
        wire.error_code = group::error_code(response.error);
        wire.members = response
            .members
            .into_iter()
            .map(|m| {
                let mut member = MemberResponse::default();
                member.member_id = str_bytes(&m.member_id);
                member.group_instance_id = opt_str_bytes(m.group_instance_id.as_deref());
                member.error_code = group::error_code(m.error);
                member
            })
            .collect();
    } else {
        let error = response
            .error
            .or_else(|| response.members.first().and_then(|m| m.error));
        wire.error_code = group::error_code(error);
    }
    wire
}

/// Answers LeaveGroup.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: LeaveGroupRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let authorized = access.group(AclOperation::Read, &request.group_id);
    Box::pin(async move {
        let call = to_coordinator(&request, version);
        let group_id = call.group_id.clone();
        let failed = |error: ErrorCode| group::LeaveGroupResponse {
            error: Some(error),
            members: Vec::new(),
        };
        let response = if !authorized {
            failed(ErrorCode::GroupAuthorizationFailed)
        } else {
            match call_group(&shard, &group_id, GroupCall::LeaveGroup(call)).await {
                GroupReply::LeaveGroup(response) => response,
                GroupReply::Unavailable(error) => failed(error),
                other => failed(unexpected("LeaveGroup", &other)),
            }
        };
        encode_response(
            ApiKey::LeaveGroup,
            version,
            correlation_id,
            &to_wire(response, version),
        )
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::leave_group_request::MemberIdentity;

    use super::*;

    #[test]
    fn old_versions_carry_one_member_and_one_error() {
        let mut request = LeaveGroupRequest::default();
        request.group_id = super::super::groups::group_id("g");
        request.member_id = str_bytes("m-1");
        let call = to_coordinator(&request, 1);
        assert_eq!(
            call.members,
            vec![group::LeaveGroupMember {
                member_id: "m-1".into(),
                group_instance_id: None
            }]
        );
        let member_error = group::LeaveGroupResponse {
            error: None,
            members: vec![group::LeaveGroupMemberResponse {
                member_id: "m-1".into(),
                group_instance_id: None,
                error: Some(ErrorCode::UnknownMemberId),
            }],
        };
        assert_eq!(
            to_wire(member_error.clone(), 0).error_code,
            ErrorCode::UnknownMemberId.code()
        );
        let v3 = to_wire(member_error, 3);
        assert_eq!(v3.error_code, 0);
        assert_eq!(v3.members[0].error_code, ErrorCode::UnknownMemberId.code());
        let top = group::LeaveGroupResponse {
            error: Some(ErrorCode::NotCoordinator),
            members: Vec::new(),
        };
        assert_eq!(to_wire(top, 2).error_code, ErrorCode::NotCoordinator.code());
    }

    #[test]
    fn batched_versions_pass_every_member() {
        let mut request = LeaveGroupRequest::default();
        request.group_id = super::super::groups::group_id("g");
        let mut a = MemberIdentity::default();
        a.member_id = str_bytes("m-1");
        let mut b = MemberIdentity::default();
        b.group_instance_id = Some(str_bytes("static-2"));
        request.members = vec![a, b];
        let call = to_coordinator(&request, 4);
        assert_eq!(call.members.len(), 2);
        assert_eq!(call.members[1].member_id, "");
        assert_eq!(
            call.members[1].group_instance_id.as_deref(),
            Some("static-2")
        );
    }
}
