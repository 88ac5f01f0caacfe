//! SyncGroup (key 14), v0-v5: the leader hands in the assignment, every
//! member gets its own. The answer may wait until the leader's assignment is
//! durable.
//!
//! From v5 the request must name the protocol type and name; Kafka's
//! `KafkaApis` answers INCONSISTENT_GROUP_PROTOCOL without asking the
//! coordinator when either is null, and so does this handler.
//!
//! Authorization, after that check as in Kafka: READ on the group, else
//! GROUP_AUTHORIZATION_FAILED with an empty assignment.

use std::rc::Rc;

use kafka_protocol::messages::{ApiKey, SyncGroupRequest, SyncGroupResponse};

use super::encode_response;
use super::groups::{opt_str_bytes, opt_string, string, unexpected};
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(request: &SyncGroupRequest, version: i16) -> group::SyncGroupRequest {
    group::SyncGroupRequest {
        group_id: string(&request.group_id),
        generation_id: request.generation_id,
        member_id: string(&request.member_id),
        group_instance_id: if version >= 3 {
            opt_string(&request.group_instance_id)
        } else {
            None
        },
        protocol_type: if version >= 5 {
            opt_string(&request.protocol_type)
        } else {
            None
        },
        protocol_name: if version >= 5 {
            opt_string(&request.protocol_name)
        } else {
            None
        },
        assignments: request
            .assignments
            .iter()
            .map(|a| group::SyncGroupAssignment {
                member_id: string(&a.member_id),
                assignment: a.assignment.clone(),
            })
            .collect(),
    }
}

/// The wire answer of `version` for the coordinator's answer.
pub fn to_wire(response: group::SyncGroupResponse, version: i16) -> SyncGroupResponse {
    let mut wire = SyncGroupResponse::default();
    wire.error_code = group::error_code(response.error);
    if version >= 5 {
        wire.protocol_type = opt_str_bytes(response.protocol_type.as_deref());
        wire.protocol_name = opt_str_bytes(response.protocol_name.as_deref());
    }
    wire.assignment = response.assignment;
    wire
}

/// Answers SyncGroup.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: SyncGroupRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let authorized = access.group(AclOperation::Read, &request.group_id);
    Box::pin(async move {
        let response = if version >= 5
            && (request.protocol_type.is_none() || request.protocol_name.is_none())
        {
            group::SyncGroupResponse::error(ErrorCode::InconsistentGroupProtocol)
        } else if !authorized {
            group::SyncGroupResponse::error(ErrorCode::GroupAuthorizationFailed)
        } else {
            let call = to_coordinator(&request, version);
            let group_id = call.group_id.clone();
            match call_group(&shard, &group_id, GroupCall::SyncGroup(call)).await {
                GroupReply::SyncGroup(response) => response,
                GroupReply::Unavailable(error) => group::SyncGroupResponse::error(error),
                other => group::SyncGroupResponse::error(unexpected("SyncGroup", &other)),
            }
        };
        encode_response(
            ApiKey::SyncGroup,
            version,
            correlation_id,
            &to_wire(response, version),
        )
    })
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    #[test]
    fn every_version_encodes_and_decodes_back() {
        let response = group::SyncGroupResponse {
            error: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignment: Bytes::from_static(b"assignment"),
        };
        for version in 0..=5 {
            let wire = to_wire(response.clone(), version);
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back = SyncGroupResponse::decode(&mut buf.freeze(), version).expect("decodes");
            assert_eq!(back.assignment, Bytes::from_static(b"assignment"));
            assert_eq!(back.protocol_name.is_some(), version >= 5, "v{version}");
        }
    }
}
