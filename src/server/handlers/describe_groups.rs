//! DescribeGroups (key 15), v0-v6: state, protocol and members of groups,
//! answered at once. The groups are split by their `__consumer_offsets`
//! partition, each partition's coordinator is asked once, and the answers are
//! put back in request order.
//!
//! v3+ may ask for the authorized operations: those the caller may do on the
//! group (Kafka sets them only on groups described without error). v4+
//! carry the members' group instance ids. From v6 an unknown group is
//! GROUP_ID_NOT_FOUND (the coordinator decides from the version) with
//! Kafka's message.
//!
//! Authorization, as in Kafka: DESCRIBE on each group, else an entry with
//! GROUP_AUTHORIZATION_FAILED and nothing else; those entries come first,
//! then the described groups in request order.

use std::rc::Rc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{ApiKey, DescribeGroupsRequest, DescribeGroupsResponse};

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

/// The wire description of one group for `version`; `Err` when its
/// coordinator could not answer (or the caller may not describe it).
/// `authorized_operations` is the group's bit field when the client asked
/// for it.
pub fn to_wire(
    requested: &str,
    described: Result<group::DescribedGroup, ErrorCode>,
    version: i16,
    authorized_operations: Option<i32>,
) -> DescribedGroup {
    let mut wire = DescribedGroup::default();
    match described {
        Ok(described) => {
            wire.error_code = group::error_code(described.error);
            if version >= 6 && described.error == Some(ErrorCode::GroupIdNotFound) {
                let why = if described.not_classic {
                    "is not a classic group"
                } else {
                    "not found"
                };
                wire.error_message =
                    Some(str_bytes(&format!("Group {} {why}.", described.group_id)));
            }
            wire.group_id = group_id(&described.group_id);
            wire.group_state = str_bytes(&described.group_state);
            wire.protocol_type = str_bytes(&described.protocol_type);
            wire.protocol_data = str_bytes(&described.protocol_data);
            wire.members = described
                .members
                .into_iter()
                .map(|m| {
                    let mut member = DescribedGroupMember::default();
                    member.member_id = str_bytes(&m.member_id);
                    if version >= 4 {
                        member.group_instance_id = opt_str_bytes(m.group_instance_id.as_deref());
                    }
                    member.client_id = str_bytes(&m.client_id);
                    member.client_host = str_bytes(&m.client_host);
                    member.member_metadata = m.member_metadata;
                    member.member_assignment = m.member_assignment;
                    member
                })
                .collect();
        }
        Err(error) => {
            // Kafka's `DescribeGroupsRequest.getErrorDescribedGroupList`:
            // the id and the error, everything else empty.
            wire.error_code = error.code();
            wire.group_id = group_id(requested);
        }
    }
    wire.authorized_operations = match authorized_operations {
        Some(operations) if version >= 3 && wire.error_code == 0 => operations,
        _ => AUTHORIZED_OPERATIONS_OMITTED,
    };
    wire
}

/// Answers DescribeGroups.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DescribeGroupsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let (requested, refused): (Vec<String>, Vec<String>) = request
            .groups
            .iter()
            .map(|g| string(g))
            .partition(|g| access.group(AclOperation::Describe, g));
        let items = requested.iter().map(|g| (g.clone(), g.clone())).collect();
        let described = call_by_partition(
            &shard,
            items,
            |group_ids| GroupCall::DescribeGroups {
                group_ids,
                api_version: version,
            },
            |reply| match reply {
                GroupReply::DescribeGroups(described) => Ok(described),
                GroupReply::Unavailable(error) => Err(error),
                other => Err(unexpected("DescribeGroups", &other)),
            },
        )
        .await;
        // Only what ringbroker offers on groups (no group configs).
        let operations = |id: &str| {
            request
                .include_authorized_operations
                .then(|| access.operations(ResourceType::Group, id) & GROUP_AUTHORIZED_OPERATIONS)
        };
        let mut response = DescribeGroupsResponse::default();
        // Kafka lists the refused groups before the coordinator's answers.
        response.groups = refused
            .iter()
            .map(|id| to_wire(id, Err(ErrorCode::GroupAuthorizationFailed), version, None))
            .chain(
                requested
                    .iter()
                    .zip(described)
                    .map(|(id, d)| to_wire(id, d, version, operations(id))),
            )
            .collect();
        encode_response(ApiKey::DescribeGroups, version, correlation_id, &response)
    })
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    fn stable() -> group::DescribedGroup {
        group::DescribedGroup {
            error: None,
            group_id: "g".into(),
            group_state: "Stable".into(),
            protocol_type: "consumer".into(),
            protocol_data: "range".into(),
            members: vec![group::DescribedMember {
                member_id: "m-1".into(),
                group_instance_id: Some("static-1".into()),
                client_id: "app".into(),
                client_host: "/127.0.0.1".into(),
                member_metadata: Bytes::from_static(b"meta"),
                member_assignment: Bytes::from_static(b"assign"),
            }],
            not_classic: false,
        }
    }

    #[test]
    fn every_version_encodes_and_decodes_back() {
        for version in 0..=6 {
            let mut response = DescribeGroupsResponse::default();
            response.groups = vec![
                to_wire(
                    "g",
                    Ok(stable()),
                    version,
                    Some(GROUP_AUTHORIZED_OPERATIONS),
                ),
                to_wire(
                    "h",
                    Err(ErrorCode::NotCoordinator),
                    version,
                    Some(GROUP_AUTHORIZED_OPERATIONS),
                ),
            ];
            let mut buf = BytesMut::new();
            response.encode(&mut buf, version).expect("encodes");
            let back = DescribeGroupsResponse::decode(&mut buf.freeze(), version).expect("decodes");
            let g = &back.groups[0];
            assert_eq!(g.group_state.as_str(), "Stable");
            assert_eq!(g.members[0].client_host.as_str(), "/127.0.0.1");
            assert_eq!(
                g.members[0].group_instance_id.as_deref(),
                (version >= 4).then_some("static-1")
            );
            assert_eq!(
                g.authorized_operations,
                if version >= 3 {
                    GROUP_AUTHORIZED_OPERATIONS
                } else {
                    i32::MIN
                }
            );
            let h = &back.groups[1];
            assert_eq!(h.group_id.as_str(), "h");
            assert_eq!(h.error_code, ErrorCode::NotCoordinator.code());
            assert_eq!(h.authorized_operations, i32::MIN);
        }
    }

    #[test]
    fn v6_names_the_missing_group() {
        let mut missing = stable();
        missing.group_id = "gone".into();
        missing.error = Some(ErrorCode::GroupIdNotFound);
        missing.group_state = "Dead".into();
        missing.members.clear();
        let wire = to_wire("gone", Ok(missing), 6, None);
        assert_eq!(wire.error_message.as_deref(), Some("Group gone not found."));
        assert_eq!(wire.authorized_operations, i32::MIN);
    }

    #[test]
    fn a_refused_group_has_only_its_id_and_error() {
        let wire = to_wire(
            "g",
            Err(ErrorCode::GroupAuthorizationFailed),
            5,
            Some(GROUP_AUTHORIZED_OPERATIONS),
        );
        assert_eq!(wire.error_code, 30);
        assert_eq!(wire.group_id.as_str(), "g");
        assert_eq!(wire.group_state.as_str(), "");
        assert_eq!(wire.protocol_type.as_str(), "");
        assert_eq!(wire.protocol_data.as_str(), "");
        assert!(wire.members.is_empty());
        assert_eq!(wire.error_message, None);
        assert_eq!(wire.authorized_operations, i32::MIN);
    }
}
