//! DeleteGroups (key 42), v0-v2: deletes empty groups with their committed
//! offsets. The groups are split by their `__consumer_offsets` partition,
//! each partition's coordinator is asked once (the answer waits until the
//! tombstones are durable), and the results are put back in request order.
//!
//! Authorization, as in Kafka: DELETE on each group, else its result is
//! GROUP_AUTHORIZATION_FAILED and its coordinator is not asked; the refused
//! groups' results come first.

use std::rc::Rc;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, DeleteGroupsResponse};

use super::encode_response;
use super::groups::{call_by_partition, group_id, string, unexpected};
use crate::group;
use crate::protocol::ErrorCode;
use crate::security::acl::AclOperation;
use crate::server::connection::Responder;
use crate::shard::messages::{GroupCall, GroupReply};
use crate::shard::Shard;

/// Answers DeleteGroups.
pub fn handle(
    shard: &Rc<Shard>,
    access: &crate::server::access::Access,
    request: DeleteGroupsRequest,
    version: i16,
    correlation_id: i32,
) -> Responder {
    let shard = shard.clone();
    let (requested, refused): (Vec<String>, Vec<String>) = request
        .groups_names
        .iter()
        .map(|g| string(g))
        .partition(|g| access.group(AclOperation::Delete, g));
    Box::pin(async move {
        let items = requested.iter().map(|g| (g.clone(), g.clone())).collect();
        let results = call_by_partition(
            &shard,
            items,
            |group_ids| GroupCall::DeleteGroups { group_ids },
            |reply| match reply {
                GroupReply::DeleteGroups(response) => Ok(response
                    .results
                    .into_iter()
                    .map(|(_, error)| error)
                    .collect()),
                GroupReply::Unavailable(error) => Err(error),
                other => Err(unexpected("DeleteGroups", &other)),
            },
        )
        .await;
        let mut response = DeleteGroupsResponse::default();
        // Kafka lists the refused groups before the coordinator's results.
        response.results = refused
            .iter()
            .map(|id| (id, Err(ErrorCode::GroupAuthorizationFailed)))
            .chain(requested.iter().zip(results))
            .map(|(id, result)| {
                let mut wire = DeletableGroupResult::default();
                wire.group_id = group_id(id);
                wire.error_code = match result {
                    Ok(error) => group::error_code(error),
                    Err(error) => error.code(),
                };
                wire
            })
            .collect();
        encode_response(ApiKey::DeleteGroups, version, correlation_id, &response)
    })
}
