//! ListGroups (key 16), v0-v5: every group of every coordinator on this
//! node, filtered by state (v4+) and type (v5+), answered at once.
//!
//! Authorization, as in Kafka: a caller that may DESCRIBE the cluster sees
//! every group, any other only the groups it may DESCRIBE (never an error).

use std::rc::Rc;

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{ApiKey, ListGroupsRequest, ListGroupsResponse};

use super::encode_response;
use super::groups::{group_id, string};
use super::str_bytes;
use crate::group;
use crate::group::service::list_all_groups;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::Shard;

/// The coordinator's request for a wire request of `version`.
pub fn to_coordinator(request: &ListGroupsRequest, version: i16) -> group::ListGroupsRequest {
    group::ListGroupsRequest {
        states_filter: if version >= 4 {
            request.states_filter.iter().map(string).collect()
        } else {
            Vec::new()
        },
        types_filter: if version >= 5 {
            request.types_filter.iter().map(string).collect()
        } else {
            Vec::new()
        },
    }
}

/// The wire answer of `version`.
pub fn to_wire(
    listed: Result<group::ListGroupsResponse, crate::protocol::ErrorCode>,
    version: i16,
) -> ListGroupsResponse {
    let mut wire = ListGroupsResponse::default();
    match listed {
        Ok(listed) => {
            wire.groups = listed
                .groups
                .into_iter()
                .map(|g| {
                    let mut listed = ListedGroup::default();
                    listed.group_id = group_id(&g.group_id);
                    listed.protocol_type = str_bytes(&g.protocol_type);
                    if version >= 4 {
                        listed.group_state = str_bytes(&g.group_state);
                    }
                    if version >= 5 {
                        listed.group_type = str_bytes(&g.group_type);
                    }
                    listed
                })
                .collect();
        }
        Err(error) => wire.error_code = error.code(),
    }
    wire
}

/// Answers ListGroups.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: ListGroupsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let access = access.clone();
    Box::pin(async move {
        let mut listed = list_all_groups(&shard, to_coordinator(&request, version)).await;
        if !access.cluster(AclOperation::Describe) {
            if let Ok(listed) = &mut listed {
                listed
                    .groups
                    .retain(|g| access.group(AclOperation::Describe, &g.group_id));
            }
        }
        encode_response(
            ApiKey::ListGroups,
            version,
            correlation_id,
            &to_wire(listed, version),
        )
    })
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::protocol::{Decodable, Encodable};

    use super::*;

    #[test]
    fn every_version_encodes_and_decodes_back() {
        let listed = group::ListGroupsResponse {
            groups: vec![group::ListedGroup {
                group_id: "g".into(),
                protocol_type: "consumer".into(),
                group_state: "Stable".into(),
                group_type: "classic".into(),
            }],
        };
        for version in 0..=5 {
            let wire = to_wire(Ok(listed.clone()), version);
            let mut buf = BytesMut::new();
            wire.encode(&mut buf, version).expect("encodes");
            let back = ListGroupsResponse::decode(&mut buf.freeze(), version).expect("decodes");
            assert_eq!(back.groups[0].group_id.as_str(), "g");
            assert_eq!(back.groups[0].protocol_type.as_str(), "consumer");
            assert_eq!(
                back.groups[0].group_state.as_str(),
                if version >= 4 { "Stable" } else { "" }
            );
            assert_eq!(
                back.groups[0].group_type.as_str(),
                if version >= 5 { "classic" } else { "" }
            );
        }
    }
}
