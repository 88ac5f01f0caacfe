//! JoinGroup (key 11), v0-v9: the classic group protocol's join phase. The
//! answer may wait for the rebalance (up to the rebalance timeout).
//!
//! v0 has no rebalance timeout (the coordinator uses the session timeout),
//! v4+ get MEMBER_ID_REQUIRED on a first join (KIP-394), v5+ carry static
//! membership, v7+ the protocol type in the answer (where `protocol_name`
//! may be null; older versions get ""), v9 `skip_assignment`. The v8+
//! `reason` is only informational and is ignored.
//!
//! Authorization (Kafka's `KafkaApis`): READ on the group, else
//! GROUP_AUTHORIZATION_FAILED with generation -1 and empty member id and
//! leader, without asking the coordinator.

use std::rc::Rc;

use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{ApiKey, JoinGroupRequest, JoinGroupResponse};

use super::encode_response;
use super::groups::{opt_str_bytes, opt_string, string, unexpected, Client};
use super::str_bytes;
use crate::group;
use crate::group::service::call_group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(
    request: &JoinGroupRequest,
    version: i16,
    client: Client,
) -> group::JoinGroupRequest {
    group::JoinGroupRequest {
        group_id: string(&request.group_id),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            -1
        },
        member_id: string(&request.member_id),
        group_instance_id: if version >= 5 {
            opt_string(&request.group_instance_id)
        } else {
            None
        },
        protocol_type: string(&request.protocol_type),
        protocols: request
            .protocols
            .iter()
            .map(|p| group::JoinProtocol {
                name: string(&p.name),
                metadata: p.metadata.clone(),
            })
            .collect(),
        client_id: client.client_id,
        client_host: client.client_host,
        api_version: version,
    }
}

/// The wire answer of `version` for the coordinator's answer.
pub fn to_wire(response: group::JoinGroupResponse, version: i16) -> JoinGroupResponse {
    let mut wire = JoinGroupResponse::default();
    wire.error_code = group::error_code(response.error);
    wire.generation_id = response.generation_id;
    if version >= 7 {
        wire.protocol_type = opt_str_bytes(response.protocol_type.as_deref());
        wire.protocol_name = opt_str_bytes(response.protocol_name.as_deref());
    } else {
        // Not nullable before v7: Kafka sends "" for "no protocol".
        wire.protocol_name = Some(str_bytes(
            response.protocol_name.as_deref().unwrap_or_default(),
        ));
    }
    wire.leader = str_bytes(&response.leader);
    if version >= 9 {
        wire.skip_assignment = response.skip_assignment;
    }
    wire.member_id = str_bytes(&response.member_id);
    wire.members = response
        .members
        .into_iter()
        .map(|m| {
            let mut member = JoinGroupResponseMember::default();
            member.member_id = str_bytes(&m.member_id);
            if version >= 5 {
                member.group_instance_id = opt_str_bytes(m.group_instance_id.as_deref());
            }
            member.metadata = m.metadata;
            member
        })
        .collect();
    wire
}

/// Answers JoinGroup.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: JoinGroupRequest,
    version: i16,
    correlation_id: i32,
    client: Client,
) -> Responder {
    let shard = shard.clone();
    let authorized = access.group(AclOperation::Read, &request.group_id);
    Box::pin(async move {
        let call = to_coordinator(&request, version, client);
        let group_id = call.group_id.clone();
        let member_id = call.member_id.clone();
        let response = if !authorized {
            // Kafka's `JoinGroupRequest.getErrorResponse`: no member id.
            group::JoinGroupResponse::error(ErrorCode::GroupAuthorizationFailed, "")
        } else {
            match call_group(&shard, &group_id, GroupCall::JoinGroup(call)).await {
                GroupReply::JoinGroup(response) => response,
                GroupReply::Unavailable(error) => {
                    group::JoinGroupResponse::error(error, &member_id)
                }
                other => {
                    group::JoinGroupResponse::error(unexpected("JoinGroup", &other), &member_id)
                }
            }
        };
        encode_response(
            ApiKey::JoinGroup,
            version,
            correlation_id,
            &to_wire(response, version),
        )
    })
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    fn client() -> Client {
        Client {
            client_id: "app".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    fn wire_request() -> JoinGroupRequest {
        let mut request = JoinGroupRequest::default();
        request.group_id = super::super::groups::group_id("g");
        request.session_timeout_ms = 10_000;
        request.rebalance_timeout_ms = 30_000;
        request.member_id = str_bytes("m-1");
        request.group_instance_id = Some(str_bytes("static-1"));
        request.protocol_type = str_bytes("consumer");
        let mut protocol = JoinGroupRequestProtocol::default();
        protocol.name = str_bytes("range");
        protocol.metadata = Bytes::from_static(b"\x00\x01");
        request.protocols = vec![protocol];
        request
    }

    #[test]
    fn v0_has_no_rebalance_timeout_and_v5_carries_the_instance_id() {
        let request = wire_request();
        let v0 = to_coordinator(&request, 0, client());
        assert_eq!(v0.rebalance_timeout_ms, -1);
        assert_eq!(v0.group_instance_id, None);
        assert_eq!(v0.client_host, "/127.0.0.1");
        let v5 = to_coordinator(&request, 5, client());
        assert_eq!(v5.rebalance_timeout_ms, 30_000);
        assert_eq!(v5.group_instance_id.as_deref(), Some("static-1"));
        assert_eq!(v5.protocols[0].name, "range");
        assert_eq!(v5.api_version, 5);
    }

    #[test]
    fn every_version_encodes_and_decodes_back() {
        let response = group::JoinGroupResponse {
            error: None,
            generation_id: 3,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            leader: "m-1".into(),
            skip_assignment: true,
            member_id: "m-1".into(),
            members: vec![group::JoinGroupMember {
                member_id: "m-1".into(),
                group_instance_id: Some("static-1".into()),
                metadata: Bytes::from_static(b"meta"),
            }],
        };
        for version in 0..=9 {
            let wire = to_wire(response.clone(), version);
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back = JoinGroupResponse::decode(&mut buf.freeze(), version).expect("decodes");
            assert_eq!(back.generation_id, 3);
            assert_eq!(back.protocol_name.as_deref(), Some("range"));
            assert_eq!(back.skip_assignment, version >= 9, "v{version}");
            assert_eq!(
                back.protocol_type.is_some(),
                version >= 7,
                "v{version}: protocol_type"
            );
            assert_eq!(back.members.len(), 1);
        }
    }

    #[test]
    fn a_failed_join_has_an_empty_protocol_name_before_v7_and_null_after() {
        let failed = group::JoinGroupResponse::error(ErrorCode::MemberIdRequired, "new-id");
        let v4 = to_wire(failed.clone(), 4);
        assert_eq!(v4.protocol_name.as_deref(), Some(""));
        assert_eq!(v4.member_id.as_str(), "new-id");
        assert_eq!(v4.error_code, ErrorCode::MemberIdRequired.code());
        let v7 = to_wire(failed, 7);
        assert_eq!(v7.protocol_name, None);
        assert_eq!(v7.protocol_type, None);
    }
}
